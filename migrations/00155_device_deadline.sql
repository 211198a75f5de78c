-- +goose Up
-- D3, the deadline of a device attempt, in one function (docs/devices.md, "Where each rule
-- lives"). An attempt handed to its agent at `at` is SENT from then on, not acknowledged,
-- and its deadline is `at` plus its task's device timeout (timeout_ms: the configuration's
-- TICKGATE_DEVICE_TIMEOUT when the task became active, at least 1 ms). A claim hands out
-- executions that wait (device_attempts_hand_out); a refill may create its execution handed
-- out already (device_slots_fill, for a result that asks for its slot's next execution).
-- Both take the attempt's state, deadline included, from here alone. What happens at the
-- deadline is the PC timer's (workflows/pc_timer.go), applied by store/devices_timeouts.go.
--
-- Before, the hand-out (00092) read the deadline from a second function (00022's
-- attempt_deadline); the deadline is now computed here, and that function goes. The body is
-- unchanged otherwise: LANGUAGE sql, IMMUTABLE, one SELECT, inlined into its callers.
CREATE OR REPLACE FUNCTION attempt_handed_out(at timestamptz, timeout_ms bigint) RETURNS attempt_hand_out
LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW('SENT', at, NULL, at + timeout_ms * interval '1 millisecond')::attempt_hand_out
$$;
DROP FUNCTION attempt_deadline(timestamptz, bigint);

-- +goose Down
CREATE FUNCTION attempt_deadline(sent timestamptz, timeout_ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT sent + timeout_ms * interval '1 millisecond'
$$;
CREATE OR REPLACE FUNCTION attempt_handed_out(at timestamptz, timeout_ms bigint) RETURNS attempt_hand_out
LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW('SENT', at, NULL, attempt_deadline(at, timeout_ms))::attempt_hand_out
$$;
