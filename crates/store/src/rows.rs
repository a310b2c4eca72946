//! Row types and their conversions to the runtime's model.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::FromRow;
use sqlx::types::Json;
use toolmock_contract::ProblemCode;
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::DomainError;
use toolmock_runtime::error::{HarnessCode, StoreError, ToolInputCode};
use toolmock_runtime::model::{
    AttemptBinding, AttemptId, CapabilityCheck, EvidenceRecord, Executor, HarnessErrorRecord,
    OperationId, PinRef, Provenance, RevisionRecord, SimulationId, TenantId, ToolId,
    ToolInputErrorRecord, VariantChoice,
};
use uuid::Uuid;

pub(crate) fn corrupt(what: &'static str, message: impl ToString) -> StoreError {
    StoreError::Corrupt {
        what,
        message: message.to_string(),
    }
}

pub(crate) fn contract_hash(text: String) -> Result<ContractHash, StoreError> {
    ContractHash::try_from(text).map_err(|e| corrupt("contract hash", e))
}

pub(crate) fn definition_hash(text: String) -> Result<DefinitionHash, StoreError> {
    DefinitionHash::try_from(text).map_err(|e| corrupt("definition hash", e))
}

pub(crate) fn contract(value: Value) -> Result<OperationContract, StoreError> {
    OperationContract::from_value(value).map_err(|e| corrupt("contract", e))
}

pub(crate) fn to_u32(value: i32, what: &'static str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|e| corrupt(what, e))
}

pub(crate) fn to_u64(value: i64, what: &'static str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|e| corrupt(what, e))
}

pub(crate) fn to_i32(value: u32) -> Result<i32, StoreError> {
    i32::try_from(value).map_err(|e| corrupt("integer", e))
}

pub(crate) fn to_i64(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|e| corrupt("integer", e))
}

/// The pin columns of evidence and error rows as written.
pub(crate) struct PinColumns {
    pub(crate) kind: Option<&'static str>,
    pub(crate) tool_id: Option<Uuid>,
    pub(crate) operation_id: Option<Uuid>,
    pub(crate) revision: Option<i32>,
    pub(crate) definition_hash: Option<String>,
}

pub(crate) fn pin_columns(pin: Option<&PinRef>) -> Result<PinColumns, StoreError> {
    Ok(match pin {
        None => PinColumns {
            kind: None,
            tool_id: None,
            operation_id: None,
            revision: None,
            definition_hash: None,
        },
        Some(PinRef::Library {
            tool,
            operation,
            revision,
            definition_hash,
        }) => PinColumns {
            kind: Some("library"),
            tool_id: Some(tool.as_uuid()),
            operation_id: Some(operation.as_uuid()),
            revision: Some(to_i32(*revision)?),
            definition_hash: Some(definition_hash.as_str().to_owned()),
        },
        Some(PinRef::Effect { definition_hash }) => PinColumns {
            kind: Some("effect"),
            tool_id: None,
            operation_id: None,
            revision: None,
            definition_hash: Some(definition_hash.as_str().to_owned()),
        },
        Some(PinRef::Inline { definition_hash }) => PinColumns {
            kind: Some("inline"),
            tool_id: None,
            operation_id: None,
            revision: None,
            definition_hash: Some(definition_hash.as_str().to_owned()),
        },
    })
}

/// The pin columns of evidence, error and simulation-pin rows as read back
/// (`pin_kind` is `library` or `inline`; all `NULL` where a fault came before
/// any pin; a simulation pin's `unpinned` is handled before [`PinRow::into_pin`]).
#[derive(FromRow)]
pub(crate) struct PinRow {
    pub(crate) pin_kind: Option<String>,
    pub(crate) tool_id: Option<Uuid>,
    pub(crate) operation_id: Option<Uuid>,
    pub(crate) revision: Option<i32>,
    pub(crate) definition_hash: Option<String>,
}

