package client

import (
	"context"
	"iter"
)

// Every list of the API answers a page, {"items": [...], "next_cursor": "..."}, and takes
// ?limit= and ?cursor= (next_cursor is empty on the last page). The iterators below follow
// next_cursor to the end, one request per page, and stop at the first error, which they
// yield with a zero item. Breaking out of the loop stops them.
//
//	for s, err := range c.Schedules(ctx, &client.ListSchedulesParams{Selector: &sel}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(s.Name)
//	}

// Pages follows next_cursor from the first page fetch answers (cursor nil) to the last.
func Pages[T any](ctx context.Context, fetch func(ctx context.Context, cursor *string) (items []T, next string, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var cursor *string
		for {
			items, next, err := fetch(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = &next
		}
	}
}

// notAPage is a 2xx answer that did not decode as a page.
func notAPage(status int, body []byte) error {
	return &Error{Status: status, Title: "unexpected answer", Detail: "the answer is not a page of JSON", Body: body}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Schedules lists schedules by name (filtered by params: state, name, selector).
func (c *Client) Schedules(ctx context.Context, params *ListSchedulesParams) iter.Seq2[Schedule, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Schedule, string, error) {
		p.Cursor = cursor
		r, err := c.ListSchedulesWithResponse(ctx, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// ScheduleRuns lists a schedule's runs, newest first.
func (c *Client) ScheduleRuns(ctx context.Context, name string, params *ListScheduleRunsParams) iter.Seq2[Run, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Run, string, error) {
		p.Cursor = cursor
		r, err := c.ListScheduleRunsWithResponse(ctx, name, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// ScheduleHistory lists who paused, resumed or edited a schedule, newest first.
func (c *Client) ScheduleHistory(ctx context.Context, name string, params *ListScheduleHistoryParams) iter.Seq2[HistoryEntry, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]HistoryEntry, string, error) {
		p.Cursor = cursor
		r, err := c.ListScheduleHistoryWithResponse(ctx, name, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Runs lists every schedule's runs in a window of ticks (or the dead letter), newest first.
func (c *Client) Runs(ctx context.Context, params *ListRunsParams) iter.Seq2[ScheduleRun, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]ScheduleRun, string, error) {
		p.Cursor = cursor
		r, err := c.ListRunsWithResponse(ctx, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Calendars lists calendars by name.
func (c *Client) Calendars(ctx context.Context) iter.Seq2[Calendar, error] {
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Calendar, string, error) {
		r, err := c.ListCalendarsWithResponse(ctx, &ListCalendarsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Events reads the outbox feed in position order from params.After (an event id, a cursor
// the feed handed out, or "now"; none: the start) until its last page for now: each full
// page's next_cursor is sent back as after.
func (c *Client) Events(ctx context.Context, params *ListEventsParams) iter.Seq2[Event, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Event, string, error) {
		if cursor != nil {
			p.After, p.Cursor = cursor, nil
		}
		r, err := c.ListEventsWithResponse(ctx, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Rollouts lists rollouts (filtered by their status).
func (c *Client) Rollouts(ctx context.Context, params *ListRolloutsParams) iter.Seq2[Rollout, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Rollout, string, error) {
		p.Cursor = cursor
		r, err := c.ListRolloutsWithResponse(ctx, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// RolloutTasks lists a rollout's task runs.
func (c *Client) RolloutTasks(ctx context.Context, id int64, params *ListRolloutTasksParams) iter.Seq2[TaskRun, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]TaskRun, string, error) {
		p.Cursor = cursor
		r, err := c.ListRolloutTasksWithResponse(ctx, id, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Tasks lists device tasks.
func (c *Client) Tasks(ctx context.Context) iter.Seq2[Task, error] {
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Task, string, error) {
		r, err := c.ListTasksWithResponse(ctx, &ListTasksParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// TaskDevices lists a device task's executions.
func (c *Client) TaskDevices(ctx context.Context, id int64) iter.Seq2[TaskDevice, error] {
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]TaskDevice, string, error) {
		r, err := c.ListTaskDevicesWithResponse(ctx, id, &ListTaskDevicesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// PCs lists PCs.
func (c *Client) PCs(ctx context.Context) iter.Seq2[PC, error] {
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]PC, string, error) {
		r, err := c.ListPCsWithResponse(ctx, &ListPCsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Devices lists devices.
func (c *Client) Devices(ctx context.Context, params *ListDevicesParams) iter.Seq2[Device, error] {
	p := deref(params)
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Device, string, error) {
		p.Cursor = cursor
		r, err := c.ListDevicesWithResponse(ctx, &p)
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}

// Tokens lists API tokens (never their secret).
func (c *Client) Tokens(ctx context.Context) iter.Seq2[Token, error] {
	return Pages(ctx, func(ctx context.Context, cursor *string) ([]Token, string, error) {
		r, err := c.ListTokensWithResponse(ctx, &ListTokensParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		if r.JSON200 == nil {
			return nil, "", notAPage(r.StatusCode(), r.Body)
		}
		return deref(r.JSON200.Items), deref(r.JSON200.NextCursor), nil
	})
}
