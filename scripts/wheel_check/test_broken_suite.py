"""A broken copy of HealthPlus (check.py writes broken/): the attempt whose
expectation fails is the one failing item."""

import pytest


@pytest.mark.toolmock_suite("broken/simulation.json")
def test_healthplus(toolmock_suite):
    pass
