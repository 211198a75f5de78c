-- +goose Up
-- The deployer role (docs/security.md): an operator that may also create what runs code on
-- a rollout's targets (sql and http executors, SQL health probes).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('admin', 'deployer', 'operator', 'viewer', 'agent'));

-- +goose Down
-- A deployer token has no place in the older schema: it becomes an operator (who keeps
-- every route, but no longer runs code on targets).
UPDATE api_tokens SET role = 'operator' WHERE role = 'deployer';
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('admin', 'operator', 'viewer', 'agent'));
