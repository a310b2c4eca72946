-- toolmock: a call's evidence names who answered it as `mock` (the pinned
-- mock) or `real` (the operation's real handler, real-tools runs only), the
-- words of issue 20. The real executor was stored as `external` before,
-- which is also the name of the driver of an agent outside toolmock
-- (`{"type": "external"}`); the two meanings are kept apart from here on.
-- Existing rows are renamed in place: evidence is append-only, so its
-- row trigger is set aside for this one statement, inside the migration's
-- transaction, and put back before anything else can write.
ALTER TABLE evidence DROP CONSTRAINT evidence_executor_check;
ALTER TABLE evidence DISABLE TRIGGER evidence_append_only_rows;
UPDATE evidence SET executor = 'real' WHERE executor = 'external';
ALTER TABLE evidence ENABLE TRIGGER evidence_append_only_rows;
ALTER TABLE evidence ADD CONSTRAINT evidence_executor_check CHECK (executor IN ('mock', 'real'));