impl PinRow {
    /// The pin these columns record, `None` when they record none.
    pub(crate) fn into_pin(self) -> Result<Option<PinRef>, StoreError> {
        match self.pin_kind.as_deref() {
            None => Ok(None),
            Some("library") => match (
                self.tool_id,
                self.operation_id,
                self.revision,
                self.definition_hash,
            ) {
                (Some(tool), Some(operation), Some(revision), Some(hash)) => {
                    Ok(Some(PinRef::Library {
                        tool: ToolId(tool),
                        operation: OperationId(operation),
                        revision: to_u32(revision, "revision")?,
                        definition_hash: definition_hash(hash)?,
                    }))
                }
                _ => Err(corrupt("pin", "a library pin lacks a column")),
            },
            Some("inline") => match self.definition_hash {
                Some(hash) => Ok(Some(PinRef::Inline {
                    definition_hash: definition_hash(hash)?,
                })),
                None => Err(corrupt("pin", "an inline pin lacks its hash")),
            },
            Some("effect") => match self.definition_hash {
                Some(hash) => Ok(Some(PinRef::Effect {
                    definition_hash: definition_hash(hash)?,
                })),
                None => Err(corrupt("pin", "an effect node's pin lacks its hash")),
            },
            Some(other) => Err(corrupt("pin", format!("unknown pin kind {other:?}"))),
        }
    }
}

#[derive(FromRow)]
pub(crate) struct RevisionRow {
    pub(crate) tool_id: Uuid,
    pub(crate) operation_id: Uuid,
    pub(crate) revision: i32,
    pub(crate) contract_hash: String,
    pub(crate) definition: Json<Value>,
    pub(crate) definition_hash: String,
    pub(crate) author: String,
    pub(crate) provenance: String,
    pub(crate) instructions: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
}

impl RevisionRow {
    pub(crate) fn into_record(self) -> Result<RevisionRecord, StoreError> {
        let provenance = match self.provenance.as_str() {
            "authored" => Provenance::Authored,
            "generated" => Provenance::Generated {
                instructions: self.instructions,
            },
            other => return Err(corrupt("provenance", other)),
        };
        Ok(RevisionRecord {
            tool: ToolId(self.tool_id),
            operation: OperationId(self.operation_id),
            revision: to_u32(self.revision, "revision")?,
            contract_hash: contract_hash(self.contract_hash)?,
            definition: self.definition.0,
            definition_hash: definition_hash(self.definition_hash)?,
            author: self.author,
            provenance,
            created_at: self.created_at,
        })
    }
}

#[derive(FromRow)]
pub(crate) struct EvidenceRow {
    pub(crate) attempt_id: Uuid,
    pub(crate) tool_name: String,
    pub(crate) operation_name: String,
    #[sqlx(flatten)]
    pub(crate) pin: PinRow,
    pub(crate) executor: String,
    pub(crate) variant: Option<String>,
    pub(crate) rule: Option<i32>,
    pub(crate) arguments: Json<Value>,
    pub(crate) result: Json<Value>,
    pub(crate) state_before: Json<Map<String, Value>>,
    pub(crate) state_after: Json<Map<String, Value>>,
    pub(crate) state_version_before: i64,
    pub(crate) state_version_after: i64,
    pub(crate) delay_ms: i32,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) duration_us: i64,
    pub(crate) status: String,
    pub(crate) error: Option<Json<Value>>,
}

/// An evidence row's `status`: `domain_error` for a call that answered one
/// (version 2), else `ok`.
pub(crate) fn evidence_status(error: Option<&DomainError>) -> &'static str {
    if error.is_some() {
        "domain_error"
    } else {
        "ok"
    }
}

/// A stored `{code, message, data?}` read back as the domain error it was.
fn domain_error(status: &str, error: Option<Value>) -> Result<Option<DomainError>, StoreError> {
    match (status, error) {
        ("ok", None) => Ok(None),
        ("domain_error", Some(Value::Object(mut map))) => {
            let text = |v: Option<Value>| match v {
                Some(Value::String(s)) => Ok(s),
                _ => Err(corrupt(
                    "evidence error",
                    "a code or message that is not a string",
                )),
            };
            Ok(Some(DomainError {
                code: text(map.remove("code"))?,
                message: text(map.remove("message"))?,
                data: map.remove("data"),
            }))
        }
        (other, _) => Err(corrupt("evidence status", other)),
    }
}

