//! Schema-derived drafts: what is derived, what needs an authored mock, and
//! property tests over random schemas.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolmock_contract::{OperationContract, OperationIdentity, OperationSource};
use toolmock_evaluator::CompiledContract;
use toolmock_schema::{DraftProblems, generate};

fn contract(input: Value, output: Value) -> OperationContract {
    OperationContract {
        operation: OperationIdentity {
            source: OperationSource::Mcp,
            name: "op".into(),
        },
        description: String::new(),
        input_schema: input,
        output_schema: output,
    }
}

/// Generates, then re-runs the whole check independently.
fn draft_for(
    input: Value,
    output: Value,
) -> Result<toolmock_contract::MockDefinition, DraftProblems> {
    let c = contract(input, output);
    let draft = generate(&c)?;
    let compiled = CompiledContract::new(c).expect("the contract compiles");
    let diagnostics = toolmock_evaluator::check(&draft.to_value(), Some(&compiled));
    assert!(
        diagnostics.is_empty(),
        "a returned draft must pass its check:\n{diagnostics}"
    );
    Ok(draft)
}

fn derived_output(output: Value) -> Value {
    match draft_for(json!({"type": "object"}), output.clone()) {
        Ok(draft) => draft.examples[0].expected.clone(),
        Err(e) => panic!("{output}: {e}"),
    }
}

fn problems(input: Value, output: Value) -> Vec<(String, String)> {
    match draft_for(input, output.clone()) {
        Ok(draft) => panic!(
            "{output} should need an authored mock, got {}",
            draft.to_value()
        ),
        Err(e) => e
            .iter()
            .map(|p| (p.code.as_str().to_owned(), p.path.clone()))
            .collect(),
    }
}

fn output_problems(output: Value) -> Vec<(String, String)> {
    problems(json!({"type": "object"}), output)
}

#[test]
fn value_sources_in_order() {
    let table = [
        (
            json!({"type": "string", "default": "d", "examples": ["e"], "enum": ["d", "x"]}),
            json!("d"),
        ),
        (
            json!({"type": "string", "examples": ["e1", "e2"], "const": "e1"}),
            json!("e1"),
        ),
        (json!({"const": 42}), json!(42)),
        (json!({"type": "integer", "enum": ["a", 2, 3]}), json!(2)),
        (json!({"enum": [null, "x"]}), json!(null)),
    ];
    for (schema, want) in table {
        assert_eq!(derived_output(schema.clone()), want, "{schema}");
    }
}

#[test]
fn values_by_type() {
    let table = [
        (json!({"type": "string"}), json!("example")),
        (
            json!({"type": "string", "minLength": 10}),
            json!("examplexxx"),
        ),
        (json!({"type": "string", "maxLength": 3}), json!("exa")),
        (
            json!({"type": "string", "format": "date"}),
            json!("2026-01-15"),
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            json!("2026-01-15T09:30:00Z"),
        ),
        (
            json!({"type": "string", "format": "email"}),
            json!("user@example.com"),
        ),
        (
            json!({"type": "string", "format": "email", "minLength": 20}),
            json!("userxxxx@example.com"),
        ),
        (
            json!({"type": "string", "format": "uuid"}),
            json!("3f2c8a4e-9b1d-4c7e-8f6a-2d5b7c9e1a30"),
        ),
        (
            json!({"type": "string", "format": "uri"}),
            json!("https://example.com/resource"),
        ),
        (json!({"type": "integer"}), json!(1)),
        (json!({"type": "integer", "minimum": 0}), json!(1)),
        (
            json!({"type": "integer", "minimum": 7, "maximum": 9}),
            json!(7),
        ),
        (json!({"type": "integer", "maximum": -3}), json!(-3)),
        (json!({"type": "integer", "exclusiveMinimum": 5}), json!(6)),
        (
            json!({"type": "integer", "minimum": 10, "multipleOf": 4}),
            json!(12),
        ),
        (
            json!({"type": "integer", "multipleOf": 0.5, "minimum": 3}),
            json!(3),
        ),
        (
            json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
            json!(0.5),
        ),
        (
            json!({"type": "number", "minimum": 0.3, "multipleOf": 0.1}),
            json!(0.3),
        ),
        (
            json!({"type": "number", "minimum": 12.01, "multipleOf": 0.01}),
            json!(12.01),
        ),
        (json!({"type": "boolean"}), json!(true)),
        (json!({"type": "null"}), json!(null)),
        (json!({"type": ["null", "string"]}), json!("example")),
        (
            json!({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]}),
            json!(5),
        ),
        (
            json!({"type": "array", "items": {"type": "integer"}}),
            json!([1]),
        ),
        (
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 3}),
            json!([1, 1, 1]),
        ),
        (json!({"type": "array", "maxItems": 0}), json!([])),
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "minItems": 2}),
            json!(["example", true]),
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}),
            json!({"a": "example", "b": 1}),
        ),
        (
            json!({"type": "object", "required": ["x"], "additionalProperties": {"type": "integer"}}),
            json!({"x": 1}),
        ),
        (
            json!({"type": "object", "minProperties": 2}),
            json!({"property1": "example", "property2": "example"}),
        ),
        (
            json!({"allOf": [{"type": "object", "properties": {"a": {"const": 1}}}, {"properties": {"b": {"const": 2}}}]}),
            json!({"a": 1, "b": 2}),
        ),
        (json!({}), json!(null)),
        (json!(true), json!(null)),
    ];
    for (schema, want) in table {
        assert_eq!(derived_output(schema.clone()), want, "{schema}");
    }
}

