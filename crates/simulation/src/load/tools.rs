//! Reading a document's tools: their sources (manifests, contract arrays,
//! custom operations) and their definitions, every problem listed.

use super::{Files, KnownTool, LoadedDefinition, LoadedTool, Loader, Origin};
use crate::document::{ToolFrom, ToolSpec};
use crate::problem::LoadCode;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use toolmock_contract::{
    ContractCode, OperationContract, OperationIdentity, OperationSource, Problem, pointer,
};
use toolmock_runtime::model::ToolId;
use toolmock_runtime::model::{NewOperation, ToolKind};
use toolmock_schema::PlatformManifest;

impl Loader {
    pub(super) fn load_tool(
        &mut self,
        index: usize,
        spec: &ToolSpec,
        at: &str,
    ) -> (Option<LoadedTool>, KnownTool) {
        let fields = [
            ("manifest", spec.manifest.is_some(), ToolFrom::Manifest),
            ("contracts", spec.contracts.is_some(), ToolFrom::Contracts),
            ("operations", spec.operations.is_some(), ToolFrom::Custom),
            ("id", spec.id.is_some(), ToolFrom::Library),
        ];
        let mut consistent = true;
        for (field, present, owner) in fields {
            if present && owner != spec.from {
                consistent = false;
                self.problem(
                    pointer::push(at, field),
                    LoadCode::ToolSourceMismatch,
                    format!(
                        "{field:?} belongs to tools with \"from\": {:?}, this one is {:?}",
                        owner.as_str(),
                        spec.from.as_str()
                    ),
                );
            }
            if !present && owner == spec.from {
                consistent = false;
                self.problem(
                    pointer::push(at, field),
                    LoadCode::MissingField,
                    format!("a tool with \"from\": {:?} needs {field:?}", owner.as_str()),
                );
            }
        }
        if !consistent {
            return (None, KnownTool::default());
        }
        let (kind, source_config, operations) = match spec.from {
            ToolFrom::Library => {
                if matches!(self.files, Files::Relative(_)) {
                    self.problem(
                        pointer::push(at, "id"),
                        LoadCode::LibraryToolNotEmbedded,
                        "library tools are referenced by id only in the API; give the tool's manifest, contracts or operations here",
                    );
                } else {
                    match spec.id.as_deref().map(uuid::Uuid::parse_str) {
                        Some(Ok(id)) => {
                            self.library.insert(spec.name.clone(), ToolId(id));
                        }
                        _ => self.problem(
                            pointer::push(at, "id"),
                            LoadCode::InvalidValue,
                            "a library tool's id is its UUID",
                        ),
                    }
                }
                return (None, KnownTool { operations: None });
            }
            ToolFrom::Manifest => {
                let Some(source) = &spec.manifest else {
                    return (None, KnownTool::default());
                };
                let Some((value, origin)) =
                    self.read_source(source, &pointer::push(at, "manifest"))
                else {
                    return (None, KnownTool::default());
                };
                match PlatformManifest::from_value(&value) {
                    Ok(manifest) => {
                        let ops = manifest
                            .contracts()
                            .into_iter()
                            .map(NewOperation::from)
                            .collect();
                        (ToolKind::Platform, value, ops)
                    }
                    Err(errors) => {
                        for e in errors {
                            self.problems.push(origin.problem(e));
                        }
                        return (None, KnownTool::default());
                    }
                }
            }
            ToolFrom::Contracts => {
                let Some(source) = &spec.contracts else {
                    return (None, KnownTool::default());
                };
                let Some((value, origin)) =
                    self.read_source(source, &pointer::push(at, "contracts"))
                else {
                    return (None, KnownTool::default());
                };
                let Some(ops) = self.contract_entries(&value, &origin) else {
                    return (None, KnownTool::default());
                };
                let sources: HashSet<OperationSource> =
                    ops.iter().map(|o| o.operation.source).collect();
                let kind = match sources.into_iter().collect::<Vec<_>>().as_slice() {
                    [OperationSource::Mcp] => ToolKind::Mcp,
                    [OperationSource::Platform] => ToolKind::Platform,
                    _ => ToolKind::Custom,
                };
                (kind, value, ops)
            }
            ToolFrom::Custom => {
                let ops = spec
                    .operations
                    .iter()
                    .flatten()
                    .map(|o| NewOperation {
                        operation: OperationIdentity {
                            source: OperationSource::Custom,
                            name: o.name.clone(),
                        },
                        description: o.description.clone(),
                        input_schema: o.input_schema.clone(),
                        output_schema: o.output_schema.clone(),
                    })
                    .collect::<Vec<_>>();
                let config = serde_json::to_value(&spec.operations).unwrap_or(Value::Null);
                (ToolKind::Custom, config, ops)
            }
        };
        let mut names: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
        for (o, op) in operations.iter().enumerate() {
            if names.insert(op.operation.name.clone(), None).is_some() {
                self.problem(
                    pointer::index(&pointer::push(at, "operations"), o),
                    LoadCode::DuplicateName,
                    format!("the operation {:?} is given twice", op.operation.name),
                );
            }
        }
        let mut definitions = Vec::new();
        for (operation, source) in &spec.definitions {
            let here = pointer::push(&pointer::push(at, "definitions"), operation);
            if !names.contains_key(operation) {
                self.problem(
                    here.clone(),
                    LoadCode::UnknownOperation,
                    format!(
                        "tool {:?} has no operation {operation:?}; it has {}",
                        spec.name,
                        names.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
                continue;
            }
            if let Some((definition, origin)) = self.read_source(source, &here) {
                let variants = definition
                    .get("variants")
                    .and_then(Value::as_object)
                    .map(|m| m.keys().cloned().collect());
                names.insert(operation.clone(), variants);
                definitions.push(LoadedDefinition {
                    operation: operation.clone(),
                    definition,
                    origin,
                });
            }
        }
        (
            Some(LoadedTool {
                index,
                name: spec.name.clone(),
                kind,
                source_config,
                output_schema: spec.output_schema.clone(),
                operations,
                definitions,
            }),
            KnownTool {
                operations: Some(names),
            },
        )
    }

    /// The entries of a `normalize`/`discover` array.
    pub(super) fn contract_entries(
        &mut self,
        value: &Value,
        origin: &Origin,
    ) -> Option<Vec<NewOperation>> {
        let Some(entries) = value.as_array() else {
            self.problems.push(origin.problem(Problem::new(
                LoadCode::WrongType,
                "",
                "a contracts document is the JSON array `toolmock normalize` or `toolmock discover` prints",
            )));
            return None;
        };
        let mut ops = Vec::new();
        let before = self.problems.len();
        for (i, entry) in entries.iter().enumerate() {
            let at = pointer::index("", i);
            let Some(contract) = entry.get("contract") else {
                self.problems.push(origin.problem(Problem::new(
                    LoadCode::MissingField,
                    pointer::push(&at, "contract"),
                    "each entry needs its \"contract\"",
                )));
                continue;
            };
            let identity: Option<OperationIdentity> = contract
                .get("operation")
                .and_then(|o| serde_json::from_value(o.clone()).ok());
            let (Some(identity), Some(input_schema)) = (identity, contract.get("input_schema"))
            else {
                self.problems.push(origin.problem(Problem::new(
                    LoadCode::InvalidValue,
                    pointer::push(&at, "contract"),
                    "a contract needs \"operation\" {source, name} and \"input_schema\"",
                )));
                continue;
            };
            let op = NewOperation {
                operation: identity,
                description: contract
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                input_schema: input_schema.clone(),
                output_schema: contract.get("output_schema").cloned(),
            };
            if let (Some(stated), Some(output_schema)) = (
                entry.get("contract_hash").and_then(Value::as_str),
                op.output_schema.clone(),
            ) {
                let full = OperationContract {
                    operation: op.operation.clone(),
                    description: op.description.clone(),
                    input_schema: op.input_schema.clone(),
                    output_schema,
                };
                match full.hash() {
                    Ok(hash) if hash.as_str() == stated => {}
                    Ok(hash) => self.problems.push(origin.problem(Problem::new(
                        LoadCode::ContractHashMismatch,
                        pointer::push(&at, "contract_hash"),
                        format!(
                            "the entry says {stated} but its contract hashes to {}; re-run normalize or discover",
                            hash.as_str()
                        ),
                    ))),
                    Err(e) => self.problems.push(origin.problem(Problem::new(
                        ContractCode::from(&e),
                        pointer::push(&at, "contract"),
                        e.to_string(),
                    ))),
                }
            }
            ops.push(op);
        }
        (self.problems.len() == before).then_some(ops)
    }
}
