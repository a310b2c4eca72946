#!/usr/bin/env python3
"""Writes the simulation benchmark of issue 12 to a folder (stdlib only).

    scripts/bench-simulation-data.py OUT_DIR [--cases 100] [--attempts 100]

OUT_DIR/simulation.json: one custom tool `ledger` with three operations
(lookup with 12 rules, post writing the state, report), CASES cases x
ATTEMPTS attempts, each case a script of 10 calls: lookups whose arguments
come from the case's data ($case) and earlier results ($step), posts, and a
final report whose result is compared exactly; trajectory and final-state
expectations on every case. Default: 100 x 100 = 10,000 attempts, 100,000
calls. Deterministic: the same arguments give the same file.
"""
import argparse
import json
import os

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--cases", type=int, default=100)
ap.add_argument("--attempts", type=int, default=100)
args = ap.parse_args()

obj = {"type": "object"}
rules = [
    {"when": [{"source": "input", "path": "account", "op": "eq", "value": f"A-{i:03d}"}],
     "result": {"account": {"$input": "account"}, "balance": {"$number": f"{i}.25"}, "tier": i % 3},
     "set_state": {"last_lookup": {"$input": "account"}}}
    for i in range(12)
]
lookup = {
    "schema_version": 1, "default_variant": "ok",
    "initial_state": {"posted": 0, "last_lookup": None},
    "variants": {"ok": {"result": {"account": {"$input": "account"}, "balance": 0, "tier": -1},
                        "set_state": {"last_lookup": {"$input": "account"}}, "rules": rules}},
    "examples": [{"variant": "ok", "input": {"account": "A-001"}, "expected": {"account": "A-001", "balance": 1.25, "tier": 1}},
                 {"variant": "ok", "input": {"account": "Z"}, "expected": {"account": "Z", "balance": 0, "tier": -1}}],
}
post = {
    "schema_version": 1, "default_variant": "ok",
    "variants": {"ok": {"result": {"posted": True, "account": {"$input": "account"}, "amount": {"$number": {"$input": "amount"}}},
                        "set_state": {"last_post": {"account": {"$input": "account"}, "amount": {"$input": "amount"}}}}},
    "examples": [{"variant": "ok", "input": {"account": "A-001", "amount": "10.50"},
                  "expected": {"posted": True, "account": "A-001", "amount": 10.5}}],
}
report = {
    "schema_version": 1, "default_variant": "ok",
    "variants": {"ok": {"result": {"last_lookup": {"$state": "last_lookup"}, "last_post": {"$state": "last_post"}}}},
    "examples": [{"variant": "ok", "input": {}, "state": {"last_lookup": "A", "last_post": {"account": "A", "amount": "1.00"}},
                  "expected": {"last_lookup": "A", "last_post": {"account": "A", "amount": "1.00"}}}],
}
tool = {
    "name": "ledger", "from": "custom",
    "operations": [
        {"name": "lookup", "input_schema": {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
         "output_schema": {"type": "object", "required": ["account", "balance"]}},
        {"name": "post", "input_schema": {"type": "object", "properties": {"account": {"type": "string"}, "amount": {"type": "string", "pattern": "^[0-9]+\\.[0-9]{2}$"}},
                                           "required": ["account", "amount"]},
         "output_schema": {"type": "object", "required": ["posted"]}},
        {"name": "report", "input_schema": obj, "output_schema": obj},
    ],
    "definitions": {"lookup": lookup, "post": post, "report": report},
}
cases = []
for c in range(args.cases):
    accounts = [f"A-{(c + k) % 12:03d}" for k in range(4)]
    amount = f"{c}.{c % 100:02d}"
    steps = []
    for k in range(4):
        steps.append({"id": f"l{k}", "tool": "ledger", "operation": "lookup", "arguments": {"account": {"$case": f"accounts.{k}"}},
                      "expect": {"result_subset": {"account": accounts[k]}}})
        steps.append({"id": f"p{k}", "tool": "ledger", "operation": "post",
                      "arguments": {"account": {"$step": f"l{k}.result.account"}, "amount": {"$case": "amount"}},
                      "expect": {"result_subset": {"posted": True}}})
    steps.append({"tool": "ledger", "operation": "lookup", "arguments": {"account": {"$step": "p3.result.account"}}})
    steps.append({"tool": "ledger", "operation": "report",
                  "expect": {"result": {"last_lookup": accounts[3], "last_post": {"account": accounts[3], "amount": amount}}}})
    cases.append({
        "name": f"case_{c:04d}",
        "data": {"accounts": accounts, "amount": amount},
        "driver": {"type": "scripted", "steps": steps},
        "expect": {"final_state": {"subset": {"last_lookup": accounts[3]}},
                   "trajectory": [{"kind": "count", "call": {"tool": "ledger", "operation": "post"}, "exactly": 4},
                                  {"kind": "sequence", "mode": "superset", "calls": [{"tool": "ledger", "operation": "report"}]}]},
    })
doc = {"simulation_version": 1, "name": f"bench {args.cases} x {args.attempts}", "attempts": args.attempts,
       "tools": [tool], "agent": {"name": "bookkeeper", "tools": ["ledger"]}, "cases": cases}
os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, "simulation.json"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
