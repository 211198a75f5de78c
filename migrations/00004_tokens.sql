-- +goose Up
-- API tokens (docs/spec.md, "HTTP contract"; issue #6). A token is shown once; only its SHA-256 is
-- stored. An agent token is bound to one PC (by name) and may only work that PC's commands.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role         text        NOT NULL CHECK (role IN ('admin', 'operator', 'viewer', 'agent')),
    pc           text        CHECK (pc ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    note         text        NOT NULL DEFAULT '' CHECK (length(note) <= 200),
    token_hash   bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    -- the first characters of the token, so a listing can tell tokens apart
    prefix       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    CONSTRAINT api_tokens_agent_pc CHECK ((role = 'agent') = (pc IS NOT NULL))
);
CREATE INDEX api_tokens_active ON api_tokens (id) WHERE revoked_at IS NULL;

-- Idempotency-Key replays: the first response to a creating POST, per (token, key, method,
-- path). A row with status 0 is a request still in flight; a second request with the same
-- key meanwhile gets 409 instead of creating twice.
CREATE TABLE idempotency_keys (
    token_id     bigint      NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    method       text        NOT NULL,
    path         text        NOT NULL,
    request_hash bytea       NOT NULL,
    status       integer     NOT NULL DEFAULT 0 CHECK (status = 0 OR status BETWEEN 200 AND 599),
    content_type text        NOT NULL DEFAULT '',
    body         bytea       NOT NULL DEFAULT ''::bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (token_id, key, method, path)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE api_tokens;
