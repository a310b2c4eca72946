//! In-memory dispatcher throughput on one core (issue 4, "Performance";
//! figures in docs/performance.md). Target: ≥ 200,000 calls/s.
//!
//! `cargo bench -p toolmock-runtime --features testkit --bench memory_dispatcher`
//!
//! A current-thread tokio runtime (one core) runs the full pipeline of
//! `Dispatcher::call` — capability hash and binding, pin lookup, input schema
//! validation, evaluation, output schema validation, the locked state commit
//! and the evidence record — on the ledger definition (a `$state` and a
//! `$input` reference, one `set_state`, one rule), round-robin over 32
//! attempts. Bounded: `BENCH_CALLS` calls (default 400,000) after 20,000
//! warm-up calls.

use serde_json::json;
use std::time::Instant;
use toolmock_runtime::testkit::{Rig, ledger_simulation};
use toolmock_runtime::{MemoryStore, ToolCall};

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let rig = Rig::new(MemoryStore::new());
        let (tenant, started) = ledger_simulation(&rig, "bench", 32).await;
        let capabilities: Vec<_> = started.attempts.iter().map(|a| a.capability.clone()).collect();
        let requests: Vec<ToolCall> = (0..64)
            .map(|i| ToolCall::new("ledger", "append", json!({ "id": format!("call-{i}") })))
            .collect();
        for i in 0..20_000 {
            rig.dispatcher
                .call(tenant, &capabilities[i % 32], &requests[i % 64])
                .await?;
        }
        let mut latencies: Vec<u32> = Vec::with_capacity(calls);
        let begin = Instant::now();
        for i in 0..calls {
            let t = Instant::now();
            let result = rig
                .dispatcher
                .call(tenant, &capabilities[i % 32], &requests[i % 64])
                .await?;
            latencies.push(u32::try_from(t.elapsed().as_nanos()).unwrap_or(u32::MAX));
            std::hint::black_box(result);
        }
        let elapsed = begin.elapsed();
        latencies.sort_unstable();
        let rate = calls as f64 / elapsed.as_secs_f64();
        println!("in-memory dispatcher, 1 core (current-thread runtime), 32 attempts");
        println!("  calls            {calls}");
        println!("  elapsed          {:.3} s", elapsed.as_secs_f64());
        println!("  throughput       {rate:.0} calls/s (target >= 200000)");
        println!(
            "  latency          p50 {:.2} us  p90 {:.2} us  p99 {:.2} us  max {:.2} us",
            f64::from(percentile(&latencies, 50.0)) / 1000.0,
            f64::from(percentile(&latencies, 90.0)) / 1000.0,
            f64::from(percentile(&latencies, 99.0)) / 1000.0,
            f64::from(*latencies.last().unwrap_or(&0)) / 1000.0
        );
        // The floor: the pure evaluator's part of the same calls (input
        // validation, evaluation, output validation, applying the updates).
        let contract = toolmock_evaluator::CompiledContract::new(
            toolmock_runtime::testkit::ledger_operation()
                .effective_contract(None)
                .ok_or("the ledger has an output schema")?,
        )?;
        let compiled = toolmock_evaluator::compile_checked(
            &toolmock_runtime::testkit::ledger_definition(),
            Some(&contract),
        )
        .map_err(|d| format!("{} diagnostics", d.len()))?;
        let mut state = compiled.initial_state().clone();
        let floor_begin = Instant::now();
        for i in 0..calls {
            let outcome = toolmock_evaluator::evaluate_with_contract(
                &compiled,
                &contract,
                &toolmock_evaluator::Call { input: &requests[i % 64].input, state: &state, variant: None },
            )?;
            std::hint::black_box(outcome.commit_to(&mut state));
        }
        let floor = floor_begin.elapsed();
        println!(
            "  evaluator floor  {:.2} us/call ({:.0} calls/s) for validate + evaluate + validate + commit alone",
            floor.as_secs_f64() * 1e6 / calls as f64,
            calls as f64 / floor.as_secs_f64()
        );
        println!(
            "  verdict          {}",
            if rate >= 200_000.0 { "PASS" } else { "MISS" }
        );
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
