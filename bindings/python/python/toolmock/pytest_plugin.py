"""The pytest plugin: a ``toolmock_attempt`` fixture per test.

Point it at a simulation file with the ini option ``toolmock_simulation``
(relative to the ini file), the command-line option
``--toolmock-simulation PATH``, or ``@pytest.mark.toolmock(simulation=PATH)``.
Each test gets a fresh ``toolmock.Attempt`` over the file's operations
(keyed ``"tool/operation"``), its initial state the union of the
definitions' initial states.

``@pytest.mark.toolmock(...)`` also takes ``variants={"tool/operation":
"variant"}``, ``case="name"`` (that case's variant choices), and
``expect="harness_error"``. As in toolmock itself, an attempt with a harness
error never passes: a test whose attempt recorded one fails even when the
test caught the exception — unless it expects ``harness_error``, in which
case it fails when none was recorded.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from toolmock.simulation import Simulation, load_simulation

_CACHE_KEY = pytest.StashKey[dict[str, Simulation]]()
_ATTEMPT_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("toolmock_simulation", "the simulation file toolmock_attempt is built from (relative to the ini file)")
    parser.addoption("--toolmock-simulation", default=None, help="the simulation file toolmock_attempt is built from")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolmock(simulation=None, variants=None, case=None, expect=None): how toolmock_attempt is built and judged",
    )
    config.stash[_CACHE_KEY] = {}


def _simulation_path(request: pytest.FixtureRequest, marker: pytest.Mark | None) -> str:
    config = request.config
    if marker is not None and marker.kwargs.get("simulation"):
        path = os.fspath(marker.kwargs["simulation"])
        return path if os.path.isabs(path) else os.path.join(os.path.dirname(str(request.path)), path)
    if config.getoption("--toolmock-simulation"):
        return os.path.abspath(config.getoption("--toolmock-simulation"))
    ini = config.getini("toolmock_simulation")
    if ini:
        base = os.path.dirname(str(config.inipath)) if config.inipath else str(config.rootpath)
        return os.path.join(base, ini)
    raise pytest.UsageError(
        "toolmock_attempt needs a simulation file: set the ini option toolmock_simulation, "
        "pass --toolmock-simulation, or mark the test with @pytest.mark.toolmock(simulation=PATH)"
    )


@pytest.fixture
def toolmock_simulation(request: pytest.FixtureRequest) -> Simulation:
    """The simulation file's operations, compiled once per file and session."""
    marker = request.node.get_closest_marker("toolmock")
    path = os.path.abspath(_simulation_path(request, marker))
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fails a test whose attempt ended otherwise than it expects."""
    result = yield
    attempt = item.stash.get(_ATTEMPT_KEY, None)
    if attempt is None:
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
