package teststack

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
)

// Client is the typed Go client (package client) of the stack: its requests carry the
// stack's headers (the admin's token, or As's), its answers are checked against
// api/openapi.yaml (ContractClient: drift fails t), and each request is sent once — no
// retries — so a test sees the API's first answer.
func (s *Stack) Client(t testing.TB) *client.Client {
	t.Helper()
	opts := []client.Option{client.WithHTTP(ContractClient(t)), client.WithRetries(1, 0)}
	for k, v := range s.Headers {
		opts = append(opts, client.WithHeader(k, v))
	}
	c, err := client.New(s.URL, opts...)
	require.NoError(t, err)
	return c
}

// Body is v as a JSON request body for a generated ...WithBody operation.
func Body(t testing.TB, v any) io.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return bytes.NewReader(b)
}
