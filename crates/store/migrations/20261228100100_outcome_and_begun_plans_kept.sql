-- toolmock: the outcome's and the begin marks' functions keep their plans
-- (issue 37).
--
-- `toolmock_attempt_outcome` and `toolmock_calls_begun` were SQL functions.
-- With their pinned search_path (`SET search_path`, as every function of
-- the schema has) PostgreSQL cannot inline them, and a SQL function that is
-- not inlined parses and plans its body again in every statement that calls
-- it: about 0.1 ms each, twice per finish (the counts and the outcome), more
-- than the counts themselves. As PL/pgSQL functions they keep their plans for
-- the session. What they decide, their arguments, their volatility and their
-- pinned search_path are unchanged.
CREATE OR REPLACE FUNCTION public.toolmock_attempt_outcome(tenant uuid, attempt uuid, verdict text)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    RETURN CASE WHEN EXISTS (
                    SELECT 1 FROM public.harness_errors h
                     WHERE h.tenant_id = $1 AND h.attempt_id = $2)
                THEN 'harness_error' ELSE $3 END;
END
$$;

CREATE OR REPLACE FUNCTION public.toolmock_calls_begun(tenant_id uuid, attempt_id uuid)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    RETURN (SELECT count(*) FROM public.calls_begun b WHERE b.tenant_id = $1 AND b.attempt_id = $2)
         + (SELECT count(*) FROM public.evidence e
             WHERE e.tenant_id = $1 AND e.attempt_id = $2 AND e.begin_mark);
END
$$;
