package histories

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Rollout tasks run by an external executor. The rollout claims each task (it becomes
// RUNNING, with its started_at); the executor — a client of the API — reads the tasks and
// reports results (POST /task-runs/{id}/result, answered 202 while the task is AVAILABLE or
// RUNNING, 409 once it is final), sometimes two different results for one task at once.
// The model is one task:
//
//   - it is claimed once: every read that shows a started_at shows the same one;
//   - a result is accepted (202) only while no outcome has been seen; the outcome, once a
//     read shows it, is one of the accepted results — never a refused one — and every later
//     read shows the same: a task's result is taken once;
//   - a refused result (409) comes only after some result was accepted (nothing else ends
//     an external task here);
//   - a read shows the task not final only before its outcome was seen.
//
// (A result is applied by the rollout's workflow after the 202, so a read right after one
// may still show the task RUNNING: the outcome is placed where it is first seen.)

// TaskOp is an operation on one task.
type TaskOp struct {
	Kind   string // TaskResult or TaskRead
	Task   int64
	Result string // a result's id, carried in its output as {"by": id}
	Client string
}

// The kinds of TaskOp.
const (
	TaskResult = "result"
	TaskRead   = "read"
)

// TaskOut is an operation's answer: the HTTP status (0: none came) and what a read saw.
type TaskOut struct {
	Code      int
	Status    string // a read: the task's status
	By        string // a read of a DONE task: the id its output names
	StartedAt string // a read: started_at, "" while unclaimed
}

type taskState struct {
	Accepted  string // the accepted results' ids, sorted, joined by spaces
	Outcome   string // the result a read showed
	StartedAt string
}

// TaskModel is the model above; tasks are checked one by one.
var TaskModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(op porcupine.Operation) int64 { return op.Input.(TaskOp).Task }),
	Init:      func() []any { return []any{taskState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(taskState), input.(TaskOp), output.(TaskOut)
		switch in.Kind {
		case TaskRead:
			if out.Code != http.StatusOK {
				return nil
			}
			if out.StartedAt != "" {
				if s.StartedAt != "" && s.StartedAt != out.StartedAt {
					return nil // claimed a second time
				}
				s.StartedAt = out.StartedAt
			}
			switch out.Status {
			case "DONE":
				if !slices.Contains(strings.Fields(s.Accepted), out.By) || (s.Outcome != "" && s.Outcome != out.By) {
					return nil
				}
				s.Outcome = out.By
				return []any{s}
			case "AVAILABLE", "RUNNING", "PENDING", "NOT_STARTED":
				if s.Outcome != "" {
					return nil
				}
				return []any{s}
			}
			return nil // FAILED, CANCELED, SKIPPED: no such result was sent
		case TaskResult:
			accepted := s
			ids := strings.Fields(s.Accepted)
			if i, found := slices.BinarySearch(ids, in.Result); !found {
				accepted.Accepted = strings.Join(slices.Insert(ids, i, in.Result), " ")
			}
			switch out.Code {
			case http.StatusAccepted:
				if s.Outcome != "" {
					return nil
				}
				return []any{accepted}
			case http.StatusConflict:
				if s.Outcome == "" && s.Accepted == "" {
					return nil
				}
				return []any{s}
			case 0:
				if s.Outcome != "" {
					return []any{s}
				}
				return []any{s, accepted}
			}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(taskState) == b.(taskState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(TaskOp), output.(TaskOut)
		if in.Kind == TaskRead {
			return fmt.Sprintf("read → %s %s started %s", out.Status, out.By, out.StartedAt)
		}
		code := fmt.Sprint(out.Code)
		if out.Code == 0 {
			code = "?"
		}
		return fmt.Sprintf("result %s → %s", in.Result, code)
	},
	DescribeState: func(state any) string {
		s := state.(taskState)
		return fmt.Sprintf("accepted [%s] outcome %q started %s", s.Accepted, s.Outcome, s.StartedAt)
	},
}
