-- toolmock: a model-driven attempt's conversation as evidence (issue 21).
-- A worker that plays a `model` case keeps every message (system, user,
-- assistant with its tool calls, tool) here as it is added, under the
-- attempt's lease fence, so the conversation survives a worker that dies
-- mid-attempt. The endpoint's configuration (URL, model, key) is never part
-- of a message. Append-only. See docs/data-model.md.
CREATE TABLE attempt_messages (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    attempt_id  uuid NOT NULL,
    -- 0 for the system message, then 1, 2, … in the order they were added.
    position    integer NOT NULL CHECK (position >= 0),
    -- The message as the model driver records it: {"role": …, …}.
    message     jsonb NOT NULL CHECK (jsonb_typeof(message) = 'object' AND message ? 'role'),
    at          timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id),
    UNIQUE (attempt_id, position)
);

CREATE TRIGGER attempt_messages_append_only_rows BEFORE UPDATE OR DELETE ON attempt_messages
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER attempt_messages_append_only_truncate BEFORE TRUNCATE ON attempt_messages
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

-- The judge's verdict, score and reasoning for a case with a `judge`
-- rubric, kept with the judgement it belongs to (absent otherwise).
ALTER TABLE attempt_judgements ADD COLUMN judge jsonb
    CHECK (judge IS NULL OR jsonb_typeof(judge) = 'object');

GRANT SELECT, INSERT ON attempt_messages TO toolmock_app;
GRANT USAGE ON SEQUENCE attempt_messages_id_seq TO toolmock_app;
