-- toolmock: the guards on an attempt's update run only when they can change
-- or refuse something (issue 37).
--
-- Every claim, lease renewal and finish updates an `attempts` row, and two
-- PL/pgSQL functions ran before each of them, each a function call with its
-- pinned search_path set and reset. What they decide is unchanged; a
-- trigger's WHEN condition now skips the call where the function could only
-- return the row as it is:
--
-- * `toolmock_finished_attempt_is_final` refuses an update only of a row
--   that is already finished (TM010): it runs when OLD.status = 'finished'.
-- * `toolmock_derive_harness_error` makes `has_harness_error` say whether
--   the attempt has a harness_errors row. On insert it always runs. On
--   update the stored flag is already that answer: it was derived when the
--   row was inserted, harness_errors rows are append-only, and inserting one
--   sets the flag in the same transaction (`toolmock_mark_harness_error`,
--   through this trigger). So the function runs only when an update writes
--   a different flag, which it then derives again — a client cannot set the
--   flag by hand either way.
DROP TRIGGER attempts_a_finished_is_final ON public.attempts;
CREATE TRIGGER attempts_a_finished_is_final BEFORE UPDATE ON public.attempts
    FOR EACH ROW
    WHEN (OLD.status = 'finished')
    EXECUTE FUNCTION public.toolmock_finished_attempt_is_final();

DROP TRIGGER attempts_derive_harness_error ON public.attempts;
CREATE TRIGGER attempts_derive_harness_error BEFORE INSERT ON public.attempts
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_derive_harness_error();
CREATE TRIGGER attempts_derive_harness_error_on_update BEFORE UPDATE ON public.attempts
    FOR EACH ROW
    WHEN (NEW.has_harness_error IS DISTINCT FROM OLD.has_harness_error)
    EXECUTE FUNCTION public.toolmock_derive_harness_error();
