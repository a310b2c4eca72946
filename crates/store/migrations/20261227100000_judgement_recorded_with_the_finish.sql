-- toolmock: an attempt's judgement is recorded by its finish, in the same
-- statement (issue 37). See docs/data-model.md, `attempt_judgements` in
-- "Tables".
--
-- The judgement (`attempt_judgements`: the unmet expectations and the
-- judge's report) was a statement of its own after the finish: one more
-- round trip and commit per attempt, and a moment in which a reader saw
-- the attempt finished and unjudged. The clean finish now takes the
-- judgement and, when it ends the attempt, inserts it beside the outcome:
-- both are written or neither. A finish that records something first (a
-- lost call, a late lease: the transaction in `crates/store/src/pg/attempts.rs`)
-- inserts it in that transaction.
--
-- The function's arguments change, so it is dropped and created again;
-- the two new ones default to NULL (no judgement: only the finish).
DROP FUNCTION public.toolmock_finish_clean(uuid, uuid, timestamptz, text, text, bigint, bigint);

CREATE FUNCTION public.toolmock_finish_clean(
    tenant_id uuid, attempt_id uuid, at timestamptz, verdict text,
    owner text, epoch bigint, unmarked bigint,
    unmet jsonb DEFAULT NULL, judge jsonb DEFAULT NULL)
RETURNS TABLE (found boolean, holds boolean, status text, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    locked record;
    recorded bigint;
    begun bigint;
    revoked boolean;
    ended text;
BEGIN
    SELECT a.status AS status, a.lease_expires_at AS lease_expires_at,
           ($5 IS NULL OR (a.lease_owner = $5 AND a.lease_epoch = $6
               AND a.lease_expires_at > clock_timestamp())) AS holds
      INTO locked
      FROM public.attempts a
     WHERE a.tenant_id = $1 AND a.id = $2
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, false, NULL::text, NULL::text;
        RETURN;
    END IF;
    IF NOT locked.holds OR locked.status <> 'running'
       OR NOT ($5 IS NOT NULL OR locked.lease_expires_at > $3) THEN
        RETURN QUERY SELECT true, locked.holds, locked.status, NULL::text;
        RETURN;
    END IF;
    PERFORM 1 FROM public.attempt_state s
     WHERE s.tenant_id = $1 AND s.attempt_id = $2
       FOR NO KEY UPDATE;
    SELECT (SELECT count(*) FROM public.evidence e WHERE e.tenant_id = $1 AND e.attempt_id = $2)
         + (SELECT count(*) FROM public.tool_input_errors t
             WHERE t.tenant_id = $1 AND t.attempt_id = $2)
         + (SELECT count(*) FROM public.harness_errors h
             WHERE h.tenant_id = $1 AND h.attempt_id = $2),
           public.toolmock_calls_begun($1, $2),
           NOT EXISTS (SELECT 1 FROM public.attempt_capabilities c
                        WHERE c.tenant_id = $1 AND c.attempt_id = $2 AND c.revoked_at IS NULL)
      INTO recorded, begun, revoked;
    IF recorded >= begun + $7 AND NOT revoked THEN
        UPDATE public.attempts a
           SET status = 'finished', finished_at = $3,
               outcome = public.toolmock_attempt_outcome($1, $2, $4)
         WHERE a.tenant_id = $1 AND a.id = $2
        RETURNING a.outcome INTO ended;
        IF $8 IS NOT NULL THEN
            INSERT INTO public.attempt_judgements (tenant_id, attempt_id, unmet, judge)
            VALUES ($1, $2, $8, $9);
        END IF;
    END IF;
    RETURN QUERY SELECT true, true, locked.status, ended;
END
$$;
