-- +goose Up
-- Traces across time (docs/tracing.md). A schedule run's fire is armed by its schedule's
-- workflow and released, seconds or minutes later, by whichever worker's releaser takes it;
-- the run carries the fire's span context, as a W3C traceparent
-- ("00-<trace id>-<span id>-<flags>"), so that the release, and a workflow action's start,
-- join the fire's trace. Written in the statement that records the run, only while tracing
-- is on (OTEL_EXPORTER_OTLP_ENDPOINT set); NULL otherwise. Nullable, no default: adding it
-- rewrites no row.
ALTER TABLE schedule_runs ADD COLUMN trace_context text;

-- +goose Down
ALTER TABLE schedule_runs DROP COLUMN trace_context;
