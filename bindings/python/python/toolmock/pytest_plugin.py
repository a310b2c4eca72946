"""The pytest plugin: a simulation file's cases as pytest items, an MCP URL
per test for an agent to play a case, and a ``toolmock_attempt`` per test
for a Python agent.

The simulation file is named by ``@pytest.mark.toolmock_suite(PATH)`` or
``@pytest.mark.toolmock(simulation=PATH)`` (relative to the test file), the
command-line option ``--toolmock-simulation PATH``, or the ini option
``toolmock_simulation`` (relative to the ini file).

- ``toolmock_suite``: a test that takes it runs once per case and attempt
  of the file (``test_x[CASE-N]``), on ``toolmock.run``'s results: the
  whole file runs once per session and options, and each item fails when
  its attempt did not end as its case expects, listing the unmet
  expectations with their JSON pointers into the file. The fixture's value
  is the attempt's object of the results document. Marker keywords other
  than the path are ``toolmock run``'s flags (``jobs=2``).
- ``toolmock_mcp_url``: the MCP endpoint of a new attempt of the case
  ``@pytest.mark.toolmock(case=NAME)`` names, served by ``toolmock.serve``
  (one server per file and case for the session). After the test, the
  attempt ends and is judged; the test fails when it did not end as the
  case expects. ``toolmock_mcp_server`` is that ``toolmock.Server``.
- ``toolmock_attempt``: a fresh ``toolmock.Attempt`` over the file's
  operations (keyed ``"tool/operation"``), its initial state the union of
  the definitions' initial states. ``@pytest.mark.toolmock(...)`` also takes
  ``variants={"tool/operation": "variant"}``, ``case="name"`` (that case's
  variant choices), and ``expect="harness_error"``. As in toolmock itself,
  an attempt with a harness error never passes: a test whose attempt
  recorded one fails even when the test caught the exception — unless it
  expects ``harness_error``, in which case it fails when none was recorded.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

from toolmock.runner import Server, run, serve
from toolmock.simulation import Simulation, load_simulation
from toolmock._toolmock import _plan

_CACHE_KEY = pytest.StashKey[dict[str, Simulation]]()
_RUNS_KEY = pytest.StashKey[dict[tuple[str, tuple[tuple[str, Any], ...]], Any]]()
_SERVERS_KEY = pytest.StashKey[dict[tuple[str, str | None], Server]]()
_ATTEMPT_KEY = pytest.StashKey[Any]()
_JUDGED_KEY = pytest.StashKey[tuple[str, str, dict[str, Any], Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("toolmock_simulation", "the simulation file the toolmock fixtures use (relative to the ini file)")
    parser.addoption("--toolmock-simulation", default=None, help="the simulation file the toolmock fixtures use")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolmock(simulation=None, variants=None, case=None, expect=None): the simulation file, case and "
        "variants of toolmock_attempt and toolmock_mcp_url, and how toolmock_attempt is judged",
    )
    config.addinivalue_line(
        "markers",
        "toolmock_suite(simulation=None, **options): run the file's cases as items of a test taking "
        "toolmock_suite, one per case and attempt; options are `toolmock run`'s flags",
    )
    config.stash[_CACHE_KEY] = {}
    config.stash[_RUNS_KEY] = {}
    config.stash[_SERVERS_KEY] = {}


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in config.stash.get(_SERVERS_KEY, {}).values():
        server.stop()


def _resolve(config: pytest.Config, test_path: str, marked: Any) -> str:
    """The simulation file: marked (relative to the test file), the option, or the ini."""
    if marked:
        path = os.fspath(marked)
        return os.path.abspath(path if os.path.isabs(path) else os.path.join(os.path.dirname(test_path), path))
    if config.getoption("--toolmock-simulation"):
        return os.path.abspath(config.getoption("--toolmock-simulation"))
    ini = config.getini("toolmock_simulation")
    if ini:
        base = os.path.dirname(str(config.inipath)) if config.inipath else str(config.rootpath)
        return os.path.abspath(os.path.join(base, ini))
    raise pytest.UsageError(
        "the toolmock fixtures need a simulation file: set the ini option toolmock_simulation, "
        "pass --toolmock-simulation, or mark the test with @pytest.mark.toolmock(simulation=PATH) "
        "(or @pytest.mark.toolmock_suite(PATH))"
    )


def _simulation_path(request: pytest.FixtureRequest, marker: pytest.Mark | None) -> str:
    marked = marker.kwargs.get("simulation") if marker is not None else None
    return _resolve(request.config, str(request.path), marked)


# -- toolmock_suite ----------------------------------------------------------


def _suite_marker(mark: pytest.Mark | None) -> tuple[Any, dict[str, Any]]:
    """The marker's path (positional or ``simulation=``) and its run options."""
    if mark is None:
        return None, {}
    options = dict(mark.kwargs)
    path = mark.args[0] if mark.args else options.pop("simulation", None)
    options.pop("simulation", None)
    return path, options


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One item per case and attempt for a test that takes ``toolmock_suite``."""
    if "toolmock_suite" not in metafunc.fixturenames:
        return
    marked, options = _suite_marker(metafunc.definition.get_closest_marker("toolmock_suite"))
    path = _resolve(metafunc.config, str(metafunc.definition.path), marked)
    key = tuple(sorted(options.items()))
    params = []
    ids = []
    for case, attempts in _plan(path):
        for number in range(1, attempts + 1):
            params.append((path, key, case, number))
            ids.append(f"{case}-{number}")
    metafunc.parametrize("toolmock_suite", params, ids=ids, indirect=True)


def _results(config: pytest.Config, path: str, key: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The file's results document: run once per session and options."""
    runs = config.stash[_RUNS_KEY]
    if (path, key) not in runs:
        try:
            runs[(path, key)] = run(path, **dict(key))
        except Exception as e:  # every item of the run reports it
            runs[(path, key)] = e
    outcome = runs[(path, key)]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@pytest.fixture
