"""HealthPlus as pytest items: one per case and attempt, each passing when
its attempt ended as its case expects (scripts/wheel_check/check.py)."""

import pytest


@pytest.mark.toolmock_suite("healthplus/simulation.json", jobs=2)
def test_healthplus(toolmock_suite):
    assert toolmock_suite["outcome"] in ("passed", "harness_error")
