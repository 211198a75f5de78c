package histories

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// op builds an operation of a hand-made history: called at call, answered at ret (in
// arbitrary units).
func op(client int, in, out any, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

func check(t *testing.T, m porcupine.NondeterministicModel, ops []porcupine.Operation) bool {
	t.Helper()
	return porcupine.CheckOperations(m.ToModel(), ops)
}

func claim(exec int64, attempt int32, holder string) DeviceOp {
	return DeviceOp{Kind: agentsim.HistoryClaim, Exec: exec, Attempt: attempt, Holder: holder}
}

func result(exec int64, attempt int32, status, holder string) DeviceOp {
	return DeviceOp{Kind: agentsim.HistoryResult, Exec: exec, Attempt: attempt, Status: status, Holder: holder}
}

var (
	ok       = DeviceOut{Code: 200}
	refused  = DeviceOut{Code: 409}
	noAnswer = DeviceOut{Code: 0}
)

// TestDoubleHandedExecutionIsCaught is the planted bug: an execution handed to two agents
// at once — the second claim answered while the first agent still holds it, no result or
// timeout between — is not linearizable, and the check says so and draws it.
func TestDoubleHandedExecutionIsCaught(t *testing.T) {
	events := []agentsim.HistoryEvent{
		{Op: agentsim.HistoryClaim, Exec: 7, Attempt: 1, Holder: "pc-1/1", Code: 200, Call: 0, Return: 10},
		{Op: agentsim.HistoryClaim, Exec: 7, Attempt: 2, Holder: "pc-1/2", Code: 200, Call: 20, Return: 30},
		{Op: agentsim.HistoryResult, Exec: 7, Attempt: 1, Holder: "pc-1/1", Status: "succeeded", Code: 200, Call: 40, Return: 50},
		{Op: agentsim.HistoryResult, Exec: 7, Attempt: 2, Holder: "pc-1/2", Status: "succeeded", Code: 409, Call: 60, Return: 70},
	}
	dir := t.TempDir()
	r, err := Check("devices", DeviceModel.ToModel(), DeviceOps(events, nil, time.Unix(0, 100)), dir, time.Minute)
	require.NoError(t, err)
	require.False(t, r.Linearizable, "two agents held execution 7 at once")
	require.False(t, r.Passed())
	require.Equal(t, filepath.Join(dir, "porcupine-devices.html"), r.Visualization)
	html, err := os.ReadFile(r.Visualization)
	require.NoError(t, err)
	require.Contains(t, string(html), "claim attempt 2 (pc-1/2)")

	// The same hand-out after the server timed attempt 1 out is a retry, and legal; the
	// first agent's late result is refused.
	events[3].Code = 200
	events[2].Code = 409
	r, err = Check("devices", DeviceModel.ToModel(), DeviceOps(events, []ServerTimeout{{Exec: 7, Attempt: 1, At: time.Unix(0, 15)}}, time.Unix(0, 100)), dir, time.Minute)
	require.NoError(t, err)
	require.True(t, r.Passed(), r.String())
}

func TestDeviceModel(t *testing.T) {
	timeout := func(exec int64, attempt int32) DeviceOp {
		return DeviceOp{Kind: DeviceTimeout, Exec: exec, Attempt: attempt}
	}
	ack := func(exec int64, attempt int32) DeviceOp {
		return DeviceOp{Kind: agentsim.HistoryAck, Exec: exec, Attempt: attempt}
	}
	for name, tc := range map[string]struct {
		ops   []porcupine.Operation
		legal bool
	}{
		"claim, ack, success": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, ack(1, 1), ok, 2, 3), op(0, result(1, 1, "succeeded", "a"), ok, 4, 5),
		}, true},
		"failure, retry on another holder, success": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "failed", "a"), ok, 2, 3),
			op(1, claim(1, 2, "b"), ok, 4, 5), op(1, result(1, 2, "succeeded", "b"), ok, 6, 7),
		}, true},
		"no answer, timeout, retry; the late result refused": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(2, timeout(1, 1), ok, 2, 100),
			op(1, claim(1, 2, "b"), ok, 4, 5), op(0, result(1, 1, "succeeded", "a"), refused, 6, 7),
		}, true},
		"a claim lost on the way, timed out, then attempt 2": {[]porcupine.Operation{
			op(2, timeout(1, 1), ok, 2, 100), op(1, claim(1, 2, "b"), ok, 4, 5),
		}, true},
		"a result whose answer was lost, then a retried claim": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "failed", "a"), noAnswer, 2, 100), op(1, claim(1, 2, "b"), ok, 4, 5),
		}, true},
		"two agents at once": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(1, claim(1, 2, "b"), ok, 2, 3),
		}, false},
		"the same attempt handed out twice": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "failed", "a"), ok, 2, 3), op(1, claim(1, 1, "b"), ok, 4, 5),
		}, false},
		"a result accepted twice": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "failed", "a"), ok, 2, 3), op(0, result(1, 1, "failed", "a"), ok, 4, 5),
		}, false},
		"a result accepted after its attempt timed out": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(2, timeout(1, 1), ok, 2, 3), op(0, result(1, 1, "succeeded", "a"), ok, 4, 5),
		}, false},
		"the held attempt's result refused": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "succeeded", "a"), refused, 2, 3),
		}, false},
		"a claim after the execution succeeded": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(0, result(1, 1, "succeeded", "a"), ok, 2, 3), op(1, claim(1, 2, "b"), ok, 4, 5),
		}, false},
		"an ack of an attempt no longer held": {[]porcupine.Operation{
			op(0, claim(1, 1, "a"), ok, 0, 1), op(2, timeout(1, 1), ok, 2, 3), op(0, ack(1, 1), ok, 4, 5),
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.legal, check(t, DeviceModel, tc.ops))
		})
	}
}