#[test]
fn local_refs_defs_and_nullable_any_of() {
    let schema = json!({
        "type": "object",
        "$defs": {
            "clinic": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "slot": {"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"]}
        },
        "definitions": {"legacy": {"type": "integer", "minimum": 3}},
        "properties": {
            "clinic": {"anyOf": [{"$ref": "#/$defs/clinic"}, {"type": "null"}]},
            "slot": {"$ref": "#/$defs/slot"},
            "count": {"$ref": "#/definitions/legacy"},
            "anchored": {"$ref": "#here"},
            "holder": {"$anchor": "here", "type": "boolean"}
        },
        "required": ["clinic", "slot", "count", "anchored"]
    });
    assert_eq!(
        derived_output(schema),
        json!({"clinic": {"name": "example"}, "slot": {"day": "2026-01-15"}, "count": 3, "anchored": true, "holder": true})
    );
}

#[test]
fn optional_recursion_stops_and_required_recursion_needs_a_mock() {
    let tree = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
        }, "required": ["name"]}},
        "$ref": "#/$defs/node"
    });
    assert_eq!(
        derived_output(tree),
        json!({"name": "example", "children": []})
    );

    let forced = json!({
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}, "required": ["next"]}},
        "$ref": "#/$defs/node"
    });
    let found = output_problems(forced);
    assert!(
        found.contains(&(
            "cyclic_ref".into(),
            "/output_schema/$defs/node/properties/next/$ref".into()
        )),
        "{found:?}"
    );
}

