package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/testing/teststack"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	rulesFile     = "../tickgate.rules.yaml"
	dashboardFile = "../tickgate-dashboard.json"
	runbooks      = "../../../docs/operations.md"
)

var promQL = parser.NewParser(parser.Options{})

// loadAlerts reads the rules file with Prometheus's own loader (rulefmt: the YAML, strictly,
// and every expression, label and annotation template validated) and returns its alerts.
func loadAlerts(t *testing.T) []rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promQL, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s", rulesFile)
	var alerts []rulefmt.Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: the file ships alerts only, got record %q", g.Name, r.Record)
			alerts = append(alerts, r)
		}
	}
	require.NotEmpty(t, alerts)
	return alerts
}

// query is an expression the shipped files hold, and where.
type query struct {
	where string
	expr  string
}

func alertQueries(alerts []rulefmt.Rule) []query {
	out := make([]query, len(alerts))
	for i, a := range alerts {
		out[i] = query{"alert " + a.Alert, a.Expr}
	}
	return out
}

// dashboardQueries reads the Grafana dashboard and returns every panel's query (rows'
// nested panels too). Every panel but a row has one at least.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	type panel struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Title  string            `json:"title"`
		UID    string            `json:"uid"`
		Panels []json.RawMessage `json:"panels"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&dash), "%s is not JSON", dashboardFile)
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	var out []query
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			require.NoError(t, json.Unmarshal(r, &p))
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			require.NotNil(t, p.Datasource, "panel %q names no data source", p.Title)
			require.Equal(t, "prometheus", p.Datasource.Type, "panel %q", p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q, query %s", p.Title, tg.RefID)
				out = append(out, query{fmt.Sprintf("panel %q (%s)", p.Title, tg.RefID), tg.Expr})
			}
		}
	}
	walk(dash.Panels)
	require.NotEmpty(t, out)
	return out
}

// metricNames are the metric names an expression selects.
func metricNames(t *testing.T, q query) []string {
	t.Helper()
	expr, err := promQL.ParseExpr(q.expr)
	require.NoError(t, err, "%s: %s", q.where, q.expr)
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			require.NotEmpty(t, name, "%s selects series without naming a metric: %s", q.where, q.expr)
			names = append(names, name)
		}
		return nil
	})
	require.NotEmpty(t, names, "%s names no metric: %s", q.where, q.expr)
	return names
}

// TestShippedRulesAndDashboardAreWellFormed: the rules file loads in Prometheus's own loader
// and holds only alerts, each with a severity, a summary and a runbook that
// docs/operations.md has under the alert's name; every dashboard panel has a Prometheus
// query, and every query parses.
func TestShippedRulesAndDashboardAreWellFormed(t *testing.T) {
	doc, err := os.ReadFile(runbooks)
	require.NoError(t, err)
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		headings[strings.ToLower(strings.Trim(m[1], "` "))] = true
	}
	seen := map[string]bool{}
	for _, a := range loadAlerts(t) {
		require.False(t, seen[a.Alert], "alert %s twice", a.Alert)
		seen[a.Alert] = true
		require.Contains(t, []string{"warning", "critical"}, a.Labels["severity"], "alert %s: severity", a.Alert)
		require.NotEmpty(t, a.Annotations["summary"], "alert %s: summary", a.Alert)
		require.Equal(t, "docs/operations.md#"+strings.ToLower(a.Alert), a.Annotations["runbook"], "alert %s: runbook", a.Alert)
		require.True(t, headings[strings.ToLower(a.Alert)], "docs/operations.md has no runbook headed %s", a.Alert)
		metricNames(t, query{"alert " + a.Alert, a.Expr})
	}
	for _, q := range dashboardQueries(t) {
		metricNames(t, q)
	}
	// What the brief of the alerts asks them to cover.
	for _, want := range []string{"TickgateFiresLate", "TickgateTicksMissed", "TickgateDeadLetterGrowing", "TickgateDeviceTimeouts",
		"TickgateDevicesInError", "TickgatePlannerBehind", "TickgateReleaseBehind", "TickgateNoLiveWorker", "TickgateRolloutPausedByHealthCheck"} {
		require.True(t, seen[want], "no alert %s", want)
	}
}

// scrapes is a TSDB filled from scrapes of a live /metrics, each stamped with a time of the
// test's choosing (a minute apart), so that the rules' rates and deltas have their windows.
type scrapes struct {
	db     *teststorage.TestStorage
	engine *promql.Engine
	names  map[string]bool // every metric name a scrape served
}

func newScrapes(t *testing.T) *scrapes {
	return &scrapes{
		db: teststorage.New(t),
		engine: promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
			Parser: promQL}),
		names: map[string]bool{},
	}
}

// scrape reads the stack's /metrics (as a scraper with a token would) and stores every
// sample at ts.
func (s *scrapes) scrape(t *testing.T, st *teststack.Stack, ts time.Time) {
	t.Helper()
	status, body := st.Do(t, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	p := textparse.NewPromParser(body, labels.NewSymbolTable(), false)
	app := s.db.Appender(context.Background())
	n := 0
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		s.names[lset.Get(model.MetricNameLabel)] = true
		_, err = app.Append(0, lset, ts.UnixMilli(), v)
		require.NoError(t, err)
		n++
	}
	require.NoError(t, app.Commit())
	require.NotZero(t, n)
}

