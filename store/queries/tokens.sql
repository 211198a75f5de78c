-- name: InsertToken :one
INSERT INTO api_tokens (role, pc, note, token_hash, prefix)
VALUES (@role, sqlc.narg('pc'), @note, @token_hash, @prefix)
RETURNING *;

-- name: GetActiveTokenByHash :one
SELECT * FROM api_tokens WHERE token_hash = @token_hash AND revoked_at IS NULL;

-- name: ListTokens :many
SELECT * FROM api_tokens WHERE id > @after_id ORDER BY id LIMIT @max_rows;

-- name: RevokeToken :one
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = @id RETURNING *;

-- name: DeviceExecutionPCName :one
SELECT p.name FROM task_devices td JOIN pcs p ON p.id = td.pc_id WHERE td.id = @id;

-- name: ClaimIdempotencyKey :one
INSERT INTO idempotency_keys (token_id, key, method, path, request_hash)
VALUES (@token_id, @key, @method, @path, @request_hash)
ON CONFLICT (token_id, key, method, path) DO NOTHING
RETURNING created_at;

-- name: GetIdempotencyKey :one
SELECT * FROM idempotency_keys WHERE token_id = @token_id AND key = @key AND method = @method AND path = @path;

-- name: FinishIdempotencyKey :exec
UPDATE idempotency_keys SET status = @status, content_type = @content_type, body = @body
WHERE token_id = @token_id AND key = @key AND method = @method AND path = @path;

-- name: ForgetIdempotencyKey :exec
DELETE FROM idempotency_keys
WHERE token_id = @token_id AND key = @key AND method = @method AND path = @path AND status = 0;

-- name: DeleteIdempotencyKeysBefore :execrows
DELETE FROM idempotency_keys WHERE created_at < @before;

-- name: ListenerPIDs :many
-- The backends of the API processes' listening connections (store/listener.go) on this
-- database: a token's revocation waits until each has acknowledged it.
SELECT pid::integer FROM pg_catalog.pg_stat_activity
WHERE application_name = @application_name::text AND datname = current_database();
