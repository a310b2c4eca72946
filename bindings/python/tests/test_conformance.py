"""Every conformance vector through the package, with the CLI's results.

The vectors of ``fixtures/conformance`` (and ``fixtures/conformance/healthplus``,
and the shared ones beside the repository when they are there) are run
through ``toolmock`` the package. Each must give the vector's expected
answer, and — the package and the CLI being the same code — exactly what
``target/debug/toolmock`` gives for the same files: the same hash, the same
check diagnostics (code, path, message, severity) and the same eval lines
(variant, rule, result, state and delay with the same JSON types, or the
same error class, code, message and path).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolmock
from conftest import ROOT, eval_lines, json_equal, run_cli, shared_dir, strict_equal, write_json


def _vectors() -> list[Any]:
    found = []
    for folder, label in (
        (ROOT / "fixtures" / "conformance", "fixtures"),
        (ROOT / "fixtures" / "conformance" / "healthplus", "healthplus"),
        (shared_dir() / "conformance", "shared"),
    ):
        if folder.is_dir():
            found += [pytest.param(p, id=f"{label}/{p.stem}") for p in sorted(folder.glob("*.json"))]
    return found


VECTORS = _vectors()


def test_the_vectors_are_there() -> None:
    project = [v for v in VECTORS if v.id.startswith("fixtures/")]
    assert len(project) >= 150, f"only {len(project)} project vectors found under {ROOT / 'fixtures/conformance'}"
    assert any(v.id.startswith("healthplus/") for v in VECTORS)


def _definition(vec: dict[str, Any]) -> Any:
    """The definition as the CLI reads it: the exact text when the vector gives
    one; a dict as it is; any other JSON value as its text (a `str` given to
    the package is JSON text)."""
    if "definition_text" in vec:
        return vec["definition_text"].encode("utf-8")
    if isinstance(vec["definition"], dict):
        return vec["definition"]
    return json.dumps(vec["definition"])


def _write_definition(tmp: Path, vec: dict[str, Any]) -> Path:
    path = tmp / "definition.json"
    if "definition_text" in vec:
        path.write_bytes(vec["definition_text"].encode("utf-8"))
    else:
        write_json(path, vec["definition"])
    return path


def _cli_hash(tmp: Path, contract: Any, name: str) -> str:
    ran = run_cli("hash", write_json(tmp / name, contract))
    assert ran.returncode == 0, ran.stderr.decode()
    return ran.stdout.decode().strip()


def run_hash(vec: dict[str, Any], tmp: Path) -> None:
    got = toolmock.contract_hash(vec["contract"])
    assert got == vec["expect"]
    assert toolmock.contract_hash(json.dumps(vec["contract"])) == got
    assert _cli_hash(tmp, vec["contract"], "contract.json") == got


def run_hash_equal(vec: dict[str, Any], tmp: Path) -> None:
    a, b = vec["contracts"]
    ha, hb = toolmock.contract_hash(a), toolmock.contract_hash(b)
    assert (ha == hb) == vec["expect"], (ha, hb)
    assert (_cli_hash(tmp, a, "a.json"), _cli_hash(tmp, b, "b.json")) == (ha, hb)


def run_check(vec: dict[str, Any], tmp: Path) -> None:
    problems = toolmock.check(_definition(vec), vec["contract"])
    ok = not any(p.severity == "error" for p in problems)
    codes = [p.code for p in problems]
    assert ok == vec["expect"]["ok"], codes
    assert not [c for c in vec["expect"]["codes"] if c not in codes], codes
    ran = run_cli("check", _write_definition(tmp, vec), "--contract", write_json(tmp / "contract.json", vec["contract"]), "--json")
    report = json.loads(ran.stdout)
    ours = [{"code": p.code, "path": p.path, "message": p.message, "severity": p.severity} for p in problems]
    assert ours == report["diagnostics"]
    assert report["ok"] == ok
    if ok:
        assert isinstance(toolmock.compile(_definition(vec), vec["contract"]), toolmock.CompiledDefinition)
    else:
        with pytest.raises(toolmock.DefinitionError) as raised:
            toolmock.compile(_definition(vec), vec["contract"])
        assert [p.code for p in raised.value.problems] == [p.code for p in problems]


def evaluate_calls(vec: dict[str, Any]) -> list[dict[str, Any]]:
    """Each call's line, as `toolmock eval` writes it, from the package."""
    compiled = toolmock.compile(_definition(vec), vec.get("contract"))
    return eval_lines(compiled, vec.get("state"), vec["calls"])


def _compare_with_vector(i: int, want: dict[str, Any], got: dict[str, Any]) -> None:
    if "ok" in want:
        assert "ok" in got, f"call {i}: expected ok, got {got}"
        for field in ("variant", "rule", "result", "state", "delay_ms"):
            assert json_equal(want["ok"][field], got["ok"][field]), f"call {i}: {field}: {want['ok'][field]!r} != {got['ok'][field]!r}"
    elif "domain_error" in want:
        assert "domain_error" in got, f"call {i}: expected domain_error, got {got}"
        for field in ("variant", "rule", "error", "state", "delay_ms"):
            w, g = want["domain_error"][field], got["domain_error"][field]
            assert json_equal(w, g), f"call {i}: {field}: {w!r} != {g!r}"
    else:
        assert "error" in got, f"call {i}: expected error {want['error']}, got {got}"
        for field in ("class", "code"):
            assert got["error"][field] == want["error"][field], f"call {i}: {got['error']}"


def run_eval(vec: dict[str, Any], tmp: Path) -> None:
    args: list[Any] = ["eval", _write_definition(tmp, vec), "--calls", tmp / "calls.jsonl"]
    (tmp / "calls.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in vec["calls"]), encoding="utf-8")
    if vec.get("contract") is not None:
        args += ["--contract", write_json(tmp / "contract.json", vec["contract"])]
    if vec.get("state") is not None:
        args += ["--state", write_json(tmp / "state.json", vec["state"])]
    ran = run_cli(*args)
    if "expect_exit" in vec:
        assert ran.returncode == vec["expect_exit"]
        with pytest.raises(toolmock.DefinitionError):
            evaluate_calls(vec)
        return
    assert ran.returncode == 0, ran.stderr.decode()
    got = evaluate_calls(vec)
    assert len(got) == len(vec["expect"])
    for i, (want, line) in enumerate(zip(vec["expect"], got)):
        _compare_with_vector(i, want, line)
    cli = [json.loads(line) for line in ran.stdout.decode().split("\n") if line.strip()]
    assert len(cli) == len(got)
    for i, (theirs, ours) in enumerate(zip(cli, got)):
        assert strict_equal(theirs, ours), f"call {i}: the CLI printed {theirs!r}, the package answered {ours!r}"


KINDS = {"hash": run_hash, "hash_equal": run_hash_equal, "check": run_check, "eval": run_eval}


@pytest.mark.parametrize("path", VECTORS)
def test_vector(path: Path, tmp_path: Path) -> None:
    vec = json.loads(path.read_text(encoding="utf-8"))
    KINDS[vec["kind"]](vec, tmp_path)