// eval answers expr at ts, as a rule evaluation would.
func (s *scrapes) eval(t *testing.T, expr string, ts time.Time) promql.Vector {
	t.Helper()
	q, err := s.engine.NewInstantQuery(context.Background(), s.db, nil, expr, ts)
	require.NoError(t, err)
	defer q.Close()
	res := q.Exec(context.Background())
	require.NoError(t, res.Err, "%s", expr)
	switch v := res.Value.(type) {
	case promql.Vector:
		return v
	case promql.Scalar:
		return promql.Vector{promql.Sample{F: v.V}}
	}
	t.Fatalf("%s answers %T", expr, res.Value)
	return nil
}

// firing lists the alerts whose expression returns a series at ts.
func (s *scrapes) firing(t *testing.T, alerts []rulefmt.Rule, ts time.Time) []string {
	t.Helper()
	var out []string
	for _, a := range alerts {
		if v := s.eval(t, a.Expr, ts); len(v) > 0 {
			out = append(out, fmt.Sprintf("%s=%v", a.Alert, v))
		}
	}
	sort.Strings(out)
	return out
}

// TestAlertsAgainstALiveStack runs the shipped alerts and dashboard against a live tickgate
// (PostgreSQL, a Temporal server, a worker and the API): every metric they name is one its
// /metrics serves; on the healthy stack no alert's expression returns anything; then a
// device is put in error through the agent protocol (a failure that cannot be retried) and
// TickgateDevicesInError's expression returns its series, alone, and still does when its
// `for` has passed.
func TestAlertsAgainstALiveStack(t *testing.T) {
	alerts := loadAlerts(t)
	queries := append(alertQueries(alerts), dashboardQueries(t)...)
	st := teststack.Start(t, teststack.Options{})
	// A PC with one device, as a deployment that dispatches to devices has: the per-PC series
	// exist then.
	st.JSON(t, http.MethodPost, "/api/v1/pcs", map[string]any{"name": "pc-alerts"}, http.StatusCreated, nil)
	st.JSON(t, http.MethodPost, "/api/v1/devices", map[string]any{"pc": "pc-alerts", "serial": "dev-alerts-1"}, http.StatusCreated, nil)

	s := newScrapes(t)
	t0 := time.Now().UTC().Truncate(time.Minute)
	s.scrape(t, st, t0)
	for _, q := range queries {
		for _, name := range metricNames(t, q) {
			require.True(t, s.names[name], "%s names %s, which the live /metrics does not serve: %s", q.where, name, q.expr)
		}
	}
	s.scrape(t, st, t0.Add(time.Minute))
	require.Empty(t, s.firing(t, alerts, t0.Add(time.Minute)), "a healthy stack fires no alert")
	for _, q := range queries[len(alerts):] {
		s.eval(t, q.expr, t0.Add(time.Minute)) // every panel's query evaluates
	}

	// The condition made true on the live stack: the device's command fails for good.
	st.JSON(t, http.MethodPost, "/api/v1/tasks", map[string]any{"payload": map[string]any{"firmware": "2.1"}}, http.StatusCreated, nil)
	agent := st.As(st.NewToken(t, domain.RoleAgent, "pc-alerts"))
	var claimed struct {
		Items []struct {
			ID     int64  `json:"id"`
			Device string `json:"device"`
		} `json:"items"`
	}
	// The dispatcher activates the task and fills the PC's slot; the claim long-polls for it.
	for claims := 0; len(claimed.Items) == 0; claims++ {
		require.Less(t, claims, 12, "no command for the device after %d claims of 10 s", claims)
		agent.JSON(t, http.MethodPost, "/api/v1/agent/pcs/pc-alerts/claim", map[string]any{"max": 1, "wait": "10s"}, http.StatusOK, &claimed)
	}
	require.Equal(t, "dev-alerts-1", claimed.Items[0].Device)
	agent.JSON(t, http.MethodPost, fmt.Sprintf("/api/v1/agent/task-devices/%d/result", claimed.Items[0].ID),
		map[string]any{"status": "failed", "error": "unsupported model", "retryable": false}, http.StatusOK, nil)
	var device struct {
		Status string `json:"status"`
	}
	st.JSON(t, http.MethodGet, "/api/v1/devices/dev-alerts-1", nil, http.StatusOK, &device)
	require.Equal(t, "error", device.Status)

	t2 := t0.Add(2 * time.Minute)
	s.scrape(t, st, t2)
	var rule rulefmt.Rule
	for _, a := range alerts {
		if a.Alert == "TickgateDevicesInError" {
			rule = a
		}
	}
	got := s.eval(t, rule.Expr, t2)
	require.Len(t, got, 1, "TickgateDevicesInError's expression returns its series")
	require.Equal(t, 1.0, got[0].F, "one device in error")
	firing := s.firing(t, alerts, t2)
	require.Len(t, firing, 1, "%v", firing)
	require.True(t, strings.HasPrefix(firing[0], "TickgateDevicesInError="), "%v", firing)
	// Its `for` passes with the condition still true (the last scrape's sample is the series'
	// value until it goes stale): the alert fires.
	require.Len(t, s.eval(t, rule.Expr, t2.Add(time.Duration(rule.For))), 1, "still true when its for (%s) has passed", rule.For)
}
