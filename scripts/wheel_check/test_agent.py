"""An agent played by the official MCP SDK client (python_client.py, run
with TOOLMOCK_MCP_PYTHON) against one attempt per test of calendar.json's
case books_a_day; each attempt is judged after its test."""

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.toolmock(simulation="calendar.json", case="books_a_day")


def play(url, *more):
    done = subprocess.run([os.environ["TOOLMOCK_MCP_PYTHON"], "python_client.py", "--url", url, *more],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_the_agent_books_a_day(toolmock_mcp_url):
    report = play(toolmock_mcp_url)
    assert report["after"]["structuredContent"] == {"day": "2026-12-04"}


def test_an_agent_that_reads_the_broken_audit(toolmock_mcp_url):
    # Its attempt ends harness_error: the test fails, naming the harness error.
    play(toolmock_mcp_url, "--harness")


def test_an_agent_that_does_nothing(toolmock_mcp_url):
    # Nothing booked: the case's trajectory is unmet, the test fails at its pointer.
    pass
