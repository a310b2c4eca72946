"""The installed toolmock wheel, checked from a clean environment.

scripts/test-wheel.sh runs this with the Python of a new virtual
environment the wheel was installed into, in a temporary folder holding
copies of the fixtures (healthplus/, book-appointment/, calendar.json), the
MCP SDK client (python_client.py), the pytest files beside this one, and
expected/: what the repository's own binary printed for each invocation of
invocations.json, and the README's table. TOOLMOCK_REPOSITORY names the
repository (to check that nothing of it is reachable), TOOLMOCK_MCP_PYTHON
the Python of the official MCP SDK (the agent's side).

Each check prints `ok: …` or stops the script with what differs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

HERE = Path.cwd()
REPOSITORY = Path(os.environ["TOOLMOCK_REPOSITORY"]).resolve()
MCP_PYTHON = os.environ["TOOLMOCK_MCP_PYTHON"]
INVOCATIONS: list[tuple[str, list[str], bool]] = json.loads((HERE / "invocations.json").read_text())
"""(name, arguments, whether stderr is compared too: `run` prints its wall time there)."""


def ok(what: str) -> None:
    print(f"ok: {what}", flush=True)


def within(path: str | Path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder)
        return True
    except ValueError:
        return False


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON texts: the same values of the same JSON types all the
    way down (`1` is not `1.0`, `true` is not `1`)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def clean_environment() -> None:
    for tool in ("cargo", "rustc", "rustup", "maturin"):
        assert shutil.which(tool) is None, f"{tool} is on PATH: {shutil.which(tool)}"
    for entry in os.environ["PATH"].split(os.pathsep):
        assert not within(entry, REPOSITORY), f"PATH holds {entry}, in the repository"
        assert ".cargo" not in Path(entry).parts, f"PATH holds {entry}"
    for entry in sys.path:
        assert not (entry and within(entry, REPOSITORY)), f"sys.path holds {entry}, in the repository"
    assert not within(HERE, REPOSITORY), f"the working directory {HERE} is in the repository"
    command = shutil.which("toolmock")
    assert command == str(Path(sys.prefix) / "bin" / "toolmock"), f"toolmock on PATH is {command}"
    import toolmock

    installed = Path(sysconfig.get_paths()["platlib"]).resolve()
    assert within(toolmock.__file__, installed), f"toolmock is imported from {toolmock.__file__}"
    ok(f"clean: no Rust toolchain, nothing of {REPOSITORY} on PATH or sys.path; toolmock from {installed}")


def same_as_the_binary() -> None:
    expected = HERE / "expected"
    for name, args, with_stderr in INVOCATIONS:
        for program in (["toolmock"], [sys.executable, "-m", "toolmock"]):
            done = subprocess.run([*program, *args], capture_output=True, timeout=120)
            shown = " ".join(program + args)
            status = int((expected / f"{name}.status").read_text())
            assert done.returncode == status, f"`{shown}` exited {done.returncode}, the binary {status}:\n{done.stderr.decode()}"
            assert done.stdout == (expected / f"{name}.stdout").read_bytes(), f"`{shown}` printed another stdout than the binary"
            if with_stderr:
                assert done.stderr == (expected / f"{name}.stderr").read_bytes(), (
                    f"`{shown}` printed another stderr than the binary:\n{done.stderr.decode()}"
                )
    ok(f"`toolmock` and `python -m toolmock` print what the repository's binary prints, byte for byte ({len(INVOCATIONS)} invocations each)")
    version = (expected / "version.stdout").read_text().strip()
    assert version.startswith("toolmock ") and "(commit " in version, version
    ok(f"`toolmock --version`: {version}")


def interrupted() -> None:
    """Ctrl-C ends a run at once, as it ends the binary (killed by SIGINT)."""
    for program in (["toolmock"], [sys.executable, "-m", "toolmock"]):
        # Real delays: the outage case sleeps 30 s.
        running = subprocess.Popen([*program, "run", "healthplus/simulation.json", "--real-delays", "--jobs", "1"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        running.send_signal(signal.SIGINT)
        try:
            status = running.wait(timeout=10)
        except subprocess.TimeoutExpired:
            running.kill()
            raise AssertionError(f"{' '.join(program)} run: still running 10 s after SIGINT") from None
        assert status == -signal.SIGINT, f"{' '.join(program)} run: exited {status} on SIGINT, not killed by it"
    ok("Ctrl-C (SIGINT) ends `toolmock run` and `python -m toolmock run` at once, killed by the signal as the binary is")


def readme_table() -> None:
    done = subprocess.run(["toolmock", "run", "healthplus/simulation.json"], capture_output=True, timeout=120, check=True)
    table = (HERE / "expected" / "readme-table.txt").read_bytes()
    assert done.stdout == table, f"`toolmock run healthplus/simulation.json` is not the README's table:\n{done.stdout.decode()}"
    ok(f"`toolmock run healthplus/simulation.json` prints the README's table ({len(table.splitlines())} lines)")


def run_document() -> None:
    import toolmock

    document = toolmock.run("healthplus/simulation.json")
    command = json.loads(subprocess.run(["toolmock", "run", "healthplus/simulation.json", "--json"],
                                        capture_output=True, timeout=120, check=True).stdout)
    binary = json.loads((HERE / "expected" / "run-json.stdout").read_bytes())
    assert same_json(document, command), "toolmock.run differs from the installed `toolmock run --json`"
    assert same_json(document, binary), "toolmock.run differs from the binary's `toolmock run --json`"
    assert document["ok"] and document["summary"]["as_expected"] == 24, document["summary"]
    ok("toolmock.run('healthplus/simulation.json') is `toolmock run --json`'s document, value for value and type for type")


def pytest_session(*args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf", *args],
                          capture_output=True, timeout=300, text=True)
    return done.returncode, done.stdout + done.stderr


def pytest_suite() -> None:
    status, out = pytest_session("test_suite.py")
    assert status == 0 and "24 passed" in out.splitlines()[-1], out
    ok("pytest with @pytest.mark.toolmock_suite on HealthPlus: 24 items, one per case and attempt, pass")
    broken = json.loads((HERE / "healthplus" / "simulation.json").read_text())
    # The agent under test sends the wrong allowed amount in one case.
    broken["cases"][5]["driver"]["steps"][1]["arguments"]["allowed_amount"] = "987.50"
    shutil.copytree(HERE / "healthplus", HERE / "broken", dirs_exist_ok=True)
    (HERE / "broken" / "simulation.json").write_text(json.dumps(broken, indent=2))
    status, out = pytest_session("test_broken_suite.py")
    pointer = "broken/simulation.json: /cases/5/driver/steps/1/expect/result: result_mismatch: result/allowed is 987.5, expected 987.6"
    assert status == 1 and "1 failed, 23 passed" in out.splitlines()[-1], out
    assert "FAILED test_broken_suite.py::test_healthplus[settlement_to_the_cent-1]" in out, out
    assert pointer in out, out
    ok(f"a broken copy: 23 pass, settlement_to_the_cent-1 fails showing `{pointer}`")


def pytest_mcp_url() -> None:
    status, out = pytest_session("test_agent.py", "-v")
    assert status == 1 and "2 failed, 1 passed" in out.splitlines()[-1], out
    assert "test_agent.py::test_the_agent_books_a_day PASSED" in out, out
    assert "harness_error missing_reference in calendar/audit" in out, out
    assert "calendar.json: /cases/0/expect/trajectory/0: " in out, out
    ok("pytest with toolmock_mcp_url: the MCP SDK client's attempt passes; a harness error and an idle agent fail, with why")


def serve_with_the_sdk_client() -> None:
    import toolmock

    def play(url: str, *more: str) -> dict[str, Any]:
        done = subprocess.run([MCP_PYTHON, "python_client.py", "--url", url, *more],
                              capture_output=True, timeout=120, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    with toolmock.serve("calendar.json", case="books_a_day") as server:
        first = play(server.url)
        second = play(server.attempt_url(server.new_attempt()), "--harness")
        assert server.running
    assert not server.running
    assert [t["name"] for t in first["tools"]] == ["audit", "book", "booked_day", "book_and_confirm"], first["tools"]
    for report in (first, second):
        assert report["corrected"]["structuredContent"] == {"reference": "TEST-742", "day": "2026-12-04"}, report
        assert report["corrected"]["validated"] is True
        assert report["malformed"]["isError"] is True
    assert second["harness"]["data"]["code"] == "missing_reference", second["harness"]
    attempts = server.results["cases"][0]["attempts"]
    assert [(a["number"], a["outcome"]) for a in attempts] == [(1, "passed"), (2, "harness_error")], attempts
    ok(f"the official MCP SDK client against toolmock.serve(...): attempt 1 passed, attempt 2 harness_error ({server.base_url})")


if __name__ == "__main__":
    # test-wheel.sh installs the wheel twice: for the checks without pytest
    # (then `pip uninstall` must leave exactly what was there), and for the
    # pytest sessions (whose assertion-rewrite caches pytest writes itself).
    clean_environment()
    if sys.argv[1:] == ["pytest"]:  # else: without-pytest
        pytest_suite()
        pytest_mcp_url()
    else:
        same_as_the_binary()
        interrupted()
        readme_table()
        run_document()
        serve_with_the_sdk_client()
