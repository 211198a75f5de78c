-- +goose Up
-- Labels (docs/schedules.md "Labels and selectors"): key/value pairs a user puts on a
-- schedule, Kubernetes-style, to select schedules by (GET /schedules?selector=team=billing,
-- POST /schedules/pause {selector}). The API checks their syntax and sizes; the row holds an
-- object of strings. A selector's equalities are one containment test (labels @> '{...}'),
-- which the GIN index answers.
ALTER TABLE schedules ADD COLUMN labels jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(labels) = 'object');
CREATE INDEX schedules_by_labels ON schedules USING gin (labels jsonb_path_ops);

-- +goose Down
DROP INDEX schedules_by_labels;
ALTER TABLE schedules DROP COLUMN labels;
