-- toolmock: an attempt's calls are counted in storage, before they are
-- processed, so that any process finishing the attempt refuses a pass when
-- a call's record was lost (docs/data-model.md, "Faults that cannot be
-- written").

-- One row per call begun: written in a committed statement of its own
-- before the call is evaluated, executed or answered. The finish compares
-- their number with the attempt's records (evidence, tool_input_errors,
-- harness_errors). The foreign key takes a KEY SHARE lock on the attempt's
-- row, so a finish (FOR UPDATE) waits for marks being written.
CREATE TABLE calls_begun (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    attempt_id  uuid NOT NULL,
    begun_at    timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);
CREATE INDEX calls_begun_attempt ON calls_begun (attempt_id);

-- Append-only like the records it is compared with: a client that could
-- delete marks could hide a lost call.
CREATE TRIGGER calls_begun_append_only_rows BEFORE UPDATE OR DELETE ON calls_begun
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER calls_begun_append_only_truncate BEFORE TRUNCATE ON calls_begun
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

GRANT SELECT, INSERT ON calls_begun TO toolmock_app;
GRANT USAGE ON SEQUENCE calls_begun_id_seq TO toolmock_app;
