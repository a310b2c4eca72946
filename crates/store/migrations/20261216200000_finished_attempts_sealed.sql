-- toolmock: a finished attempt is sealed, and a revocation is final (issue
-- 32, items 7 and 8). See docs/data-model.md, "A finished attempt is final".
--
-- The application's own writes already check, under the attempt row's share
-- lock, that the attempt is running; these triggers make the same rule hold
-- for any client of the application role (toolmock_app), which has INSERT on
-- these tables and UPDATE on the state rows and capabilities: once an
-- attempt is finished nobody rewrites its final state (whole or overlay,
-- the same row), adds to its conversation, its evidence or its tool input
-- errors. A harness error may still be recorded (harness_errors has no such
-- trigger): it can only turn the outcome into harness_error. SQLSTATE TM011.
--
-- Each trigger reads the attempt's status with a statement of its own (a
-- plpgsql function is VOLATILE: every statement sees what was committed
-- before it started), without a lock of its own: the application's writes
-- already hold the attempt row's share lock, and another client's write
-- that commits before the finish is a write to a running attempt, which the
-- role may make anyway.
CREATE FUNCTION public.toolmock_finished_attempt_is_sealed() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM public.attempts a
                WHERE a.tenant_id = NEW.tenant_id AND a.id = NEW.attempt_id
                  AND a.status = 'finished')
    THEN
        RAISE EXCEPTION 'attempt % is finished: % on % is not allowed',
            NEW.attempt_id, TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'TM011', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER attempt_state_sealed_when_finished BEFORE INSERT OR UPDATE ON public.attempt_state
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_sealed();
CREATE TRIGGER attempt_messages_sealed_when_finished BEFORE INSERT ON public.attempt_messages
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_sealed();
CREATE TRIGGER evidence_sealed_when_finished BEFORE INSERT ON public.evidence
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_sealed();
CREATE TRIGGER tool_input_errors_sealed_when_finished BEFORE INSERT ON public.tool_input_errors
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_sealed();

-- A capability is revoked once and for good: the one change its row allows
-- is setting revoked_at where it was NULL (every revocation of the
-- application does exactly that). Clearing or moving a revocation, or
-- moving a capability to another attempt, tenant or token, is refused.
-- SQLSTATE TM012.
CREATE FUNCTION public.toolmock_revocation_is_final() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL
        OR NEW.token_hash IS DISTINCT FROM OLD.token_hash
        OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
        OR NEW.attempt_id IS DISTINCT FROM OLD.attempt_id
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'a capability of attempt % may only be revoked, once', OLD.attempt_id
            USING ERRCODE = 'TM012', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER attempt_capabilities_revocation_is_final BEFORE UPDATE ON public.attempt_capabilities
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_revocation_is_final();
