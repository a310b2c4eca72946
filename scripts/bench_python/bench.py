"""Calls from Python through the package against the interpreted evaluator,
and against the cost of the answer's own Python objects, in the same run, on
the eval-realistic yardstick (scripts/bench-python.sh).

usage: bench.py ANCHOR_DIR CALLS ROUNDS [CONTRACT]

Generates CALLS calls with ANCHOR_DIR/calls.py, checks that the package and
the interpreted evaluator (interpreted.py) answer every one alike (result,
post-call state, delay, variant, rule, or error class and code), then times
ROUNDS passes of each over all the calls, alternating, the state threaded
from call to call as `toolmock eval` threads it. Prints each pass's rate,
the medians and their ratio. With CONTRACT, the package is also timed with
the contract (input and result validated), which the interpreted evaluator
never does.

The floor: the same passes also time, alternating with the others,
`json.loads` of each call's result as compact JSON text and `pickle.loads`
of it pickled — both prepared before anything is timed, from the package's
own answers — over the same calls (a call that fails has no result, and
is left out of those two). Prints the package's time a call against each:
the package builds the same objects, and a little more (the post-call
state), from the call's input.
"""

from __future__ import annotations

import json
import pickle
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


def results(compiled: toolmock.CompiledDefinition, calls: list) -> list:
    """Each successful call's result, state threaded as in `package_pass`."""
    state = compiled.initial_state
    answers = []
    for input, variant in calls:
        try:
            result, state, _ = compiled.evaluate(input, state, variant)
        except toolmock.CallFailed:
            continue
        answers.append(result)
    return answers


def loads_pass(loads, texts: list) -> None:
    for text in texts:
        loads(text)


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
    answers = results(compiled, calls)
    texts = [json.dumps(a, separators=(",", ":"), ensure_ascii=False) for a in answers]
    pickles = [pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL) for a in answers]
    assert all(json.loads(t) == a for t, a in zip(texts, answers))
    size = statistics.mean(map(len, texts))
    print(f"{len(answers)} of the {n} calls answer a result ({size:,.0f} characters of compact JSON on average)")
    # Seconds a pass, by side; a call's time is a pass's over its calls.
    passes: dict[str, list[float]] = {"interpreted": [], "package": [], "package+contract": [], "json.loads": [], "pickle.loads": []}
    counts = {"interpreted": n, "package": n, "package+contract": n, "json.loads": len(texts), "pickle.loads": len(pickles)}
    for r in range(rounds):
        line = []
        for label, run in (
            ("interpreted", lambda: interpreted_pass(definition, calls)),
            ("package", lambda: package_pass(compiled, calls)),
            ("json.loads", lambda: loads_pass(json.loads, texts)),
            ("pickle.loads", lambda: loads_pass(pickle.loads, pickles)),
            ("package+contract", (lambda: package_pass(with_contract, calls)) if with_contract else None),
        ):
            if run is None:
                continue
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            passes[label].append(elapsed)
            line.append(f"{label} {counts[label] / elapsed:,.0f}/s ({elapsed / counts[label] * 1e6:.2f} us)")
        print(f"round {r + 1}: " + ", ".join(line))

    def per_call(label: str) -> float:
        """The median pass's seconds a call."""
        return statistics.median(passes[label]) / counts[label]

    interp, package = per_call("interpreted"), per_call("package")
    print(f"median: interpreted {1 / interp:,.0f} calls/s, package {1 / package:,.0f} calls/s: {interp / package:.1f}x")
    if passes["package+contract"]:
        checked = per_call("package+contract")
        print(f"median: package with the contract {1 / checked:,.0f} calls/s: {interp / checked:.1f}x the interpreted evaluator (which validates nothing)")
    loads, unpickle = per_call("json.loads"), per_call("pickle.loads")
    print(
        f"median a call: evaluate {package * 1e6:.2f} us, json.loads of its result {loads * 1e6:.2f} us,"
        f" pickle.loads of it {unpickle * 1e6:.2f} us"
    )
    print(f"evaluate / json.loads of its result: {package / loads:.2f}x (target <= 1.0x); / pickle.loads: {package / unpickle:.2f}x")
    # Each round's own ratio, the two sides timed back to back.
    ratios = [p / len(calls) / (j / len(texts)) for p, j in zip(passes["package"], passes["json.loads"])]
    print("evaluate / json.loads, round by round: " + ", ".join(f"{x:.2f}x" for x in ratios))


if __name__ == "__main__":
    main()
