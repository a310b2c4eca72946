-- toolmock: the worker queue (issue 20). Scripted attempts are queued by the
-- API and claimed by workers with FOR UPDATE SKIP LOCKED; a claim takes a
-- short lease that its worker renews by heartbeat, and every write the
-- worker makes for the attempt is fenced by (lease_owner, lease_epoch) in
-- the same statement. See docs/operations.md and docs/data-model.md.

-- 'queued': waiting for a worker (no lease yet; lease_owner is '' and
-- lease_expires_at is when it was queued).
ALTER TABLE attempts DROP CONSTRAINT attempts_status_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_status_check
    CHECK (status IN ('queued', 'running', 'finished'));
-- The lease's epoch: every claim, release and expiry adds one, so a holder
-- that lost its lease no longer matches (owner, epoch) in any write.
ALTER TABLE attempts ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
ALTER TABLE attempts ADD COLUMN queued_at timestamptz;

-- The worker's claim: queued attempts, oldest first.
CREATE INDEX attempts_queued ON attempts (queued_at, id) WHERE status = 'queued';
-- The heartbeat: a worker's running attempts.
CREATE INDEX attempts_running_owner ON attempts (lease_owner) WHERE status = 'running';

-- An attempt's lease history: every queueing, claim, release, expiry and
-- abandonment, so an attempt released back to the queue keeps the record of
-- who held it (no silent retry). Append-only.
CREATE TABLE attempt_leases (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    attempt_id  uuid NOT NULL,
    event       text NOT NULL CHECK (event IN ('queued', 'claimed', 'released', 'expired', 'abandoned')),
    owner       text NOT NULL,
    epoch       bigint NOT NULL,
    at          timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);
CREATE INDEX attempt_leases_attempt ON attempt_leases (attempt_id, id);

CREATE TRIGGER attempt_leases_append_only_rows BEFORE UPDATE OR DELETE ON attempt_leases
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER attempt_leases_append_only_truncate BEFORE TRUNCATE ON attempt_leases
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

GRANT SELECT, INSERT ON attempt_leases TO toolmock_app;
GRANT USAGE ON SEQUENCE attempt_leases_id_seq TO toolmock_app;
