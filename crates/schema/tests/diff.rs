//! `diff`: whether the hash changed, and which parts did.

use serde_json::{Value, json};
use toolmock_contract::OperationContract;
use toolmock_schema::{SchemaChange, diff};

fn contract(value: Value) -> OperationContract {
    OperationContract::from_value(value).expect("a contract")
}

fn base() -> Value {
    json!({
        "operation": {"source": "mcp", "name": "lookup"},
        "description": "Find a patient",
        "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "output_schema": {"type": "object", "properties": {"visits": {"type": "integer", "maximum": 100}}}
    })
}

#[test]
fn identical_contracts_have_no_changes() {
    let d = diff(&contract(base()), &contract(base())).expect("hashable");
    assert!(!d.hash_changed && d.is_unchanged());
    assert_eq!(d.old_hash, d.new_hash);
    assert!(d.identity.is_none() && d.description.is_none());
    assert!(d.input_schema.is_empty() && d.output_schema.is_empty());
}

#[test]
fn key_order_and_number_spelling_are_no_change() {
    let reordered = json!({
        "output_schema": {"properties": {"visits": {"maximum": 100.0, "type": "integer"}}, "type": "object"},
        "input_schema": {"required": ["id"], "properties": {"id": {"type": "string"}}, "type": "object"},
        "description": "Find a patient",
        "operation": {"name": "lookup", "source": "mcp"}
    });
    let d = diff(&contract(base()), &contract(reordered)).expect("hashable");
    assert!(!d.hash_changed, "{d:?}");
    assert!(d.output_schema.is_empty());
}

#[test]
fn every_changed_part_is_named() {
    let mut new = base();
    new["operation"]["source"] = json!("custom");
    new["description"] = json!("Find a patient by id");
    new["input_schema"]["properties"]["dob"] = json!({"type": "string", "format": "date"});
    new["input_schema"]["required"] = json!(["id", "dob"]);
    new["output_schema"]["properties"]["visits"]["maximum"] = json!(500);
    new["output_schema"]["properties"]
        .as_object_mut()
        .expect("an object")
        .remove("visits");
    new["output_schema"]["properties"]["count"] = json!({"type": "integer"});
    let d = diff(&contract(base()), &contract(new)).expect("hashable");
    assert!(d.hash_changed);
    let (old_id, new_id) = d.identity.clone().expect("identity changed");
    assert_eq!(
        (old_id.source.as_str(), new_id.source.as_str()),
        ("mcp", "custom")
    );
    assert_eq!(
        d.description,
        Some(("Find a patient".into(), "Find a patient by id".into()))
    );
    assert_eq!(
        d.input_schema,
        [
            SchemaChange::Added {
                path: "/properties/dob".into(),
                new: json!({"type": "string", "format": "date"})
            },
            SchemaChange::Added {
                path: "/required/1".into(),
                new: json!("dob")
            },
        ]
    );
    let paths: Vec<&str> = d.output_schema.iter().map(|c| c.path()).collect();
    assert_eq!(paths, ["/properties/count", "/properties/visits"]);
    assert!(matches!(d.output_schema[1], SchemaChange::Removed { .. }));
}

#[test]
fn a_changed_value_reports_old_and_new() {
    let mut new = base();
    new["output_schema"]["properties"]["visits"]["maximum"] = json!(500);
    let d = diff(&contract(base()), &contract(new)).expect("hashable");
    assert_eq!(
        d.output_schema,
        [SchemaChange::Changed {
            path: "/properties/visits/maximum".into(),
            old: json!(100),
            new: json!(500)
        }]
    );
    // The JSON form names each change.
    let value = serde_json::to_value(&d).expect("serializes");
    assert_eq!(value["output_schema"][0]["change"], "changed");
    assert_eq!(value["hash_changed"], true);
}

#[test]
fn a_changed_description_alone_changes_the_hash() {
    let mut new = base();
    new["description"] = json!("");
    let d = diff(&contract(base()), &contract(new)).expect("hashable");
    assert!(d.hash_changed);
    assert!(d.input_schema.is_empty() && d.output_schema.is_empty() && d.identity.is_none());
}