impl EvidenceRow {
    pub(crate) fn into_record(self) -> Result<EvidenceRecord, StoreError> {
        let pin = self
            .pin
            .into_pin()?
            .ok_or_else(|| corrupt("pin", "evidence without a pin"))?;
        Ok(EvidenceRecord {
            attempt: AttemptId(self.attempt_id),
            tool: self.tool_name,
            operation: self.operation_name,
            pin,
            executor: Executor::parse(&self.executor)
                .ok_or_else(|| corrupt("executor", &self.executor))?,
            variant: self.variant,
            rule: self.rule.map(|r| to_u32(r, "rule")).transpose()?,
            arguments: self.arguments.0,
            result: self.result.0,
            error: domain_error(&self.status, self.error.map(|e| e.0))?,
            state_before: self.state_before.0,
            state_after: self.state_after.0,
            version_before: to_u64(self.state_version_before, "state version")?,
            version_after: to_u64(self.state_version_after, "state version")?,
            delay_ms: to_u32(self.delay_ms, "delay")?,
            started_at: self.started_at,
            duration_us: to_u64(self.duration_us, "duration")?,
        })
    }
}

#[derive(FromRow)]
pub(crate) struct ToolInputErrorRow {
    pub(crate) tenant_id: Uuid,
    pub(crate) attempt_id: Uuid,
    pub(crate) tool_name: String,
    pub(crate) operation_name: String,
    #[sqlx(flatten)]
    pub(crate) pin: PinRow,
    pub(crate) arguments: Json<Value>,
    pub(crate) code: String,
    pub(crate) message: String,
    pub(crate) path: Option<String>,
    pub(crate) violations: Json<Value>,
    pub(crate) created_at: DateTime<Utc>,
}

impl ToolInputErrorRow {
    pub(crate) fn into_record(self) -> Result<ToolInputErrorRecord, StoreError> {
        Ok(ToolInputErrorRecord {
            tenant: TenantId(self.tenant_id),
            attempt: AttemptId(self.attempt_id),
            tool: self.tool_name,
            operation: self.operation_name,
            pin: self.pin.into_pin()?,
            arguments: self.arguments.0,
            code: ToolInputCode::parse(&self.code)
                .ok_or_else(|| corrupt("tool input error code", &self.code))?,
            message: self.message,
            path: self.path,
            violations: self.violations.0,
            at: self.created_at,
        })
    }
}

#[derive(FromRow)]
pub(crate) struct HarnessErrorRow {
    pub(crate) tenant_id: Uuid,
    pub(crate) attempt_id: Uuid,
    pub(crate) tool_name: Option<String>,
    pub(crate) operation_name: Option<String>,
    #[sqlx(flatten)]
    pub(crate) pin: PinRow,
    pub(crate) arguments: Option<Json<Value>>,
    pub(crate) code: String,
    pub(crate) message: String,
    pub(crate) path: Option<String>,
    pub(crate) detail: Json<Value>,
    pub(crate) created_at: DateTime<Utc>,
}

impl HarnessErrorRow {
    pub(crate) fn into_record(self) -> Result<HarnessErrorRecord, StoreError> {
        Ok(HarnessErrorRecord {
            tenant: TenantId(self.tenant_id),
            attempt: AttemptId(self.attempt_id),
            tool: self.tool_name,
            operation: self.operation_name,
            pin: self.pin.into_pin()?,
            arguments: self.arguments.map(|a| a.0),
            code: HarnessCode::parse(&self.code)
                .ok_or_else(|| corrupt("harness error code", &self.code))?,
            message: self.message,
            path: self.path,
            detail: self.detail.0,
            at: self.created_at,
        })
    }
}

#[derive(FromRow)]
pub(crate) struct ToolRow {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) source_config: Json<Value>,
    pub(crate) output_schema: Option<Json<Value>>,
}

