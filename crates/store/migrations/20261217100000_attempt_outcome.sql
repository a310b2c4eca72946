-- toolmock: one decision of an attempt's outcome (issue 33). See
-- docs/data-model.md, "Faults never pass".
--
-- "A harness error means harness_error, whatever the verdict" was written
-- in the finish's two UPDATE statements and in the harness-error trigger.
-- It is now this one function, which they all call (the runtime's
-- `AttemptOutcome::decide` is the same decision for the in-memory backend).
-- It reads the attempt's harness_errors rows itself, so no caller can hand
-- it a stale flag. (Its body names the arguments by position, so no column
-- of a table it reads can ever take an argument's name.)
CREATE FUNCTION public.toolmock_attempt_outcome(tenant uuid, attempt uuid, verdict text)
RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT CASE WHEN EXISTS (
                    SELECT 1 FROM public.harness_errors h
                     WHERE h.tenant_id = $1 AND h.attempt_id = $2)
                THEN 'harness_error' ELSE $3 END
$$;

-- The trigger after a harness_errors row: a finished attempt's outcome is
-- decided again (which, with the row just inserted, is harness_error).
CREATE OR REPLACE FUNCTION public.toolmock_mark_harness_error() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.attempts
       SET has_harness_error = true,
           outcome = CASE WHEN status = 'finished'
                          THEN public.toolmock_attempt_outcome(tenant_id, id, outcome)
                          ELSE outcome END
     WHERE id = NEW.attempt_id AND tenant_id = NEW.tenant_id;
    RETURN NEW;
END
$$;
