//! The model driver's own cost per turn: everything but the model's answer
//! (the conversation, the function map, argument parsing, the dispatcher's
//! call against the in-memory backend, the tool message, the judging). A
//! model that answers at once from a fixed script plays ATTEMPTS attempts
//! of 5 turns each (4 tool calls, then a final answer).
//!
//! Run by `scripts/bench-agents.sh` (release build):
//!   cargo run --release -p toolmock-simulation --example bench_model_driver -- 2000

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use serde_json::json;
use std::sync::Arc;
use toolmock_simulation::{
    ChatModel, Message, ModelFuture, ModelReply, ModelRequest, RunOptions, ToolCallRequest,
};

mod common;

/// Answers from the conversation so far: four `notes__add` calls, then text.
#[derive(Debug)]
struct Scripted;

impl ChatModel for Scripted {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let reply = if done < 4 {
            ModelReply {
                content: None,
                tool_calls: vec![ToolCallRequest {
                    id: format!("call_{done}"),
                    name: "notes__add".into(),
                    arguments: format!("{{\"text\": \"note {done}\"}}"),
                }],
                usage: None,
            }
        } else {
            ModelReply {
                content: Some("Added four notes.".into()),
                tool_calls: vec![],
                usage: None,
            }
        };
        Box::pin(std::future::ready(Ok(reply)))
    }
}

fn main() {
    let attempts: u32 = std::env::args()
        .nth(1)
        .map_or(2000, |a| a.parse().expect("a number of attempts"));
    let document = json!({
        "simulation_version": 1, "name": "bench", "attempts": attempts,
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [{"name": "add", "description": "Adds a note.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "output_schema": {"type": "object", "required": ["id"]}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}, "set_state": {"last": {"$input": "text"}}}},
                "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]}}
        }],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
        "cases": [{"name": "adds", "driver": {"type": "model", "messages": ["Add four notes."], "max_turns": 5},
                   "expect": {"final_answer": {"contains": ["four"]}}}]
    });
    let options = RunOptions {
        jobs: 1,
        model: Some(Arc::new(Scripted)),
        ..RunOptions::default()
    };
    let elapsed = common::timed_on_one_thread(&document, options);
    let turns = f64::from(attempts) * 5.0;
    println!(
        "{attempts} attempts x 5 turns on one thread: {:.3} s, {:.1} us per turn (start and install included)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / turns
    );
}
