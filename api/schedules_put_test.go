package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/client"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// typedClient is the typed Go client of the stack, as admin, its answers checked against
// the OpenAPI document.
func typedClient(t *testing.T, st *teststack.Stack) *client.Client {
	t.Helper()
	c, err := client.New(st.URL, client.WithToken(st.AdminToken), client.WithHTTP(teststack.ContractClient(t)), client.WithRetries(1, 0))
	require.NoError(t, err)
	return c
}

func putBody(topic string, labels client.Labels) client.CreateScheduleRequest {
	every, kind := "1h", client.ActionKindEvent
	var interval client.Spec_Interval
	_ = interval.FromDuration(every)
	typ := "tick"
	return client.CreateScheduleRequest{Name: "nightly", Spec: client.Spec{Interval: &interval},
		Action: client.Action{Kind: kind, Topic: &topic, Type: &typ}, Labels: &labels}
}

func historyLen(t *testing.T, c *client.Client, name string) int {
	t.Helper()
	n := 0
	for _, err := range c.ScheduleHistory(context.Background(), name, nil) {
		require.NoError(t, err)
		n++
	}
	return n
}

// TestPutScheduleCreatesReplacesAndLeavesUnchanged: PUT creates a schedule, answers a body
// equal to what is stored "unchanged" without a new version or a history entry (whatever
// version If-Match names), replaces a different one (one history entry naming the changed
// field), refuses a stale If-Match with 412 changing nothing, and on a dry run says what it
// would do and does nothing.
func TestPutScheduleCreatesReplacesAndLeavesUnchanged(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	c := typedClient(t, st)
	ctx := context.Background()
	set := client.Labels{"tickgate.dev/set": "billing"}

	r, err := c.PutScheduleWithResponse(ctx, "nightly", nil, putBody("reports", set))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, r.StatusCode())
	require.Equal(t, client.AppliedScheduleOutcome("created"), *r.JSON201.Outcome)
	require.EqualValues(t, 1, *r.JSON201.Schedule.Version)
	anchor := r.JSON201.Schedule.Spec.StartAt
	require.NotNil(t, anchor, "an interval is anchored at its creation")
	updatedAt := *r.JSON201.Schedule.UpdatedAt

	for _, ifMatch := range []*string{nil, ptr(`"1"`), ptr(`"7"`)} {
		paused := true
		body := putBody("reports", set)
		body.Paused = &paused // counts at creation only
		r, err = c.PutScheduleWithResponse(ctx, "nightly", &client.PutScheduleParams{IfMatch: ifMatch}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode())
		require.Equal(t, client.AppliedScheduleOutcome("unchanged"), *r.JSON200.Outcome)
		require.Empty(t, *r.JSON200.Changes)
	}
	got, err := c.GetScheduleWithResponse(ctx, "nightly")
	require.NoError(t, err)
	require.EqualValues(t, 1, *got.JSON200.Version, "no new version")
	require.Equal(t, updatedAt, *got.JSON200.UpdatedAt, "the row was not written")
	require.False(t, *got.JSON200.Paused, "a replace leaves the schedule active")
	require.Equal(t, anchor.UTC(), got.JSON200.Spec.StartAt.UTC(), "the anchor kept")
	require.Zero(t, historyLen(t, c, "nightly"), "no history entry")

	// A dry run of a change: said, not done.
	dry := true
	r, err = c.PutScheduleWithResponse(ctx, "nightly", &client.PutScheduleParams{DryRun: &dry}, putBody("invoices", set))
	require.NoError(t, err)
	require.Equal(t, client.AppliedScheduleOutcome("updated"), *r.JSON200.Outcome)
	require.True(t, *r.JSON200.DryRun)
	require.Len(t, *r.JSON200.Changes, 1)
	require.Equal(t, "action", *(*r.JSON200.Changes)[0].Field)
	got, _ = c.GetScheduleWithResponse(ctx, "nightly")
	require.EqualValues(t, 1, *got.JSON200.Version)
	require.Equal(t, "reports", *got.JSON200.Action.Topic)

	// A stale If-Match with a change: 412, nothing changes.
	_, err = c.PutScheduleWithResponse(ctx, "nightly", &client.PutScheduleParams{IfMatch: ptr(`"7"`)}, putBody("invoices", set))
	require.Equal(t, http.StatusPreconditionFailed, client.StatusOf(err), "%v", err)
	got, _ = c.GetScheduleWithResponse(ctx, "nightly")
	require.EqualValues(t, 1, *got.JSON200.Version)

	// The change, at the version read: one history entry naming the field.
	r, err = c.PutScheduleWithResponse(ctx, "nightly", &client.PutScheduleParams{IfMatch: ptr(`"1"`)}, putBody("invoices", set))
	require.NoError(t, err)
	require.Equal(t, client.AppliedScheduleOutcome("updated"), *r.JSON200.Outcome)
	require.EqualValues(t, 2, *r.JSON200.Schedule.Version)
	require.Equal(t, "invoices", *r.JSON200.Schedule.Action.Topic)
	require.Equal(t, `"2"`, r.HTTPResponse.Header.Get("ETag"))
	require.Equal(t, 1, historyLen(t, c, "nightly"))
	for h, err := range c.ScheduleHistory(ctx, "nightly", nil) {
		require.NoError(t, err)
		require.Len(t, *h.Changes, 1)
		require.Equal(t, "action", *(*h.Changes)[0].Field)
	}
	// Labels are replaced; a labels-only change is one too.
	r, err = c.PutScheduleWithResponse(ctx, "nightly", nil, putBody("invoices", client.Labels{"tickgate.dev/set": "billing", "team": "fin"}))
	require.NoError(t, err)
	require.Equal(t, "labels", *(*r.JSON200.Changes)[0].Field)
	require.EqualValues(t, 3, *r.JSON200.Schedule.Version)

	// Creating only, and matching what is not there.
	star := client.PutScheduleParamsIfNoneMatch("*")
	_, err = c.PutScheduleWithResponse(ctx, "nightly", &client.PutScheduleParams{IfNoneMatch: &star}, putBody("x", set))
	require.Equal(t, http.StatusPreconditionFailed, client.StatusOf(err))
	other := putBody("x", set)
	other.Name = "other"
	_, err = c.PutScheduleWithResponse(ctx, "other", &client.PutScheduleParams{IfMatch: ptr(`"1"`)}, other)
	require.Equal(t, http.StatusPreconditionFailed, client.StatusOf(err))
	r, err = c.PutScheduleWithResponse(ctx, "other", &client.PutScheduleParams{DryRun: &dry}, other)
	require.NoError(t, err)
	require.Equal(t, client.AppliedScheduleOutcome("created"), *r.JSON200.Outcome)
	_, err = c.GetScheduleWithResponse(ctx, "other")
	require.True(t, client.IsNotFound(err), "a dry run creates nothing")
	r, err = c.PutScheduleWithResponse(ctx, "other", &client.PutScheduleParams{IfNoneMatch: &star}, other)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, r.StatusCode())

	// Bad input: a 400 naming the field, and nothing changes.
	_, err = c.PutScheduleWithResponse(ctx, "renamed", nil, putBody("x", set))
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.Status)
	require.Equal(t, "name", apiErr.Field)
	bad := putBody("x", set)
	cron := "not a cron"
	bad.Spec = client.Spec{Cron: &cron}
	_, err = c.PutScheduleWithResponse(ctx, "nightly", nil, bad)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.Status)
	require.Equal(t, "spec.cron", apiErr.Field)
	got, _ = c.GetScheduleWithResponse(ctx, "nightly")
	require.EqualValues(t, 3, *got.JSON200.Version)
}

// TestPutCalendarUnchangedKeepsItsVersion: a calendar PUT as it is stored writes nothing.
func TestPutCalendarUnchangedKeepsItsVersion(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	c := typedClient(t, st)
	ctx := context.Background()
	put := func(body string) *client.ReplaceCalendarResponse {
		r, err := c.ReplaceCalendarWithBodyWithResponse(ctx, "holidays", nil, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		return r
	}
	_, err := c.CreateCalendarWithBodyWithResponse(ctx, nil, "application/json",
		strings.NewReader(`{"name":"holidays","timezone":"Europe/Paris","dates":["2026-12-25","2026-12-24"],"ranges":[]}`))
	require.NoError(t, err)
	r := put(`{"timezone":"Europe/Paris","dates":["2026-12-24","2026-12-25"],"ranges":[]}`)
	require.EqualValues(t, 1, *r.JSON200.Version, "the same calendar: no new version")
	r = put(`{"timezone":"Europe/Paris","dates":["2026-12-25"],"ranges":[]}`)
	require.EqualValues(t, 2, *r.JSON200.Version)
}

func ptr[T any](v T) *T { return &v }
