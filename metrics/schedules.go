package metrics

import "github.com/prometheus/client_golang/prometheus"

// Schedule figures observed in-process by the worker that records each fire (beside the
// SQL-derived ones in sql.go, which any API replica reports).
var (
	// FireLatenessObserved is fired_at − nominal tick for every fire this process recorded.
	FireLatenessObserved = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tickgate_schedule_fire_lateness_observed_seconds",
		Help:    "How late a schedule fire ran after its nominal tick (jitter included), observed by the worker that recorded it.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
	}, []string{"trigger"})
	// ScheduleTicks counts recorded ticks by outcome (fired, skipped, missed) and trigger.
	ScheduleTicks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tickgate_schedule_ticks_total",
		Help: "Schedule ticks recorded by this process, by outcome (fired, skipped, missed) and trigger.",
	}, []string{"outcome", "trigger"})
	// ScheduleCommandsRefused counts the command signals schedules refused (bad input sent
	// where nobody could be answered), by command.
	ScheduleCommandsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tickgate_schedule_signals_refused_total",
		Help: "Command signals a schedule refused for bad input (changing nothing), by command; each is listed in the schedule's refused_commands.",
	}, []string{"command"})
	// ScheduleAutoPaused counts the schedules that paused themselves, their http action's
	// auto_pause rule met (the pause applied by this process's mirror write).
	ScheduleAutoPaused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tickgate_schedule_auto_paused_total",
		Help: "Schedules that paused themselves after sustained failure (their http action's auto_pause), paused by this process.",
	})
	// HTTPFirstAttempts counts the first attempts of http fires this process sent, by
	// outcome: succeeded, final (the run FAILED), retryable (the run went on to its delivery
	// workflow) and lost (taken over by this process's sweep from a sender that died).
	HTTPFirstAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tickgate_http_first_attempts_total",
		Help: "First attempts of http fires sent by the worker that released them, by outcome (succeeded, final, retryable: retried by the delivery workflow, lost: its sender died mid-send).",
	}, []string{"outcome"})
)

// FirstAttemptOutcomes are the label values of HTTPFirstAttempts.
var FirstAttemptOutcomes = []string{"succeeded", "final", "retryable", "lost"}

// Triggers and TickOutcomes are the label values of the series above. Every pair exists
// from the start, at 0: a rate or an increase needs a sample before the first count, or an
// alert would not see the first late fire or MISSED tick of a process.
var (
	Triggers     = []string{"scheduled", "catchup", "manual", "backfill"}
	TickOutcomes = []string{"fired", "skipped", "missed"}
)

func init() {
	Registry.MustRegister(FireLatenessObserved, ScheduleTicks, ScheduleCommandsRefused, ScheduleAutoPaused, HTTPFirstAttempts)
	for _, outcome := range FirstAttemptOutcomes {
		HTTPFirstAttempts.WithLabelValues(outcome)
	}
	for _, trigger := range Triggers {
		FireLatenessObserved.WithLabelValues(trigger)
		for _, outcome := range TickOutcomes {
			ScheduleTicks.WithLabelValues(outcome, trigger)
		}
	}
}
