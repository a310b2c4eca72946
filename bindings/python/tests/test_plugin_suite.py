"""The plugin's ``toolmock_suite`` (a simulation file's cases as pytest
items) and ``toolmock_mcp_url`` (an attempt per test, judged after it), in
pytest sessions of their own (pytester)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

HEALTHPLUS = ROOT / "fixtures/healthplus"
CALENDAR = ROOT / "fixtures/mcp/serve/calendar.json"


def healthplus_copy(pytester: pytest.Pytester, allowed_amount: str = "987.60") -> Path:
    """HealthPlus beside the tests; the agent's allowed amount in case 5 as given."""
    copy = pytester.path / "healthplus"
    shutil.copytree(HEALTHPLUS, copy)
    document = json.loads((copy / "simulation.json").read_text())
    document["cases"][5]["driver"]["steps"][1]["arguments"]["allowed_amount"] = allowed_amount
    (copy / "simulation.json").write_text(json.dumps(document))
    return copy / "simulation.json"


SUITE = """
import pytest

@pytest.mark.toolmock_suite("healthplus/simulation.json", jobs=1)
def test_healthplus(toolmock_suite):
    assert toolmock_suite["number"] == 1 and "outcome" in toolmock_suite
"""


def test_every_case_and_attempt_is_an_item(pytester: pytest.Pytester) -> None:
    healthplus_copy(pytester)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=24)
    result.stdout.fnmatch_lines([
        "*::test_healthplus?chain_create_case_then_get_it-1? PASSED*",
        "*::test_healthplus?adverse_event_severity_only-1? PASSED*",
    ])


def test_an_attempt_not_as_expected_fails_with_its_pointers(pytester: pytest.Pytester) -> None:
    path = healthplus_copy(pytester, allowed_amount="987.50")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=23, failed=1)
    result.stdout.fnmatch_lines([
        "*_ test_healthplus?settlement_to_the_cent-1? _*",
        "case settlement_to_the_cent, attempt 1: ended failed, but the case expects passed",
        f"  {path}: /cases/5/driver/steps/1/expect/result: result_mismatch: result/allowed is 987.5, expected 987.6",
    ])


def test_the_ini_names_the_file_and_attempts_are_items(pytester: pytest.Pytester) -> None:
    document = json.loads((ROOT / "fixtures/api/notes-simulation.json").read_text())
    document["cases"][0]["attempts"] = 3
    (pytester.path / "notes.json").write_text(json.dumps(document))
    pytester.makeini("[pytest]\ntoolmock_simulation = notes.json\n")
    pytester.makepyfile("def test_notes(toolmock_suite):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    first = document["cases"][0]["name"]
    result.stdout.fnmatch_lines([f"*test_notes?{first}-1? PASSED*", f"*test_notes?{first}-3? PASSED*"])
    result.assert_outcomes(passed=sum(c.get("attempts", document.get("attempts", 1)) for c in document["cases"]))


def test_a_file_with_problems_is_a_collection_error_listing_them(pytester: pytest.Pytester) -> None:
    (pytester.path / "broken.json").write_text(json.dumps({"simulation_version": 1, "name": "b", "surprise": 1}))
    pytester.makepyfile("import pytest\n\n@pytest.mark.toolmock_suite('broken.json')\ndef test_it(toolmock_suite):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*broken.json: /surprise: unknown_field: *"])
    assert result.ret != 0


AGENT = f"""
import json, urllib.request
import pytest

pytestmark = pytest.mark.toolmock(simulation={str(CALENDAR)!r}, case="books_a_day")

def book(url, day):
    body = json.dumps({{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {{"name": "book", "arguments": {{"day": day}}}}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={{
        "content-type": "application/json", "accept": "application/json, text/event-stream"}})
    return json.loads(urllib.request.urlopen(request, timeout=30).read())

def test_books_the_day(toolmock_mcp_url):
    assert book(toolmock_mcp_url, "2026-12-04")["result"]["isError"] is False

def test_books_another_day(toolmock_mcp_url):
    book(toolmock_mcp_url, "2026-12-05")

def test_each_test_has_its_own_attempt(toolmock_mcp_url, toolmock_mcp_server):
    assert toolmock_mcp_url.endswith("/attempts/3/mcp")
    book(toolmock_mcp_url, "2026-12-04")

def test_a_failing_test_still_ends_its_attempt(toolmock_mcp_url):
    assert False, "the agent crashed"
"""


def test_an_mcp_url_per_test_judged_after_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AGENT)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*test_books_the_day PASSED*",
        "*test_books_another_day FAILED*",
        "*test_each_test_has_its_own_attempt PASSED*",
        "case books_a_day, attempt 2: ended failed, but the case expects passed",
        f"  {CALENDAR}: /cases/0/expect/*",
        "*the agent crashed*",
    ])
