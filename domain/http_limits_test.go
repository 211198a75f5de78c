package domain_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// An http action's limits and auto_pause are checked with the action: out of bounds, or
// empty, a field error naming the field; an event or workflow action takes neither.
func TestHTTPActionLimitsAndAutoPauseAreChecked(t *testing.T) {
	t.Parallel()
	base := func() domain.Action {
		return domain.Action{Kind: domain.ActionHTTP, URL: "https://api.example.com/hook"}
	}
	good := base()
	good.Limits = &domain.HostLimit{MaxInFlight: 20, PerMinute: 600}
	good.AutoPause = &domain.AutoPause{AfterFailures: 10, OrAfter: schedulespec.Duration(72 * time.Hour)}
	require.NoError(t, good.Normalize())
	require.Equal(t, "api.example.com", good.Host())

	for _, c := range []struct {
		edit  func(*domain.Action)
		field string
	}{
		{func(a *domain.Action) { a.Limits = &domain.HostLimit{} }, "limits"},
		{func(a *domain.Action) { a.Limits = &domain.HostLimit{MaxInFlight: -1} }, "limits.max_in_flight"},
		{func(a *domain.Action) { a.Limits = &domain.HostLimit{MaxInFlight: 10001} }, "limits.max_in_flight"},
		{func(a *domain.Action) { a.Limits = &domain.HostLimit{PerMinute: -5} }, "limits.per_minute"},
		{func(a *domain.Action) { a.AutoPause = &domain.AutoPause{} }, "auto_pause"},
		{func(a *domain.Action) { a.AutoPause = &domain.AutoPause{AfterFailures: -1} }, "auto_pause.after_failures"},
		{func(a *domain.Action) { a.AutoPause = &domain.AutoPause{OrAfter: schedulespec.Duration(time.Second)} }, "auto_pause.or_after"},
	} {
		a := base()
		c.edit(&a)
		var fe *domain.FieldError
		require.True(t, errors.As(a.Normalize(), &fe), c.field)
		require.Equal(t, c.field, fe.Field)
	}
	ev := domain.Action{Kind: domain.ActionEvent, Limits: &domain.HostLimit{MaxInFlight: 1}}
	require.Error(t, ev.Normalize(), "an event action takes no limits")
}

// The rule: after_failures failed runs in a row, or failures spanning or_after, whichever
// comes first; the reason says which, and quotes the last failure.
func TestAutoPauseIsDueAfterFailuresOrAfterTime(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p := domain.AutoPause{AfterFailures: 3, OrAfter: schedulespec.Duration(time.Hour)}
	_, due := p.Due(2, since, since.Add(time.Minute), "HTTP 503")
	require.False(t, due)
	reason, due := p.Due(3, since, since.Add(time.Minute), "HTTP 503")
	require.True(t, due)
	require.Equal(t, "paused itself after 3 failed runs in a row (auto_pause.after_failures 3); the last: HTTP 503", reason)
	reason, due = p.Due(2, since, since.Add(time.Hour), "HTTP 500")
	require.True(t, due)
	require.Contains(t, reason, "failed without a success since 2026-12-01T09:00:00Z (auto_pause.or_after 1h0m0s; 2 failed runs)")
	_, due = p.Due(0, since, since.Add(48*time.Hour), "")
	require.False(t, due, "no failure, no pause")
}

// TICKGATE_HTTP_HOST_LIMITS: per host, * for every other one, either part optional; the
// default is 100 in flight; a smaller limit of an action narrows the host's.
func TestParseHostLimits(t *testing.T) {
	t.Parallel()
	l, err := domain.ParseHostLimits("")
	require.NoError(t, err)
	require.Equal(t, domain.HostLimit{MaxInFlight: 100}, l.Of("any.example.com"))
	l, err = domain.ParseHostLimits("api.example.com=50/600, [::1]=3")
	require.NoError(t, err)
	require.Equal(t, domain.HostLimit{MaxInFlight: 50, PerMinute: 600}, l.Of("API.example.com"))
	require.Equal(t, domain.HostLimit{MaxInFlight: 3}, l.Of("::1"))
	require.Equal(t, domain.HostLimit{MaxInFlight: 20, PerMinute: 600}, l.Of("api.example.com").Narrowed(domain.HostLimit{MaxInFlight: 20}))
	for _, bad := range []string{"=5", "a.example.com=0/0", "a.example.com=x", "a.example.com:8080=5", "*=1,*=2"} {
		_, err := domain.ParseHostLimits(bad)
		require.Error(t, err, bad)
	}
}