func TestScheduleModel(t *testing.T) {
	cmd := func(kind, req string) ScheduleOp { return ScheduleOp{Kind: kind, Schedule: "s", Request: req} }
	readPaused := ScheduleOp{Kind: ScheduleReadPaused, Schedule: "s"}
	readRuns := ScheduleOp{Kind: ScheduleReadRuns, Schedule: "s"}
	paused := func(p bool) ScheduleOut { return ScheduleOut{Code: 200, Paused: p} }
	runs := func(reqs ...string) ScheduleOut { return ScheduleOut{Code: 200, Requests: reqs} }
	done := ScheduleOut{Code: 200}
	lost := ScheduleOut{Code: 0}
	for name, tc := range map[string]struct {
		ops   []porcupine.Operation
		legal bool
	}{
		"pause, trigger while paused, resume": {[]porcupine.Operation{
			op(0, cmd(SchedulePause, "p1"), done, 0, 1), op(0, readPaused, paused(true), 2, 3),
			op(0, cmd(ScheduleTrigger, "t1"), done, 4, 5), op(1, readRuns, runs("t1"), 6, 7),
			op(0, cmd(ScheduleResume, "r1"), done, 8, 9), op(1, readPaused, paused(false), 10, 11),
		}, true},
		"a read concurrent with a pause may see either": {[]porcupine.Operation{
			op(0, cmd(SchedulePause, "p1"), done, 0, 10), op(1, readPaused, paused(false), 1, 2), op(2, readPaused, paused(true), 3, 4),
		}, true},
		"a trigger with no answer fired after all": {[]porcupine.Operation{
			op(0, cmd(ScheduleTrigger, "t1"), lost, 0, 100), op(1, readRuns, runs(), 1, 2), op(1, readRuns, runs("t1"), 3, 4),
		}, true},
		"a trigger refused never fires": {[]porcupine.Operation{
			op(0, cmd(ScheduleTrigger, "t1"), ScheduleOut{Code: 409}, 0, 1), op(1, readRuns, runs("t1"), 3, 4),
		}, false},
		"a trigger answered is not read afterwards": {[]porcupine.Operation{
			op(0, cmd(ScheduleTrigger, "t1"), done, 0, 1), op(1, readRuns, runs(), 2, 3),
		}, false},
		"a trigger fired twice": {[]porcupine.Operation{
			op(0, cmd(ScheduleTrigger, "t1"), done, 0, 1), op(1, readRuns, runs("t1", "t1"), 2, 3),
		}, false},
		"a run read before its trigger was sent": {[]porcupine.Operation{
			op(1, readRuns, runs("t1"), 0, 1), op(0, cmd(ScheduleTrigger, "t1"), done, 2, 3),
		}, false},
		"a pause answered, then read active": {[]porcupine.Operation{
			op(0, cmd(SchedulePause, "p1"), done, 0, 1), op(1, readPaused, paused(false), 2, 3),
		}, false},
		"a run read, then gone": {[]porcupine.Operation{
			op(0, cmd(ScheduleTrigger, "t1"), lost, 0, 100), op(1, readRuns, runs("t1"), 1, 2), op(1, readRuns, runs(), 3, 4),
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.legal, check(t, ScheduleModel, tc.ops))
		})
	}
}

