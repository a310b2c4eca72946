"""Calls from Python through the package against the interpreted evaluator,
in the same run, on the eval-realistic yardstick (scripts/bench-python.sh).

usage: bench.py ANCHOR_DIR CALLS ROUNDS [CONTRACT]

Generates CALLS calls with ANCHOR_DIR/calls.py, checks that the package and
the interpreted evaluator (interpreted.py) answer every one alike (result,
post-call state, delay, variant, rule, or error class and code), then times
ROUNDS passes of each over all the calls, alternating, the state threaded
from call to call as `toolmock eval` threads it. Prints each pass's rate,
the medians and their ratio. With CONTRACT, the package is also timed with
the contract (input and result validated), which the interpreted evaluator
never does.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import interpreted
import toolmock


def generate(anchor: Path, n: int) -> list[tuple[dict, str | None]]:
    text = subprocess.run([sys.executable, str(anchor / "calls.py"), str(n)], check=True, stdout=subprocess.PIPE).stdout
    return [(c["input"], c.get("variant")) for c in map(json.loads, text.decode().splitlines())]


def package_pass(compiled: toolmock.CompiledDefinition, calls: list) -> int:
    state = compiled.initial_state
    evaluate = compiled.evaluate
    failed = 0
    for input, variant in calls:
        try:
            _, state, _ = evaluate(input, state, variant)
        except toolmock.CallFailed:
            failed += 1
    return failed


def interpreted_pass(definition: dict, calls: list) -> int:
    state = definition.get("initial_state", {})
    evaluate = interpreted.evaluate
    failed = 0
    for input, variant in calls:
        try:
            _, state, _, _, _ = evaluate(definition, input, state, variant)
        except interpreted.CallFailed:
            failed += 1
    return failed


def check_parity(definition: dict, compiled: toolmock.CompiledDefinition, calls: list) -> None:
    ours, theirs = compiled.initial_state, definition.get("initial_state", {})
    for i, (input, variant) in enumerate(calls):
        try:
            o = compiled.evaluate_outcome(input, ours, variant)
            a = ("ok", o.result, o.state, o.delay_ms, o.variant, o.rule)
            ours = o.state
        except toolmock.CallFailed as e:
            a = ("error", e.error_class, e.code)
        try:
            result, theirs_next, delay, name, rule = interpreted.evaluate(definition, input, theirs, variant)
            b = ("ok", result, theirs_next, delay, name, rule)
            theirs = theirs_next
        except interpreted.CallFailed as e:
            b = ("error", e.error_class, e.code)
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            sys.exit(f"call {i}: the package answered {a!r}, the interpreted evaluator {b!r}")


def main() -> None:
    anchor, n, rounds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    contract = json.loads(Path(sys.argv[4]).read_text()) if len(sys.argv) > 4 else None
    definition = json.loads((anchor / "definition.json").read_text())
    compiled = toolmock.compile(definition)
    calls = generate(anchor, n)
    check_parity(definition, compiled, calls)
    print(f"{n} calls of {anchor}: the package and the interpreted evaluator answer every one alike")
    with_contract = toolmock.compile(definition, contract) if contract is not None else None
    rates: dict[str, list[float]] = {"interpreted": [], "package": [], "package+contract": []}
    for r in range(rounds):
        line = []
        for label, run in (
            ("interpreted", lambda: interpreted_pass(definition, calls)),
            ("package", lambda: package_pass(compiled, calls)),
            ("package+contract", (lambda: package_pass(with_contract, calls)) if with_contract else None),
        ):
            if run is None:
                continue
            start = time.perf_counter()
            run()
            rate = n / (time.perf_counter() - start)
            rates[label].append(rate)
            line.append(f"{label} {rate:,.0f} calls/s")
        print(f"round {r + 1}: " + ", ".join(line))
    interp = statistics.median(rates["interpreted"])
    package = statistics.median(rates["package"])
    print(f"median: interpreted {interp:,.0f} calls/s, package {package:,.0f} calls/s: {package / interp:.1f}x")
    if rates["package+contract"]:
        checked = statistics.median(rates["package+contract"])
        print(f"median: package with the contract {checked:,.0f} calls/s: {checked / interp:.1f}x the interpreted evaluator (which validates nothing)")


if __name__ == "__main__":
    main()
