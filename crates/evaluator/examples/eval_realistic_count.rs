//! The eval yardstick as a fixed amount of work, for instruction counts
//! that do not move with the machine's load (docs/performance.md, "Version 2
//! and the version-1 yardstick"): every call line of CALLS is evaluated
//! twice against `DIR/definition.json` — written as JSON text without the
//! contract, then as a value with `DIR/contract.json` — threading the state.
//!
//! ```console
//! $ python3 fixtures/bench/eval-realistic/calls.py 20000 > /tmp/calls.jsonl
//! $ cargo build --release -p toolmock-evaluator --example eval_realistic_count
//! $ valgrind --tool=callgrind target/release/examples/eval_realistic_count fixtures/bench/eval-realistic /tmp/calls.jsonl
//! ```
use serde_json::{Map, Value};
use toolmock_evaluator::{
    Call, CompiledContract, compile_checked, evaluate_json, evaluate_with_contract,
};

fn main() {
    let dir = std::env::args().nth(1).expect("the fixture dir");
    let calls_path = std::env::args().nth(2).expect("calls.jsonl");
    let read = |p: &str| -> Value {
        serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json")
    };
    let definition = read(&format!("{dir}/definition.json"));
    let contract: toolmock_contract::OperationContract =
        toolmock_contract::OperationContract::from_value(read(&format!("{dir}/contract.json")))
            .expect("contract");
    let contract = CompiledContract::new(contract).expect("compiles");
    let compiled = compile_checked(&definition, Some(&contract)).expect("checks");
    let text = std::fs::read_to_string(calls_path).expect("calls");
    let calls: Vec<(Value, Option<String>)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("line");
            (
                v["input"].clone(),
                v.get("variant").and_then(Value::as_str).map(str::to_owned),
            )
        })
        .collect();
    let mut state: Map<String, Value> = compiled.initial_state().clone();
    let mut out = Vec::new();
    let mut ok = 0usize;
    for (input, variant) in &calls {
        let call = Call {
            input,
            state: &state,
            variant: variant.as_deref(),
        };
        if let Ok(o) = evaluate_json(&compiled, &call, &mut out) {
            ok += 1;
            o.commit_to(&mut state);
        }
        let call = Call {
            input,
            state: &state,
            variant: variant.as_deref(),
        };
        if let Ok(o) = evaluate_with_contract(&compiled, &contract, &call) {
            ok += 1;
            o.commit_to(&mut state);
        }
    }
    println!("{ok} ok, {} bytes", out.len());
}
