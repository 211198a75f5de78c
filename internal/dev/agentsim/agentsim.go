// Package agentsim simulates the PC agents of tickgate's device dispatch engine (docs/devices.md)
// over the HTTP API: one loop per PC claims its commands, waits a latency, and then
// acks and reports succeeded, failed, failed-not-retryable, or never answers. `tickgate
// agent-sim`, the end-to-end test and the benchmark all use it.
package agentsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Command is one claimed command (a task_device attempt).
type Command struct {
	ID      int64           `json:"id"`
	TaskID  int64           `json:"task_id"`
	Device  string          `json:"device"`
	PC      string          `json:"pc"`
	Attempt int32           `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
}

// Outcome is how the simulated agent answers a command.
type Outcome int

// Outcomes.
const (
	Succeed  Outcome = iota
	Fail             // a retryable failure
	Fatal            // a failure reported as not retryable
	NoAnswer         // never answer: the attempt times out
)

// Options configure a fleet.
type Options struct {
	// BaseURL is the API base, e.g. http://127.0.0.1:8080/api/v1.
	BaseURL string
	PCs     []string
	// Max is how many commands one claim asks for (default 20).
	Max int
	// Latency (plus up to Jitter) is how long a device takes to answer.
	Latency time.Duration
	Jitter  time.Duration
	// FailRate, FatalRate and NoAnswerRate are fractions of the attempts (the rest succeed).
	FailRate, FatalRate, NoAnswerRate float64
	// Poll is the wait after a claim that returned nothing (default 25ms); a result posted
	// by the PC's devices wakes the loop at once.
	Poll time.Duration
	// Ack sends an ack before each result.
	Ack bool
	// Decide, when set, chooses each outcome instead of the rates.
	Decide func(Command) Outcome
	// OnClaimed and OnAnswering observe the fleet (tests and benchmarks): a command was
	// handed out; a command is about to be answered (called before the result is posted).
	OnClaimed   func(Command, time.Time)
	OnAnswering func(Command, Outcome, time.Time)
	// OnAnswered is called after the result was posted, with the HTTP status.
	OnAnswered func(Command, Outcome, int, time.Time)
	HTTPClient *http.Client
	Logf       func(string, ...any)
	// Token is the bearer token sent with every request (an admin token, or an agent token
	// when the fleet runs one PC); PCTokens overrides it per PC (agent tokens are bound to
	// their PC).
	Token    string
	PCTokens map[string]string
	// DeliverFor is how long an ack or a result is resent while the API cannot be reached
	// or answers 5xx, 429, or 409 with Retry-After (default 5 minutes), as a real agent
	// must: a device's result is never dropped because the API restarted. Each resend
	// carries the same Idempotency-Key, so one that already committed is replayed, never
	// recorded twice.
	DeliverFor time.Duration
	// RetryBackoff is the first wait between resends, doubled up to 2 s (default 100ms).
	RetryBackoff time.Duration
}

// Stats count what the fleet did.
type Stats struct {
	Claimed, Succeeded, Failed, Fatal, NoAnswer, Conflicts, Errors atomic.Int64
	// Resent counts acks and results sent again after a failed delivery.
	Resent atomic.Int64
}

func (s *Stats) String() string {
	return fmt.Sprintf("claimed=%d succeeded=%d failed=%d fatal=%d no_answer=%d conflicts=%d errors=%d resent=%d",
		s.Claimed.Load(), s.Succeeded.Load(), s.Failed.Load(), s.Fatal.Load(), s.NoAnswer.Load(), s.Conflicts.Load(), s.Errors.Load(), s.Resent.Load())
}

// Fleet is a running set of simulated agents.
type Fleet struct {
	opts  Options
	Stats Stats
	wg    sync.WaitGroup
}

// Start runs one agent loop per PC until ctx ends; Wait waits for them.
func Start(ctx context.Context, opts Options) *Fleet {
	if opts.Max <= 0 {
		opts.Max = 20
	}
	if opts.Poll <= 0 {
		opts.Poll = 25 * time.Millisecond
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
		opts.HTTPClient = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	if opts.DeliverFor <= 0 {
		opts.DeliverFor = 5 * time.Minute
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = 100 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	f := &Fleet{opts: opts}
	for _, pc := range opts.PCs {
		f.wg.Add(1)
		go f.agent(ctx, pc)
	}
	return f
}

// Wait blocks until every agent loop and in-flight answer has stopped.
func (f *Fleet) Wait() { f.wg.Wait() }

func (f *Fleet) agent(ctx context.Context, pc string) {
	defer f.wg.Done()
	wake := make(chan struct{}, 1)
	backoff := time.Duration(0) // after a failed claim: RetryBackoff doubled up to 2 s
	for ctx.Err() == nil {
		cmds, err := f.claim(ctx, pc)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.Stats.Errors.Add(1)
			backoff = min(max(2*backoff, f.opts.RetryBackoff), 2*time.Second)
			if backoff == f.opts.RetryBackoff || backoff == 2*time.Second {
				// The first failure and then one line per capped wait, not one per try.
				f.opts.Logf("agentsim: pc %s: claim: %v (retrying in %s)", pc, err, backoff)
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		now := time.Now()
		for _, cmd := range cmds {
			cmd.PC = pc
			f.Stats.Claimed.Add(1)
			if f.opts.OnClaimed != nil {
				f.opts.OnClaimed(cmd, now)
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.answer(ctx, cmd)
				select {
				case wake <- struct{}{}:
				default:
				}
			}()
		}
		if len(cmds) > 0 {
			continue // claim again at once: more may be waiting
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(f.opts.Poll):
		}
	}
}

func (f *Fleet) decide(cmd Command) Outcome {
	if f.opts.Decide != nil {
		return f.opts.Decide(cmd)
	}
	r := rand.Float64()
	switch {
	case r < f.opts.NoAnswerRate:
		return NoAnswer
	case r < f.opts.NoAnswerRate+f.opts.FatalRate:
		return Fatal
	case r < f.opts.NoAnswerRate+f.opts.FatalRate+f.opts.FailRate:
		return Fail
	}
	return Succeed
}

func (f *Fleet) answer(ctx context.Context, cmd Command) {
	delay := f.opts.Latency
	if f.opts.Jitter > 0 {
		delay += rand.N(f.opts.Jitter)
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	out := f.decide(cmd)
	if f.opts.OnAnswering != nil {
		f.opts.OnAnswering(cmd, out, time.Now())
	}
	if out == NoAnswer {
		f.Stats.NoAnswer.Add(1)
		return
	}
	if f.opts.Ack {
		path := fmt.Sprintf("/agent/task-devices/%d/ack", cmd.ID)
		if _, err := f.deliver(ctx, cmd.PC, path, fmt.Sprintf("ack-%d-%d", cmd.ID, cmd.Attempt), map[string]any{"attempt": cmd.Attempt}); err != nil && ctx.Err() == nil {
			f.Stats.Errors.Add(1)
			f.opts.Logf("agentsim: ack of %d: %v", cmd.ID, err)
		}
	}
	body := map[string]any{"status": "succeeded", "attempt": cmd.Attempt}
	switch out {
	case Fail:
		body = map[string]any{"status": "failed", "error": "simulated failure", "attempt": cmd.Attempt}
	case Fatal:
		body = map[string]any{"status": "failed", "error": "simulated fatal failure", "retryable": false, "attempt": cmd.Attempt}
	}
	code, err := f.deliver(ctx, cmd.PC, fmt.Sprintf("/agent/task-devices/%d/result", cmd.ID), fmt.Sprintf("result-%d-%d", cmd.ID, cmd.Attempt), body)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			f.Stats.Errors.Add(1)
			f.opts.Logf("agentsim: result of %d: %v", cmd.ID, err)
		}
	case code == http.StatusConflict:
		f.Stats.Conflicts.Add(1)
	case out == Succeed:
		f.Stats.Succeeded.Add(1)
	case out == Fail:
		f.Stats.Failed.Add(1)
	case out == Fatal:
		f.Stats.Fatal.Add(1)
	}
	if f.opts.OnAnswered != nil {
		f.opts.OnAnswered(cmd, out, code, time.Now())
	}
}

// deliver posts an ack or a result until the API gives a definite answer (2xx, or a 4xx
// other than 429), resending with capped backoff for up to DeliverFor while it cannot be
// reached or answers 5xx/429. key identifies the delivery across resends.
func (f *Fleet) deliver(ctx context.Context, pc, path, key string, body any) (int, error) {
	deadline := time.Now().Add(f.opts.DeliverFor)
	wait := f.opts.RetryBackoff
	for {
		code, retryAfter, err := f.send(ctx, pc, path, key, body, nil)
		if ctx.Err() != nil || !worthResending(code, retryAfter) || time.Now().Add(wait).After(deadline) {
			return code, err
		}
		select {
		case <-ctx.Done():
			return code, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
		f.Stats.Resent.Add(1)
	}
}

// worthResending: no answer at all (0), the API not ready or overloaded, or the same
// delivery still in progress (409 with Retry-After: its Idempotency-Key is claimed by a
// request that has not finished yet).
func worthResending(code int, retryAfter bool) bool {
	return code == 0 || code == http.StatusTooManyRequests || code >= 500 || (code == http.StatusConflict && retryAfter)
}

func (f *Fleet) claim(ctx context.Context, pc string) ([]Command, error) {
	var page struct {
		Items []Command `json:"items"`
	}
	code, err := f.post(ctx, pc, "/agent/pcs/"+pc+"/claim", map[string]any{"max": f.opts.Max}, &page)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("claim answered %d", code)
	}
	return page.Items, nil
}

// post sends a JSON body and decodes a 2xx answer into out; it returns the status. A
// status other than 2xx or 409 is an error.
func (f *Fleet) post(ctx context.Context, pc, path string, body, out any) (int, error) {
	code, _, err := f.send(ctx, pc, path, "", body, out)
	return code, err
}

// send is post with an optional Idempotency-Key; it also reports whether the answer
// carried Retry-After.
func (f *Fleet) send(ctx context.Context, pc, path, key string, body, out any) (code int, retryAfter bool, err error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.opts.BaseURL+path, bytes.NewReader(b))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	token := f.opts.Token
	if t, ok := f.opts.PCTokens[pc]; ok {
		token = t
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	code, retryAfter = resp.StatusCode, resp.Header.Get("Retry-After") != ""
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return code, retryAfter, err
	}
	if code/100 != 2 {
		if code == http.StatusConflict {
			return code, retryAfter, nil
		}
		return code, retryAfter, fmt.Errorf("POST %s answered %d: %s", path, code, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return code, retryAfter, fmt.Errorf("decode %s: %w", path, err)
		}
	}
	return code, retryAfter, nil
}
