-- toolmock: every contract an operation has had, by hash (issue 13), so that
-- the testing view can show the diff that made a revision stale: a revision
-- keeps only the hash it was saved against, and the operation row only its
-- current contract. Written by a trigger, so no writer can forget it.

CREATE TABLE operation_contracts (
    tenant_id      uuid NOT NULL,
    operation_id   uuid NOT NULL,
    contract_hash  text NOT NULL CHECK (contract_hash ~ '^[0-9a-f]{64}$'),
    contract       jsonb NOT NULL,
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, contract_hash),
    FOREIGN KEY (tenant_id, operation_id) REFERENCES tool_operations (tenant_id, id)
);

CREATE FUNCTION toolmock_remember_contract() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.contract_hash IS NOT NULL THEN
        INSERT INTO operation_contracts (tenant_id, operation_id, contract_hash, contract)
        VALUES (NEW.tenant_id, NEW.id, NEW.contract_hash, NEW.contract)
        ON CONFLICT (operation_id, contract_hash) DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tool_operations_remember_contract
    AFTER INSERT OR UPDATE OF contract, contract_hash ON tool_operations
    FOR EACH ROW EXECUTE FUNCTION toolmock_remember_contract();

INSERT INTO operation_contracts (tenant_id, operation_id, contract_hash, contract)
SELECT tenant_id, id, contract_hash, contract FROM tool_operations
WHERE contract_hash IS NOT NULL
ON CONFLICT DO NOTHING;

-- The application role (20261203100000) reads the history and, through the
-- trigger (which runs with the caller's rights), appends to it; nothing
-- updates or deletes it.
GRANT SELECT, INSERT ON operation_contracts TO toolmock_app;
