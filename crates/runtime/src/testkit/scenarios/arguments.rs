//! Whatever an agent sends as arguments, the call ends as a result, a tool
//! input error or a recorded harness error — the same in every backend.

use super::super::fixtures::*;
use super::super::prelude::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

fn append(input: Value) -> ToolCall {
    ToolCall::new("ledger", "append", input)
}

/// U+0000 in any string or key of the arguments is `invalid_arguments` with
/// its path, recorded (with U+FFFD in its place) and changing no state; the
/// attempt can still pass. A tool name with U+0000 is an ordinary recorded
/// `unknown_tool`, and a definition with U+0000 fails its check.
pub async fn nul_in_arguments_is_a_tool_input_error<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 2).await;
    let (attempt, other) = (&started.attempts[0], &started.attempts[1]);
    let b = rig.backend();

    for (input, path) in [
        (json!({"id": "a\u{0}b"}), "/id"),
        (json!({"id": "x", "k\u{0}": 1}), "/k\u{0}"),
    ] {
        let error = rig
            .dispatcher
            .call(tenant, &attempt.capability, &append(input.clone()))
            .await
            .unwrap_err();
        let DispatchError::ToolInput(fault) = &error else {
            panic!("{input}: expected a tool input error, got {error:?}");
        };
        assert_eq!(fault.code, ToolInputCode::InvalidArguments);
        assert_eq!(fault.path.as_deref(), Some(path));
    }
    let stored = b.tool_input_errors(tenant, attempt.id).await.unwrap();
    assert_eq!(stored.len(), 2, "both are recorded");
    assert_eq!(stored[0].arguments, json!({"id": "a\u{FFFD}b"}));
    assert_eq!(stored[0].path.as_deref(), Some("/id"));
    assert_eq!(stored[1].path.as_deref(), Some("/k\u{FFFD}"));
    assert_eq!(b.state(tenant, attempt.id).await.unwrap().version, 0);
    rig.dispatcher
        .call(tenant, &attempt.capability, &append(json!({"id": "fine"})))
        .await
        .unwrap();
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, attempt.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );

    let error = rig
        .dispatcher
        .call(
            tenant,
            &other.capability,
            &ToolCall::new("led\u{0}ger", "append", json!({"id": "a"})),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "unknown_tool", "{error:?}");
    let recorded = b.harness_errors(tenant, other.id).await.unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].tool.as_deref(), Some("led\u{FFFD}ger"));

    let tool = b
        .create_tool(
            tenant,
            &NewTool {
                name: "ledger2".into(),
                kind: ToolKind::Custom,
                source_config: json!({}),
                output_schema: None,
            },
        )
        .await
        .unwrap();
    let operation = b
        .upsert_operation(tenant, tool, &ledger_operation())
        .await
        .unwrap()
        .id;
    let mut definition = ledger_definition();
    definition["initial_state"]["last"] = json!("st\u{0}art");
    match save(b, tenant, operation, &ledger_operation(), definition).await {
        Err(SaveRevisionError::InvalidDefinition(diagnostics)) => {
            let found: Vec<(&str, &str)> = diagnostics
                .iter()
                .map(|d| (d.code.as_str(), d.path.as_str()))
                .collect();
            assert!(
                found.contains(&("nul_character", "/initial_state/last")),
                "{found:?}"
            );
        }
        other => panic!("a definition with U+0000 is refused by its check: {other:?}"),
    }
}

/// Any JSON value of modest size: every kind of number and string
/// (U+0000 and escapes included), nested arrays and objects.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        prop::collection::vec(
            prop_oneof![
                Just('a'),
                Just('\\'),
                Just('"'),
                Just('\u{0}'),
                Just('\u{FFFD}'),
                Just('\u{1F600}'),
            ],
            0..8
        )
        .prop_map(|chars| Value::String(chars.into_iter().collect())),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The arguments proptest generates (a fixed seed, 96 cases), plus the
/// named nasty ones: escaped lone surrogates, nesting 120 deep, huge and
/// tiny numbers, 1 MB strings (one with U+0000 at its end).
fn arguments() -> Vec<Value> {
    let mut runner = TestRunner::deterministic();
    let strategy = arbitrary_json();
    let mut all: Vec<Value> = (0..96)
        .map(|_| strategy.new_tree(&mut runner).expect("a value").current())
        .collect();
    for id in all.iter_mut().take(48) {
        // Half of them as the ledger expects, with an arbitrary id.
        *id = json!({ "id": id.to_string() });
    }
    let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
    let megabyte = "x".repeat(1 << 20);
    all.extend([
        serde_json::from_str(r#"{"id": "\\ud800 and \\udfff"}"#).expect("escaped surrogates"),
        json!({"id": "deep", "nested": serde_json::from_str::<Value>(&deep).expect("120 deep")}),
        json!({"id": "numbers", "n": [u64::MAX, i64::MIN, f64::MAX, f64::MIN_POSITIVE, 1e-300]}),
        json!({"id": u64::MAX}),
        json!({"id": megabyte}),
        json!({"id": format!("{megabyte}\u{0}")}),
    ]);
    let mut huge_key = Map::new();
    huge_key.insert("id".into(), json!("k"));
    huge_key.insert(megabyte, json!(1));
    all.push(Value::Object(huge_key));
    all
}

/// Arbitrary arguments (a bounded proptest sample plus named nasty inputs):
/// every call ends as a result or a recorded tool input error — never a
/// storage failure, never a harness error — every call is recorded exactly
/// once, and the attempt passes.
pub async fn arbitrary_arguments_are_always_answered<B: Backend>(backend: B) {
    let rig = Rig::new(backend);
    let (tenant, started) = ledger_simulation(&rig, "acme", 1).await;
    let attempt = &started.attempts[0];
    let inputs = arguments();
    let (mut results, mut refused) = (0, 0);
    for input in &inputs {
        match rig
            .dispatcher
            .call(tenant, &attempt.capability, &append(input.clone()))
            .await
        {
            Ok(result) => {
                assert_eq!(result["id"], input["id"]);
                results += 1;
            }
            Err(DispatchError::ToolInput(_)) => refused += 1,
            Err(other) => panic!("arguments {:.200}: {other:?}", input.to_string()),
        }
    }
    assert!(
        results > 0 && refused > 0,
        "{results} results, {refused} refusals"
    );
    let b = rig.backend();
    assert_eq!(b.evidence(tenant, attempt.id).await.unwrap().len(), results);
    assert_eq!(
        b.tool_input_errors(tenant, attempt.id).await.unwrap().len(),
        refused
    );
    assert!(
        b.harness_errors(tenant, attempt.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        rig.dispatcher
            .finish_attempt(tenant, attempt.id, Verdict::Passed)
            .await
            .unwrap(),
        AttemptOutcome::Passed
    );
}
