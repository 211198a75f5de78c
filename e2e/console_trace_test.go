package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

// TestConsoleLinksARunToItsTrace: with tracing on and the viewer's address known
// (TICKGATE_TRACE_URL_TEMPLATE), a run's row on its schedule's page links to its trace in
// the viewer — the trace id the API answers for that run.
func TestConsoleLinksARunToItsTrace(t *testing.T) {
	bin, root := chromium(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := teststack.Start(t, teststack.Options{Telemetry: telemetry.With(tp), Configure: func(c *config.Config) {
		c.TraceURLTemplate = "http://viewer.test/trace/{trace_id}?from=console"
	}})
	st.CreateSchedule(t, map[string]any{
		"name": "traced-console", "spec": map[string]any{"cron": "0 0 1 1 *"},
		"action": map[string]any{"kind": "event", "topic": "t", "type": "x"},
	})
	st.Trigger(t, "traced-console")
	var sched api.ScheduleView
	require.Eventually(t, func() bool {
		st.GetSchedule(t, "traced-console", &sched)
		return len(sched.RecentRuns) == 1 && sched.RecentRuns[0].TraceID != ""
	}, 30*time.Second, 100*time.Millisecond, "the triggered run names its trace")
	traceID := sched.RecentRuns[0].TraceID

	ctx := consoleBrowser(t, bin)
	logIn(t, ctx, st.URL+"/#schedule/traced-console", st.NewToken(t, "viewer", ""))
	waitJS(t, ctx, 30*time.Second, `document.querySelector('tr[data-run] a.trace')`)
	href := jsValue[string](t, ctx, `document.querySelector('tr[data-run] a.trace').getAttribute("href")`)
	require.Equal(t, "http://viewer.test/trace/"+traceID+"?from=console", href)
	shot(t, ctx, root, "console-trace-link.png")
}
