-- toolmock: the initial schema (issue 4). See docs/data-model.md.
--
-- Every tenant-owned table carries tenant_id, and every reference between
-- tenant-owned rows is a composite foreign key on (tenant_id, id): a row can
-- only ever point at a row of its own tenant.

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tools (
    tenant_id      uuid NOT NULL REFERENCES tenants (id),
    id             uuid NOT NULL PRIMARY KEY,
    name           text NOT NULL CHECK (name <> ''),
    kind           text NOT NULL CHECK (kind IN ('platform', 'mcp', 'custom')),
    source_config  jsonb NOT NULL DEFAULT '{}'::jsonb,
    output_schema  jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE TABLE tool_operations (
    tenant_id        uuid NOT NULL,
    id               uuid NOT NULL PRIMARY KEY,
    tool_id          uuid NOT NULL,
    source           text NOT NULL CHECK (source IN ('platform', 'mcp', 'custom')),
    name             text NOT NULL CHECK (name <> ''),
    description      text NOT NULL DEFAULT '',
    input_schema     jsonb NOT NULL,
    output_schema    jsonb,
    -- The current contract after the tool's output-schema fallback; NULL when
    -- there is no output schema at all (needs_output_schema).
    contract         jsonb,
    contract_hash    text CHECK (contract_hash ~ '^[0-9a-f]{64}$'),
    latest_revision  integer NOT NULL DEFAULT 0 CHECK (latest_revision >= 0),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id),
    UNIQUE (tool_id, name),
    FOREIGN KEY (tenant_id, tool_id) REFERENCES tools (tenant_id, id),
    CHECK ((contract IS NULL) = (contract_hash IS NULL))
);

CREATE TABLE tool_mock_revisions (
    tenant_id        uuid NOT NULL,
    tool_id          uuid NOT NULL,
    operation_id     uuid NOT NULL,
    revision         integer NOT NULL CHECK (revision >= 1),
    contract_hash    text NOT NULL CHECK (contract_hash ~ '^[0-9a-f]{64}$'),
    definition       jsonb NOT NULL,
    definition_hash  text NOT NULL CHECK (definition_hash ~ '^[0-9a-f]{64}$'),
    author           text NOT NULL,
    provenance       text NOT NULL CHECK (provenance IN ('authored', 'generated')),
    instructions     text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, revision),
    UNIQUE (tenant_id, operation_id, revision),
    FOREIGN KEY (tenant_id, operation_id) REFERENCES tool_operations (tenant_id, id),
    FOREIGN KEY (tenant_id, tool_id) REFERENCES tools (tenant_id, id),
    CHECK (provenance = 'generated' OR instructions IS NULL)
);

CREATE TABLE agents (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL PRIMARY KEY,
    name        text NOT NULL,
    -- Library tool references, inline tools (each with its output_schema and
    -- testing definition) and workflows: toolmock_runtime::AgentSpec.
    spec        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, id)
);

CREATE TABLE simulations (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL PRIMARY KEY,
    agent_id          uuid NOT NULL,
    mode              text NOT NULL CHECK (mode IN ('sandbox', 'real_tools')),
    allow_incomplete  boolean NOT NULL,
    created_at        timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);

CREATE TABLE simulation_pins (
    tenant_id        uuid NOT NULL,
    simulation_id    uuid NOT NULL,
    tool_name        text NOT NULL,
    operation_name   text NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('library', 'inline', 'unpinned')),
    tool_id          uuid,
    operation_id     uuid,
    revision         integer,
    definition_hash  text CHECK (definition_hash ~ '^[0-9a-f]{64}$'),
    -- The contract at the start: a later schema correction does not change a pin.
    contract         jsonb,
    -- Inline definitions only (library pins reference their revision).
    definition       jsonb,
    unpinned_reason  text,
    PRIMARY KEY (simulation_id, tool_name, operation_name),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id),
    FOREIGN KEY (tenant_id, operation_id, revision)
        REFERENCES tool_mock_revisions (tenant_id, operation_id, revision),
    CHECK (
        (kind = 'library' AND tool_id IS NOT NULL AND operation_id IS NOT NULL
            AND revision IS NOT NULL AND definition_hash IS NOT NULL
            AND contract IS NOT NULL AND definition IS NULL AND unpinned_reason IS NULL)
     OR (kind = 'inline' AND revision IS NULL AND definition_hash IS NOT NULL
            AND contract IS NOT NULL AND definition IS NOT NULL AND unpinned_reason IS NULL)
     OR (kind = 'unpinned' AND revision IS NULL AND definition_hash IS NULL
            AND definition IS NULL AND unpinned_reason IS NOT NULL)
    )
);

CREATE TABLE test_cases (
    tenant_id      uuid NOT NULL,
    id             uuid NOT NULL PRIMARY KEY,
    simulation_id  uuid NOT NULL,
    position       integer NOT NULL,
    name           text NOT NULL,
    variants       jsonb NOT NULL DEFAULT '[]'::jsonb,
    UNIQUE (tenant_id, id),
    UNIQUE (simulation_id, position),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id)
);

CREATE TABLE attempts (
    tenant_id          uuid NOT NULL,
    id                 uuid NOT NULL PRIMARY KEY,
    simulation_id      uuid NOT NULL,
    test_case_id       uuid NOT NULL,
    number             integer NOT NULL CHECK (number >= 1),
    status             text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished')),
    outcome            text CHECK (outcome IN ('passed', 'failed', 'harness_error')),
    has_harness_error  boolean NOT NULL DEFAULT false,
    lease_owner        text NOT NULL,
    lease_expires_at   timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    UNIQUE (tenant_id, id),
    UNIQUE (test_case_id, number),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id),
    FOREIGN KEY (tenant_id, test_case_id) REFERENCES test_cases (tenant_id, id),
    CHECK ((status = 'finished') = (outcome IS NOT NULL)),
    -- An attempt with a harness error can never end as passed (or failed).
    CHECK (NOT has_harness_error OR outcome IS NULL OR outcome = 'harness_error')
);

