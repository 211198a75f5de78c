-- +goose Up
-- Secrets stay secret (docs/security.md "Secrets"): an http action's header values, where
-- users put credentials, are write-only and stored apart, as the signing secret is; a
-- secret's rotation may keep the old one signing for a grace period; and signatures follow
-- Standard Webhooks, whose secrets are whsec_<base64 of the key>.

-- The values of an http action's own headers, by name: read only by the delivery that sends
-- them. The schedule's action keeps their names only (action.header_names), so views,
-- history, logs and Temporal inputs carry names only.
CREATE TABLE schedule_header_values (
    schedule_name text        PRIMARY KEY REFERENCES schedules (name) ON DELETE CASCADE,
    header_values jsonb       NOT NULL CHECK (jsonb_typeof(header_values) = 'object'),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

INSERT INTO schedule_header_values (schedule_name, header_values)
SELECT name, action->'headers' FROM schedules
WHERE jsonb_typeof(action->'headers') = 'object' AND action->'headers' <> '{}'::jsonb;

-- +goose StatementBegin
-- An action as it is stored from now on: its headers by name only, sorted as Go sorts them
-- (byte order).
CREATE OR REPLACE FUNCTION pg_temp.header_names_only(a jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(a) <> 'object' OR NOT a ? 'headers' THEN a
        WHEN jsonb_typeof(a->'headers') <> 'object' OR a->'headers' = '{}'::jsonb THEN a - 'headers'
        ELSE (a - 'headers') || jsonb_build_object('header_names',
            (SELECT jsonb_agg(k ORDER BY k COLLATE "C") FROM jsonb_object_keys(a->'headers') AS k))
    END
$$;
-- +goose StatementEnd

UPDATE schedules SET action = pg_temp.header_names_only(action) WHERE action ? 'headers';

-- The history told every edit of an action with its values before and after: from now on
-- it tells the names only, the old entries included.
UPDATE schedule_history h
SET changes = (
    SELECT jsonb_agg(CASE WHEN c->>'field' = 'action'
                          THEN c || jsonb_build_object('from', pg_temp.header_names_only(c->'from'),
                                                       'to', pg_temp.header_names_only(c->'to'))
                          ELSE c END ORDER BY i)
    FROM jsonb_array_elements(h.changes) WITH ORDINALITY AS e(c, i))
WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(h.changes) c
              WHERE c->>'field' = 'action' AND (c->'from' ? 'headers' OR c->'to' ? 'headers'));

DROP FUNCTION pg_temp.header_names_only(jsonb);

-- A rotation with a grace period keeps the old secret signing until previous_valid_until.
ALTER TABLE schedule_secrets ADD COLUMN previous_secret text;
ALTER TABLE schedule_secrets ADD COLUMN previous_valid_until timestamptz;
ALTER TABLE schedule_secrets ADD CONSTRAINT schedule_secrets_previous CHECK ((previous_secret IS NULL) = (previous_valid_until IS NULL));

-- The secrets made before Standard Webhooks (tgs_<64 hex digits>) keyed the HMAC with their
-- own text. Wrapped as whsec_<base64 of that text>, they key it with the same bytes: a
-- receiver that kept the old secret derives the new form itself (docs/webhooks.md), and no
-- secret is shown again. (68 bytes: more than Standard Webhooks' 64 for a new key, which its
-- libraries accept; a rotation gives a key of the standard's size.)
UPDATE schedule_secrets
SET secret = 'whsec_' || replace(encode(convert_to(secret, 'UTF8'), 'base64'), E'\n', '')
WHERE secret LIKE 'tgs\_%';

-- A schedule's history tells of its secret's rotations too.
ALTER TABLE schedule_history DROP CONSTRAINT schedule_history_kind_check;
ALTER TABLE schedule_history ADD CONSTRAINT schedule_history_kind_check CHECK (kind IN ('pause', 'resume', 'update', 'rotate_secret'));

-- +goose Down
DELETE FROM schedule_history WHERE kind = 'rotate_secret';
ALTER TABLE schedule_history DROP CONSTRAINT schedule_history_kind_check;
ALTER TABLE schedule_history ADD CONSTRAINT schedule_history_kind_check CHECK (kind IN ('pause', 'resume', 'update'));
UPDATE schedule_secrets
SET secret = convert_from(decode(substr(secret, 7), 'base64'), 'UTF8')
WHERE secret LIKE 'whsec\_%' AND substring(decode(substr(secret, 7), 'base64') FROM 1 FOR 4) = convert_to('tgs_', 'UTF8');
ALTER TABLE schedule_secrets DROP CONSTRAINT schedule_secrets_previous, DROP COLUMN previous_valid_until, DROP COLUMN previous_secret;
UPDATE schedules s SET action = (s.action - 'header_names') || jsonb_build_object('headers', v.header_values)
FROM schedule_header_values v WHERE v.schedule_name = s.name;
UPDATE schedules SET action = action - 'header_names' WHERE action ? 'header_names';
DROP TABLE schedule_header_values;
