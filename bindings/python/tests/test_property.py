"""Hypothesis: the package and the CLI answer generated calls alike.

Each example is a sequence of calls to one real definition (the README's
book-appointment mock, the HealthPlus settlement and slot mocks, the
eval-realistic yardstick), with and without its contract, from its initial
state or a generated one. Inputs mix the fields the definition reads —
dates, date-times, decimal strings, offsets, integers beyond 64 bits,
floats, booleans, U+0000, unknown variants — with random JSON. The package's
answers, state threaded from call to call, must be exactly the lines
`toolmock eval` prints for the same calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmock
from conftest import ROOT, eval_lines, run_cli, strict_equal, write_json

HEALTHPLUS = ROOT / "fixtures" / "healthplus"
CASES = {
    "book_appointment": (ROOT / "fixtures/examples/book-appointment/mock.json", ROOT / "fixtures/examples/book-appointment/contract.json"),
    "eval_realistic": (ROOT / "fixtures/bench/eval-realistic/definition.json", ROOT / "fixtures/bench/eval-realistic/contract.json"),
    "calculate_settlement": (HEALTHPLUS / "capabilities/claims/calculate_settlement.json", None),
    "find_slots": (HEALTHPLUS / "capabilities/appointments/find_slots.json", None),
}


def _contract_for(name: str) -> dict[str, Any] | None:
    definition, contract = CASES[name]
    if contract is not None:
        return json.loads(contract.read_text())
    simulation = toolmock.load_simulation(HEALTHPLUS / "simulation.json")
    tool = "benefits" if name == "calculate_settlement" else "scheduling"
    return simulation.contracts[f"{tool}/{name}"].to_dict()


LOADED = {
    name: (json.loads(definition.read_text()), _contract_for(name))
    for name, (definition, _) in CASES.items()
}
FIELDS = sorted({
    key
    for definition, contract in LOADED.values()
    for key in (contract or {}).get("input_schema", {}).get("properties", {})
} | {"member_id", "from_date", "days_out", "copay_dollars", "billed_amount", "allowed_amount", "claim_id", "today", "amount", "seq", "plan", "channel"})

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["2026-03-01", "2026-12-31", "2026-02-29", "2024-02-29", "0001-01-01", "9999-12-31",
                     "2026-03-01T22:30:00-05:00", "2026-03-01T00:00:00Z", "2026-13-01", "25.00", "1234.50",
                     "987.60", "-0.01", "007", "1e3", "1,234.50", "x\u0000y", "HP-100234", "M000001",
                     "PLAN-0-0", "PLAN-1-3", "phone", "fax", "chat", "CLM-2001"]),
    st.integers(min_value=-4000, max_value=4000),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
random_inputs = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)


def seed_inputs(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """The inputs of the definition's own examples: calls that mostly pass."""
    return [e["input"] for e in definition.get("examples", []) if isinstance(e.get("input"), dict)] or [{}]


@st.composite
def near_inputs(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """An example's input with up to three fields dropped or replaced."""
    base = dict(draw(st.sampled_from(seeds)))
    for key in draw(st.lists(st.sampled_from(sorted(set(FIELDS) | set(base))), max_size=3)):
        if draw(st.booleans()):
            base.pop(key, None)
        else:
            base[key] = draw(values)
    return base


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[str, bool, dict[str, Any] | None, list[dict[str, Any]]]:
    name = draw(st.sampled_from(sorted(LOADED)))
    definition, _ = LOADED[name]
    with_contract = draw(st.booleans())
    variant_names = [None, *definition["variants"], "no_such_variant"]
    state = draw(st.none() | st.dictionaries(st.sampled_from(sorted(definition.get("initial_state", {})) + ["other"]), values, max_size=4))
    calls = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        call: dict[str, Any] = {"input": draw(near_inputs(seed_inputs(definition)) | random_inputs)}
        variant = draw(st.sampled_from(variant_names))
        if variant is not None:
            call["variant"] = variant
        calls.append(call)
    return name, with_contract, state, calls


def package_lines(name: str, with_contract: bool, state: dict[str, Any] | None, calls: list[dict[str, Any]]) -> list[Any]:
    definition, contract = LOADED[name]
    return eval_lines(toolmock.compile(definition, contract if with_contract else None), state, calls)


def cli_lines(tmp: Path, name: str, with_contract: bool, state: dict[str, Any] | None, calls: list[dict[str, Any]]) -> list[Any]:
    definition, contract = LOADED[name]
    args: list[Any] = ["eval", write_json(tmp / "definition.json", definition), "--calls", "-"]
    if with_contract:
        args += ["--contract", write_json(tmp / "contract.json", contract)]
    if state is not None:
        args += ["--state", write_json(tmp / "state.json", state)]
    text = "".join(json.dumps(c) + "\n" for c in calls).encode()
    ran = run_cli(*args, stdin=text)
    assert ran.returncode == 0, ran.stderr.decode()
    return [json.loads(line) for line in ran.stdout.decode().split("\n") if line.strip()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenarios())
def test_the_package_answers_generated_calls_as_the_cli_does(tmp_path: Path, scenario: Any) -> None:
    name, with_contract, state, calls = scenario
    ours = package_lines(name, with_contract, state, calls)
    theirs = cli_lines(tmp_path, name, with_contract, state, calls)
    assert len(ours) == len(theirs) == len(calls)
    for i, (a, b) in enumerate(zip(theirs, ours)):
        assert strict_equal(a, b), f"{name}, call {i} ({calls[i]!r}): the CLI printed {a!r}, the package answered {b!r}"