def toolmock_suite(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One attempt of a case, as ``toolmock run`` played it: the attempt's
    object of the results document (``outcome``, ``as_expected``,
    ``unmet``, ``calls``, …). The item fails after the test when the
    attempt did not end as its case expects."""
    if not hasattr(request, "param"):
        raise pytest.UsageError("toolmock_suite is parametrized by the plugin; take it as a test argument")
    path, key, case_name, number = request.param
    results = _results(request.config, path, key)
    case = next(c for c in results["cases"] if c["name"] == case_name)
    attempt = next(a for a in case["attempts"] if a["number"] == number)
    request.node.stash[_JUDGED_KEY] = (path, case_name, case, attempt)
    return attempt


def _describe(path: str, case_name: str, expected: str, attempt: dict[str, Any]) -> str:
    """Why an attempt did not end as its case expects: each unmet
    expectation at its JSON pointer in the file, each harness error."""
    lines = [f"case {case_name}, attempt {attempt['number']}: ended {attempt['outcome']}, but the case expects {expected}"]
    for unmet in attempt.get("unmet", []):
        lines.append(f"  {path}: {unmet['at'] or '/'}: {unmet['code']}: {unmet['message']}")
    for error in attempt.get("harness_errors", []):
        where = f" in {error['tool']}/{error['operation']}" if error.get("tool") else ""
        at = f" at {error['path'] or '/'}" if error.get("path") is not None else ""
        lines.append(f"  harness_error {error['code']}{where}{at}: {error['message']}")
    return "\n".join(lines)


# -- toolmock_mcp_url --------------------------------------------------------


@pytest.fixture
def toolmock_mcp_server(request: pytest.FixtureRequest) -> Server:
    """The ``toolmock.Server`` serving the marked case of the file (one per
    file and case for the session)."""
    marker = request.node.get_closest_marker("toolmock")
    path = _simulation_path(request, marker)
    case = marker.kwargs.get("case") if marker is not None else None
    servers = request.config.stash[_SERVERS_KEY]
    if (path, case) not in servers:
        servers[(path, case)] = serve(path, case)
    return servers[(path, case)]


@pytest.fixture
def toolmock_mcp_url(request: pytest.FixtureRequest, toolmock_mcp_server: Server) -> Iterator[str]:
    """The MCP endpoint of a new attempt of the marked case; after the test
    the attempt ends and is judged like ``toolmock run`` judges one."""
    marker = request.node.get_closest_marker("toolmock")
    number = toolmock_mcp_server.new_attempt()
    request.node.stash[_ATTEMPT_KEY] = (toolmock_mcp_server, number, _simulation_path(request, marker))
    yield toolmock_mcp_server.attempt_url(number)


# -- toolmock_attempt --------------------------------------------------------


@pytest.fixture
def toolmock_simulation(request: pytest.FixtureRequest) -> Simulation:
    """The simulation file's operations, compiled once per file and session."""
    marker = request.node.get_closest_marker("toolmock")
    path = _simulation_path(request, marker)
    cache = request.config.stash[_CACHE_KEY]
    if path not in cache:
        cache[path] = load_simulation(path)
    return cache[path]


@pytest.fixture
def toolmock_attempt(request: pytest.FixtureRequest, toolmock_simulation: Simulation):
    """A fresh ``toolmock.Attempt`` over the simulation file's operations."""
    marker = request.node.get_closest_marker("toolmock")
    variants: dict[str, str] = {}
    if marker is not None:
        if marker.kwargs.get("case"):
            variants.update(toolmock_simulation.case_variants(marker.kwargs["case"]))
        variants.update(marker.kwargs.get("variants") or {})
    attempt = toolmock_simulation.attempt(variants)
    request.node.stash[_ATTEMPT_KEY] = attempt
    return attempt


# -- judging -----------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fails a test whose attempt ended otherwise than it (or its case) expects."""
    attempt = item.stash.get(_ATTEMPT_KEY, None)
    try:
        result = yield
    except BaseException:
        # The test failed by itself; a served attempt still ends here, so
        # that it is judged (and reported) with the others.
        if isinstance(attempt, tuple):
            attempt[0].finish(attempt[1])
        raise
    judged = item.stash.get(_JUDGED_KEY, None)
    if judged is not None:
        path, case_name, case, ended = judged
        if not ended["as_expected"]:
            pytest.fail(_describe(path, case_name, case["expected_outcome"], ended), pytrace=False)
        return result
    if attempt is None:
        return result
    if isinstance(attempt, tuple):
        server, number, path = attempt
        ended = server.finish(number)
        if not ended["as_expected"]:
            expected = server.results["cases"][0]["expected_outcome"]
            pytest.fail(_describe(path, server.case, expected, ended), pytrace=False)
        return result
    marker = item.get_closest_marker("toolmock")
    expect = marker.kwargs.get("expect") if marker is not None else None
    errors = attempt.harness_errors
    if expect == "harness_error":
        if not errors:
            pytest.fail("the attempt was expected to end harness_error, but no call raised a harness error", pytrace=False)
    elif errors:
        shown = "; ".join(f"{e['operation']}: {e['error']['code']}: {e['error']['message']}" for e in errors)
        pytest.fail(f"the attempt ended harness_error ({len(errors)} harness error(s)): {shown}", pytrace=False)
    return result
