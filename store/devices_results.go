package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// SuccessReport is an agent's report that an attempt succeeded, for the group commit.
type SuccessReport struct {
	ID int64
	// Attempt, when given, must be the attempt in flight.
	Attempt *int32
	// AgentPC is the PC of the reporting agent's token ("" for an admin): an agent may
	// report only its own PC's executions.
	AgentPC string
	// Key, when its Key is set, is the request's Idempotency-Key, and RequestHash the hash
	// of its body.
	Key         IdempotencyKey
	RequestHash []byte
	// ClaimNext asks for the slot's next execution in the answer.
	ClaimNext bool
}

// SuccessAnswer is one report's outcome.
type SuccessAnswer struct {
	Verdict domain.SuccessVerdict
	// PCName and TaskID name the execution's PC and task when it exists.
	PCName string
	TaskID int64
	// Done is the execution as the statement that recorded the result left it, and Next
	// the slot's next execution handed to the agent, if it asked and there was one
	// (recorded and replayed answers that carry them).
	Done *DeviceExecutionView
	Next *ClaimedCommand
	// Stored is a replayed answer that the general path stored (a rendered response).
	Stored *StoredResponse
	// Outcome is what recording did (recorded only): refilled slots and whether the
	// dispatcher should look at the task.
	Outcome Outcome
}

// ResultBatcher group-commits agents' successes: the reports that arrive while a batch is
// being written wait and go together in the next one, one statement for all of them
// (RecordSuccesses). Up to MaxInFlight batches are written at once. It needs no lifecycle:
// a batch is written by a goroutine that exists only while reports wait.
type ResultBatcher struct {
	st          *Store
	maxBatch    int
	maxInFlight int

	mu       sync.Mutex
	queue    []*pendingSuccess
	inFlight int
}

type pendingSuccess struct {
	r    SuccessReport
	done chan struct{}
	ans  SuccessAnswer
	err  error
}

// ResultBatcherOptions configure a ResultBatcher.
type ResultBatcherOptions struct {
	// MaxBatch bounds one statement's reports (default 500).
	MaxBatch int
	// MaxInFlight bounds the batches written at once (default 4: on 2 cores, a batch waiting on its commit or on the CPU leaves the others going).
	MaxInFlight int
}

// NewResultBatcher builds a batcher on s.
func (s *Store) NewResultBatcher(o ResultBatcherOptions) *ResultBatcher {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 500
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 4
	}
	return &ResultBatcher{st: s, maxBatch: o.MaxBatch, maxInFlight: o.MaxInFlight}
}

// batchTimeout bounds one batch's statement.
const batchTimeout = 30 * time.Second

// Report records r with the reports arriving with it and returns its answer once the
// statement committed. An error means nothing is known to have committed for it (the
// statement failed; with a lost connection it may have committed, which a resend with the
// same Idempotency-Key finds out).
func (b *ResultBatcher) Report(ctx context.Context, r SuccessReport) (SuccessAnswer, error) {
	p := &pendingSuccess{r: r, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if b.inFlight < b.maxInFlight {
		b.inFlight++
		go b.write()
	}
	b.mu.Unlock()
	// The report is written whether or not its requester still waits: the agent's resend
	// then finds it recorded.
	select {
	case <-p.done:
		return p.ans, p.err
	case <-ctx.Done():
		<-p.done
		return p.ans, p.err
	}
}

// gatherWindow is how long a writer about to write a small batch waits for the results
// arriving with it: at a burst's start the first result would otherwise go alone, and the
// rest would wait for its statement.
const gatherWindow = 2 * time.Millisecond

// smallBatch is the size under which a batch waits gatherWindow for company.
const smallBatch = 8

// write writes batches until none waits.
func (b *ResultBatcher) write() {
	for {
		b.mu.Lock()
		small := len(b.queue) < smallBatch
		b.mu.Unlock()
		if small {
			time.Sleep(gatherWindow)
		}
		batch := b.take()
		if batch == nil {
			return
		}
		b.st.recordBatch(batch)
	}
}

// take removes the next batch from the queue: at most maxBatch reports, one per execution
// and per Idempotency-Key (a second report of either waits for the next batch). nil ends
// the writer.
func (b *ResultBatcher) take() []*pendingSuccess {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.inFlight--
		return nil
	}
	var batch, rest []*pendingSuccess
	ids := map[int64]bool{}
	keys := map[IdempotencyKey]bool{}
	for _, p := range b.queue {
		dupKey := p.r.Key.Key != "" && keys[p.r.Key]
		if len(batch) == b.maxBatch || ids[p.r.ID] || dupKey {
			rest = append(rest, p)
			continue
		}
		ids[p.r.ID] = true
		if p.r.Key.Key != "" {
			keys[p.r.Key] = true
		}
		batch = append(batch, p)
	}
	b.queue = rest
	return batch
}

