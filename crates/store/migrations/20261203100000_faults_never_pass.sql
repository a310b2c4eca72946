-- toolmock: faults never pass, even from a privileged client (issue 10).
-- See docs/data-model.md, "The application role" and "Faults never pass".

-- 1. An attempt's outcome is derived from its harness_errors rows, not from a
-- flag a client could reset: on every insert and update of an attempt the
-- flag is recomputed from the rows, and the CHECK of the initial schema
-- (NOT has_harness_error OR outcome IS NULL OR outcome = 'harness_error')
-- then refuses any other outcome while a harness error exists.
CREATE FUNCTION toolmock_derive_harness_error() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.has_harness_error := EXISTS (
        SELECT 1 FROM harness_errors h
         WHERE h.tenant_id = NEW.tenant_id AND h.attempt_id = NEW.id);
    RETURN NEW;
END
$$;

CREATE TRIGGER attempts_derive_harness_error BEFORE INSERT OR UPDATE ON attempts
    FOR EACH ROW EXECUTE FUNCTION toolmock_derive_harness_error();

-- 2. The application role: what the dispatcher, the API and the workers
-- connect as. Not a superuser (so it cannot set session_replication_role and
-- switch the triggers off), not the owner of any table (so it cannot alter,
-- disable or drop them), and without UPDATE, DELETE or TRUNCATE on the
-- append-only tables. Roles belong to the whole cluster: it may already exist
-- (another database, an operator), and is then only checked. LOGIN without a
-- password: it can log in only where pg_hba trusts it, or once an operator
-- gives it a password (or grants it to a login role of their own).
DO $$
BEGIN
    CREATE ROLE toolmock_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

DO $$
BEGIN
    IF (SELECT rolsuper OR rolbypassrls OR rolcreaterole FROM pg_roles WHERE rolname = 'toolmock_app') THEN
        RAISE EXCEPTION 'the role toolmock_app exists with more privileges than it may have (superuser, bypassrls or createrole)';
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO toolmock_app;
GRANT SELECT, INSERT ON tenants, tools, tool_operations, tool_mock_revisions, agents, simulations,
    simulation_pins, test_cases, attempts, attempt_capabilities, attempt_state, evidence,
    tool_input_errors, harness_errors TO toolmock_app;
-- Only the mutable rows: an operation's current contract and latest revision,
-- an attempt's status, outcome and lease, a capability's revocation, the
-- fixture state.
GRANT UPDATE ON tool_operations, attempts, attempt_capabilities, attempt_state TO toolmock_app;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO toolmock_app;
