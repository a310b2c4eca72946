"""The package's own API: number rules, conversions, errors, Attempt."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import toolmock
from conftest import ROOT, run_cli, write_json

BOOK = ROOT / "fixtures/examples/book-appointment"
CONTRACT = json.loads((BOOK / "contract.json").read_text())
DEFINITION = (BOOK / "mock.json").read_bytes()


def echo(result: object, **extra: object) -> dict:
    return {
        "schema_version": 1, "default_variant": "ok",
        "variants": {"ok": {"result": result, **extra}},
        "examples": [{"variant": "ok", "input": {"x": 1}, "expected": {"got": 1} if result == {"got": {"$input": "x"}} else result}],
    }


ECHO = toolmock.compile(echo({"got": {"$input": "x"}}))


def test_values_keep_their_json_types() -> None:
    for value in [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 1.5, -0.0, 1.0, True, False, None, "é\u2028", [1, [2]], {"a": {"b": []}}]:
        result, _, _ = ECHO.evaluate({"x": value})
        assert result == {"got": value} and type(result["got"]) is type(value), value


def test_an_int_beyond_64_bits_becomes_the_nearest_double_as_in_the_cli(tmp_path: Path) -> None:
    big = 2**64 + 1
    result, _, _ = ECHO.evaluate({"x": big})
    assert result == {"got": float(big)} and type(result["got"]) is float
    (tmp_path / "calls.jsonl").write_text(json.dumps({"input": {"x": big}}) + "\n")
    ran = run_cli("eval", write_json(tmp_path / "d.json", echo({"got": {"$input": "x"}})), "--calls", tmp_path / "calls.jsonl")
    assert json.loads(ran.stdout)["ok"]["result"] == result


def test_hashing_refuses_an_integer_no_double_holds(tmp_path: Path) -> None:
    inexact = {**CONTRACT, "input_schema": {"type": "object", "properties": {"n": {"maximum": 2**64 + 1}}}}
    with pytest.raises(toolmock.ContractError) as raised:
        toolmock.contract_hash(inexact)
    assert (raised.value.code, raised.value.path) == ("inexact_number", "/input_schema/properties/n/maximum")
    ran = run_cli("hash", write_json(tmp_path / "c.json", inexact))
    assert ran.returncode == 2 and b"inexact_number" in ran.stderr
    exact = {**CONTRACT, "input_schema": {"type": "object", "properties": {"n": {"maximum": 2**70}}}}
    assert toolmock.contract_hash(exact) == run_cli("hash", write_json(tmp_path / "e.json", exact)).stdout.decode().strip()
    assert toolmock.contract_hash(exact) != toolmock.contract_hash({**exact, "input_schema": {"type": "object", "properties": {"n": {"maximum": 2**70 + 2**18}}}})


def test_a_bool_is_not_a_number() -> None:
    contract = {"operation": {"source": "custom", "name": "n"}, "description": "",
                "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}}, "output_schema": {}}
    mock = toolmock.compile(echo({"got": {"$input": "x"}}), contract)
    with pytest.raises(toolmock.ToolInputError) as raised:
        mock.evaluate({"x": True})
    assert raised.value.code == "invalid_arguments" and raised.value.path == "/x"
    assert mock.evaluate({"x": 1})[0] == {"got": 1}


@pytest.mark.parametrize(("value", "path"), [
    ({"x": {1, 2}}, "/x"),
    ({"x": [1, float("nan")]}, "/x/1"),
    ({"x": {"a/b": float("inf")}}, "/x/a~1b"),
    ({"x": {1: "a"}}, "/x"),
    ({"x": 10**400}, "/x"),
])
def test_a_value_without_a_json_form_is_refused_with_its_path(value: object, path: str) -> None:
    with pytest.raises(toolmock.NotJsonError) as raised:
        ECHO.evaluate(value)
    assert (raised.value.code, raised.value.path) == ("not_json", path)


def test_evaluate_leaves_the_given_state_alone() -> None:
    mock = toolmock.compile(DEFINITION, CONTRACT)
    state = mock.initial_state
    copy = json.loads(json.dumps(state))
    result, new_state, delay = mock.evaluate({"member_id": "M-1", "from_date": "2026-03-01", "copay_dollars": "5.00"}, state)
    assert state == copy and new_state["booked"] is True and delay == 120
    outcome = mock.evaluate_outcome({"member_id": "M-2", "from_date": "2026-03-01"}, new_state)
    assert (outcome.variant, outcome.rule, outcome.result) == ("available", 0, {"member_id": "M-2", "status": "waitlisted"})


def test_errors_carry_code_path_message_and_class() -> None:
    mock = toolmock.compile(DEFINITION, CONTRACT)
    with pytest.raises(toolmock.ToolInputError) as raised:
        mock.evaluate({"member_id": "M-1", "from_date": "2026-03-01", "days_out": "soon"})
    e = raised.value
    assert (e.code, e.path, e.error_class) == ("invalid_arguments", "/days_out", "tool_input_error")
    assert e.violations == [("/days_out", "/properties/days_out/type", '"soon" is not of type "integer"')]
    assert str(e) == e.message
    with pytest.raises(toolmock.HarnessError) as raised:
        mock.evaluate({"member_id": "M-1", "from_date": "2026-03-01"}, variant="gone")
    assert (raised.value.code, raised.value.path, raised.value.error_class) == ("unknown_variant", None, "harness_error")
    assert isinstance(raised.value, toolmock.CallFailed) and isinstance(raised.value, toolmock.ToolmockError)


def test_a_failing_definition_raises_every_problem_at_once() -> None:
    broken = (BOOK / "broken.json").read_text()
    with pytest.raises(toolmock.DefinitionError) as raised:
        toolmock.compile(broken, CONTRACT)
    assert raised.value.code == "invalid_definition"
    assert [p.code for p in raised.value.problems] == ["unknown_field", "invalid_literal", "invalid_condition"]
    assert raised.value.problems == toolmock.check(broken, CONTRACT)
    assert "3 problems" in str(raised.value)


def test_repeated_keys_are_found_in_definition_text() -> None:
    text = '{"schema_version": 1, "schema_version": 1, "default_variant": "a", "variants": {"a": {"result": {}}}, "examples": []}'
    assert "duplicate_key" in [p.code for p in toolmock.check(text, CONTRACT)]


def test_warnings_have_their_severity() -> None:
    definition = json.loads(DEFINITION)
    del definition["variants"]["available"]["rules"][2]
    del definition["examples"][2]
    problems = toolmock.check(definition, CONTRACT)
    assert [(p.code, p.severity) for p in problems] == [("optional_input_reference", "warning")]


def test_a_contract_object_is_compiled_once_and_reused() -> None:
    contract = toolmock.Contract(CONTRACT)
    assert contract.hash == toolmock.contract_hash(CONTRACT) == toolmock.contract_hash(json.dumps(CONTRACT))
    assert contract.to_dict() == CONTRACT
    assert toolmock.compile(DEFINITION, contract).contract.hash == contract.hash
    with pytest.raises(toolmock.ContractError) as raised:
        toolmock.Contract({**CONTRACT, "input_schema": {"type": "strin"}})
    assert (raised.value.code, raised.value.path) == ("invalid_schema", "/input_schema")


def test_normalize_manifest_is_toolmock_normalize() -> None:
    manifest = ROOT / "fixtures/healthplus/tools/salesforce.manifest.json"
    ran = run_cli("normalize", manifest)
    assert toolmock.normalize_manifest(manifest.read_bytes()) == json.loads(ran.stdout)
    assert toolmock.normalize_manifest(json.loads(manifest.read_bytes())) == json.loads(ran.stdout)
    with pytest.raises(toolmock.ManifestError) as raised:
        toolmock.normalize_manifest({"manifest_version": 1, "tool": "t", "operations": [{"name": "x", "bogus": 1}]})
    assert raised.value.code == "invalid_manifest" and raised.value.problems


def contract_of(name: str, output_schema: object = None) -> dict:
    return {"operation": {"source": "custom", "name": name}, "description": "",
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            "output_schema": output_schema if output_schema is not None else {"type": "object"}}


def counter(start: int, key: str = "count") -> dict:
    return {"schema_version": 1, "default_variant": "ok", "initial_state": {key: start},
            "variants": {"ok": {"result": {"before": {"$state": key}, "n": {"$input": "n"}}, "set_state": {key: {"$input": "n"}}}},
            "examples": [{"variant": "ok", "input": {"n": 1}, "expected": {"before": start, "n": 1}}]}


def test_an_attempt_threads_its_state_like_the_dispatcher() -> None:
    attempt = toolmock.Attempt({"a": counter(0), "b": counter(0)}, {"a": contract_of("a"), "b": contract_of("b"), "c": contract_of("c")})
    assert attempt.call("a", {"n": 5}) == {"before": 0, "n": 5}
    assert attempt.call("b", {"n": 7}) == {"before": 5, "n": 7}, "one state for the whole attempt"
    with pytest.raises(toolmock.ToolInputError):
        attempt.call("a", {"n": "x"})
    assert attempt.state == {"count": 7}, "a failed call changes no state"
    with pytest.raises(toolmock.HarnessError) as raised:
        attempt.call("c", {"n": 1})
    assert raised.value.code == "missing_definition"
    with pytest.raises(toolmock.HarnessError) as raised:
        attempt.call("d", {"n": 1})
    assert raised.value.code == "unknown_tool"
    assert [c["status"] for c in attempt.calls] == ["ok", "ok", "tool_input_error", "harness_error", "harness_error"]
    assert [e["error"]["code"] for e in attempt.harness_errors] == ["missing_definition", "unknown_tool"]
    fresh = attempt.restart()
    assert fresh.state == {"count": 0} and fresh.calls == []


def test_the_output_is_validated_after_the_input_and_changes_nothing() -> None:
    strict = contract_of("a", {"type": "object", "properties": {"n": {"maximum": 10}}})
    attempt = toolmock.Attempt({"a": counter(0)}, {"a": strict})
    with pytest.raises(toolmock.HarnessError) as raised:
        attempt.call("a", {"n": 11})
    assert (raised.value.code, raised.value.path) == ("output_schema_violation", "/n")
    assert attempt.state == {"count": 0}
    with pytest.raises(toolmock.ToolInputError) as raised:
        attempt.call("a", {"n": "\u0000"})
    assert raised.value.code == "invalid_arguments"


def test_a_state_conflict_names_both_definitions() -> None:
    with pytest.raises(toolmock.AttemptError) as raised:
        toolmock.Attempt({"a": counter(0), "b": counter(1)}, {"a": contract_of("a"), "b": contract_of("b")})
    assert raised.value.code == "state_conflict"
    assert raised.value.message == 'state_conflict on "count" between a and b'
    same = toolmock.Attempt({"a": counter(1), "b": counter(1.0)}, {"a": contract_of("a"), "b": contract_of("b")})
    assert same.state == {"count": 1}, "equal values do not conflict (numbers by value)"


def test_a_definition_is_checked_against_its_attempt_contract() -> None:
    with pytest.raises(toolmock.AttemptError) as raised:
        toolmock.Attempt({"a": counter(0)}, {})
    assert raised.value.code == "missing_contract"
    with pytest.raises(toolmock.DefinitionError):
        toolmock.Attempt({"a": counter(0)}, {"a": contract_of("a", {"type": "string"})})


def test_compiled_definitions_are_shared_between_threads() -> None:
    mock = toolmock.compile(DEFINITION, CONTRACT)
    answers: list[object] = []

    def work() -> None:
        for i in range(200):
            answers.append(mock.evaluate({"member_id": f"M-{i}", "from_date": "2026-03-01", "days_out": 1, "copay_dollars": "1.00"})[0]["starts_at"])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(answers) == {"2026-03-02T09:00:00.000Z"} and len(answers) == 800


def test_every_code_the_package_reports_is_documented() -> None:
    toolmock._toolmock._check_documented_codes((ROOT / "docs/error-codes.md").read_text())


def nested(levels: int) -> object:
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


def test_a_value_nested_deeper_than_a_json_document_may_be_is_refused() -> None:
    assert ECHO.evaluate({"x": nested(126)})[0] == {"got": nested(126)}
    with pytest.raises(toolmock.NotJsonError) as raised:
        ECHO.evaluate({"x": nested(127)})
    assert raised.value.code == "not_json" and raised.value.path == "/x" + "/0" * 126
    looped: list = []
    looped.append(looped)
    with pytest.raises(toolmock.NotJsonError):
        ECHO.evaluate({"x": looped})


def test_the_new_state_holds_what_the_evaluator_read(tmp_path: Path) -> None:
    """Found by the property test: keys the call does not set come back as
    the evaluator read them, as the CLI prints them — not as the caller's
    objects (an int beyond 64 bits is the double it became, a tuple a list)."""
    mock = toolmock.compile(DEFINITION)
    state = {"next_reference": [-(2**63) - 1], "history": ("a", "b")}
    call = {"member_id": "M-42", "from_date": "2026-03-01", "days_out": 7, "copay_dollars": "25.00"}
    _, new_state, _ = mock.evaluate(call, state)
    assert new_state["next_reference"] == [float(-(2**63) - 1)] and type(new_state["next_reference"][0]) is float
    assert new_state["history"] == ["a", "b"]
    (tmp_path / "calls.jsonl").write_text(json.dumps({"input": call}) + "\n")
    ran = run_cli("eval", BOOK / "mock.json", "--calls", tmp_path / "calls.jsonl", "--state", write_json(tmp_path / "s.json", state))
    assert json.loads(ran.stdout)["ok"]["state"] == new_state


def test_an_attempt_removes_what_a_version_3_removal_names() -> None:
    """docs/mock-language.md "Removing from state": a saved payment method
    taken out by key, gift cards by a where, nothing for what is not there."""
    wallet = {"users": {"u1": {"methods": {"gc_1": {"kind": "gift_card"}, "cc_2": {"kind": "card"},
                                           "gc_3": {"kind": "GIFT_CARD"}}}}}
    methods = ["users", {"$input": "user_id"}, "methods"]
    delete = {
        "schema_version": 3, "default_variant": "one", "initial_state": wallet,
        "variants": {
            "one": {"result": "deleted", "set_state": [{"remove": [*methods, {"$input": "id"}]}]},
            "cards": {"result": "deleted", "set_state": [{"remove": methods, "where_ci": {"kind": "gift_card"}}]},
        },
        "examples": [{"variant": "one", "input": {"user_id": "u1", "id": "zz"}, "expected": "deleted",
                      "expected_state": wallet},
                     {"variant": "cards", "input": {"user_id": "u1"}, "expected": "deleted",
                      "expected_state": {"users": {"u1": {"methods": {"cc_2": {"kind": "card"}}}}}}],
    }
    contract = {"operation": {"source": "custom", "name": "delete"}, "description": "",
                "input_schema": {"type": "object"}, "output_schema": {"type": "string"}}
    attempt = toolmock.Attempt({"delete": delete}, {"delete": contract})
    assert attempt.call("delete", {"user_id": "u1", "id": "cc_2"}) == "deleted"
    assert attempt.state["users"]["u1"]["methods"] == {"gc_1": {"kind": "gift_card"}, "gc_3": {"kind": "GIFT_CARD"}}
    attempt.call("delete", {"user_id": "u9", "id": "cc_2"})
    attempt.call("delete", {"user_id": "u1"}, variant="cards")
    assert attempt.state == {"users": {"u1": {"methods": {}}}}
    with pytest.raises(toolmock.ToolInputError) as raised:
        attempt.call("delete", {"user_id": ["u1"], "id": "x"})
    assert (raised.value.code, raised.value.path) == ("invalid_path_segment", "/user_id")
    with pytest.raises(toolmock.DefinitionError) as refused:
        toolmock.compile({**delete, "schema_version": 2})
    assert [p.code for p in refused.value.problems] == ["version_3_feature", "version_3_feature"]


def _mutate(value: object) -> None:
    """Changes every dict and list inside `value`, innermost first."""
    if isinstance(value, dict):
        for item in value.values():
            _mutate(item)
        value["added"] = [1]
        value.pop(next(iter(value)))
    elif isinstance(value, list):
        for item in value:
            _mutate(item)
        value.append({"added": 1})
        value.pop(0)


@pytest.mark.parametrize(("result", "expected"), [
    ({"id": {"$input": "x"}, "literal": {"nested": {"deep": [1, "two", {"three": None}]}, "list": [[], {}]}, "n": 1.5, "flag": True},
     {"id": 1, "literal": {"nested": {"deep": [1, "two", {"three": None}]}, "list": [[], {}]}, "n": 1.5, "flag": True}),
    ([{"$input": "x"}, {"a": [1, 2]}, "s", [{"b": {}}]], [1, {"a": [1, 2]}, "s", [{"b": {}}]]),
    ({"all": {"literal": ["yes", {"k": 1}]}, "s": "text"}, {"all": {"literal": ["yes", {"k": 1}]}, "s": "text"}),
    ([[1, 2], {"k": [3]}], [[1, 2], {"k": [3]}]),
])
def test_changing_a_result_never_changes_the_next_calls(result: object, expected: object) -> None:
    definition = echo(result)
    definition["variants"]["ok"]["rules"] = [{"when": [{"source": "input", "path": "x", "op": "eq", "value": 2}], "result": result}]
    definition["examples"] = [{"variant": "ok", "input": {"x": 1}, "expected": expected}]
    mock = toolmock.compile(definition)
    for x in (1, 2):
        first, _, _ = mock.evaluate({"x": x})
        want = json.loads(json.dumps(first))
        _mutate(first)
        assert first != want
        again, _, _ = mock.evaluate({"x": x})
        assert again == want and json.dumps(again) == json.dumps(want)
        outcome = mock.evaluate_outcome({"x": x})
        _mutate(outcome.result)
        assert mock.evaluate_outcome({"x": x}).result == want


def test_changing_a_yardstick_result_never_changes_the_next_calls() -> None:
    bench = ROOT / "fixtures/bench/eval-realistic"
    mock = toolmock.compile(json.loads((bench / "definition.json").read_text()))
    call = {"member_id": "M1", "plan": "PLAN-0-0", "channel": "phone", "amount": "12.50", "today": "2026-12-02", "seq": 1}
    first, state, _ = mock.evaluate(call)
    want = json.loads(json.dumps(first))
    records = first["data"]["records"]
    _mutate(first)
    records.clear()
    again, _, _ = mock.evaluate(call)
    assert again == want and again["data"]["records"][0]["Address"]["City"] == "Portland"
    assert again["data"]["records"][0]["Address"] is not mock.evaluate(call)[0]["data"]["records"][0]["Address"]


class Tag(str):
    pass


def test_the_new_state_shares_nothing_the_caller_can_change() -> None:
    """The post-call state shares the given state's immutable objects where
    they hold exactly what the evaluator read, and nothing else: its dicts
    and lists are new, a str subclass comes back a str, keys in any order."""
    mock = toolmock.compile(DEFINITION)
    state = {"next_reference": 7, "z": {"b": [1, {"c": "d"}], "a": 2.5}, "tag": Tag("t"), "keys": {"y": 1, "x": [2**70, True, None]}}
    call = {"member_id": "M-42", "from_date": "2026-03-01", "days_out": 7, "copay_dollars": "25.00"}
    _, new_state, _ = mock.evaluate(call, state)
    assert new_state["z"] == {"a": 2.5, "b": [1, {"c": "d"}]} and list(new_state["z"]) == ["a", "b"]
    assert type(new_state["tag"]) is str and new_state["tag"] == "t"
    assert new_state["keys"] == {"x": [float(2**70), True, None], "y": 1} and type(new_state["keys"]["x"][0]) is float
    assert new_state["z"] is not state["z"] and new_state["z"]["b"] is not state["z"]["b"]
    new_state["z"]["b"][1]["c"] = "changed"
    new_state["z"]["b"].append(3)
    assert state["z"] == {"b": [1, {"c": "d"}], "a": 2.5}
    _, again, _ = mock.evaluate(call, new_state)
    again["z"]["b"].clear()
    assert new_state["z"]["b"] == [1, {"c": "changed"}, 3]
