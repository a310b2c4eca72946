-- toolmock: verifications of library tools against the real tools they
-- stand for (docs/verify.md, "On the service"; docs/data-model.md).
--
-- An operator sets a tool's verification settings (its `verify` block:
-- which operations may be called for real, matchers, chains; where the
-- real tool is; a schedule). A verification is queued by the API or by the
-- schedule, claimed by a worker under a lease, and what it found is
-- appended per operation beside the operation's revisions — never changed.

-- One row per tool, replaced as a whole by PUT /api/tools/{id}/verification.
CREATE TABLE tool_verification_settings (
    tenant_id      uuid NOT NULL,
    tool_id        uuid NOT NULL,
    settings       jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object'),
    -- The schedule: every so many seconds (NULL: only on request).
    every_seconds  integer CHECK (every_seconds BETWEEN 300 AND 2592000),
    next_due_at    timestamptz,
    updated_by     text NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, tool_id),
    FOREIGN KEY (tenant_id, tool_id) REFERENCES tools (tenant_id, id),
    CHECK ((every_seconds IS NULL) = (next_due_at IS NULL))
);
CREATE INDEX tool_verification_settings_due ON tool_verification_settings (next_due_at)
    WHERE next_due_at IS NOT NULL;

-- One verification: `queued` (by a request or the schedule), `running`
-- (a worker's lease), then `finished` (its results appended) or `failed`
-- (it could not run: `error` says why). The settings are copied as they
-- were when it was queued.
CREATE TABLE tool_verifications (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    tool_id           uuid NOT NULL,
    requested_by      text NOT NULL,
    settings          jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object'),
    status            text NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'failed')),
    queued_at         timestamptz NOT NULL,
    started_at        timestamptz,
    finished_at       timestamptz,
    lease_owner       text NOT NULL DEFAULT '',
    lease_expires_at  timestamptz,
    claims            integer NOT NULL DEFAULT 0 CHECK (claims >= 0),
    ok                boolean,
    summary           jsonb,
    error             text,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, tool_id) REFERENCES tools (tenant_id, id),
    CHECK ((status IN ('finished', 'failed')) = (finished_at IS NOT NULL)),
    CHECK ((status = 'finished') = (ok IS NOT NULL))
);
CREATE INDEX tool_verifications_queued ON tool_verifications (queued_at, id) WHERE status = 'queued';
CREATE INDEX tool_verifications_running ON tool_verifications (lease_expires_at) WHERE status = 'running';
CREATE INDEX tool_verifications_of_tool ON tool_verifications (tenant_id, tool_id, queued_at DESC);

-- What one verification found for one operation: the revision whose mock
-- was checked (none: the operation had no mock), the contracts compared,
-- the verdict and the operation's whole report (drift, every check and
-- its divergences). Append-only, beside `tool_mock_revisions`.
CREATE TABLE tool_verification_results (
    tenant_id        uuid NOT NULL,
    verification_id  uuid NOT NULL,
    tool_id          uuid NOT NULL,
    operation_id     uuid NOT NULL,
    revision         integer CHECK (revision >= 1),
    definition_hash  text CHECK (definition_hash ~ '^[0-9a-f]{64}$'),
    contract_hash    text NOT NULL CHECK (contract_hash ~ '^[0-9a-f]{64}$'),
    verdict          text NOT NULL CHECK (verdict IN ('diverged', 'drifted', 'failed', 'agreed', 'unverified')),
    divergences      integer NOT NULL CHECK (divergences >= 0),
    report           jsonb NOT NULL CHECK (jsonb_typeof(report) = 'object'),
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, verification_id, operation_id),
    FOREIGN KEY (tenant_id, verification_id) REFERENCES tool_verifications (tenant_id, id),
    FOREIGN KEY (tenant_id, operation_id) REFERENCES tool_operations (tenant_id, id),
    FOREIGN KEY (tenant_id, operation_id, revision)
        REFERENCES tool_mock_revisions (tenant_id, operation_id, revision),
    CHECK ((revision IS NULL) = (definition_hash IS NULL))
);
-- The latest verdict of an operation (the tool view), and of a definition
-- (a simulation that pinned it).
CREATE INDEX tool_verification_results_operation
    ON tool_verification_results (tenant_id, operation_id, created_at DESC);
CREATE INDEX tool_verification_results_definition
    ON tool_verification_results (tenant_id, definition_hash, created_at DESC)
    WHERE definition_hash IS NOT NULL;

CREATE TRIGGER tool_verification_results_append_only_rows
    BEFORE UPDATE OR DELETE ON tool_verification_results
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER tool_verification_results_append_only_truncate
    BEFORE TRUNCATE ON tool_verification_results
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

GRANT SELECT, INSERT, UPDATE ON tool_verification_settings, tool_verifications TO toolmock_app;
GRANT SELECT, INSERT ON tool_verification_results TO toolmock_app;
