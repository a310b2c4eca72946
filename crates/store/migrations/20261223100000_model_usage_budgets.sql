-- toolmock: token usage and budgets on the service (issue 36, items 2 and
-- 3). See docs/data-model.md, "Token usage and budgets", and
-- docs/cassettes.md, "On the service".
--
-- A worker records every model answer's usage here as it arrives, under
-- the attempt's lease fence, in the attempt's running time (the judge
-- asks before the finish): one row per request. Append-only, and sealed
-- once the attempt is finished, like the conversation. The model's name,
-- the endpoint and its key are never kept: the cost is computed by the
-- worker from the price its operator configured for the model
-- (`--price`), and is absent when none is.
CREATE TABLE model_usage (
    id                 bigserial PRIMARY KEY,
    tenant_id          uuid NOT NULL,
    attempt_id         uuid NOT NULL,
    -- Kept with the row so that a simulation's spend is one indexed sum.
    simulation_id      uuid NOT NULL,
    role               text NOT NULL CHECK (role IN ('agent', 'judge', 'user')),
    -- The role's request number within the attempt (1, 2, …).
    turn               integer NOT NULL CHECK (turn >= 1),
    prompt_tokens      bigint NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens  bigint NOT NULL CHECK (completion_tokens >= 0),
    cached_tokens      bigint CHECK (cached_tokens >= 0),
    cost               double precision CHECK (cost >= 0 AND cost < 'Infinity'),
    -- An answer a cassette replayed: reported, but it costs nothing
    -- against a budget.
    replayed           boolean NOT NULL DEFAULT false,
    at                 timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, attempt_id) REFERENCES attempts (tenant_id, id),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id)
);
CREATE INDEX model_usage_attempt ON model_usage (tenant_id, attempt_id, id);
CREATE INDEX model_usage_simulation ON model_usage (tenant_id, simulation_id);

CREATE TRIGGER model_usage_append_only_rows BEFORE UPDATE OR DELETE ON model_usage
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER model_usage_append_only_truncate BEFORE TRUNCATE ON model_usage
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER model_usage_sealed_when_finished BEFORE INSERT ON public.model_usage
    FOR EACH ROW EXECUTE FUNCTION public.toolmock_finished_attempt_is_sealed();

-- A simulation's budget, fixed when it starts: the start request's
-- `max_tokens` / `max_cost`, each else the tenant's default. One row per
-- simulation with a budget, never changed.
CREATE TABLE simulation_budgets (
    tenant_id      uuid NOT NULL,
    simulation_id  uuid NOT NULL,
    max_tokens     bigint CHECK (max_tokens >= 1),
    max_cost       double precision CHECK (max_cost > 0 AND max_cost < 'Infinity'),
    -- Where each bound came from: 'request' or 'tenant' (NULL: no bound).
    max_tokens_from text CHECK (max_tokens_from IN ('request', 'tenant')),
    max_cost_from   text CHECK (max_cost_from IN ('request', 'tenant')),
    PRIMARY KEY (tenant_id, simulation_id),
    FOREIGN KEY (tenant_id, simulation_id) REFERENCES simulations (tenant_id, id),
    CHECK (max_tokens IS NOT NULL OR max_cost IS NOT NULL),
    CHECK ((max_tokens IS NULL) = (max_tokens_from IS NULL)),
    CHECK ((max_cost IS NULL) = (max_cost_from IS NULL))
);

CREATE TRIGGER simulation_budgets_append_only_rows BEFORE UPDATE OR DELETE ON simulation_budgets
    FOR EACH ROW EXECUTE FUNCTION toolmock_reject_mutation();
CREATE TRIGGER simulation_budgets_append_only_truncate BEFORE TRUNCATE ON simulation_budgets
    FOR EACH STATEMENT EXECUTE FUNCTION toolmock_reject_mutation();

-- A tenant's default budget, set by an operator (`toolmock-api budget`);
-- it applies to the simulations started after it is set.
CREATE TABLE tenant_budgets (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants (id),
    max_tokens  bigint CHECK (max_tokens >= 1),
    max_cost    double precision CHECK (max_cost > 0 AND max_cost < 'Infinity'),
    updated_at  timestamptz NOT NULL,
    CHECK (max_tokens IS NOT NULL OR max_cost IS NOT NULL)
);

GRANT SELECT, INSERT ON model_usage, simulation_budgets TO toolmock_app;
GRANT USAGE ON SEQUENCE model_usage_id_seq TO toolmock_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_budgets TO toolmock_app;
