package api_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// serveAPI serves the API as the binary does (api.NewHTTPServer) with timeouts t on a
// loopback port, with the process's listener (so a claim's wait is honoured).
func serveAPI(t *testing.T, timeouts api.HTTPTimeouts) (addr string, st *store.Store) {
	t.Helper()
	st = testenv.Store(t)
	l := st.StartListener(store.ListenerOptions{Logf: t.Logf})
	t.Cleanup(l.Close)
	h := api.New(&api.Server{Store: st, Logf: t.Logf, Listener: l, Timeouts: timeouts})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := api.NewHTTPServer(h, timeouts)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), st
}

// closedByServer reads from conn until the server closes it (or answers and closes), and
// fails if the connection is still open after a bound far beyond the timeouts under test.
func closedByServer(t *testing.T, conn net.Conn, r *bufio.Reader) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(15*time.Second)))
	_, err := io.Copy(io.Discard, r)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the connection was still open after 15s: the server let the client hold it")
}

// A client that trickles its body a byte at a time, or keeps a connection idle, loses it
// after the read or idle timeout. Before, only the header had a timeout: either held a
// connection (and its goroutine) forever.
func TestSlowAndIdleClientsLoseTheirConnection(t *testing.T) {
	t.Parallel()
	addr, st := serveAPI(t, api.HTTPTimeouts{ReadHeader: 5 * time.Second, Read: 500 * time.Millisecond, Write: 5 * time.Second, Idle: 500 * time.Millisecond})
	_, admin, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleAdmin})
	require.NoError(t, err)

	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "POST /api/v1/schedules HTTP/1.1\r\nHost: tickgate\r\nContent-Type: application/json\r\n"+
			"Authorization: Bearer "+admin+"\r\nContent-Length: 10000\r\n\r\n")
		require.NoError(t, err)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a byte every 50 ms: the whole body would take over eight minutes
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		closedByServer(t, conn, bufio.NewReader(conn))
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: tickgate\r\n\r\n")
		require.NoError(t, err)
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.False(t, resp.Close, "the connection is kept alive")
		closedByServer(t, conn, r) // and then idles
	})
}

// An agent's claim that waits (a long-poll) answers after its wait even though the wait is
// longer than the server's write timeout: the route extends its own write deadline by its
// wait. Without the extension the server cut the answer off.
func TestALongPollOutlivesTheWriteTimeout(t *testing.T) {
	t.Parallel()
	addr, st := serveAPI(t, api.HTTPTimeouts{Write: 300 * time.Millisecond})
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO pcs (name, device_capacity) VALUES ('pc-lp', 1)`)
	require.NoError(t, err)
	_, agent, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent, PC: "pc-lp"})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/agent/pcs/pc-lp/claim", strings.NewReader(`{"wait":"1500ms"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the answer came after the write timeout")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.JSONEq(t, `{"items":[],"next_cursor":""}`, string(body))
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "the claim waited its wait (nothing to claim)")
}

// The events feed's long-poll extends its write deadline as the claim's does: a wait longer
// than the write timeout answers, empty, after its wait.
func TestAFeedLongPollOutlivesTheWriteTimeout(t *testing.T) {
	t.Parallel()
	addr, st := serveAPI(t, api.HTTPTimeouts{Write: 300 * time.Millisecond})
	_, viewer, err := st.CreateToken(context.Background(), store.NewToken{Role: domain.RoleViewer})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/events?after=now&wait=1500ms", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewer)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the answer came after the write timeout")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), `"items":[]`)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "the read waited its wait (nothing came)")
}
