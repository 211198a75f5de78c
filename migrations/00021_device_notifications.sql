-- +goose Up
-- What an API process must hear without asking (docs/devices.md, "Authentication" and
-- "The agent protocol"): every change of an API token, so its per-process token cache
-- drops it, and every execution that becomes claimable, so an agent's long-poll on its
-- PC wakes. Triggers, so that no writer (the API, the worker, an operator's SQL) can
-- change these rows without the listeners hearing it. pg_notify delivers at commit, and
-- one transaction's identical notifications are sent once.

-- +goose StatementBegin
CREATE FUNCTION notify_token_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tickgate_token_changed', OLD.id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER api_tokens_changed AFTER UPDATE OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_token_changed();

-- +goose StatementBegin
CREATE FUNCTION notify_claimable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tickgate_claimable', NEW.pc_id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- CREATED and RETRY_SCHEDULED are the statuses a claim hands out.
CREATE TRIGGER task_devices_claimable AFTER INSERT OR UPDATE OF status ON task_devices
    FOR EACH ROW WHEN (NEW.status IN ('CREATED', 'RETRY_SCHEDULED'))
    EXECUTE FUNCTION notify_claimable();

-- +goose Down
DROP TRIGGER task_devices_claimable ON task_devices;
DROP FUNCTION notify_claimable();
DROP TRIGGER api_tokens_changed ON api_tokens;
DROP FUNCTION notify_token_changed();
