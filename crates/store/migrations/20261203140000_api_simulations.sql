-- toolmock: simulations started through the API (issue 13). See
-- docs/data-model.md and docs/api.md, "Simulations".

-- The simulation document a start was given (library tools by id), so that
-- whoever runs or finishes an attempt later (this API process, another one,
-- a worker) finds its case's driver and expectations.
CREATE TABLE simulation_documents (
    tenant_id      uuid NOT NULL,
    simulation_id  uuid NOT NULL PRIMARY KEY,
    name           text NOT NULL,
    document       jsonb NOT NULL CHECK (jsonb_typeof(document) = 'object'),
    started_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id)
);

-- The judgement of a finished attempt: every expectation it did not meet
-- (an empty array: all met). Written once, beside the attempt's outcome.
CREATE TABLE attempt_judgements (
    tenant_id   uuid NOT NULL,
    attempt_id  uuid NOT NULL PRIMARY KEY,
    unmet       jsonb NOT NULL CHECK (jsonb_typeof(unmet) = 'array'),
    judged_at   timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['simulation_documents', 'attempt_judgements']
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

GRANT SELECT, INSERT ON simulation_documents, attempt_judgements TO toolmock_app;

-- Listing a tenant's simulations newest first, and a simulation's attempts.
CREATE INDEX simulations_tenant_created ON simulations (tenant_id, created_at DESC, id DESC);
CREATE INDEX attempts_simulation ON attempts (simulation_id, test_case_id, number);
-- The lease sweeper: running attempts by lease expiry.
CREATE INDEX attempts_running_lease ON attempts (lease_expires_at) WHERE status = 'running';
