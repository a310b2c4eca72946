"""The pytest plugin on HealthPlus: ``toolmock_attempt`` over the operations
of ``fixtures/healthplus/simulation.json`` (the ini option in
``pyproject.toml``), playing some of the suite's cases as a Python agent
would — the same answers ``toolmock run`` expects."""

from __future__ import annotations

import pytest

import toolmock

MEMBER_SOQL = "SELECT Id, FirstName, LastName, MemberId__c, Plan__c FROM Contact WHERE MemberId__c = 'HP-100234'"
MISTYPED_SOQL = "SELECT Id, FirstName, LastName, MemberId__c, Plan__c FROM Contact WHERE MemberId__c = 'HP-10234'"


def test_every_operation_is_there(toolmock_attempt: toolmock.Attempt) -> None:
    assert sorted(toolmock_attempt.operations) == [
        "benefits/calculate_settlement", "benefits/check_eligibility", "claims/get_claim",
        "salesforce/salesforce__create_record", "salesforce/salesforce__get_record",
        "salesforce/salesforce__publish_platform_event", "salesforce/salesforce__query",
        "scheduling/book_appointment", "scheduling/find_slots",
    ]
    assert toolmock_attempt.state["settlement_fixture_amount"] == "1,234.50"


def test_chain_create_case_then_get_it(toolmock_attempt: toolmock.Attempt) -> None:
    found = toolmock_attempt.call("salesforce/salesforce__query", {"soql": MEMBER_SOQL})
    assert found["status"] == 200 and found["data"]["totalSize"] == 1
    contact = found["data"]["records"][0]["Id"]
    created = toolmock_attempt.call("salesforce/salesforce__create_record", {
        "object_type": "Case", "fields": {"Subject": "Question about claim CLM-2001", "ContactId": contact, "Priority": "Medium"},
    })
    assert created == {"status": 201, "data": {"id": "5003000000D8cuI", "success": True, "errors": []}}
    read = toolmock_attempt.call("salesforce/salesforce__get_record", {"object_type": "Case", "record_id": created["data"]["id"]})
    assert read == {"status": 200, "data": {
        "attributes": {"type": "Case", "url": "/services/data/v60.0/sobjects/Case/5003000000D8cuI"},
        "Id": "5003000000D8cuI", "Subject": "Question about claim CLM-2001", "ContactId": "0033000000HpJn1",
        "Priority": "Medium", "Status": "New",
    }}


def test_appointment_three_days_after_today(toolmock_attempt: toolmock.Attempt) -> None:
    slots = toolmock_attempt.call("scheduling/find_slots", {"member_id": "HP-100234", "specialty": "dermatology", "today": "2026-12-03"})
    assert slots == {"slots": [
        {"start": "2026-12-06T09:00:00.000Z", "specialty": "dermatology"},
        {"start": "2026-12-07T14:00:00.000Z", "specialty": "dermatology"},
    ]}
    booked = toolmock_attempt.call("scheduling/book_appointment", {
        "member_id": "HP-100234", "start": slots["slots"][0]["start"], "specialty": "dermatology",
    })
    assert booked == {"confirmation": "APT-7781", "start": "2026-12-06T09:00:00.000Z", "specialty": "dermatology"}
    assert toolmock_attempt.state["booked_appointment"] == {
        "member": "HP-100234", "start": "2026-12-06T09:00:00.000Z", "specialty": "dermatology",
    }


def test_settlement_to_the_cent(toolmock_attempt: toolmock.Attempt) -> None:
    claim = toolmock_attempt.call("claims/get_claim", {"claim_id": "CLM-2001"})
    assert claim["found"] is True
    settlement = toolmock_attempt.call("benefits/calculate_settlement", {
        "claim_id": "CLM-2001", "billed_amount": claim["claim"]["billed_amount"], "allowed_amount": "987.60",
    })
    assert settlement == {"claim_id": "CLM-2001", "billed": 1234.5, "allowed": 987.6, "plan_pays": 790.08,
                          "member_pays": 197.52, "currency": "USD"}


def test_member_lookup_miss_then_retry(toolmock_attempt: toolmock.Attempt) -> None:
    miss = toolmock_attempt.call("salesforce/salesforce__query", {"soql": MISTYPED_SOQL})
    assert miss == {"status": 200, "data": {"totalSize": 0, "done": True, "records": []}}
    hit = toolmock_attempt.call("salesforce/salesforce__query", {"soql": MEMBER_SOQL})
    assert hit["data"]["totalSize"] == 1
    state = toolmock_attempt.state
    assert state["member_lookup_misses"] == [MISTYPED_SOQL]
    assert state["verified_member"] == "HP-100234"
    assert [c["arguments"] for c in toolmock_attempt.calls] == [{"soql": MISTYPED_SOQL}, {"soql": MEMBER_SOQL}]


