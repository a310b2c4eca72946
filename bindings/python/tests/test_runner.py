"""``toolmock.run`` and ``toolmock.serve`` against the CLI's ``run`` and
``serve``: the same documents, files and refusals (the wheel installed
into a clean environment is checked by scripts/test-wheel.sh)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import toolmock
from conftest import ROOT, run_cli, strict_equal, toolmock_bin, write_json

HEALTHPLUS = ROOT / "fixtures/healthplus/simulation.json"
NOTES = ROOT / "fixtures/api/notes-simulation.json"
CALENDAR = ROOT / "fixtures/mcp/serve/calendar.json"


def cli_document(*args: Any) -> dict[str, Any]:
    ran = run_cli("run", *args, "--json")
    assert ran.returncode in (0, 1), ran.stderr.decode()
    return json.loads(ran.stdout)


@pytest.mark.parametrize("path", [HEALTHPLUS, NOTES], ids=lambda p: p.name)
def test_run_is_the_document_of_run_json(path: Path) -> None:
    document = toolmock.run(path)
    assert strict_equal(document, cli_document(path))
    assert strict_equal(toolmock.run(str(path), jobs=1), document)


def test_run_writes_the_junit_and_evidence_the_cli_writes(tmp_path: Path) -> None:
    toolmock.run(HEALTHPLUS, junit=tmp_path / "py.xml", evidence=tmp_path / "py")
    cli_document(HEALTHPLUS, "--junit", tmp_path / "cli.xml", "--evidence", tmp_path / "cli")
    # The XML says how long each attempt took: all else is the same.
    untimed = [re.sub(r' time="[0-9.]+"', "", (tmp_path / name).read_text()) for name in ("py.xml", "cli.xml")]
    assert untimed[0] == untimed[1] and 'time="' in (tmp_path / "py.xml").read_text()
    written = sorted(p.relative_to(tmp_path / "py") for p in (tmp_path / "py").rglob("*"))
    assert written and written == sorted(p.relative_to(tmp_path / "cli") for p in (tmp_path / "cli").rglob("*"))
    def timeless(path: Path) -> list[Any]:
        """Each record without when its call started and how long it took
        (wall-clock readings: they differ from run to run)."""
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            for clock in ("started_at", "at", "duration_us"):
                record.pop(clock, None)
        return records

    for name in written:
        if (tmp_path / "py" / name).is_file():
            assert timeless(tmp_path / "py" / name) == timeless(tmp_path / "cli" / name), name


def test_a_file_with_problems_lists_every_problem_the_cli_prints(tmp_path: Path) -> None:
    document = json.loads(HEALTHPLUS.read_text())
    document["cases"][0]["driver"]["steps"][0]["tool"] = "nowhere"
    document["cases"][3]["driver"]["steps"][0]["tool"] = "elsewhere"
    # Its files stay where they are.
    for tool in document["tools"]:
        for operation, source in tool.get("definitions", {}).items():
            if isinstance(source, str):
                tool["definitions"][operation] = str(HEALTHPLUS.parent / source)
    for tool in document["tools"]:
        for key in ("manifest", "contracts"):
            if isinstance(tool.get(key), str):
                tool[key] = str(HEALTHPLUS.parent / tool[key])
    broken = write_json(tmp_path / "simulation.json", document)
    with pytest.raises(toolmock.SimulationError) as raised:
        toolmock.run(broken)
    ran = run_cli("run", broken)
    assert ran.returncode == 2
    printed = ran.stderr.decode().splitlines()
    assert [str(p) for p in raised.value.problems] == printed[:-1] and len(printed) >= 3
    assert raised.value.code == "invalid_simulation" and raised.value.file == str(broken)
    assert [p.path for p in raised.value.problems] == ["/cases/0/driver/steps/0/tool", "/cases/3/driver/steps/0/tool"]
    assert all(p.file == str(broken) and p.severity == "error" for p in raised.value.problems)


@pytest.mark.parametrize("options", [{"jobs": 0}, {"no_such_flag": 1}, {"json": True}, {"check": True}, {"min_pass_rate": 0.5}])
def test_options_the_command_does_not_take_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(toolmock.ToolmockError) as raised:
        toolmock.run(HEALTHPLUS, **options)
    assert raised.value.code == "invalid_option"


def test_an_option_value_must_be_a_flag_value() -> None:
    with pytest.raises(TypeError):
        toolmock.run(HEALTHPLUS, jobs=[1, 2])


def test_false_and_none_leave_a_flag_out() -> None:
    assert strict_equal(toolmock.run(NOTES, real_delays=False, junit=None), cli_document(NOTES))


def tools_call(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One MCP `tools/call` over streamable HTTP (the server is stateless)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_serve_judges_its_attempts_as_the_cli_serve_does(tmp_path: Path) -> None:
    with toolmock.serve(CALENDAR, "books_a_day", json=tmp_path / "results.json") as server:
        assert server.url == f"{server.base_url}/attempts/1/mcp" and server.case == "books_a_day"
        booked = tools_call(server.url, "book", {"day": "2026-12-04"})
        assert booked["result"]["structuredContent"] == {"reference": "TEST-742", "day": "2026-12-04"}
        first = server.finish(1)
        assert (first["number"], first["outcome"], first["as_expected"]) == (1, "passed", True)
        with pytest.raises(toolmock.ToolmockError) as raised:
            server.finish(1)
        assert raised.value.code == "attempt_finished"
        second = server.new_attempt()
        assert second == 2
        assert server.results["summary"]["attempts"] == 1, "an open attempt is not in the results yet"
    assert not server.running
    results = server.results
    assert [(a["number"], a["outcome"], a["as_expected"]) for a in results["cases"][0]["attempts"]] == [
        (1, "passed", True), (2, "failed", False)]
    unmet = results["cases"][0]["attempts"][1]["unmet"]
    assert unmet and unmet[0]["at"].startswith("/cases/0/expect/")
    assert strict_equal(json.loads((tmp_path / "results.json").read_text()), results)
    assert server.stop() is results, "stopping again returns the same document"
    with pytest.raises(toolmock.ToolmockError) as raised:
        server.new_attempt()
    assert raised.value.code == "server_stopped"


def test_the_attempts_of_serve_are_those_of_the_cli(tmp_path: Path) -> None:
    """The same calls to `toolmock serve --http` and to toolmock.serve: the same results document."""
    cli = subprocess.Popen([toolmock_bin(), "serve", CALENDAR, "--case", "books_a_day", "--http", "127.0.0.1:0",
                            "--attempts", "1", "--json", tmp_path / "cli.json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert cli.stderr is not None
        announced = cli.stderr.readline()
        base = announced.split(" at ")[1].split("/attempts/")[0]
        for day in ("tomorrow", "2026-12-04"):
            tools_call(f"{base}/attempts/1/mcp", "book", {"day": day})
        urllib.request.urlopen(urllib.request.Request(f"{base}/attempts/1/finish", method="POST"), timeout=30).read()
        assert cli.wait(timeout=30) == 0
    finally:
        if cli.poll() is None:
            cli.kill()
    with toolmock.serve(CALENDAR, "books_a_day") as server:
        for day in ("tomorrow", "2026-12-04"):
            tools_call(server.url, "book", {"day": day})
    assert strict_equal(server.results, json.loads((tmp_path / "cli.json").read_text()))


@pytest.mark.parametrize(("case", "options", "code"), [
    (None, {}, "case_required"),
    ("no_such_case", {}, "unknown_case"),
    ("books_a_day", {"stdio": True}, "invalid_option"),
    ("books_a_day", {"attempts": 2}, "invalid_option"),
    ("books_a_day", {"max_calls": 0}, "invalid_option"),
])
def test_serve_refuses_what_the_command_refuses(case: str | None, options: dict[str, Any], code: str) -> None:
    with pytest.raises(toolmock.ToolmockError) as raised:
        toolmock.serve(CALENDAR, case, **options)
    assert raised.value.code == code


def test_serve_of_a_file_with_problems_lists_them(tmp_path: Path) -> None:
    broken = write_json(tmp_path / "broken.json", {"simulation_version": 1, "name": "x", "surprise": 1})
    with pytest.raises(toolmock.SimulationError) as raised:
        toolmock.serve(broken)
    assert {p.code for p in raised.value.problems} >= {"unknown_field"}


def test_python_m_toolmock_is_the_command(tmp_path: Path) -> None:
    for args in (["--version"], ["run", str(NOTES), "--json"], ["hash", "--no-such-flag"], ["run", str(tmp_path / "missing.json")]):
        module = subprocess.run([sys.executable, "-m", "toolmock", *args], capture_output=True, timeout=120)
        binary = run_cli(*args)
        assert (module.returncode, module.stdout) == (binary.returncode, binary.stdout), args
        if args[0] != "run" or "--json" not in args:
            assert module.stderr == binary.stderr, args
    version = run_cli("--version").stdout.decode()
    assert version == f"toolmock {toolmock.__version__} (commit {version.split('(commit ')[1]}"
