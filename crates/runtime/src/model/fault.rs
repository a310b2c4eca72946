//! The one way a harness-error record is made: [`HarnessErrorRecord::new`]
//! cleans every text (U+0000 → U+FFFD) and takes its time from the caller's
//! injected clock. `Dispatcher::record_harness_fault` is the one way one is
//! recorded (with its `storage_failed` fallback); a backend's finish builds
//! the records it writes in its own locked step with the same constructor.
//! `tests/one_fault_path.rs` fails when any other code builds one.

use super::{AttemptId, HarnessErrorRecord, PinRef, TenantId};
use crate::error::HarnessFault;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// The call a harness fault happened in, when a call caused it.
#[derive(Debug, Clone, Copy)]
pub struct FaultCall<'a> {
    /// The tool name, as called.
    pub tool: &'a str,
    /// The operation name, as called.
    pub operation: &'a str,
    /// The arguments, as called (`None`: not kept, as when they are what
    /// the store refused).
    pub arguments: Option<&'a Value>,
    /// The pinned definition, when one was found.
    pub pin: Option<&'a PinRef>,
}

impl HarnessErrorRecord {
    /// The record of `fault` of `attempt`: the call's fields where a call
    /// caused it, every text and the detail with U+0000 replaced, at `at`
    /// (read from the caller's injected clock).
    pub fn new(
        tenant: TenantId,
        attempt: AttemptId,
        call: Option<FaultCall<'_>>,
        fault: &HarnessFault,
        detail: Value,
        at: DateTime<Utc>,
    ) -> Self {
        HarnessErrorRecord {
            tenant,
            attempt,
            tool: call.map(|c| sanitize_text(c.tool)),
            operation: call.map(|c| sanitize_text(c.operation)),
            pin: call.and_then(|c| c.pin.cloned()),
            arguments: call.and_then(|c| c.arguments).map(|a| sanitize(a.clone())),
            code: fault.code,
            message: sanitize_text(&fault.message),
            path: fault.path.as_deref().map(sanitize_text),
            detail: sanitize(detail),
            at,
        }
    }
}

/// U+0000 as every record stores it: U+FFFD, the replacement character (no
/// store can keep U+0000; docs/mock-language.md, "Text"). Both backends store
/// the same text.
pub(crate) fn sanitize_text(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

/// Whether any string or key of `value` holds U+0000.
pub(crate) fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

/// `value` with every U+0000 in its strings and keys replaced (see [`sanitize_text`]).
pub(crate) fn sanitize(value: Value) -> Value {
    if !has_nul(&value) {
        return value;
    }
    match value {
        Value::String(s) => Value::String(sanitize_text(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(sanitize).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (sanitize_text(&k), sanitize(v)))
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::HarnessCode;
    use serde_json::json;

    #[test]
    fn sanitize_replaces_nul_in_strings_and_keys_only() {
        let value = json!({"a\u{0}": ["x\u{0}y", 1, {"k": "\u{0}"}], "b": "ok"});
        assert_eq!(
            sanitize(value),
            json!({"a\u{FFFD}": ["x\u{FFFD}y", 1, {"k": "\u{FFFD}"}], "b": "ok"})
        );
    }

    #[test]
    fn a_record_never_holds_nul() {
        let fault = HarnessFault {
            code: HarnessCode::InvalidWorkflow,
            message: "bad \u{0} step".into(),
            path: Some("/nodes/\u{0}".into()),
        };
        let arguments = json!({"k\u{0}": "v\u{0}"});
        let record = HarnessErrorRecord::new(
            TenantId(uuid::Uuid::nil()),
            AttemptId(uuid::Uuid::nil()),
            Some(FaultCall {
                tool: "t\u{0}",
                operation: "o",
                arguments: Some(&arguments),
                pin: None,
            }),
            &fault,
            json!({"m": "\u{0}"}),
            chrono::DateTime::UNIX_EPOCH,
        );
        let text = serde_json::to_string(&(
            &record.tool,
            &record.message,
            &record.path,
            &record.arguments,
            &record.detail,
        ))
        .unwrap();
        assert!(!text.contains("\\u0000"), "{text}");
        assert_eq!(record.tool.as_deref(), Some("t\u{FFFD}"));
    }
}
