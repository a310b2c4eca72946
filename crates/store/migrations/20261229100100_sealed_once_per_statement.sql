-- toolmock: a finished attempt's seal is checked once per statement, not
-- once per row (issue 37). See docs/data-model.md, "A finished attempt is
-- sealed".
--
-- The inserts into `evidence`, `tool_input_errors`, `attempt_messages` and
-- `model_usage` each ran `toolmock_finished_attempt_is_sealed` before every
-- row: a PL/pgSQL call with its pinned search_path set and reset, and a
-- query of the row's attempt. A statement of gathered calls inserts a dozen
-- evidence rows, so the seal was a dozen calls per statement, the largest
-- part of a call's cost inside PostgreSQL after its own two rows. It is now
-- one call after each statement, over the rows the statement inserted (its
-- transition table): any of them for a finished attempt refuses the whole
-- statement with TM011, as before — the rows are never committed. What is
-- refused, the code and the message are unchanged.
--
-- The transition table is named `added` in each trigger and is resolved
-- before any relation of the search path, so a temporary table of that
-- name cannot stand in for it.
CREATE FUNCTION public.toolmock_finished_attempts_are_sealed() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    sealed uuid;
BEGIN
    SELECT n.attempt_id INTO sealed
      FROM added n
      JOIN public.attempts a ON a.tenant_id = n.tenant_id AND a.id = n.attempt_id
     WHERE a.status = 'finished'
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'attempt % is finished: % on % is not allowed',
            sealed, TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'TM011', TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END
$$;

-- Each table's trigger keeps its name: `<table>_sealed_when_finished`.
DO $$
DECLARE
    sealed_table text;
BEGIN
    FOREACH sealed_table IN ARRAY
        ARRAY['evidence', 'tool_input_errors', 'attempt_messages', 'model_usage']
    LOOP
        EXECUTE format('DROP TRIGGER %I ON public.%I',
                       sealed_table || '_sealed_when_finished', sealed_table);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON public.%I '
                       'REFERENCING NEW TABLE AS added FOR EACH STATEMENT '
                       'EXECUTE FUNCTION public.toolmock_finished_attempts_are_sealed()',
                       sealed_table || '_sealed_when_finished', sealed_table);
    END LOOP;
END
$$;

-- No trigger calls the per-row check any more.
DROP FUNCTION public.toolmock_finished_attempt_is_sealed();