CREATE TABLE attempt_capabilities (
    -- SHA-256 of the 256-bit token; the token itself is never stored.
    token_hash  bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    tenant_id   uuid NOT NULL,
    attempt_id  uuid NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);
CREATE INDEX attempt_capabilities_attempt ON attempt_capabilities (attempt_id);

-- One fixture-state row per attempt: the row the dispatcher locks.
CREATE TABLE attempt_state (
    attempt_id  uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    state       jsonb NOT NULL CHECK (jsonb_typeof(state) = 'object'),
    version     bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
    updated_at  timestamptz NOT NULL,
    UNIQUE (tenant_id, attempt_id),
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
) WITH (fillfactor = 50);  -- room for HOT updates: the state row is rewritten by every call

CREATE TABLE evidence (
    id                    bigserial PRIMARY KEY,
    tenant_id             uuid NOT NULL,
    attempt_id            uuid NOT NULL,
    tool_name             text NOT NULL,
    operation_name        text NOT NULL,
    pin_kind              text NOT NULL CHECK (pin_kind IN ('library', 'inline')),
    tool_id               uuid,
    operation_id          uuid,
    revision              integer,
    definition_hash       text NOT NULL,
    executor              text NOT NULL CHECK (executor IN ('mock', 'external')),
    variant               text,
    rule                  integer,
    arguments             jsonb NOT NULL,
    result                jsonb NOT NULL,
    state_before          jsonb NOT NULL,
    state_after           jsonb NOT NULL,
    state_version_before  bigint NOT NULL,
    state_version_after   bigint NOT NULL,
    delay_ms              integer NOT NULL,
    started_at            timestamptz NOT NULL,
    duration_us           bigint NOT NULL,
    recorded_at           timestamptz NOT NULL DEFAULT now(),
    -- References the state row (itself bound to the attempt) rather than the
    -- attempt: the call already holds that row's lock, so the foreign-key
    -- check adds no row lock of its own.
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempt_state (tenant_id, attempt_id),
    CHECK (state_version_after = state_version_before + 1),
    -- No two calls of one attempt can claim the same state version.
    UNIQUE (attempt_id, state_version_after)
);

CREATE TABLE tool_input_errors (
    id              bigserial PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    attempt_id      uuid NOT NULL,
    tool_name       text NOT NULL,
    operation_name  text NOT NULL,
    pin_kind        text CHECK (pin_kind IN ('library', 'inline')),
    tool_id         uuid,
    operation_id    uuid,
    revision        integer,
    definition_hash text,
    arguments       jsonb NOT NULL,
    code            text NOT NULL,
    message         text NOT NULL,
    path            text,
    violations      jsonb NOT NULL DEFAULT '[]'::jsonb,
    created_at      timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);
CREATE INDEX tool_input_errors_attempt ON tool_input_errors (attempt_id, id);

CREATE TABLE harness_errors (
    id              bigserial PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    attempt_id      uuid NOT NULL,
    tool_name       text,
    operation_name  text,
    pin_kind        text CHECK (pin_kind IN ('library', 'inline')),
    tool_id         uuid,
    operation_id    uuid,
    revision        integer,
    definition_hash text,
    arguments       jsonb,
    code            text NOT NULL,
    message         text NOT NULL,
    path            text,
    detail          jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);
CREATE INDEX harness_errors_attempt ON harness_errors (attempt_id, id);

-- Append-only tables: UPDATE, DELETE and TRUNCATE are rejected with SQLSTATE
-- TM001, which toolmock-store maps to StoreError::AppendOnly.
CREATE FUNCTION toolmock_reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'TM001', TABLE = TG_TABLE_NAME;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tool_mock_revisions', 'evidence', 'tool_input_errors',
                             'harness_errors', 'simulation_pins']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I
                        FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation()',
                       t || '_append_only_rows', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I
                        FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation()',
                       t || '_append_only_truncate', t);
    END LOOP;
END
$$;

-- Revision numbers are dense: each is exactly one more than the operation's
-- previous latest, which the insert moves forward in the same statement's
-- transaction (the operation row is locked by the saver).
CREATE FUNCTION toolmock_next_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    latest integer;
BEGIN
    UPDATE tool_operations SET latest_revision = latest_revision + 1
     WHERE id = NEW.operation_id AND tenant_id = NEW.tenant_id
    RETURNING latest_revision INTO latest;
    IF latest IS NULL OR latest <> NEW.revision THEN
        RAISE EXCEPTION 'revision % of operation % is not the next revision (%)',
            NEW.revision, NEW.operation_id, latest
            USING ERRCODE = 'TM002';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER tool_mock_revisions_dense BEFORE INSERT ON tool_mock_revisions
    FOR EACH ROW EXECUTE FUNCTION toolmock_next_revision();

-- A harness error marks its attempt at once, in the same transaction; an
-- attempt already finished is turned into harness_error.
CREATE FUNCTION toolmock_mark_harness_error() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE attempts
       SET has_harness_error = true,
           outcome = CASE WHEN status = 'finished' THEN 'harness_error' ELSE outcome END
     WHERE id = NEW.attempt_id AND tenant_id = NEW.tenant_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER harness_errors_mark_attempt AFTER INSERT ON harness_errors
    FOR EACH ROW EXECUTE FUNCTION toolmock_mark_harness_error();
