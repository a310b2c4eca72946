//! Issue 32, item 12: a model-driven attempt's conversation is stamped by
//! the dispatcher's injected clock, as its evidence is, never by the wall
//! clock — under a virtual clock (here, one in 2001 that ticks a
//! millisecond per reading) the messages and the evidence are on one time
//! line.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use chrono::{DateTime, Datelike, TimeDelta, Utc};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use toolmock_runtime::backend::{Catalog, Clock};
use toolmock_runtime::{Dispatcher, MemoryStore};
use toolmock_simulation::{
    ChatModel, Files, Message, ModelFuture, ModelReply, ModelRequest, RunOptions, ToolCallRequest,
    VirtualSleeper, load_value, run,
};

/// A virtual clock: 2001-01-01, one millisecond later at every reading.
#[derive(Debug, Default)]
struct VirtualClock {
    ticks: AtomicI64,
}

impl VirtualClock {
    fn origin() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2001-01-01T00:00:00Z")
            .unwrap()
            .to_utc()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> DateTime<Utc> {
        let tick = self.ticks.fetch_add(1, Ordering::Relaxed);
        Self::origin() + TimeDelta::milliseconds(tick)
    }
}

/// Calls `notes__add` once, then answers.
#[derive(Debug)]
struct OneCall;

impl ChatModel for OneCall {
    fn complete<'a>(&'a self, request: ModelRequest<'a>) -> ModelFuture<'a> {
        let called = request
            .messages
            .iter()
            .any(|m| matches!(m, Message::Assistant { .. }));
        let reply = if called {
            ModelReply {
                content: Some("Added.".into()),
                tool_calls: vec![],
                usage: None,
            }
        } else {
            ModelReply {
                content: None,
                tool_calls: vec![ToolCallRequest {
                    id: "call_1".into(),
                    name: "notes__add".into(),
                    arguments: "{\"text\": \"milk\"}".into(),
                }],
                usage: None,
            }
        };
        Box::pin(std::future::ready(Ok(reply)))
    }
}

#[tokio::test]
async fn the_conversation_is_stamped_by_the_injected_clock() {
    let document = json!({
        "simulation_version": 1, "name": "clock",
        "tools": [{
            "name": "notes", "from": "custom",
            "operations": [{"name": "add", "description": "Adds a note.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "output_schema": {"type": "object", "required": ["id"]}}],
            "definitions": {"add": {"schema_version": 1, "default_variant": "ok",
                "variants": {"ok": {"result": {"id": "n-1"}}},
                "examples": [{"variant": "ok", "input": {"text": "a"}, "expected": {"id": "n-1"}}]}}
        }],
        "agent": {"name": "scribe", "prompt": "You keep notes.", "tools": ["notes"]},
        "cases": [{"name": "adds", "driver": {"type": "model", "messages": ["Add milk."], "max_turns": 3}}]
    });
    let loaded = Arc::new(load_value(&document, "clock.json", &Files::InlineOnly).unwrap());
    let store = MemoryStore::new();
    let tenant = store.create_tenant("clock").await.unwrap();
    let dispatcher = Arc::new(
        Dispatcher::new(store)
            .with_clock(Arc::new(VirtualClock::default()))
            .with_sleeper(Arc::new(VirtualSleeper)),
    );
    let options = RunOptions {
        jobs: 1,
        keep_raw: true,
        model: Some(Arc::new(OneCall)),
        ..RunOptions::default()
    };
    let results = run(dispatcher, tenant, loaded, &options, Arc::new(|| {}))
        .await
        .unwrap();
    let attempt = &results.cases[0].attempts[0];
    assert_eq!(attempt.outcome.as_str(), "passed", "{attempt:?}");
    let raw = attempt.raw.as_ref().expect("raw records kept");
    // system, user, assistant (the call), tool, assistant (the answer)
    assert_eq!(raw.message_times.len(), 5, "{:?}", attempt.conversation);
    for at in &raw.message_times {
        assert_eq!(
            at.year(),
            2001,
            "a message stamped off the virtual clock: {at}"
        );
    }
    assert!(raw.message_times.is_sorted(), "{:?}", raw.message_times);
    let call = raw.evidence[0].started_at;
    assert_eq!(call.year(), 2001);
    assert!(
        raw.message_times[2] < call && call < raw.message_times[3],
        "the call ({call}) is not between the assistant message asking for it ({}) and its tool message ({})",
        raw.message_times[2],
        raw.message_times[3]
    );
}
