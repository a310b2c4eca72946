//! The one way a harness-error record is made: `HarnessErrorRecord::new`
//! (crate-internal) cleans every text (U+0000 → U+FFFD) and takes its time
//! from the caller's injected clock. `Dispatcher::record_fault` is
//! the one way one is recorded (with its `storage_failed` fallback); a
//! backend's finish writes, in its own locked step, the two records made by
//! [`HarnessErrorRecord::ledger_gap`] and
//! [`HarnessErrorRecord::finished_after_lease`].
//! `crates/runtime/tests/one_fault_path.rs` fails when any other code builds
//! one.

use super::{AttemptId, HarnessErrorRecord, PinRef, TenantId};
use crate::error::{HarnessCode, HarnessFault};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

/// The call a harness fault happened in, when a call caused it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FaultCall<'a> {
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
    pub(crate) fn new(
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

    /// The `storage_failed` harness error a finish records when the attempt's
    /// records fall short of its calls begun (the same text in every backend).
    pub fn ledger_gap(
        tenant: TenantId,
        attempt: AttemptId,
        begun: u64,
        recorded: u64,
        at: DateTime<Utc>,
    ) -> Self {
        let fault = HarnessFault {
            code: HarnessCode::StorageFailed,
            message: format!(
                "{begun} call(s) of this attempt began but only {recorded} are recorded: a call was lost on its way to storage (or was still in flight when the attempt finished)"
            ),
            path: None,
        };
        let detail = json!({ "begun": begun, "recorded": recorded });
        Self::new(tenant, attempt, None, &fault, detail, at)
    }

    /// The `lease_expired` harness error a finish records when the attempt's
    /// lease ended before it (`lease_expires_at <= at`) or its capabilities were
    /// revoked (the same text in every backend): whatever played the attempt
    /// held it past its lease, so its verdict cannot count.
    pub fn finished_after_lease(
        tenant: TenantId,
        attempt: AttemptId,
        lease_expires_at: DateTime<Utc>,
        revoked: bool,
        at: DateTime<Utc>,
    ) -> Self {
        let why = if lease_expires_at <= at {
            format!("its lease ended at {lease_expires_at}")
        } else {
            "its capability was revoked".to_owned()
        };
        let fault = HarnessFault {
            code: HarnessCode::LeaseExpired,
            message: format!(
                "the attempt was finished after {why}: no verdict counts once the lease is over"
            ),
            path: None,
        };
        let detail = json!({
            "lease_expires_at": lease_expires_at.to_rfc3339(),
            "revoked": revoked,
            "finished_at": at.to_rfc3339(),
        });
        Self::new(tenant, attempt, None, &fault, detail, at)
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
