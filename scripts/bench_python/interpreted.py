"""An independent, interpreted evaluator of version-1 mock definitions.

The yardstick the Python package is measured against (scripts/bench-python.sh,
docs/performance.md): what a Python harness would do without the package —
walk the definition's JSON on every call. Plain standard-library Python,
written from docs/mock-language.md alone (no toolmock code): variant and
first-matching rule, conditions, `$input`/`$state` paths, `$number`,
`$dateAdd`, `set_state`. It assumes a definition that passed its check and
does no schema validation (the yardstick has no contract). The bench checks
that it answers every yardstick call exactly as the package does before it
times anything.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
MISSING = object()


class CallFailed(Exception):
    def __init__(self, error_class: str, code: str) -> None:
        super().__init__(f"{error_class}: {code}")
        self.error_class = error_class
        self.code = code


def resolve(document: Any, path: str) -> Any:
    if path == "":
        return document
    here = document
    for segment in path.split("."):
        if isinstance(here, dict):
            here = here.get(segment, MISSING)
        elif isinstance(here, list) and segment.isdigit() and (segment == "0" or segment[0] != "0"):
            i = int(segment)
            here = here[i] if i < len(here) else MISSING
        else:
            return MISSING
        if here is MISSING:
            return MISSING
    return here


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def holds(condition: dict, input: Any, state: dict) -> bool:
    found = resolve(input if condition["source"] == "input" else state, condition["path"])
    op, value = condition["op"], condition["value"]
    if op == "eq":
        return found is not MISSING and equal(found, value)
    if op == "ne":
        return found is MISSING or not equal(found, value)
    if op == "in":
        return found is not MISSING and any(equal(found, v) for v in value)
    return (found is not MISSING) == value


class Scope:
    def __init__(self, input: Any, state: dict) -> None:
        self.input = input
        self.state = state

    def operand(self, expr: Any) -> tuple[Any, str]:
        """A `$number`/`$dateAdd` operand and who is blamed for it."""
        if isinstance(expr, dict) and len(expr) == 1:
            (key, path), = expr.items()
            if key in ("$input", "$state"):
                return self.reference(key, path), key
        return expr, "literal"

    def reference(self, key: str, path: str) -> Any:
        found = resolve(self.input if key == "$input" else self.state, path)
        if found is MISSING:
            raise CallFailed("harness_error", "missing_reference")
        return found

    def render(self, expr: Any) -> Any:
        if isinstance(expr, dict):
            if len(expr) == 1:
                (key, operand), = expr.items()
                if key in ("$input", "$state"):
                    return self.reference(key, operand)
                if key == "$number":
                    return self.number(*self.operand(operand))
                if key == "$dateAdd":
                    return self.date_add(operand)
            return {k: self.render(v) for k, v in expr.items()}
        if isinstance(expr, list):
            return [self.render(v) for v in expr]
        return expr


    @staticmethod
    def fail(origin: str, code: str) -> CallFailed:
        if origin == "$input":
            return CallFailed("tool_input_error", code)
        return CallFailed("harness_error", "invalid_fixture_literal")

    def number(self, value: Any, origin: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.fail(origin, "invalid_number")
        if not isinstance(value, str):
            return value
        if not NUMBER.fullmatch(value):
            raise self.fail(origin, "invalid_number")
        x = float(value)
        if x != x or x in (float("inf"), float("-inf")):
            raise self.fail(origin, "invalid_number")
        if x.is_integer() and abs(x) < 2**53:
            return int(x)
        return x

    def offset(self, expr: Any, limit: int) -> int:
        value, origin = self.operand(expr)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise self.fail(origin, "invalid_number")
        if abs(value) > limit:
            raise self.fail(origin, "offset_out_of_range")
        return int(value)

    def date_add(self, spec: dict) -> str:
        value, origin = self.operand(spec["value"])
        days = self.offset(spec["days"], 3660) if "days" in spec else 0
        hours = self.offset(spec["hours"], 24) if "hours" in spec else 0
        if not isinstance(value, str):
            raise self.fail(origin, "invalid_date")
        try:
            if m := DATE.fullmatch(value):
                day = dt.date(int(m[1]), int(m[2]), int(m[3]))
            elif m := DATE_TIME.fullmatch(value):
                offset = m[8]
                zone = dt.timezone.utc if offset in "Zz" else dt.timezone(
                    (1 if offset[0] == "+" else -1) * dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
                moment = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), tzinfo=zone)
                day = moment.astimezone(dt.timezone.utc).date()
            else:
                raise ValueError(value)
        except (ValueError, OverflowError):
            raise self.fail(origin, "invalid_date") from None
        try:
            moment = dt.datetime(day.year, day.month, day.day) + dt.timedelta(days=days, hours=hours)
        except OverflowError:
            raise self.fail(origin, "date_out_of_range") from None
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z").rjust(24, "0")


def evaluate(definition: dict, input: Any, state: dict, variant: str | None = None) -> tuple[Any, dict, int, str, int | None]:
    """One call: (result, new_state, delay_ms, variant, rule)."""
    name = variant if variant is not None else definition["default_variant"]
    chosen = definition["variants"].get(name)
    if chosen is None:
        raise CallFailed("harness_error", "unknown_variant")
    matched = None
    for i, rule in enumerate(chosen.get("rules", [])):
        if all(holds(c, input, state) for c in rule["when"]):
            matched = i
            break
    rule = chosen["rules"][matched] if matched is not None else {}
    scope = Scope(input, state)
    result = scope.render(rule.get("result", chosen["result"]))
    updates = {k: scope.render(v) for k, v in rule.get("set_state", chosen.get("set_state", {})).items()}
    new_state = {**state, **updates}
    return result, new_state, rule.get("delay_ms", chosen.get("delay_ms", 0)), name, matched
