package histories

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Schedule commands. Clients pause, resume and trigger a schedule, each command with a
// request id of its own (the Idempotency-Key its resends keep), and read what the schedule
// is: whether it is paused, and the manual runs it has, each named by the request that
// asked for it (a workflow action's run carries it in its workflow id). The model is one
// schedule:
//
//   - a pause or a resume that was answered 200 took effect between its call and its
//     answer; a read of the state sees the last one;
//   - a trigger answered 200 fired once: from then on every read of the runs has its run,
//     exactly one, and no read ever has a run of a request that was refused (4xx) or not yet
//     sent; a trigger fires whether the schedule is paused or not (an explicit request);
//   - a command with no answer may have taken effect, at any time after it was sent.

// ScheduleOp is an operation on one schedule.
type ScheduleOp struct {
	Kind     string // SchedulePause, ScheduleResume, ScheduleTrigger, ScheduleReadPaused, ScheduleReadRuns
	Schedule string
	Request  string // a command's request id
	Client   string
}

// The kinds of ScheduleOp.
const (
	SchedulePause      = "pause"
	ScheduleResume     = "resume"
	ScheduleTrigger    = "trigger"
	ScheduleReadPaused = "read paused"
	ScheduleReadRuns   = "read runs"
)

// ScheduleOut is an operation's answer: the HTTP status (0: none came) and what a read saw.
type ScheduleOut struct {
	Code     int
	Paused   bool
	Requests []string // read runs: the request of each manual run, sorted
}

type scheduleState struct {
	Paused bool
	Taken  string // the requests that fired, sorted, joined by spaces
}

func (s scheduleState) with(req string) scheduleState {
	taken := strings.Fields(s.Taken)
	if i, found := slices.BinarySearch(taken, req); !found {
		taken = slices.Insert(taken, i, req)
	}
	return scheduleState{Paused: s.Paused, Taken: strings.Join(taken, " ")}
}

// ScheduleModel is the model above; schedules are checked one by one.
var ScheduleModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(op porcupine.Operation) string { return op.Input.(ScheduleOp).Schedule }),
	Init:      func() []any { return []any{scheduleState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(scheduleState), input.(ScheduleOp), output.(ScheduleOut)
		var effect scheduleState
		switch in.Kind {
		case ScheduleReadPaused:
			if out.Code == http.StatusOK && out.Paused == s.Paused {
				return []any{s}
			}
			return nil
		case ScheduleReadRuns:
			if out.Code == http.StatusOK && strings.Join(out.Requests, " ") == s.Taken {
				return []any{s} // a request with two runs reads as it twice: never equal
			}
			return nil
		case SchedulePause:
			effect = scheduleState{Paused: true, Taken: s.Taken}
		case ScheduleResume:
			effect = scheduleState{Paused: false, Taken: s.Taken}
		case ScheduleTrigger:
			if strings.Contains(" "+s.Taken+" ", " "+in.Request+" ") {
				return nil // a request fires once
			}
			effect = s.with(in.Request)
		default:
			return nil
		}
		switch {
		case out.Code == 0:
			return []any{s, effect}
		case out.Code/100 == 2:
			return []any{effect}
		case out.Code/100 == 4:
			return []any{s}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(scheduleState) == b.(scheduleState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(ScheduleOp), output.(ScheduleOut)
		switch in.Kind {
		case ScheduleReadPaused:
			return fmt.Sprintf("read paused → %t", out.Paused)
		case ScheduleReadRuns:
			return fmt.Sprintf("read runs → %d manual: %s", len(out.Requests), strings.Join(out.Requests, " "))
		}
		code := fmt.Sprint(out.Code)
		if out.Code == 0 {
			code = "?"
		}
		return fmt.Sprintf("%s %s → %s", in.Kind, in.Request, code)
	},
	DescribeState: func(state any) string {
		s := state.(scheduleState)
		return fmt.Sprintf("paused=%t fired: %s", s.Paused, s.Taken)
	},
}
