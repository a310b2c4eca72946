-- toolmock: a call writes its state row and its evidence, and nothing else
-- (issue 37). See docs/data-model.md, "Faults that cannot be written" (2),
-- "Lock order" and "A finished attempt is final".
--
-- A sandbox call's one statement wrote three rows and locked a fourth: the
-- state row, the evidence, a `calls_begun` row (its begin mark) and a share
-- lock on the attempt's `attempts` row; and two PL/pgSQL triggers read
-- `attempts` again. Now it writes the state row and the evidence row only.
--
-- 1. The begin mark. A sandbox call's begin mark was a `calls_begun` row
-- inserted by the very statement that inserts the call's evidence: the two
-- were written together or not at all, so the mark said nothing the
-- evidence row did not. It cost
-- every call a further row, two index entries, a sequence step and its
-- foreign key's KEY SHARE lock on the attempt's `attempts` row (a write to
-- that row). The evidence row now carries the mark: `begin_mark` is true on
-- the evidence of a call whose mark it is, and an attempt's marks are its
-- `calls_begun` rows plus those (`toolmock_calls_begun`, which every count
-- of the marks calls). Rows written before keep `false`: their calls' marks
-- are `calls_begun` rows.
ALTER TABLE public.evidence ADD COLUMN begin_mark boolean NOT NULL DEFAULT false;

-- The number of calls of an attempt that began: the marks committed on
-- their own and the marks carried by evidence. STABLE: it reads with the
-- snapshot of the statement that calls it.
CREATE FUNCTION public.toolmock_calls_begun(tenant_id uuid, attempt_id uuid)
RETURNS bigint
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT (SELECT count(*) FROM public.calls_begun b WHERE b.tenant_id = $1 AND b.attempt_id = $2)
         + (SELECT count(*) FROM public.evidence e
             WHERE e.tenant_id = $1 AND e.attempt_id = $2 AND e.begin_mark)
$$;

-- 2. The fence. A call's one statement held a share lock on its attempt's
-- `attempts` row (FOR SHARE), so that a finish, a reap or a release — each a change of
-- that row — waited for the call, and a call after them saw the change. A
-- row lock is a write (the tuple's lock bits, WAL-logged), made by every
-- call on the row everything else about the attempt shares; and the state
-- row's sealing trigger read `attempts` once more for every call. The state
-- row, which every call rewrites anyway, now carries what the fence needs:
-- `attempt_status` and `attempt_epoch`, copies of the attempt's status and
-- lease epoch, kept by a trigger on `attempts` in the very statement that
-- changes them. A finish, a reap, a release or a claim therefore writes the
-- state row too, which waits for a call holding it; and a call after it
-- finds (READ COMMITTED reads a row changed since its snapshot again before
-- it updates it) a status or an epoch that is not its own, and writes
-- nothing. The finish and the release also lock the state row before they
-- count an attempt's marks and records, so that a call in flight is
-- counted, as it was when they waited on the share lock.

ALTER TABLE public.attempt_state
    ADD COLUMN attempt_status text NOT NULL DEFAULT 'running',
    ADD COLUMN attempt_epoch bigint NOT NULL DEFAULT 0;

-- The copies of every existing row (the sealing trigger, which refuses any
-- write to a finished attempt's row, is off for this one statement).
ALTER TABLE public.attempt_state DISABLE TRIGGER attempt_state_sealed_when_finished;
UPDATE public.attempt_state s SET attempt_status = a.status, attempt_epoch = a.lease_epoch
  FROM public.attempts a WHERE a.tenant_id = s.tenant_id AND a.id = s.attempt_id;
DROP TRIGGER attempt_state_sealed_when_finished ON public.attempt_state;

-- A state row's copies are the attempt's own: set from it on insert (a
-- finished attempt's row is refused, TM011, as before), and an update that
-- changes them must make them the attempt's status and epoch (TM013) —
-- the trigger on `attempts` below is the one writer that does. Once the
-- copy says `finished`, the row is sealed: any update is refused (TM011).
CREATE FUNCTION public.toolmock_state_row_copies_its_attempt() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    attempt record;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.attempt_status = 'finished' THEN
        RAISE EXCEPTION 'attempt % is finished: % on % is not allowed',
            NEW.attempt_id, TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'TM011', TABLE = TG_TABLE_NAME;
    END IF;
    SELECT a.status, a.lease_epoch INTO attempt
      FROM public.attempts a
     WHERE a.tenant_id = NEW.tenant_id AND a.id = NEW.attempt_id;
    IF NOT FOUND THEN
        -- The foreign key refuses the row.
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF attempt.status = 'finished' THEN
            RAISE EXCEPTION 'attempt % is finished: % on % is not allowed',
                NEW.attempt_id, TG_OP, TG_TABLE_NAME
                USING ERRCODE = 'TM011', TABLE = TG_TABLE_NAME;
        END IF;
        NEW.attempt_status := attempt.status;
        NEW.attempt_epoch := attempt.lease_epoch;
    ELSIF NEW.attempt_status IS DISTINCT FROM attempt.status
          OR NEW.attempt_epoch IS DISTINCT FROM attempt.lease_epoch THEN
        RAISE EXCEPTION 'the state row of attempt % copies its status and lease epoch; they are not written by hand',
            NEW.attempt_id
            USING ERRCODE = 'TM013', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER attempt_state_copies_its_attempt_on_insert BEFORE INSERT ON public.attempt_state
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_state_row_copies_its_attempt();
-- A call's update leaves the copies alone on a running attempt's row: the
-- condition is false and no function runs.
CREATE TRIGGER attempt_state_sealed_when_finished BEFORE UPDATE ON public.attempt_state
    FOR EACH ROW
    WHEN (OLD.attempt_status = 'finished'
          OR NEW.attempt_status IS DISTINCT FROM OLD.attempt_status
          OR NEW.attempt_epoch IS DISTINCT FROM OLD.attempt_epoch)
    EXECUTE FUNCTION public.toolmock_state_row_copies_its_attempt();

-- The one writer of the copies: whatever changes an attempt's status or
-- lease epoch changes its state row's copies in the same statement.
CREATE FUNCTION public.toolmock_attempt_fences_its_state_row() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.attempt_state s
       SET attempt_status = NEW.status, attempt_epoch = NEW.lease_epoch
     WHERE s.tenant_id = NEW.tenant_id AND s.attempt_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER attempts_fence_their_state_row AFTER UPDATE ON public.attempts
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_epoch IS DISTINCT FROM NEW.lease_epoch)
    EXECUTE FUNCTION public.toolmock_attempt_fences_its_state_row();

-- As in migration 20261224100000, with the marks counted by
-- `toolmock_calls_begun` and the state row locked (FOR NO KEY
-- UPDATE, which a call's update also takes) after the attempt's row and
-- before the counts: a call in flight commits first and is counted, and a
-- call after the finish finds the row's copy `finished`.
CREATE OR REPLACE FUNCTION public.toolmock_finish_clean(
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
    END IF;
    RETURN QUERY SELECT true, true, locked.status, ended;
END
$$;