#[test]
fn unsupported_schemas_need_an_authored_mock_with_their_paths() {
    let table: Vec<(Value, &str, &str)> = vec![
        (
            json!({"type": "string", "pattern": "^[A-Z]{3}$"}),
            "unsupported_keyword",
            "/output_schema/pattern",
        ),
        (
            json!({"not": {"type": "null"}}),
            "unsupported_keyword",
            "/output_schema/not",
        ),
        (
            json!({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {}}),
            "unsupported_keyword",
            "/output_schema/if",
        ),
        (
            json!({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}),
            "unsupported_keyword",
            "/output_schema/dependentSchemas",
        ),
        (
            json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "minProperties": 1}),
            "unsupported_keyword",
            "/output_schema/patternProperties",
        ),
        (
            json!({"type": "array", "contains": {"const": 3}}),
            "unsupported_keyword",
            "/output_schema/contains",
        ),
        (
            json!({"type": "object", "properties": {"r": {"$ref": "https://example.com/r.json"}}, "required": ["r"]}),
            "remote_ref",
            "/output_schema/properties/r/$ref",
        ),
        (
            json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/missing"}}, "required": ["r"]}),
            "unresolvable_ref",
            "/output_schema/properties/r/$ref",
        ),
        (
            json!({"type": "integer", "minimum": 5, "maximum": 4}),
            "contradictory_bounds",
            "/output_schema/minimum",
        ),
        (
            json!({"type": "integer", "minimum": 5, "maximum": 7, "multipleOf": 4}),
            "contradictory_bounds",
            "/output_schema/minimum",
        ),
        (
            json!({"type": "number", "exclusiveMinimum": 1, "maximum": 1}),
            "contradictory_bounds",
            "/output_schema/exclusiveMinimum",
        ),
        (
            json!({"type": "string", "minLength": 4, "maxLength": 2}),
            "contradictory_bounds",
            "/output_schema/minLength",
        ),
        (
            json!({"type": "array", "minItems": 3, "maxItems": 1}),
            "contradictory_bounds",
            "/output_schema/minItems",
        ),
        (
            json!({"type": "object", "required": ["a", "b"], "maxProperties": 1}),
            "contradictory_bounds",
            "/output_schema/maxProperties",
        ),
        (
            json!({"type": "object", "required": ["z"], "additionalProperties": false}),
            "contradictory_bounds",
            "/output_schema/required/0",
        ),
        (
            json!({"type": "string", "format": "date", "maxLength": 5}),
            "unsupported_format",
            "/output_schema/format",
        ),
        (
            json!({"type": "string", "enum": [1, 2]}),
            "contradictory_bounds",
            "/output_schema/enum",
        ),
        (json!({"enum": []}), "unsatisfiable", "/output_schema/enum"),
        (json!(false), "unsatisfiable", "/output_schema"),
        (
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 2, "uniqueItems": true}),
            "unsupported_keyword",
            "/output_schema/uniqueItems",
        ),
        (
            json!({"type": "string", "minLength": 1_000_000_000u64}),
            "too_large",
            "/output_schema/minLength",
        ),
        (
            json!({"type": "array", "minItems": 1_000_000_000u64}),
            "too_large",
            "/output_schema/minItems",
        ),
        (
            json!({"type": "object", "minProperties": 1_000_000_000u64}),
            "too_large",
            "/output_schema/minProperties",
        ),
        // A default that breaks its own schema: the failing keyword is named.
        (
            json!({"type": "integer", "maximum": 3, "default": 9}),
            "schema_violation",
            "/output_schema/maximum",
        ),
    ];
    for (schema, code, pointer) in table {
        let found = output_problems(schema.clone());
        assert!(
            found.iter().any(|(c, p)| c == code && p == pointer),
            "{schema}: expected {code} at {pointer}, got {found:?}"
        );
    }
}

#[test]
fn every_problem_is_reported_across_both_schemas() {
    let found = problems(
        json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "^A"}}, "required": ["code"]}),
        json!({"type": "object", "properties": {"n": {"not": {}}, "m": {"type": "integer", "minimum": 2, "maximum": 1}}, "required": ["n", "m"]}),
    );
    let pointers: Vec<&str> = found.iter().map(|(_, p)| p.as_str()).collect();
    for want in [
        "/input_schema/properties/code/pattern",
        "/output_schema/properties/n/not",
        "/output_schema/properties/m/minimum",
    ] {
        assert!(pointers.contains(&want), "{want} missing from {found:?}");
    }
}

#[test]
fn non_object_inputs_are_refused() {
    let found = problems(json!({"type": "string"}), json!({"type": "object"}));
    assert_eq!(
        found,
        [("input_not_object".to_owned(), "/input_schema".to_owned())]
    );
}

#[test]
fn dollar_keys_in_results_are_returned_through_the_state() {
    let c = contract(
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"$type": {"const": "Contact"}}, "required": ["$type"]}),
    );
    let draft = draft_for(c.input_schema.clone(), c.output_schema.clone()).expect("a draft");
    assert_eq!(draft.examples[0].expected, json!({"$type": "Contact"}));
    assert_eq!(
        draft.variants["success"].result,
        json!({"$state": "op__draft_result"})
    );
    assert_eq!(
        draft.initial_state["op__draft_result"],
        json!({"$type": "Contact"})
    );
}

