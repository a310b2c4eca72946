-- toolmock: a workflow's `http_request` effect node, executed for real in a
-- real-tools run, writes an evidence row like a tool node's call (issue 20).
-- Its pin is the node itself: kind `effect`, with the hash of the node's
-- definition as the document states it (no tool, operation or revision).
-- Its tool_name and operation_name are the workflow's name and the node's
-- id; its executor is `real`. A harness error or tool input error of such a
-- node carries the same pin.
ALTER TABLE evidence DROP CONSTRAINT evidence_pin_kind_check;
ALTER TABLE evidence ADD CONSTRAINT evidence_pin_kind_check
    CHECK (pin_kind IN ('library', 'inline', 'effect'));
ALTER TABLE harness_errors DROP CONSTRAINT harness_errors_pin_kind_check;
ALTER TABLE harness_errors ADD CONSTRAINT harness_errors_pin_kind_check
    CHECK (pin_kind IN ('library', 'inline', 'effect'));
ALTER TABLE tool_input_errors DROP CONSTRAINT tool_input_errors_pin_kind_check;
ALTER TABLE tool_input_errors ADD CONSTRAINT tool_input_errors_pin_kind_check
    CHECK (pin_kind IN ('library', 'inline', 'effect'));
