//! The Salesforce adapter's native response envelope.
//!
//! Salesforce operations answer `{"status": 200, "data": …}` (`201` for
//! operations that create a record or publish a platform event). The
//! normalized output schema requires `status` with that exact value and
//! `data`, and allows nothing else, so a bare Salesforce body such as
//! `{"totalSize": 1, "done": true, "records": […]}` fails validation instead
//! of silently breaking a workflow path like `tool.data.records[0].FirstName`.

use serde_json::{Value, json};
use std::fmt;

/// The status a Salesforce operation answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SalesforceStatus {
    /// `200`: queries, reads, updates, deletes.
    Ok,
    /// `201`: a record was created or a platform event published.
    Created,
}

impl SalesforceStatus {
    /// The HTTP-style code.
    pub fn code(self) -> u16 {
        match self {
            SalesforceStatus::Ok => 200,
            SalesforceStatus::Created => 201,
        }
    }

    /// Reads `200` or `201`.
    pub fn from_code(code: u64) -> Option<Self> {
        match code {
            200 => Some(SalesforceStatus::Ok),
            201 => Some(SalesforceStatus::Created),
            _ => None,
        }
    }
}

impl fmt::Display for SalesforceStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// The normalized output schema of a Salesforce operation (docs/spec.md §9):
/// `{"type": "object", "properties": {"status": {"const": STATUS}, "data": D},
/// "required": ["status", "data"], "additionalProperties": false}`.
pub fn envelope_schema(status: SalesforceStatus, data_schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"const": status.code()},
            "data": data_schema,
        },
        "required": ["status", "data"],
        "additionalProperties": false,
    })
}

/// A Salesforce body wrapped in the adapter's envelope.
pub fn envelope(status: SalesforceStatus, data: Value) -> Value {
    json!({"status": status.code(), "data": data})
}
