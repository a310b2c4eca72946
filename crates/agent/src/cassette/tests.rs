//! The cassette against a scripted model: record, replay, misses with
//! their pointer, repeated requests in order, stable files.

use super::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolmock_simulation::{AttemptScope, ModelError, ModelFuture, ModelReply, ToolCallRequest};

/// Answers "n" for the nth request it gets (a model that never says the
/// same thing twice), with a random-looking tool-call id.
#[derive(Debug, Default)]
struct Counting(AtomicUsize);

impl ChatModel for Counting {
    fn complete<'a>(&'a self, _request: ModelRequest<'a>) -> ModelFuture<'a> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        Box::pin(std::future::ready(Ok(ModelReply {
            content: Some(format!("answer {n}")),
            tool_calls: vec![ToolCallRequest {
                id: format!("call_random_{n}"),
                name: "notes__add".into(),
                arguments: "{}".into(),
            }],
            usage: Some(toolmock_simulation::Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
                cached_tokens: None,
                replayed: false,
            }),
        })))
    }

    fn identity(&self) -> Value {
        json!({"model": "counting", "temperature": 0.2})
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cassette-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn scope(case: &str, attempt: u32) -> AttemptScope {
    AttemptScope {
        case: case.into(),
        attempt,
    }
}

fn user(text: &str) -> Vec<Message> {
    vec![
        Message::System {
            content: "You keep notes.".into(),
        },
        Message::user(text),
    ]
}

async fn ask(model: &Arc<dyn ChatModel>, messages: &[Message]) -> Result<ModelReply, ModelError> {
    model
        .complete(ModelRequest {
            messages,
            tools: &[],
        })
        .await
}

fn attempt_of(
    cassette: &Arc<Cassette>,
    live: Option<Arc<dyn ChatModel>>,
    s: &AttemptScope,
) -> Arc<dyn ChatModel> {
    toolmock_simulation::attempt_model(&cassette.model(ModelRole::Agent, live), s)
}

#[tokio::test]
async fn a_recorded_run_replays_in_order_and_misses_with_the_pointer() {
    let dir = scratch("replay");
    let live: Arc<dyn ChatModel> = Arc::new(Counting::default());
    let recording = Cassette::open(&dir, CassetteMode::Record).unwrap();
    let model = attempt_of(&recording, Some(live.clone()), &scope("adds", 1));
    // The same request twice in one attempt: two answers, in order.
    let first = ask(&model, &user("milk")).await.unwrap();
    let second = ask(&model, &user("milk")).await.unwrap();
    assert_eq!(first.content.as_deref(), Some("answer 1"));
    assert_eq!(second.content.as_deref(), Some("answer 2"));
    // toolmock's own ids, by turn and position.
    assert_eq!(first.tool_calls[0].id, "call_1_1");
    assert_eq!(second.tool_calls[0].id, "call_2_1");
    assert_eq!(recording.save().unwrap().recorded, 2);
    let bytes = std::fs::read(dir.join("adds.jsonl")).unwrap();

    let replaying = Cassette::open(&dir, CassetteMode::Replay).unwrap();
    // No live model: the identity comes from the cassette.
    let model = attempt_of(&replaying, None, &scope("adds", 1));
    assert_eq!(ask(&model, &user("milk")).await.unwrap(), first);
    assert_eq!(ask(&model, &user("milk")).await.unwrap(), second);
    // A third sending was never recorded.
    let ModelError::CassetteMiss { message, detail } =
        ask(&model, &user("milk")).await.unwrap_err()
    else {
        panic!("not a miss")
    };
    assert!(
        message.contains("attempt 1, agent turn 3: nothing was recorded"),
        "{message}"
    );
    assert_eq!(detail["turn"], 3);
    // Another attempt of the same case has nothing recorded either.
    let other = attempt_of(&replaying, None, &scope("adds", 2));
    assert!(ask(&other, &user("milk")).await.is_err());
    // A changed prompt: the pointer names the system message.
    let model = attempt_of(&replaying, None, &scope("adds", 1));
    let mut changed = user("milk");
    changed[0] = Message::System {
        content: "You keep lists.".into(),
    };
    let ModelError::CassetteMiss { message, detail } = ask(&model, &changed).await.unwrap_err()
    else {
        panic!("not a miss")
    };
    assert_eq!(detail["pointer"], "/messages/0/content", "{message}");
    assert!(
        message.contains("case \"adds\", attempt 1, agent turn 1"),
        "{message}"
    );
    assert_eq!(replaying.save().unwrap().replayed, 2);
    assert_eq!(
        std::fs::read(dir.join("adds.jsonl")).unwrap(),
        bytes,
        "a replay writes nothing"
    );

    // Recorded again with the same answers: the same bytes.
    let again = Cassette::open(&dir, CassetteMode::Record).unwrap();
    let model = attempt_of(
        &again,
        Some(Arc::new(Counting::default())),
        &scope("adds", 1),
    );
    ask(&model, &user("milk")).await.unwrap();
    ask(&model, &user("milk")).await.unwrap();
    again.save().unwrap();
    assert_eq!(std::fs::read(dir.join("adds.jsonl")).unwrap(), bytes);
    let text = String::from_utf8(bytes).unwrap();
    let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        line["request"]["model"],
        json!({"model": "counting", "temperature": 0.2})
    );
    assert_eq!(line["answer"]["usage"]["prompt_tokens"], 10);
}