// recordBatch writes one batch and hands each report its answer. A batch whose statement
// fails for another reason than a lost database is written again one report at a time,
// so one report cannot fail the others.
func (s *Store) recordBatch(batch []*pendingSuccess) {
	reports := make([]SuccessReport, len(batch))
	for i, p := range batch {
		reports[i] = p.r
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	answers, err := s.RecordSuccesses(ctx, reports)
	if err != nil && len(batch) > 1 && !IsUnavailable(err) {
		for _, p := range batch {
			s.recordBatch([]*pendingSuccess{p})
		}
		return
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.ans = answers[i]
		}
		close(p.done)
	}
}

// RecordSuccesses records reports in one statement and answers each (see ResultBatcher;
// Report is the way in). After the commit it counts, for the PCs where the statement could
// not tell, whether their share of the task is over.
func (s *Store) RecordSuccesses(ctx context.Context, reports []SuccessReport) ([]SuccessAnswer, error) {
	n := len(reports)
	p := dbgen.RecordSuccessesParams{
		Ids: make([]int64, n), Attempts: make([]int32, n), AgentPcs: make([]string, n), TokenIds: make([]int64, n),
		Keys: make([]string, n), Paths: make([]string, n), Hashes: make([][]byte, n), ClaimNext: make([]bool, n),
	}
	for i, r := range reports {
		p.Ids[i], p.AgentPcs[i], p.ClaimNext[i] = r.ID, r.AgentPC, r.ClaimNext
		if r.Attempt != nil {
			p.Attempts[i] = *r.Attempt
		}
		p.TokenIds[i], p.Keys[i], p.Paths[i], p.Hashes[i] = r.Key.TokenID, r.Key.Key, r.Key.Path, r.RequestHash
		if p.Hashes[i] == nil {
			p.Hashes[i] = []byte{}
		}
	}
	rows, err := s.Q.RecordSuccesses(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("record %d results: %w", n, mapErr(err))
	}
	if len(rows) != n {
		return nil, fmt.Errorf("record %d results: %d answers", n, len(rows))
	}
	answers := make([]SuccessAnswer, n)
	var recount []int // reports whose PC may have finished its share, unknown to the statement
	for i, row := range rows {
		a, err := successAnswer(row)
		if err != nil {
			return nil, fmt.Errorf("result of execution %d: %w", reports[i].ID, err)
		}
		if a.Verdict == domain.SuccessRecorded {
			if row.CreatedID != 0 {
				a.Outcome.Refilled = []int64{row.CreatedID}
			}
			if len(a.Outcome.Refilled) == 0 {
				if row.LeftOnPc == 0 {
					a.Outcome.CheckTask = true
				} else {
					recount = append(recount, i)
				}
			}
		}
		answers[i] = a
	}
	if err := s.recountPCShares(ctx, answers, recount); err != nil {
		return nil, err
	}
	return answers, nil
}

// recountPCShares sets CheckTask on the answers at idx whose PC holds no execution of the
// task any more, counted after the commit (one statement for them all): of several
// writers finishing a PC's share at once, the last to commit sees every other one.
func (s *Store) recountPCShares(ctx context.Context, answers []SuccessAnswer, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	type share struct{ pc, task int64 }
	seen := map[share]bool{}
	var pcs, tasks []int64
	for _, i := range idx {
		k := share{answers[i].Done.PcID, answers[i].Done.TaskID}
		if !seen[k] {
			seen[k] = true
			pcs, tasks = append(pcs, k.pc), append(tasks, k.task)
		}
	}
	over, err := s.Q.PCsWithoutExecutionsOf(ctx, dbgen.PCsWithoutExecutionsOfParams{PcIds: pcs, TaskIds: tasks})
	if err != nil {
		return fmt.Errorf("count executions left on %d pcs: %w", len(pcs), mapErr(err))
	}
	done := map[share]bool{}
	for _, o := range over {
		done[share{o.PcID, o.TaskID}] = true
	}
	for _, i := range idx {
		if done[share{answers[i].Done.PcID, answers[i].Done.TaskID}] {
			answers[i].Outcome.CheckTask = true
		}
	}
	return nil
}

