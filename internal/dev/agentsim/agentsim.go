// Package agentsim simulates the PC agents of tickgate's device dispatch engine over the
// HTTP API, speaking the agent protocol of docs/devices.md: per PC, a claim loop keeps up
// to Max commands in hand, long-polling for more while it has room; each command waits a
// latency, then is acked (optionally) and answered succeeded, failed, failed-not-retryable,
// or never; and the answer to a result carries the slot's next command, which the same
// device answerer takes on without a claim. `tickgate agent-sim`, the end-to-end tests and
// the benchmark all use it.
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

// Command is one claimed command (an attempt of a device execution).
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
	// Wait is how long a claim long-polls for work (default 20s); 0 with Legacy set.
	Wait time.Duration
	// Legacy speaks the protocol without its two shortcuts (an older agent): claims do not
	// wait, results do not ask for the next command, and an empty claim is followed by a
	// Poll pause (default 25ms) unless a result wakes the loop first.
	Legacy bool
	Poll   time.Duration
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
	// Record, when set, receives each operation on a device execution as the agent saw it
	// (a claim, an ack, a result), with when it was asked and when it was answered: the
	// client-side history the chaos run checks for linearizability.
	Record     func(HistoryEvent)
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

// HistoryEvent is one operation of an agent on one device execution. Call and Return are
// Unix nanoseconds: when the request was first sent and when its final answer came (a
// delivery resent with the same Idempotency-Key is one operation). Code is that answer's
// HTTP status; 0 means none came, so the outcome is unknown.
type HistoryEvent struct {
	Op      string `json:"op"` // HistoryClaim, HistoryAck or HistoryResult
	Exec    int64  `json:"exec"`
	Attempt int32  `json:"attempt"`
	// Holder names the device answerer that held the command (its PC and a number).
	Holder string `json:"holder"`
	// Status is a result's: succeeded, failed or fatal.
	Status string `json:"status,omitempty"`
	Code   int    `json:"code"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

// The operations of a HistoryEvent.
const (
	HistoryClaim  = "claim"
	HistoryAck    = "ack"
	HistoryResult = "result"
)

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
	opts    Options
	Stats   Stats
	wg      sync.WaitGroup
	holders atomic.Int64 // numbers the device answerers, for the history
}

// Start runs one agent loop per PC until ctx ends; Wait waits for them.
func Start(ctx context.Context, opts Options) *Fleet {
	if opts.Max <= 0 {
		opts.Max = 20
	}
	if opts.Poll <= 0 {
		opts.Poll = 25 * time.Millisecond
	}
	if opts.Wait <= 0 && !opts.Legacy {
		opts.Wait = 20 * time.Second
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
		opts.HTTPClient = &http.Client{Transport: tr, Timeout: opts.Wait + 30*time.Second}
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

// agent is one PC's claim loop: it claims as many commands as it has room for (Max minus
// those in hand), long-polling while there is none, and hands each to a device answerer.
func (f *Fleet) agent(ctx context.Context, pc string) {
	defer f.wg.Done()
	wake := make(chan struct{}, 1)
	var inHand atomic.Int64
	backoff := time.Duration(0) // after a failed claim: RetryBackoff doubled up to 2 s
	for ctx.Err() == nil {
		room := f.opts.Max - int(inHand.Load())
		if room <= 0 {
			select {
			case <-ctx.Done():
			case <-wake:
			}
			continue
		}
		asked := time.Now()
		cmds, err := f.claim(ctx, pc, room)
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
		got := time.Now()
		f.handOut(ctx, pc, cmds, asked, got, &inHand, wake)
		// Claim again at once when more may wait, or when the claim did wait (a long-poll
		// that ended empty); an API that answered an empty long-poll at once (one that
		// honours no wait) gets the Poll pause, as an older agent's claims do.
		if len(cmds) > 0 || (f.opts.Wait > 0 && time.Since(asked) >= f.opts.Wait/2) {
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(f.opts.Poll):
		}
	}
}

// handOut gives each command a device answerer of its own, which answers it and then every
// next command the answers carry; when the chain ends it leaves room for the claim loop.
func (f *Fleet) handOut(ctx context.Context, pc string, cmds []Command, asked, at time.Time, inHand *atomic.Int64, wake chan struct{}) {
	for _, cmd := range cmds {
		inHand.Add(1)
		holder := fmt.Sprintf("%s/%d", pc, f.holders.Add(1))
		f.claimed(pc, &cmd, at)
		f.record(HistoryEvent{Op: HistoryClaim, Exec: cmd.ID, Attempt: cmd.Attempt, Holder: holder, Code: http.StatusOK}, asked, at)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for next := &cmd; next != nil; {
				next = f.answer(ctx, *next, holder)
				if next != nil {
					f.claimed(pc, next, time.Now())
				}
			}
			inHand.Add(-1)
			select {
			case wake <- struct{}{}:
			default:
			}
		}()
	}
}

func (f *Fleet) claimed(pc string, cmd *Command, at time.Time) {
	cmd.PC = pc
	f.Stats.Claimed.Add(1)
	if f.opts.OnClaimed != nil {
		f.opts.OnClaimed(*cmd, at)
	}
}

func (f *Fleet) decide(cmd Command) Outcome {
	if f.opts.Decide != nil {
		return f.opts.Decide(cmd)
	}
	r := rand.Float64() // #nosec G404 -- a simulated agent's failure draw, no secret
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

// record hands an operation to Options.Record, timed from call to ret.
func (f *Fleet) record(e HistoryEvent, call, ret time.Time) {
	if f.opts.Record == nil {
		return
	}
	e.Call, e.Return = call.UnixNano(), ret.UnixNano()
	f.opts.Record(e)
}

// answer answers cmd after its latency and returns the next command the answer carries,
// which holder then holds.
func (f *Fleet) answer(ctx context.Context, cmd Command, holder string) *Command {
	delay := f.opts.Latency
	if f.opts.Jitter > 0 {
		delay += rand.N(f.opts.Jitter) // #nosec G404 -- a simulated agent's jitter, no secret
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(delay):
	}
	out := f.decide(cmd)
	if f.opts.OnAnswering != nil {
		f.opts.OnAnswering(cmd, out, time.Now())
	}
	if out == NoAnswer {
		f.Stats.NoAnswer.Add(1)
		return nil
	}
	if f.opts.Ack {
		path := fmt.Sprintf("/agent/task-devices/%d/ack", cmd.ID)
		asked := time.Now()
		code, err := f.deliver(ctx, cmd.PC, path, fmt.Sprintf("ack-%d-%d", cmd.ID, cmd.Attempt), map[string]any{"attempt": cmd.Attempt}, nil)
		if err != nil && ctx.Err() == nil {
			f.Stats.Errors.Add(1)
			f.opts.Logf("agentsim: ack of %d: %v", cmd.ID, err)
		}
		f.record(HistoryEvent{Op: HistoryAck, Exec: cmd.ID, Attempt: cmd.Attempt, Holder: holder, Code: definite(code)}, asked, time.Now())
	}
	body := map[string]any{"status": "succeeded", "attempt": cmd.Attempt}
	switch out {
	case Fail:
		body = map[string]any{"status": "failed", "error": "simulated failure", "attempt": cmd.Attempt}
	case Fatal:
		body = map[string]any{"status": "failed", "error": "simulated fatal failure", "retryable": false, "attempt": cmd.Attempt}
	}
	if !f.opts.Legacy {
		body["claim_next"] = true
	}
	var answer struct {
		Next *Command `json:"next"`
	}
	asked := time.Now()
	code, err := f.deliver(ctx, cmd.PC, fmt.Sprintf("/agent/task-devices/%d/result", cmd.ID), fmt.Sprintf("result-%d-%d", cmd.ID, cmd.Attempt), body, &answer)
	answered := time.Now()
	status := map[Outcome]string{Succeed: "succeeded", Fail: "failed", Fatal: "fatal"}[out]
	f.record(HistoryEvent{Op: HistoryResult, Exec: cmd.ID, Attempt: cmd.Attempt, Holder: holder, Status: status, Code: definite(code)}, asked, answered)
	if code == http.StatusOK && answer.Next != nil {
		// The answer handed this holder the slot's next command: a claim of it, in the
		// same request.
		f.record(HistoryEvent{Op: HistoryClaim, Exec: answer.Next.ID, Attempt: answer.Next.Attempt, Holder: holder, Code: http.StatusOK}, asked, answered)
	}
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
	if code != http.StatusOK {
		return nil
	}
	return answer.Next
}

// deliver posts an ack or a result until the API gives a definite answer (2xx, or a 4xx
// other than 429), resending with capped backoff for up to DeliverFor while it cannot be
// reached or answers 5xx/429. key identifies the delivery across resends; a 2xx answer is
// decoded into out.
func (f *Fleet) deliver(ctx context.Context, pc, path, key string, body, out any) (int, error) {
	deadline := time.Now().Add(f.opts.DeliverFor)
	wait := f.opts.RetryBackoff
	for {
		code, retryAfter, err := f.send(ctx, pc, path, key, body, out)
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

// definite is an answer's status as the history keeps it: 0 (unknown) unless the API gave
// a definite answer — 2xx, or a 4xx other than 429 — since a 5xx or a lost answer may
// come after the request committed.
func definite(code int) int {
	if worthResending(code, false) {
		return 0
	}
	return code
}

// worthResending: no answer at all (0), the API not ready or overloaded, or the same
// delivery still in progress (409 with Retry-After: its Idempotency-Key is claimed by a
// request that has not finished yet).
func worthResending(code int, retryAfter bool) bool {
	return code == 0 || code == http.StatusTooManyRequests || code >= 500 || (code == http.StatusConflict && retryAfter)
}

func (f *Fleet) claim(ctx context.Context, pc string, max int) ([]Command, error) {
	var page struct {
		Items []Command `json:"items"`
	}
	body := map[string]any{"max": max}
	if f.opts.Wait > 0 {
		body["wait"] = f.opts.Wait.String()
	}
	code, err := f.post(ctx, pc, "/agent/pcs/"+pc+"/claim", body, &page)
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
