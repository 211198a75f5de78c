-- +goose Up
-- An agent's result records its Idempotency-Key in the statement that records the result
-- (store/queries/devices_results.sql), before any answer is rendered: the key keeps what
-- the answer is made of (answer, with status 200) instead of a rendered body, and a replay
-- renders the same answer from it.
ALTER TABLE idempotency_keys ADD COLUMN answer jsonb;

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN answer;
