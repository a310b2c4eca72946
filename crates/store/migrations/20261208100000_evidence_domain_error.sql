-- toolmock: version 2's domain errors (issue 25). A call whose mock answered
-- `error: {code, message, data?}` instead of a result is evidence like any
-- answered call, with its own status: `domain_error` (its `result` is JSON
-- null and `error` holds {code, message, data?}); every other row is `ok`
-- with no `error`. A domain error changes no state, so its states are equal.
-- Existing rows read as `ok`: the constant default adds the column without
-- rewriting (or updating) the append-only table. See docs/data-model.md.
ALTER TABLE evidence
    ADD COLUMN status text NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'domain_error')),
    ADD COLUMN error jsonb,
    ADD CONSTRAINT evidence_error_matches_status CHECK (
        (status = 'ok' AND error IS NULL)
        OR (status = 'domain_error' AND jsonb_typeof(error) = 'object'
            AND error ? 'code' AND error ? 'message' AND state_before = state_after));
