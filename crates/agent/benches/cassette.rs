//! Model cassette benchmarks (figures in docs/performance.md, "Model
//! cassettes").
//!
//! `cargo bench -p toolmock-agent --bench cassette`
//!
//! A cassette of 10,000 exchanges is recorded first (2,000 attempts of a
//! five-turn conversation: four tool calls, then a final answer, with four
//! function tools whose input schemas are small objects — about 2.4 KB per
//! request, 25 MB on disk).
//!
//! - `cassette/load_10000_exchanges`: `Cassette::open` of that folder
//!   (read, parse, index). Target ≤ 200 ms. The resident memory the open
//!   cassette adds is measured once (from `/proc/self/statm`) and printed.
//!   Target ≤ 50 MB.
//! - `cassette/replay_turn`: one replayed model turn — the fifth request of
//!   an attempt (the longest conversation) answered from the cassette:
//!   canonical form, canonical text, sha256, lookup and the reply. Target
//!   ≤ 0.2 ms.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use toolmock_agent::{Cassette, CassetteMode};
use toolmock_simulation::{
    AttemptScope, ChatModel, FunctionTool, Message, ModelFuture, ModelReply, ModelRequest,
    ModelRole, ToolCallRequest, attempt_model,
};

const ATTEMPTS: u32 = 2_000;
/// Set in the child process that records the cassette into its value.
const RECORD_INTO: &str = "TOOLMOCK_CASSETTE_BENCH_RECORD_INTO";
const TURNS: usize = 5;

/// Four tool calls, then a final answer.
#[derive(Debug)]
struct Scripted;

impl ChatModel for Scripted {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        Box::pin(std::future::ready(Ok(reply(done))))
    }

    fn identity(&self) -> Value {
        json!({"model": "bench-model", "temperature": 0.0, "seed": 7})
    }
}

fn reply(done: usize) -> ModelReply {
    if done + 1 < TURNS {
        ModelReply {
            content: None,
            tool_calls: vec![ToolCallRequest {
                id: format!("call_{}_1", done + 1),
                name: "notes__add".into(),
                arguments: format!("{{\"text\": \"note number {done} of the attempt\"}}"),
            }],
            usage: None,
        }
    } else {
        ModelReply {
            content: Some("Added four notes: n-1, n-2, n-3 and n-4.".into()),
            tool_calls: vec![],
            usage: None,
        }
    }
}

fn tools() -> Vec<FunctionTool> {
    ["add", "get", "remove", "list"]
        .iter()
        .map(|op| FunctionTool {
            name: format!("notes__{op}"),
            description: format!("The notes tool's {op} operation, as its contract describes it."),
            parameters: json!({"type": "object", "properties": {
                "text": {"type": "string", "maxLength": 200},
                "id": {"type": "string", "pattern": "^n-[0-9]+$"}
            }, "additionalProperties": false}),
        })
        .collect()
}

/// The messages of request `turn` (0-based) of an attempt.
fn conversation(attempt: u32, turn: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::System {
            content: "You keep notes for the member. Add each note the member asks for, then confirm it with its id.".into(),
        },
        Message::User {
            content: format!("Attempt {attempt}: note down milk, bread, eggs and butter."),
        },
    ];
    for done in 0..turn {
        let r = reply(done);
        messages.push(Message::Assistant {
            content: r.content,
            tool_calls: r.tool_calls.clone(),
        });
        for call in &r.tool_calls {
            messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content: format!("{{\"id\":\"n-{}\"}}", done + 1),
            });
        }
    }
    messages
}

fn record(dir: &std::path::Path, runtime: &tokio::runtime::Runtime) {
    let cassette = Cassette::open(dir, CassetteMode::Record).unwrap();
    let model = cassette.model(ModelRole::Agent, Some(Arc::new(Scripted)));
    let tools = tools();
    runtime.block_on(async {
        for attempt in 1..=ATTEMPTS {
            let scope = AttemptScope {
                case: format!("case {}", attempt % 20),
                attempt,
            };
            let view = attempt_model(&model, &scope);
            for turn in 0..TURNS {
                let messages = conversation(attempt, turn);
                view.complete(ModelRequest {
                    messages: &messages,
                    tools: &tools,
                })
                .await
                .unwrap();
            }
        }
    });
    assert_eq!(cassette.save().unwrap().recorded, ATTEMPTS as usize * TURNS);
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Recorded by a child process (this program again), so that the memory
    // the recording used is not there for the open cassette to reuse.
    if let Ok(dir) = std::env::var(RECORD_INTO) {
        record(std::path::Path::new(&dir), &runtime);
        std::process::exit(0);
    }
    let dir = std::env::temp_dir().join(format!("toolmock-cassette-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .env(RECORD_INTO, &dir)
        .arg("--bench")
        .status()
        .unwrap();
    assert!(status.success(), "the recording child failed");
    let on_disk: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let before = resident_bytes();
    let cassette = Cassette::open(&dir, CassetteMode::Replay).unwrap();
    let after = resident_bytes();
    eprintln!(
        "cassette: {} exchanges, {:.1} MB on disk, {:.1} MB resident added by the open cassette",
        cassette.exchanges(),
        on_disk as f64 / 1e6,
        after.saturating_sub(before) as f64 / 1e6
    );
    let mut group = c.benchmark_group("cassette");
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(20);
    group.bench_function("load_10000_exchanges", |b| {
        b.iter(|| black_box(Cassette::open(&dir, CassetteMode::Replay).unwrap()));
    });
    let model = cassette.model(ModelRole::Agent, None);
    let tools = tools();
    let last = conversation(7, TURNS - 1);
    let scope = AttemptScope {
        case: "case 7".into(),
        attempt: 7,
    };
    group.sample_size(100);
    group.bench_function("replay_turn", |b| {
        b.iter(|| {
            let view = attempt_model(&model, &scope);
            let answer = runtime.block_on(view.complete(ModelRequest {
                messages: &last,
                tools: &tools,
            }));
            black_box(answer.unwrap())
        });
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(cassette, benches);
criterion_main!(cassette);