func TestTaskModel(t *testing.T) {
	res := func(id string) TaskOp { return TaskOp{Kind: TaskResult, Task: 1, Result: id} }
	read := TaskOp{Kind: TaskRead, Task: 1}
	seen := func(status, by, started string) TaskOut {
		return TaskOut{Code: 200, Status: status, By: by, StartedAt: started}
	}
	accepted, refused, lost := TaskOut{Code: 202}, TaskOut{Code: 409}, TaskOut{Code: 0}
	for name, tc := range map[string]struct {
		ops   []porcupine.Operation
		legal bool
	}{
		"claimed, one result, done": {[]porcupine.Operation{
			op(0, read, seen("RUNNING", "", "t0"), 0, 1), op(0, res("a"), accepted, 2, 3),
			op(1, read, seen("RUNNING", "", "t0"), 4, 5), op(1, read, seen("DONE", "a", "t0"), 6, 7),
		}, true},
		"two results at once: one wins, the other refused or accepted": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 10), op(1, res("b"), refused, 1, 11), op(2, read, seen("DONE", "a", "t0"), 12, 13),
		}, true},
		"two accepted, either may be the outcome": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 10), op(1, res("b"), accepted, 1, 11), op(2, read, seen("DONE", "b", "t0"), 12, 13),
		}, true},
		"a result with no answer that won": {[]porcupine.Operation{
			op(0, res("a"), lost, 0, 100), op(1, read, seen("DONE", "a", "t0"), 12, 13),
		}, true},
		"the refused result became the outcome": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 1), op(1, res("b"), refused, 2, 3), op(2, read, seen("DONE", "b", "t0"), 4, 5),
		}, false},
		"the outcome changed": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 10), op(1, res("b"), accepted, 1, 11),
			op(2, read, seen("DONE", "a", "t0"), 12, 13), op(2, read, seen("DONE", "b", "t0"), 14, 15),
		}, false},
		"claimed twice": {[]porcupine.Operation{
			op(0, read, seen("RUNNING", "", "t0"), 0, 1), op(0, read, seen("RUNNING", "", "t1"), 2, 3),
		}, false},
		"running again after the outcome": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 1), op(1, read, seen("DONE", "a", "t0"), 2, 3), op(1, read, seen("RUNNING", "", "t0"), 4, 5),
		}, false},
		"accepted after the outcome was seen": {[]porcupine.Operation{
			op(0, res("a"), accepted, 0, 1), op(1, read, seen("DONE", "a", "t0"), 2, 3), op(0, res("b"), accepted, 4, 5),
		}, false},
		"refused with nothing accepted": {[]porcupine.Operation{
			op(0, read, seen("RUNNING", "", "t0"), 0, 1), op(0, res("a"), refused, 2, 3),
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.legal, check(t, TaskModel, tc.ops))
		})
	}
}

func TestResultNamesItsVerdict(t *testing.T) {
	require.True(t, strings.HasSuffix(Result{Name: "x", Linearizable: true}.String(), ": linearizable"))
	require.Contains(t, Result{Name: "x", TimedOut: true}.String(), "timed out")
}
