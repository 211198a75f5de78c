package teststack

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Do sends a request to the API with an optional JSON body and returns the status and body.
// The answer is checked against api/openapi.yaml (ContractClient): drift fails t.
func (s *Stack) Do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			r = bytes.NewBufferString(b)
		case []byte:
			r = bytes.NewReader(b)
		default:
			buf, err := json.Marshal(b)
			require.NoError(t, err)
			r = bytes.NewReader(buf)
		}
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	resp, err := ContractClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// JSON sends a request, requires the wanted status and decodes the answer into out (if not nil).
func (s *Stack) JSON(t testing.TB, method, path string, body any, wantStatus int, out any) {
	t.Helper()
	status, b := s.Do(t, method, path, body)
	require.Equal(t, wantStatus, status, "%s %s answered %s", method, path, b)
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), "decode %s", b)
	}
}