#[test]
fn salesforce_drafts_carry_the_envelope_and_its_status() {
    let manifest: Value = serde_json::from_str(include_str!(
        "../../../fixtures/salesforce/salesforce.manifest.json"
    ))
    .expect("the fixture is JSON");
    let contracts = toolmock_schema::PlatformManifest::from_value(&manifest)
        .expect("the fixture is valid")
        .contracts();
    let mut statuses = Vec::new();
    for c in &contracts {
        let draft = draft_for(c.input_schema.clone(), c.output_schema.clone()).expect("a draft");
        let expected = &draft.examples[0].expected;
        assert!(
            expected["data"].is_object(),
            "{}: {expected}",
            c.operation.name
        );
        statuses.push((c.operation.name.clone(), expected["status"].clone()));
    }
    assert_eq!(
        statuses,
        [
            ("salesforce__query".to_owned(), json!(200)),
            ("salesforce__get_record".to_owned(), json!(200)),
            ("salesforce__create_record".to_owned(), json!(201)),
            ("salesforce__update_record".to_owned(), json!(200)),
            ("salesforce__publish_platform_event".to_owned(), json!(201)),
        ]
    );
}

#[test]
fn the_salesforce_manifest_embeds_the_shipped_data_schemas() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/salesforce");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("salesforce.manifest.json")).expect("reads"),
    )
    .expect("JSON");
    let files = [
        ("query", "soql-query"),
        ("get_record", "get-record"),
        ("create_record", "create-record"),
        ("update_record", "update-record"),
        ("publish_platform_event", "publish-platform-event"),
    ];
    for (op, file) in files {
        let data: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{file}.data.schema.json"))).expect("reads"),
        )
        .expect("JSON");
        let embedded = manifest["operations"]
            .as_array()
            .and_then(|ops| ops.iter().find(|o| o["name"] == op))
            .map(|o| o["output"]["data_schema"].clone());
        assert_eq!(embedded, Some(data), "{op} embeds {file}.data.schema.json");
    }
}

// ---- property tests ----------------------------------------------------

/// Leaf schemas of the supported subset (no value source at the node).
fn typed_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..10, proptest::option::of(0u64..10)).prop_map(|(min, extra)| {
            let mut s = json!({"type": "string", "minLength": min});
            if let Some(extra) = extra {
                s["maxLength"] = json!(min + extra);
            }
            s
        }),
        (0u64..10, prop::sample::select(vec!["date", "date-time", "email", "uuid", "uri"]))
            .prop_map(|(min, f)| json!({"type": "string", "format": f, "minLength": min})),
        (-50i64..50, 0i64..100, prop::sample::select(vec![1i64, 2, 3, 5]), any::<bool>(), any::<bool>())
            .prop_map(|(lo, span, m, bounded, exclusive)| {
                let span = span.max(2 * m + 1);
                let mut s = json!({"type": "integer", "multipleOf": m});
                if exclusive {
                    s["exclusiveMinimum"] = json!(lo);
                } else {
                    s["minimum"] = json!(lo);
                }
                if bounded {
                    s["maximum"] = json!(lo + span);
                }
                s
            }),
        (-500i64..500, 1i64..400, prop::sample::select(vec![0.5f64, 0.25, 0.1, 0.01]), any::<bool>())
            .prop_map(|(lo, span, m, multiple)| {
                let lo = lo as f64 / 10.0;
                let mut s = json!({"type": "number", "minimum": lo, "maximum": lo + span as f64 / 10.0 + 1.0});
                if multiple {
                    s["multipleOf"] = json!(m);
                }
                s
            }),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
    ]
}

fn value_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec("[a-z]{1,6}", 1..4)
            .prop_map(|v| json!({"type": "string", "enum": v})),
        (any::<i32>()).prop_map(|n| json!({"const": n})),
        "[a-z ]{0,12}".prop_map(|s| json!({"type": "string", "default": s})),
        (0u8..100).prop_map(|n| json!({"type": "integer", "examples": [n]})),
    ]
}