// successAnswer reads one row of RecordSuccesses.
func successAnswer(row dbgen.RecordSuccessesRow) (SuccessAnswer, error) {
	a := SuccessAnswer{Verdict: domain.SuccessVerdict(row.Verdict), PCName: row.PcName, TaskID: row.TaskID}
	if row.StoredStatus != 0 && row.Answer == "" {
		a.Stored = &StoredResponse{Status: int(row.StoredStatus), ContentType: row.StoredContentType, Body: row.StoredBody}
	}
	if row.Answer != "" {
		var payload []byte
		if row.NextPayload != "" {
			payload = []byte(row.NextPayload)
		}
		var err error
		if a.Done, a.Next, err = decodeResultAnswer([]byte(row.Answer), payload); err != nil {
			return a, err
		}
	}
	if a.Verdict == domain.SuccessRecorded {
		if a.Done == nil {
			return a, errors.New("recorded without an answer")
		}
		a.Outcome = Outcome{ExecutionID: a.Done.ID, TaskID: a.Done.TaskID, PCID: a.Done.PcID, Status: domain.ExecutionSucceeded, Attempt: a.Done.Attempt, View: a.Done}
	}
	return a, nil
}

// resultAnswer is what RecordSuccesses keeps with an Idempotency-Key and answers with: the
// execution as the result left it, and the next execution handed out (without its task's
// payload, which is read afresh: it never changes).
type resultAnswer struct {
	Done struct {
		ID          int64      `json:"id"`
		TaskID      int64      `json:"task_id"`
		DeviceID    int64      `json:"device_id"`
		PcID        int64      `json:"pc_id"`
		Slot        *int32     `json:"slot"`
		Status      string     `json:"status"`
		Attempt     int32      `json:"attempt"`
		MaxAttempts int32      `json:"max_attempts"`
		Error       string     `json:"error"`
		CreatedAt   time.Time  `json:"created_at"`
		SentAt      *time.Time `json:"sent_at"`
		AckedAt     *time.Time `json:"acked_at"`
		CompletedAt *time.Time `json:"completed_at"`
		TimeoutAt   *time.Time `json:"timeout_at"`
		Serial      string     `json:"device_serial"`
		PcName      string     `json:"pc_name"`
	} `json:"done"`
	Next *struct {
		ID          int64      `json:"id"`
		TaskID      int64      `json:"task_id"`
		Slot        int32      `json:"slot"`
		Attempt     int32      `json:"attempt"`
		MaxAttempts int32      `json:"max_attempts"`
		SentAt      *time.Time `json:"sent_at"`
		TimeoutAt   *time.Time `json:"timeout_at"`
		Serial      string     `json:"device_serial"`
	} `json:"next"`
}

func decodeResultAnswer(b, nextPayload []byte) (*DeviceExecutionView, *ClaimedCommand, error) {
	var a resultAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, nil, fmt.Errorf("decode answer: %w", err)
	}
	d := a.Done
	done := &DeviceExecutionView{
		ID: d.ID, TaskID: d.TaskID, DeviceID: d.DeviceID, PcID: d.PcID, Slot: d.Slot, Status: domain.ExecutionStatus(d.Status),
		Attempt: d.Attempt, MaxAttempts: d.MaxAttempts, Error: d.Error, CreatedAt: d.CreatedAt, SentAt: d.SentAt,
		AckedAt: d.AckedAt, CompletedAt: d.CompletedAt, TimeoutAt: d.TimeoutAt, DeviceSerial: d.Serial, PcName: d.PcName,
	}
	if a.Next == nil {
		return done, nil, nil
	}
	n := a.Next
	payload := json.RawMessage(nextPayload)
	if payload == nil {
		payload = json.RawMessage("null")
	}
	return done, &ClaimedCommand{
		PcID: done.PcID, ID: n.ID, TaskID: n.TaskID, Slot: n.Slot, Attempt: n.Attempt, MaxAttempts: n.MaxAttempts,
		SentAt: n.SentAt, TimeoutAt: n.TimeoutAt, DeviceSerial: n.Serial, Payload: payload,
	}, nil
}

// StoredResultAnswer reads back a result's first answer kept with its Idempotency-Key
// (StoredResponse.Answer), for a replay that reached the general path.
func (s *Store) StoredResultAnswer(ctx context.Context, answer []byte) (*DeviceExecutionView, *ClaimedCommand, error) {
	done, next, err := decodeResultAnswer(answer, nil)
	if err != nil || next == nil {
		return done, next, err
	}
	t, err := s.GetDeviceTask(ctx, next.TaskID)
	if err != nil {
		return nil, nil, err
	}
	next.Payload = t.Payload
	return done, next, nil
}
