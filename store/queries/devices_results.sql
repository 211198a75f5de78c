-- Device dispatch: agents' results, group-committed (store/devices_results.go). The
-- results that arrive together are recorded by ONE statement, each with its own answer.

-- name: RecordSuccesses :many
-- The successes reported in one batch (arrays, one element per request), recorded and
-- answered by one statement: device_results_record (migrations/00092_device_steps.sql),
-- which takes the single-request path's steps by the same functions.
SELECT (r).n::integer AS n, (r).verdict::text AS verdict, (r).pc_name::text AS pc_name,
       (r).task_id::bigint AS task_id, (r).pc_id::bigint AS pc_id,
       -- As text ('' for none): the caller decodes the answer once, and hands the payload
       -- on as it is (a jsonb column would be parsed once more on the way in).
       coalesce((r).answer::text, '')::text AS answer, coalesce((r).next_payload::text, '')::text AS next_payload,
       (r).stored_status::integer AS stored_status,
       (r).stored_content_type::text AS stored_content_type, (r).stored_body::bytea AS stored_body,
       (r).created_id::bigint AS created_id, (r).created_status::text AS created_status,
       (r).left_on_pc::bigint AS left_on_pc, (r).key_stored::boolean AS key_stored
FROM device_results_record(@ids::bigint[], @attempts::integer[], @agent_pcs::text[], @token_ids::bigint[],
                           @keys::text[], @paths::text[], @hashes::bytea[], @claim_next::boolean[]) r
ORDER BY 1;

-- name: PCsWithoutExecutionsOf :many
-- Of the given (PC, task) pairs, those where the PC holds no execution of the task any
-- more: the PC's share of the task is over, and the dispatcher should look at the task.
-- Read after the batch that freed their last slots committed, so that of several batches
-- finishing a PC's share at once, the last to commit sees every other one.
SELECT p.pc_id::bigint AS pc_id, p.task_id::bigint AS task_id
FROM (SELECT (@pc_ids::bigint[])[i] AS pc_id, (@task_ids::bigint[])[i] AS task_id
      FROM generate_subscripts(@pc_ids::bigint[], 1) AS i) p
WHERE device_pc_share_left(p.pc_id, p.task_id) = 0;
