-- toolmock: a simulation's model cassette (issue 36; docs/cassettes.md,
-- "Through the API and workers"). A simulation started with a cassette keeps
-- its mode and the exchanges it was given; the workers that play its
-- attempts replay from those and add what they record. Every row is a
-- cassette line (RFC 8785 canonical JSON of one exchange), kept as text so
-- that a download gives back the very bytes; no key, header or endpoint URL
-- is ever part of one. Append-only. See docs/data-model.md.
CREATE TABLE simulation_cassettes (
    tenant_id      uuid NOT NULL,
    simulation_id  uuid NOT NULL PRIMARY KEY,
    mode           text NOT NULL CHECK (mode IN ('record', 'replay', 'auto')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id),
    UNIQUE (tenant_id, simulation_id)
);

CREATE TABLE cassette_exchanges (
    id             bigserial PRIMARY KEY,
    tenant_id      uuid NOT NULL,
    simulation_id  uuid NOT NULL,
    -- NULL for an exchange the start was given; the attempt that recorded it
    -- otherwise.
    attempt_id     uuid,
    line           text NOT NULL CHECK (line LIKE '{%}'),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulation_cassettes (tenant_id, simulation_id),
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id)
);

CREATE INDEX cassette_exchanges_simulation ON cassette_exchanges (simulation_id, id);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['simulation_cassettes', 'cassette_exchanges']
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

GRANT SELECT, INSERT ON simulation_cassettes, cassette_exchanges TO toolmock_app;
GRANT USAGE ON SEQUENCE cassette_exchanges_id_seq TO toolmock_app;
