"""Shared helpers of the package's tests: where things are, the CLI, and
the comparison rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import toolmock

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
"""The repository's root."""


def toolmock_bin() -> str:
    """The CLI the package is compared with (scripts/python-tests.sh sets it)."""
    return os.environ.get("TOOLMOCK_BIN", str(ROOT / "target" / "debug" / "toolmock"))


def shared_dir() -> Path:
    """The shared folder beside the repository (TOOLMOCK_SHARED_DIR overrides)."""
    return Path(os.environ.get("TOOLMOCK_SHARED_DIR", str(ROOT.parent / "shared")))


def run_cli(*args: str | os.PathLike[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [toolmock_bin(), *map(os.fspath, args)],
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )


def strict_equal(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down: an int is not a float,
    a bool is not an int (what "identical" means for two JSON documents read
    back by Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def json_equal(a: Any, b: Any) -> bool:
    """The vectors' comparison: numbers by value, booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    number = (int, float)
    if isinstance(a, number) or isinstance(b, number):
        return isinstance(a, number) and isinstance(b, number) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def eval_lines(compiled: toolmock.CompiledDefinition, state: dict[str, Any] | None, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call's line as `toolmock eval` writes it, answered by the
    package, the state threaded from call to call (`None`: the initial state)."""
    current = compiled.initial_state if state is None else state
    lines: list[dict[str, Any]] = []
    for call in calls:
        try:
            outcome = compiled.evaluate_outcome(call["input"], current, call.get("variant"))
        except toolmock.CallFailed as e:
            error = {"class": e.error_class, "code": e.code, "message": e.message}
            if e.path is not None:
                error["path"] = e.path
            lines.append({"error": error})
            continue
        current = outcome.state
        if outcome.error is not None:
            # A version-2 domain error: an answer, with the state unchanged.
            lines.append({"domain_error": {"variant": outcome.variant, "rule": outcome.rule, "error": outcome.error,
                                           "state": current, "delay_ms": outcome.delay_ms}})
            continue
        lines.append({"ok": {"variant": outcome.variant, "rule": outcome.rule, "result": outcome.result,
                             "state": current, "delay_ms": outcome.delay_ms}})
    return lines
