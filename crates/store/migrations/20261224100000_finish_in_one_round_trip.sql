-- toolmock: an attempt's finish in one round trip (issue 37). See
-- docs/data-model.md, "Lock order" (5).
--
-- `finish_attempt` locks the attempt's row, then counts its begin marks
-- and records in a statement of its own (so that everything committed
-- before the lock was granted is counted), and, when there is nothing to
-- record, ends it in that same statement. That took four round trips
-- (BEGIN, the lock, the counts, COMMIT). This function runs exactly those
-- statements inside PostgreSQL: VOLATILE and PL/pgSQL, each of its
-- statements takes a snapshot of its own in READ COMMITTED, so the counts
-- still see every mark and record committed before the lock was granted.
-- It only ever ends a clean attempt (the caller's fence held, running, its
-- lease not over for an unheld attempt, every call recorded, a capability
-- unrevoked); otherwise it ends nothing and reports what it found, and the
-- caller takes the transaction that records what is wrong. (Its body
-- names the arguments by position and every column by its table, so no
-- column can ever take an argument's name.)
CREATE FUNCTION public.toolmock_finish_clean(
    tenant_id uuid, attempt_id uuid, at timestamptz, verdict text,
    owner text, epoch bigint, unmarked bigint)
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
    -- A held attempt's lease was just checked on PostgreSQL's clock
    -- (`holds`); the caller's `at` decides only for the others.
    IF NOT locked.holds OR locked.status <> 'running'
       OR NOT ($5 IS NOT NULL OR locked.lease_expires_at > $3) THEN
        RETURN QUERY SELECT true, locked.holds, locked.status, NULL::text;
        RETURN;
    END IF;
    SELECT (SELECT count(*) FROM public.evidence e WHERE e.tenant_id = $1 AND e.attempt_id = $2)
         + (SELECT count(*) FROM public.tool_input_errors t
             WHERE t.tenant_id = $1 AND t.attempt_id = $2)
         + (SELECT count(*) FROM public.harness_errors h
             WHERE h.tenant_id = $1 AND h.attempt_id = $2),
           (SELECT count(*) FROM public.calls_begun b WHERE b.tenant_id = $1 AND b.attempt_id = $2),
           NOT EXISTS (SELECT 1 FROM public.attempt_capabilities c
                        WHERE c.tenant_id = $1 AND c.attempt_id = $2 AND c.revoked_at IS NULL)
      INTO recorded, begun, revoked;
    IF recorded >= begun + $7 AND NOT revoked THEN
        UPDATE public.attempts a
           SET status = 'finished', finished_at = $3,
               outcome = public.toolmock_attempt_outcome($1, $2, $4)
         WHERE a.tenant_id = $1 AND a.id = $2
        RETURNING a.outcome INTO ended;
    END IF;
    RETURN QUERY SELECT true, true, locked.status, ended;
END
$$;