def test_bad_object_type_then_corrected(toolmock_attempt: toolmock.Attempt) -> None:
    fields = {"Subject": "Rash", "ContactId": "0033000000HpJn1", "Priority": "High"}
    before = toolmock_attempt.state
    with pytest.raises(toolmock.ToolInputError) as raised:
        toolmock_attempt.call("salesforce/salesforce__create_record", {"object_type": "Incident", "fields": fields})
    assert raised.value.code == "invalid_arguments" and raised.value.path == "/object_type"
    assert toolmock_attempt.state == before, "a failed call changes no state"
    created = toolmock_attempt.call("salesforce/salesforce__create_record", {"object_type": "Case", "fields": fields})
    assert created["status"] == 201 and created["data"]["id"] == "5003000000D8cuI"
    assert [c["status"] for c in toolmock_attempt.calls] == ["tool_input_error", "ok"]


@pytest.mark.toolmock(case="appointment_outage_costs_virtual_time")
def test_the_outage_costs_virtual_time(toolmock_attempt: toolmock.Attempt) -> None:
    slots = toolmock_attempt.call("scheduling/find_slots", {"member_id": "HP-100234", "specialty": "cardiology", "today": "2027-02-27"})
    assert slots["slots"] == []
    assert toolmock_attempt.elapsed_ms == 30000


@pytest.mark.toolmock(case="broken_fixture_settlement_literal", expect="harness_error")
def test_a_broken_fixture_is_a_harness_error(toolmock_attempt: toolmock.Attempt) -> None:
    with pytest.raises(toolmock.HarnessError) as raised:
        toolmock_attempt.call("benefits/calculate_settlement", {"claim_id": "CLM-2001", "billed_amount": "1234.50", "allowed_amount": "987.60"})
    assert raised.value.code == "invalid_fixture_literal"
    assert raised.value.path == "/settlement_fixture_amount"


@pytest.mark.toolmock(variants={"salesforce/salesforce__get_record": "bare_body"}, expect="harness_error")
def test_a_bare_salesforce_body_never_reaches_the_agent(toolmock_attempt: toolmock.Attempt) -> None:
    before = toolmock_attempt.state
    with pytest.raises(toolmock.HarnessError) as raised:
        toolmock_attempt.call("salesforce/salesforce__get_record", {"object_type": "Contact", "record_id": "0033000000HpJn1"})
    assert raised.value.code == "output_schema_violation"
    assert toolmock_attempt.state == before
    assert [e["error"]["code"] for e in toolmock_attempt.harness_errors] == ["output_schema_violation"]


def test_the_case_variants_are_read_from_the_file(toolmock_simulation: toolmock.Simulation) -> None:
    assert toolmock_simulation.case_variants("broken_fixture_unknown_variant") == {
        v["tool"] + "/" + v["operation"]: v["variant"]
        for v in toolmock_simulation.case("broken_fixture_unknown_variant")["variants"]
    }


PLUGIN_TESTS = """
import pytest, toolmock

def test_swallows_a_harness_error(toolmock_attempt):
    try:
        toolmock_attempt.call("nowhere/nothing", {})
    except toolmock.HarnessError:
        pass

@pytest.mark.toolmock(expect="harness_error")
def test_expects_one_and_gets_none(toolmock_attempt):
    toolmock_attempt.call("claims/get_claim", {"claim_id": "CLM-2001"})

@pytest.mark.toolmock(expect="harness_error")
def test_expects_one_and_gets_it(toolmock_attempt):
    with pytest.raises(toolmock.HarnessError):
        toolmock_attempt.call("claims/get_claim", {"claim_id": "CLM-2001"}, variant="no_such_variant")

def test_clean(toolmock_attempt):
    assert toolmock_attempt.call("claims/get_claim", {"claim_id": "CLM-2002"})["claim"]["status"] == "paid"
"""


def test_an_attempt_with_a_harness_error_never_passes(pytester: pytest.Pytester) -> None:
    from conftest import ROOT
    pytester.makeini(f"[pytest]\ntoolmock_simulation = {ROOT / 'fixtures/healthplus/simulation.json'}\n")
    pytester.makepyfile(PLUGIN_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*_ test_swallows_a_harness_error _*",
        "the attempt ended harness_error (1 harness error(s)): nowhere/nothing: unknown_tool: *",
        "*_ test_expects_one_and_gets_none _*",
        "the attempt was expected to end harness_error, but no call raised a harness error",
    ])


def test_without_a_simulation_file_the_fixture_says_how_to_give_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_it(toolmock_attempt):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*the toolmock fixtures need a simulation file*"])
    assert result.ret != 0
