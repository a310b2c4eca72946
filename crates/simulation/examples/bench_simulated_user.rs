//! The simulated user's own cost per user turn: everything but the user
//! model's answer (the user's view of the conversation with the roles
//! flipped, the stop-marker check, the recording). Both sides measured in
//! one run: ATTEMPTS attempts of a conversation of six user turns (five
//! messages, then one with `###STOP###`) played once by a simulated user
//! and once by the same six fixed `messages`, against models that answer at
//! once; the difference per user turn is the simulated user's cost.
//!
//!   cargo run --release -p toolmock-simulation --example bench_simulated_user -- 2000

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolmock_simulation::{ChatModel, Message, ModelFuture, ModelReply, ModelRequest, RunOptions};

mod common;

/// The user turns of one conversation.
const TURNS: usize = 6;

/// The agent: answers every user turn at once.
#[derive(Debug)]
struct Agent;

impl ChatModel for Agent {
    fn complete<'a>(&'a self, _request: ModelRequest<'a>) -> ModelFuture<'a> {
        Box::pin(std::future::ready(Ok(ModelReply {
            content: Some("Noted.".into()),
            tool_calls: vec![],
            usage: None,
        })))
    }
}

/// The user: its own earlier turns are the `assistant` messages of its view.
#[derive(Debug)]
struct User;

fn user_turn(n: usize) -> String {
    if n + 1 < TURNS {
        format!("Message {n}.")
    } else {
        "Thanks. ###STOP###".into()
    }
}

impl ChatModel for User {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        let said = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        Box::pin(std::future::ready(Ok(ModelReply {
            content: Some(user_turn(said)),
            tool_calls: vec![],
            usage: None,
        })))
    }
}

fn document(attempts: u32, case: Value) -> Value {
    json!({
        "simulation_version": 1, "name": "bench", "attempts": attempts,
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [{"name": "add", "description": "Adds a note.",
                "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}}},
                "examples": [{"variant": "ok", "input": {}, "expected": {"id": "n-1"}}]}}
        }],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
        "cases": [case]
    })
}

/// Runs `document` on one thread against both models; its wall time.
fn timed(document: &Value) -> Duration {
    let options = RunOptions {
        jobs: 1,
        model: Some(Arc::new(Agent)),
        user: Some(Arc::new(User)),
        ..RunOptions::default()
    };
    common::timed_on_one_thread(document, options)
}

fn main() {
    let attempts: u32 = std::env::args()
        .nth(1)
        .map_or(2000, |a| a.parse().expect("a number of attempts"));
    let fixed: Vec<String> = (0..TURNS).map(user_turn).collect();
    let scripted = document(
        attempts,
        json!({"name": "fixed", "driver": {"type": "model", "messages": fixed, "max_turns": 20}}),
    );
    let simulated = document(
        attempts,
        json!({"name": "simulated", "driver": {"type": "model", "max_turns": 20},
               "user": {"type": "model", "instructions": "Say six things.", "max_turns": 20}}),
    );
    // Warm both paths once, then measure them in turn.
    timed(&document(10, scripted["cases"][0].clone()));
    timed(&document(10, simulated["cases"][0].clone()));
    let fixed_time = timed(&scripted);
    let user_time = timed(&simulated);
    let turns = f64::from(attempts) * TURNS as f64;
    let per_turn = |d: Duration| d.as_secs_f64() * 1e6 / turns;
    println!(
        "{attempts} attempts x {TURNS} user turns on one thread: fixed messages {:.3} s ({:.1} us per user turn), simulated user {:.3} s ({:.1} us per user turn): the simulated user's own cost {:.1} us per user turn",
        fixed_time.as_secs_f64(),
        per_turn(fixed_time),
        user_time.as_secs_f64(),
        per_turn(user_time),
        per_turn(user_time) - per_turn(fixed_time)
    );
}
