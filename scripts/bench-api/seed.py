#!/usr/bin/env python3
"""Seeds a running toolmock-api for scripts/bench-api.sh, through the public
HTTP API only: one library tool `crm` with 50 custom operations (the first is
`find_member`, the Prism anchor's operation with its input schema and a
Salesforce-enveloped result; the other 49 are small lookups), a saved mock
revision for each, and a simulation of an agent using it with ATTEMPTS
attempts of an externally driven case, whose capabilities the load uses.

    bench-api-seed.py URL TOKEN OUT_DIR [ATTEMPTS]

Writes into OUT_DIR:
  tool_id          the tool's id (the GET load reads /api/tools/{id}/testing)
  attempts.lua     a Lua table of {id, capability} for the tool-call load
"""

import json
import sys
import urllib.error
import urllib.request

OPERATIONS = 50

# The anchor's input schema (fixtures/bench/prism/api.yaml), as is.
FIND_MEMBER_INPUT = {
    "type": "object",
    "required": ["lookup_by", "value"],
    "additionalProperties": False,
    "properties": {
        "lookup_by": {"type": "string", "enum": ["member_id", "name"]},
        "value": {"type": "string"},
        "limit": {"type": "integer"},
    },
}

CONTACT = {
    "type": "object",
    "required": ["Id", "FirstName", "LastName", "Plan"],
    "properties": {
        "attributes": {
            "type": "object",
            "properties": {"type": {"type": "string"}, "url": {"type": "string"}},
        },
        "Id": {"type": "string"},
        "FirstName": {"type": "string"},
        "LastName": {"type": "string"},
        "Plan": {"type": "string"},
        "PreviousLookup": {"type": ["string", "null"]},
    },
}

# The Salesforce adapter's envelope (toolmock_schema::envelope_schema) around
# a SOQL query result.
FIND_MEMBER_OUTPUT = {
    "type": "object",
    "properties": {
        "status": {"const": 200},
        "data": {
            "type": "object",
            "required": ["totalSize", "done", "records"],
            "properties": {
                "totalSize": {"type": "integer"},
                "done": {"type": "boolean"},
                "records": {"type": "array", "items": CONTACT},
            },
        },
    },
    "required": ["status", "data"],
    "additionalProperties": False,
}


def record(first_name, member_id):
    return {
        "attributes": {"type": "Contact", "url": "/services/data/v60.0/sobjects/Contact/003X"},
        "Id": member_id,
        "FirstName": first_name,
        "LastName": "Rivera",
        "Plan": "PLAN-1",
        "PreviousLookup": {"$state": "last_lookup"},
    }


def envelope(records):
    return {"status": 200, "data": {"totalSize": len(records), "done": True, "records": records}}


# State: the previous lookup is answered back and the new one kept, so every
# call reads and writes the attempt's state row.
FIND_MEMBER_MOCK = {
    "schema_version": 1,
    "default_variant": "success",
    "initial_state": {"last_lookup": None},
    "variants": {
        "success": {
            "result": envelope([record({"$input": "value"}, "003X")]),
            "set_state": {"last_lookup": {"$input": "value"}},
            "rules": [
                {
                    "when": [{"source": "input", "path": "lookup_by", "op": "eq", "value": "member_id"}],
                    "result": envelope([record("Dana", {"$input": "value"})]),
                }
            ],
        }
    },
    "examples": [
        {
            "variant": "success",
            "input": {"lookup_by": "name", "value": "Ann"},
            "expected": envelope([dict(record("Ann", "003X"), PreviousLookup=None)]),
            "expected_state": {"last_lookup": "Ann"},
        },
        {
            "variant": "success",
            "input": {"lookup_by": "member_id", "value": "M-1"},
            "expected": envelope([dict(record("Dana", "M-1"), PreviousLookup=None)]),
        },
    ],
}


def lookup_operation(i):
    return {
        "name": f"lookup_{i:02}",
        "description": f"Lookup number {i}",
        "input_schema": {
            "type": "object",
            "required": ["key"],
            "properties": {"key": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        },
        "output_schema": {
            "type": "object",
            "required": ["key", "found"],
            "properties": {"key": {"type": "string"}, "found": {"type": "boolean"}, "n": {"type": "integer"}},
        },
    }


def lookup_mock(i):
    return {
        "schema_version": 1,
        "default_variant": "success",
        "variants": {"success": {"result": {"key": {"$input": "key"}, "found": True, "n": i}}},
        "examples": [{"variant": "success", "input": {"key": "k"}, "expected": {"key": "k", "found": True, "n": i}}],
    }


class Api:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def post(self, path, body, expect=201):
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        if status != expect:
            sys.exit(f"POST {path}: {status} (expected {expect}): {text.decode(errors='replace')[:2000]}")
        return json.loads(text)


def start_simulation(api, tool_id, attempts):
    """The simulation document (docs/simulations.md) with the library tool by
    id and one case played from outside through the tool-call endpoint: its
    attempts stay running for the load."""
    return api.post(
        "/api/simulations",
        {
            "simulation_version": 1,
            "name": "bench-api load",
            "attempts": attempts,
            "tools": [{"name": "crm", "from": "library", "id": tool_id}],
            "agent": {"name": "load-agent", "tools": ["crm"]},
            "cases": [{"name": "load", "driver": {"type": "external"}}],
        },
    )


def main():
    url, token, out = sys.argv[1], sys.argv[2], sys.argv[3]
    attempts = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    api = Api(url, token)

    find_member = {
        "name": "find_member",
        "description": "Find a member by id or name (Salesforce SOQL query)",
        "input_schema": FIND_MEMBER_INPUT,
        "output_schema": FIND_MEMBER_OUTPUT,
    }
    operations = [find_member] + [lookup_operation(i) for i in range(1, OPERATIONS)]
    tool = api.post("/api/tools", {"name": "crm", "source": {"type": "custom", "operations": operations}})
    ops = {op["name"]: op for op in tool["operations"]}
    assert len(ops) == OPERATIONS, f"{len(ops)} operations created"
    for name, op in ops.items():
        mock = FIND_MEMBER_MOCK if name == "find_member" else lookup_mock(int(name.split("_")[1]))
        api.post(
            f"/api/tools/{tool['id']}/testing",
            {"action": "save", "operation_id": op["id"], "contract_hash": op["contract_hash"], "definition": mock},
        )

    started = start_simulation(api, tool["id"], attempts)
    assert len(started["attempts"]) == attempts, started

    with open(f"{out}/tool_id", "w") as f:
        f.write(tool["id"])
    with open(f"{out}/attempts.lua", "w") as f:
        f.write("return {\n")
        for a in started["attempts"]:
            f.write(f'  {{id = "{a["id"]}", capability = "{a["capability"]}"}},\n')
        f.write("}\n")
    print(f"seeded: tool {tool['id']} ({OPERATIONS} operations, each with a revision), "
          f"simulation {started['id']} ({attempts} attempts)")


if __name__ == "__main__":
    main()
