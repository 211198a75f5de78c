package domain

// HistoryKind is what a schedule's history entry tells of (schedule_history.kind).
type HistoryKind string

// History kinds: the paused state changed (pause, resume), the definition did (update), or
// the http action's signing secret was rotated (rotate_secret: never the secret itself).
const (
	HistoryPause        HistoryKind = "pause"
	HistoryResume       HistoryKind = "resume"
	HistoryUpdate       HistoryKind = "update"
	HistoryRotateSecret HistoryKind = "rotate_secret"
	// HistoryAutoPause: the schedule paused itself, its action's auto_pause rule met (the
	// note says why).
	HistoryAutoPause HistoryKind = "auto_pause"
)

// Door is how a command reached a schedule (schedule_history.door): an edit through the API,
// or a command to the schedule's workflow as a Temporal update (the API's commands are
// updates) or signal.
type Door string

// Doors of a command.
const (
	DoorAPI    Door = "api"
	DoorUpdate Door = "update"
	DoorSignal Door = "signal"
)
