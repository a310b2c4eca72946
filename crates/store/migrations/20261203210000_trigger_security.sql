-- toolmock: the schema's functions cannot be fooled by the caller's objects,
-- and a finished attempt is final (issue 19). See docs/data-model.md,
-- "Functions and the search path" and "A finished attempt is final".
--
-- Every function below runs with the caller's rights (SECURITY INVOKER, the
-- default): the application role already holds every privilege they use, so
-- none needs to run as its owner, and a SECURITY DEFINER function would run
-- as the schema's owner — possibly a superuser — on a call any role can make.
-- What they needed was a fixed search path: PostgreSQL resolves a name
-- through the caller's search_path, where a session's temporary tables come
-- first, so `CREATE TEMP TABLE harness_errors (…)` made the outcome trigger
-- read an empty table. Each function now pins `search_path = pg_catalog,
-- public, pg_temp` (pg_temp last: a temporary object can never come before
-- the schema's own) and names every table by its schema.

CREATE OR REPLACE FUNCTION public.toolmock_reject_mutation() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'TM001', TABLE = TG_TABLE_NAME;
END
$$;

CREATE OR REPLACE FUNCTION public.toolmock_next_revision() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    latest integer;
BEGIN
    UPDATE public.tool_operations SET latest_revision = latest_revision + 1
     WHERE id = NEW.operation_id AND tenant_id = NEW.tenant_id
    RETURNING latest_revision INTO latest;
    IF latest IS NULL OR latest <> NEW.revision THEN
        RAISE EXCEPTION 'revision % of operation % is not the next revision (%)',
            NEW.revision, NEW.operation_id, latest
            USING ERRCODE = 'TM002';
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION public.toolmock_mark_harness_error() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.attempts
       SET has_harness_error = true,
           outcome = CASE WHEN status = 'finished' THEN 'harness_error' ELSE outcome END
     WHERE id = NEW.attempt_id AND tenant_id = NEW.tenant_id;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION public.toolmock_derive_harness_error() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    NEW.has_harness_error := EXISTS (
        SELECT 1 FROM public.harness_errors h
         WHERE h.tenant_id = NEW.tenant_id AND h.attempt_id = NEW.id);
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION public.toolmock_remember_contract() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NEW.contract_hash IS NOT NULL THEN
        INSERT INTO public.operation_contracts (tenant_id, operation_id, contract_hash, contract)
        VALUES (NEW.tenant_id, NEW.id, NEW.contract_hash, NEW.contract)
        ON CONFLICT (operation_id, contract_hash) DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;

-- A finished attempt is final: its status, finish time and outcome never
-- change again, except that a harness error recorded after the verdict
-- turns the outcome into harness_error (toolmock_mark_harness_error). So no
-- client — the application role included — can move it back to running,
-- clear its outcome, or trade one verdict for another. SQLSTATE TM010.
CREATE FUNCTION public.toolmock_finished_attempt_is_final() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF OLD.status = 'finished' AND (
           NEW.status IS DISTINCT FROM OLD.status
        OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
        OR (NEW.outcome IS DISTINCT FROM OLD.outcome AND NEW.outcome IS DISTINCT FROM 'harness_error'))
    THEN
        RAISE EXCEPTION 'attempt % is finished (%): its status, outcome and finish time are final',
            OLD.id, OLD.outcome
            USING ERRCODE = 'TM010', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;

-- Named to run before attempts_derive_harness_error (triggers of one event
-- fire in name order); the order does not change what either decides.
CREATE TRIGGER attempts_a_finished_is_final BEFORE UPDATE ON public.attempts
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_final();

-- Nobody but the owner creates objects in the schema (PostgreSQL 15 and
-- later already withhold CREATE from PUBLIC; earlier versions granted it).
-- Temporary tables stay allowed: with every function's search path pinned,
-- pg_temp last and every name qualified, they shadow nothing of the schema.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM toolmock_app;

-- `serve` connects as the application role and checks, before it serves,
-- that every embedded migration is applied (as does /readyz): it reads the
-- migrations' own bookkeeping table, and only reads it.
GRANT SELECT ON public._sqlx_migrations TO toolmock_app;