fn supported_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![3 => typed_leaf(), 1 => value_leaf()];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map("[a-z]{1,8}", inner.clone(), 0..5),
                any::<prop::sample::Index>(),
                any::<bool>()
            )
                .prop_map(|(props, pick, closed)| {
                    let names: Vec<String> = props.keys().cloned().collect();
                    let required: Vec<String> = if names.is_empty() {
                        vec![]
                    } else {
                        names.iter().take(pick.index(names.len()) + 1).cloned().collect()
                    };
                    json!({"type": "object", "properties": props, "required": required, "additionalProperties": !closed})
                }),
            (inner.clone(), 0u64..4, proptest::option::of(0u64..3)).prop_map(|(items, min, extra)| {
                let mut s = json!({"type": "array", "items": items, "minItems": min});
                if let Some(extra) = extra {
                    s["maxItems"] = json!(min + extra);
                }
                s
            }),
            inner.clone().prop_map(|s| json!({"anyOf": [s, {"type": "null"}]})),
            inner.prop_map(|s| json!({"type": ["null", "object", "string"], "properties": {"v": s}, "required": ["v"]})),
        ]
    })
}

/// Moves a schema behind a local `$ref` into `$defs`.
fn behind_ref(schema: Value) -> Value {
    json!({"$defs": {"it": schema}, "type": "object", "properties": {"it": {"$ref": "#/$defs/it"}}, "required": ["it"]})
}

fn input_schema() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,8}", supported_schema(), 0..4).prop_map(|props| {
        let required: Vec<String> = props.keys().cloned().collect();
        json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn supported_schemas_give_drafts_that_pass_the_check(
        input in input_schema(),
        output in supported_schema(),
        wrap in any::<bool>(),
    ) {
        let output = if wrap { behind_ref(output) } else { output };
        let c = contract(input, output);
        let draft = generate(&c).map_err(|e| TestCaseError::fail(format!("{e}\ncontract: {}", serde_json::to_string(&c).unwrap_or_default())))?;
        let compiled = CompiledContract::new(c).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let diagnostics = toolmock_evaluator::check(&draft.to_value(), Some(&compiled));
        prop_assert!(diagnostics.is_empty(), "{}", diagnostics);
        prop_assert_eq!(draft.variants.len(), 1);
        prop_assert_eq!(draft.examples.len(), 1);
    }

    #[test]
    fn unsupported_keywords_are_named_by_their_path(
        leaf in typed_leaf(),
        keyword in prop::sample::select(vec![
            "pattern", "not", "if", "dependentSchemas", "contains", "propertyNames", "patternProperties",
        ]),
        depth in 0usize..3,
        in_input in any::<bool>(),
        siblings in supported_schema(),
    ) {
        let mut node = leaf;
        let value = match keyword {
            "pattern" => json!("^[A-Z]+$"),
            "not" => json!({"type": "null"}),
            "if" => json!({"type": "string"}),
            "dependentSchemas" => json!({"a": {"required": ["b"]}}),
            "contains" => json!({"const": 1}),
            "propertyNames" => json!({"maxLength": 3}),
            _ => json!({"^x-": {"type": "string"}}),
        };
        node[keyword] = value;
        // Nest the node under `depth` required properties, beside a sibling.
        let mut schema = node;
        let mut path = format!("/{keyword}");
        for level in 0..=depth {
            let name = format!("p{level}");
            schema = json!({"type": "object", "properties": {name.clone(): schema, "sibling": siblings.clone()}, "required": [name.clone()]});
            path = format!("/properties/{name}{path}");
        }
        let (input, output, base) = if in_input {
            (schema, json!({"type": "object"}), "/input_schema")
        } else {
            (json!({"type": "object"}), schema, "/output_schema")
        };
        let want = format!("{base}{path}");
        let c = contract(input, output);
        match generate(&c) {
            Ok(draft) => prop_assert!(false, "expected an authored mock for {}, got {}", want, draft.to_value()),
            Err(e) => prop_assert!(
                e.iter().any(|p| p.path == want),
                "{} not among {:?}", want, e.iter().map(|p| p.path.as_str()).collect::<Vec<_>>()
            ),
        }
    }
}