#[tokio::test]
async fn auto_records_only_what_the_cassette_lacks() {
    let dir = scratch("auto");
    let recording = Cassette::open(&dir, CassetteMode::Record).unwrap();
    let model = attempt_of(
        &recording,
        Some(Arc::new(Counting::default())),
        &scope("adds", 1),
    );
    ask(&model, &user("milk")).await.unwrap();
    recording.save().unwrap();

    let live = Arc::new(Counting::default());
    let auto = Cassette::open(&dir, CassetteMode::Auto).unwrap();
    let model = attempt_of(&auto, Some(live.clone()), &scope("adds", 1));
    assert_eq!(
        ask(&model, &user("milk")).await.unwrap().content.as_deref(),
        Some("answer 1")
    );
    assert_eq!(live.0.load(Ordering::Relaxed), 0, "replayed, not sent");
    ask(&model, &user("bread")).await.unwrap();
    assert_eq!(
        live.0.load(Ordering::Relaxed),
        1,
        "only the new request was sent"
    );
    assert_eq!(
        auto.save().unwrap(),
        CassetteReport {
            replayed: 1,
            recorded: 1
        }
    );
    let lines = std::fs::read_to_string(dir.join("adds.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 2);
}

#[test]
fn first_differences_are_json_pointers() {
    let a = json!({"messages": [{"content": "a"}, {"content": "b"}], "model": {"model": "m"}});
    assert_eq!(first_difference(&a, &a, ""), None);
    let b = json!({"messages": [{"content": "a"}, {"content": "c"}], "model": {"model": "m"}});
    assert_eq!(
        first_difference(&a, &b, "").as_deref(),
        Some("/messages/1/content")
    );
    let c = json!({"messages": [{"content": "a"}], "model": {"model": "m"}});
    assert_eq!(first_difference(&a, &c, "").as_deref(), Some("/messages/1"));
    let d = json!({"messages": [{"content": "a"}, {"content": "b"}], "model": {"model": "m", "seed": 1}});
    assert_eq!(first_difference(&a, &d, "").as_deref(), Some("/model/seed"));
}

#[test]
fn file_names_are_slugs() {
    assert_eq!(file_name("Adds a note!"), "adds-a-note.jsonl");
    assert_eq!(file_name("???"), "case.jsonl");
    assert_eq!(file_name(&"x".repeat(90)).len(), 66);
}
