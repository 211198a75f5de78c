package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recorded clients: the run's own clients whose every call goes into a history for the
// linearizability check (histories/). Each call is one operation from its first send to its
// final answer; a call that gets no answer, or only 5xx/429, is resent with the same
// Idempotency-Key for up to a minute and then kept with an unknown outcome (status 0).

// history collects operations from concurrent clients.
type history struct {
	mu      sync.Mutex
	ops     []porcupine.Operation
	clients map[string]int
}

func newHistory() *history { return &history{clients: map[string]int{}} }

// add records one operation of client, called at call, answered at ret (zero: never),
// giving it a client id of its own when it has no answer (it stays open to the end).
func (h *history) add(client string, in, out any, call, ret time.Time, answered bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !answered {
		client = fmt.Sprintf("%s (unanswered #%d)", client, len(h.ops))
	}
	id, ok := h.clients[client]
	if !ok {
		id = len(h.clients)
		h.clients[client] = id
	}
	op := porcupine.Operation{ClientId: id, Input: in, Output: out, Call: call.UnixNano(), Return: ret.UnixNano()}
	if !answered {
		op.Return = 0 // closed by operations()
	}
	h.ops = append(h.ops, op)
}

// operations answers the history, the unanswered operations open until end.
func (h *history) operations(end time.Time) []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]porcupine.Operation, len(h.ops))
	for i, op := range h.ops {
		if op.Return == 0 {
			op.Return = max(end.UnixNano(), op.Call+1)
		}
		out[i] = op
	}
	return out
}

// recordingClient calls the APIs in turn, as the load's client does, and answers the status
// of each call's final answer.
type recordingClient struct {
	token string
	addrs []string
	next  atomic.Uint64
	http  *http.Client
	seq   atomic.Uint64
}

func newRecordingClient(token string, addrs []string) *recordingClient {
	return &recordingClient{token: token, addrs: addrs, http: &http.Client{Timeout: 20 * time.Second}}
}

// requestID names a command uniquely in the run.
func (c *recordingClient) requestID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, c.seq.Add(1))
}

// call sends method path with body (and key as its Idempotency-Key when set), resending
// while there is no definite answer, and decodes a 2xx answer into out. It answers the final
// status (0: none definite within the minute) and when the call began and ended. A refusal
// (4xx) after a send whose fate is unknown is itself unknown: the first send may have done
// the work (a 5xx is not kept under the key), and the refusal may only say so.
func (c *recordingClient) call(ctx context.Context, method, path, key string, body, out any) (code int, began, ended time.Time) {
	began = time.Now()
	deadline := began.Add(time.Minute)
	wait := 100 * time.Millisecond
	uncertain := false
	for {
		code = c.once(ctx, method, path, key, body, out)
		if code != 0 && code != http.StatusTooManyRequests && code < 500 {
			if uncertain && code/100 == 4 && method != http.MethodGet {
				code = 0
			}
			return code, began, time.Now()
		}
		uncertain = uncertain || code != http.StatusTooManyRequests
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) || (method != http.MethodGet && key == "") {
			return 0, began, time.Now()
		}
		sleepCtx(ctx, wait)
		wait = min(2*wait, 2*time.Second)
	}
}

func (c *recordingClient) once(ctx context.Context, method, path, key string, body, out any) int {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0
		}
		rd = bytes.NewReader(b)
	}
	addr := c.addrs[c.next.Add(1)%uint64(len(c.addrs))]
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/api/v1"+path, rd)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0 // the answer was cut: not definite
	}
	if resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" {
		return 0 // the same request still in flight: resend
	}
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return 0
		}
	}
	return resp.StatusCode
}

// page is one page of a list.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// list reads every page of path (a GET whose query may already have parameters) as one
// call: it answers 200 only when every page was read.
func list[T any](ctx context.Context, c *recordingClient, path string) (items []T, code int, began, ended time.Time) {
	began = time.Now()
	sep := "?"
	if bytes.ContainsRune([]byte(path), '?') {
		sep = "&"
	}
	cursor := ""
	for {
		var p page[T]
		q := path + sep + "limit=200"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		code, _, _ = c.call(ctx, http.MethodGet, q, "", nil, &p)
		if code != http.StatusOK {
			return nil, code, began, time.Now()
		}
		items = append(items, p.Items...)
		if p.NextCursor == "" || len(p.Items) == 0 {
			return items, code, began, time.Now()
		}
		cursor = p.NextCursor
	}
}
