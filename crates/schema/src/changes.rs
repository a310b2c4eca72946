//! What changed between two versions of an operation contract, so a user sees
//! *why* a mock went stale (`toolmock diff`).
//!
//! Values are compared as the contract hash sees them: object key order never
//! matters, numbers compare by value (`1` equals `1.0`, as in RFC 8785), array
//! order does.

use crate::pointer;
use serde::Serialize;
use serde_json::Value;
use toolmock_contract::{ContractError, ContractHash, OperationContract, OperationIdentity};

/// One change inside a schema, at a JSON pointer into that schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum SchemaChange {
    /// A member or array element present only in the new schema.
    Added {
        /// Where (a pointer into the schema).
        path: String,
        /// The new value.
        new: Value,
    },
    /// A member or array element present only in the old schema.
    Removed {
        /// Where.
        path: String,
        /// The old value.
        old: Value,
    },
    /// A value that differs.
    Changed {
        /// Where.
        path: String,
        /// The old value.
        old: Value,
        /// The new value.
        new: Value,
    },
}

impl SchemaChange {
    /// The pointer of the change.
    pub fn path(&self) -> &str {
        match self {
            SchemaChange::Added { path, .. }
            | SchemaChange::Removed { path, .. }
            | SchemaChange::Changed { path, .. } => path,
        }
    }
}

/// The differences between two contracts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractDiff {
    /// The old contract's hash.
    pub old_hash: ContractHash,
    /// The new contract's hash.
    pub new_hash: ContractHash,
    /// Whether the hashes differ (a saved mock of the old one is stale).
    pub hash_changed: bool,
    /// The old and new identity, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<(OperationIdentity, OperationIdentity)>,
    /// The old and new description, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<(String, String)>,
    /// Changes inside the input schema.
    pub input_schema: Vec<SchemaChange>,
    /// Changes inside the output schema.
    pub output_schema: Vec<SchemaChange>,
}

impl ContractDiff {
    /// Nothing that participates in the hash changed.
    pub fn is_unchanged(&self) -> bool {
        !self.hash_changed
    }
}

/// Compares two contracts.
pub fn diff(
    old: &OperationContract,
    new: &OperationContract,
) -> Result<ContractDiff, ContractError> {
    let old_hash = old.hash()?;
    let new_hash = new.hash()?;
    let mut input_schema = Vec::new();
    diff_values(&old.input_schema, &new.input_schema, "", &mut input_schema);
    let mut output_schema = Vec::new();
    diff_values(
        &old.output_schema,
        &new.output_schema,
        "",
        &mut output_schema,
    );
    Ok(ContractDiff {
        hash_changed: old_hash != new_hash,
        old_hash,
        new_hash,
        identity: (old.operation != new.operation)
            .then(|| (old.operation.clone(), new.operation.clone())),
        description: (old.description != new.description)
            .then(|| (old.description.clone(), new.description.clone())),
        input_schema,
        output_schema,
    })
}

/// Appends the difference at `at`, where either side may lack the member.
fn diff_member(old: Option<&Value>, new: Option<&Value>, at: String, out: &mut Vec<SchemaChange>) {
    match (old, new) {
        (Some(old), Some(new)) => diff_values(old, new, &at, out),
        (Some(old), None) => out.push(SchemaChange::Removed {
            path: at,
            old: old.clone(),
        }),
        (None, Some(new)) => out.push(SchemaChange::Added {
            path: at,
            new: new.clone(),
        }),
        (None, None) => {}
    }
}

/// Appends every difference between two JSON values, in key order.
pub fn diff_values(old: &Value, new: &Value, path: &str, out: &mut Vec<SchemaChange>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            // The union of the keys, in order, so changes read top to bottom.
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let at = pointer::push(path, key);
                diff_member(a.get(key), b.get(key), at, out);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let at = pointer::index(path, i);
                diff_member(a.get(i), b.get(i), at, out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (a, b) if a == b => {}
        (a, b) => out.push(SchemaChange::Changed {
            path: path.to_owned(),
            old: a.clone(),
            new: b.clone(),
        }),
    }
}
