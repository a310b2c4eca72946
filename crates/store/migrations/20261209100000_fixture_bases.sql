-- toolmock: shared fixtures are stored once per simulation (issue 25 part 6;
-- docs/data-model.md "Shared fixtures: base and overlay").
--
-- A fixture-backed simulation's base — its shared fixtures and its pinned
-- definitions' initial states — is one row here, written by the start and
-- never changed (append-only like the pins). Each of its attempts'
-- `attempt_state` rows then holds only the attempt's own writes, in the
-- overlay's stored form (`{"=": value}` / `{"+": {member: …}}` per key), and
-- says so in `form`. A simulation without fixtures has no row here and its
-- attempts' rows hold whole states, as before.
CREATE TABLE simulation_fixture_bases (
    tenant_id      uuid NOT NULL,
    simulation_id  uuid NOT NULL,
    -- sha256 of the fixtures' canonical JSON (the results document's
    -- `fixtures_hash`).
    fixtures_hash  text NOT NULL CHECK (fixtures_hash ~ '^[0-9a-f]{64}$'),
    base           jsonb NOT NULL CHECK (jsonb_typeof(base) = 'object'),
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, simulation_id),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id)
);

CREATE TRIGGER simulation_fixture_bases_append_only_rows
    BEFORE UPDATE OR DELETE ON simulation_fixture_bases
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER simulation_fixture_bases_append_only_truncate
    BEFORE TRUNCATE ON simulation_fixture_bases
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

GRANT SELECT, INSERT ON simulation_fixture_bases TO toolmock_app;

-- Which form a state row holds: `state` (the whole state, every row written
-- before this migration and every attempt without fixtures) or `overlay`
-- (the attempt's writes over its simulation's base row). Fixed at the start.
ALTER TABLE attempt_state
    ADD COLUMN form text NOT NULL DEFAULT 'state' CHECK (form IN ('state', 'overlay'));