/// The tool's fallback output schema, read before an operation is upserted.
#[derive(FromRow)]
pub(crate) struct ToolFallbackRow {
    pub(crate) output_schema: Option<Json<Value>>,
}

#[derive(FromRow)]
pub(crate) struct OperationRow {
    pub(crate) id: Uuid,
    pub(crate) tool_id: Uuid,
    pub(crate) source: String,
    pub(crate) name: String,
    pub(crate) contract: Option<Json<Value>>,
    pub(crate) contract_hash: Option<String>,
    pub(crate) latest_revision: i32,
}

/// An operation row as a revision save locks it.
#[derive(FromRow)]
pub(crate) struct LockedOperationRow {
    pub(crate) tool_id: Uuid,
    pub(crate) contract: Option<Json<Value>>,
    pub(crate) contract_hash: Option<String>,
    pub(crate) latest_revision: i32,
}

#[derive(FromRow)]
pub(crate) struct AgentRow {
    pub(crate) name: String,
    pub(crate) spec: Json<Value>,
}

#[derive(FromRow)]
pub(crate) struct SimulationRow {
    pub(crate) mode: String,
}

/// One pin of a simulation, with its revision's definition for library pins.
#[derive(FromRow)]
pub(crate) struct SimulationPinRow {
    pub(crate) tool_name: String,
    pub(crate) operation_name: String,
    #[sqlx(flatten)]
    pub(crate) pin: PinRow,
    pub(crate) contract: Option<Json<Value>>,
    pub(crate) definition: Option<Json<Value>>,
    pub(crate) revision_definition: Option<Json<Value>>,
    pub(crate) unpinned_reason: Option<String>,
}

/// `attempt_state.form` of a row holding the attempt's whole state.
pub(crate) const STATE_FORM_WHOLE: &str = "state";
/// `attempt_state.form` of a row holding only the attempt's overlay over its
/// simulation's `simulation_fixture_bases` row (`Overlay::to_stored`).
pub(crate) const STATE_FORM_OVERLAY: &str = "overlay";

/// An attempt's state row as a call locks it, with whether the capability is live.
#[derive(FromRow)]
pub(crate) struct LockedStateRow {
    pub(crate) state: Json<Map<String, Value>>,
    pub(crate) version: i64,
    pub(crate) form: String,
    pub(crate) simulation_id: Uuid,
    pub(crate) live: bool,
    pub(crate) holds: bool,
}

#[derive(FromRow)]
pub(crate) struct StateRow {
    pub(crate) state: Json<Map<String, Value>>,
    pub(crate) version: i64,
    pub(crate) form: String,
    pub(crate) simulation_id: Uuid,
}

/// A capability resolved to its attempt.
#[derive(FromRow)]
pub(crate) struct CapabilityRow {
    pub(crate) tenant_id: Uuid,
    pub(crate) attempt_id: Uuid,
    pub(crate) simulation_id: Uuid,
    pub(crate) variants: Json<Vec<VariantChoice>>,
    /// Running, its capability unrevoked and its lease past the caller's now.
    pub(crate) live: bool,
    /// The same with the lease read on PostgreSQL's clock.
    pub(crate) live_by_database: bool,
}

impl CapabilityRow {
    /// The runtime's view of the row.
    pub(crate) fn check(self) -> CapabilityCheck {
        CapabilityCheck {
            binding: AttemptBinding {
                tenant: TenantId(self.tenant_id),
                attempt: AttemptId(self.attempt_id),
                simulation: SimulationId(self.simulation_id),
                variants: self.variants.0,
            },
            live: self.live,
        }
    }
}

#[derive(FromRow)]
pub(crate) struct AttemptRow {
    pub(crate) simulation_id: Uuid,
    pub(crate) test_case_id: Uuid,
    pub(crate) outcome: Option<String>,
    pub(crate) lease_owner: String,
    pub(crate) lease_expires_at: DateTime<Utc>,
    pub(crate) has_harness_error: bool,
}
