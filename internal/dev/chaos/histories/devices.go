package histories

import (
	"fmt"
	"net/http"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// Device executions. The agents' history (agentsim.HistoryEvent) holds their claims, acks
// and results; the server's timeouts of unanswered attempts (task_device_events TIMEOUT)
// are added as operations of a client of their own, called when the event was written and
// open to the history's end (its commit came some time after). The model is one execution:
//
//   - a claim hands out an attempt newer than any before, and only while no attempt is
//     held: an execution is held by at most one agent at a time;
//   - an ack or a result of the held attempt is accepted (200); of any other it is refused
//     (409): a late result — of an attempt that timed out or was answered already — never
//     counts;
//   - an accepted result ends the hold (a success, or a failure not to retry, ends the
//     execution: no claim after it); so does a timeout, which only the held attempt can have,
//     or an attempt handed out in a claim whose answer was lost (no agent saw it).

// DeviceOp is an operation on one execution.
type DeviceOp struct {
	Kind    string // agentsim.HistoryClaim, HistoryAck, HistoryResult, or DeviceTimeout
	Exec    int64
	Attempt int32
	Status  string // a result's: succeeded, failed, fatal
	Holder  string
}

// DeviceTimeout is the server timing an attempt out.
const DeviceTimeout = "timeout"

// DeviceOut is what the operation was answered: an HTTP status, 0 when none came.
type DeviceOut struct{ Code int }

// deviceState is one execution as the model holds it.
type deviceState struct {
	Attempt int32 // the newest attempt handed out
	Held    bool  // Attempt is handed out and not yet resolved
	Done    bool  // the execution ended
}

// ServerTimeout is an attempt the server timed out, when its event was written.
type ServerTimeout struct {
	Exec    int64
	Attempt int32
	At      time.Time
}

// DeviceModel is the model above; executions are checked one by one.
var DeviceModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(op porcupine.Operation) int64 { return op.Input.(DeviceOp).Exec }),
	Init:      func() []any { return []any{deviceState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(deviceState), input.(DeviceOp), output.(DeviceOut)
		held := s.Held && s.Attempt == in.Attempt
		switch in.Kind {
		case agentsim.HistoryClaim:
			if s.Held || s.Done || in.Attempt <= s.Attempt {
				return nil
			}
			return []any{deviceState{Attempt: in.Attempt, Held: true}}
		case DeviceTimeout:
			switch {
			case held:
				return []any{deviceState{Attempt: s.Attempt}}
			case !s.Held && !s.Done && in.Attempt > s.Attempt: // handed out to no agent that saw it
				return []any{deviceState{Attempt: in.Attempt}}
			}
			return nil
		case agentsim.HistoryAck:
			return answered(out.Code, held, s, s)
		case agentsim.HistoryResult:
			after := deviceState{Attempt: s.Attempt, Done: in.Status != "failed"}
			return answered(out.Code, held, s, after)
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(deviceState) == b.(deviceState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(DeviceOp), output.(DeviceOut)
		code := fmt.Sprint(out.Code)
		if out.Code == 0 {
			code = "?"
		}
		switch in.Kind {
		case agentsim.HistoryClaim, DeviceTimeout:
			return fmt.Sprintf("%s attempt %d (%s)", in.Kind, in.Attempt, in.Holder)
		case agentsim.HistoryResult:
			return fmt.Sprintf("result %s of attempt %d → %s (%s)", in.Status, in.Attempt, code, in.Holder)
		}
		return fmt.Sprintf("%s attempt %d → %s (%s)", in.Kind, in.Attempt, code, in.Holder)
	},
	DescribeState: func(state any) string {
		s := state.(deviceState)
		return fmt.Sprintf("attempt %d held=%t done=%t", s.Attempt, s.Held, s.Done)
	},
}

// answered steps an ack or a result: accepted only while its attempt is held (then the
// state becomes accepted), refused otherwise; an unknown answer may be either.
func answered(code int, held bool, s, accepted deviceState) []any {
	switch code {
	case http.StatusOK:
		if held {
			return []any{accepted}
		}
		return nil
	case http.StatusConflict:
		if held {
			return nil
		}
		return []any{s}
	case 0:
		if held {
			return []any{s, accepted}
		}
		return []any{s}
	}
	return nil // any other answer (a 4xx) is not one the protocol gives an agent
}

// DeviceOps turns the agents' events and the server's timeouts into porcupine operations;
// end closes the operations whose answer never came.
func DeviceOps(events []agentsim.HistoryEvent, timeouts []ServerTimeout, end time.Time) []porcupine.Operation {
	ids := clients{}
	ops := make([]porcupine.Operation, 0, len(events)+len(timeouts))
	for _, e := range events {
		ret, client := e.Return, e.Holder
		if e.Code == 0 {
			// Open to the end: drawn apart from the holder's later operations.
			ret, client = end.UnixNano(), fmt.Sprintf("%s (unanswered %s %d/%d)", e.Holder, e.Op, e.Exec, e.Attempt)
		}
		ops = append(ops, porcupine.Operation{
			ClientId: ids.id(client),
			Input:    DeviceOp{Kind: e.Op, Exec: e.Exec, Attempt: e.Attempt, Status: e.Status, Holder: e.Holder},
			Call:     e.Call, Output: DeviceOut{Code: e.Code}, Return: max(ret, e.Call+1),
		})
	}
	for _, t := range timeouts {
		ops = append(ops, porcupine.Operation{
			ClientId: ids.id(fmt.Sprintf("server timeout %d/%d", t.Exec, t.Attempt)),
			Input:    DeviceOp{Kind: DeviceTimeout, Exec: t.Exec, Attempt: t.Attempt, Holder: "server"},
			Call:     t.At.UnixNano(), Output: DeviceOut{Code: http.StatusOK}, Return: max(end.UnixNano(), t.At.UnixNano()+1),
		})
	}
	return ops
}
