package domain

// The event a fire appends when its action does not name one: an event action without a
// topic or type, and every workflow action (whose run is announced on the same feed).
const (
	DefaultEventTopic = "schedules"
	DefaultEventType  = "schedule.fired"
)

// FieldError names the field of a definition that is wrong, relative to the value checked
// (for an Action: "kind", "workflow_type", "" for the action as a whole).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Normalize checks an action and fills an event action's default topic and type. The API
// calls it before anything is stored; a stored action has passed it.
func (a *Action) Normalize() error {
	switch a.Kind {
	case ActionEvent:
		if a.Topic == "" {
			a.Topic = DefaultEventTopic
		}
		if a.Type == "" {
			a.Type = DefaultEventType
		}
		if a.WorkflowType != "" || a.TaskQueue != "" || len(a.Input) > 0 || a.hasHTTP() {
			return &FieldError{Msg: "an event action takes topic, type and data only"}
		}
	case ActionWorkflow:
		if a.WorkflowType == "" {
			return &FieldError{Field: "workflow_type", Msg: "is required for a workflow action"}
		}
		if a.TaskQueue == "" {
			return &FieldError{Field: "task_queue", Msg: "is required for a workflow action"}
		}
		if a.Topic != "" || a.Type != "" || len(a.Data) > 0 || a.hasHTTP() {
			return &FieldError{Msg: "a workflow action takes workflow_type, task_queue and input only"}
		}
	case ActionHTTP:
		if a.Topic != "" || a.Type != "" || len(a.Data) > 0 || a.WorkflowType != "" || a.TaskQueue != "" || len(a.Input) > 0 {
			return &FieldError{Msg: "an http action takes url, method, headers, body, timeout, limits and auto_pause only"}
		}
		return a.normalizeHTTP()
	case "":
		return &FieldError{Field: "kind", Msg: "is required: event, workflow or http"}
	default:
		return &FieldError{Field: "kind", Msg: "must be event, workflow or http, got \"" + string(a.Kind) + "\""}
	}
	return nil
}
