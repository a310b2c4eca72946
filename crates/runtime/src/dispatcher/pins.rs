//! Pins as the dispatcher holds them: compiled once, cached by hash, and
//! grouped per simulation.

use super::{Dispatcher, read, write};
use crate::backend::Backend;
use crate::error::{IncompleteStatus, StoreError};
use crate::model::{AttemptBinding, PinRef, PinTarget, SimulationMode, SimulationPins};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::{CompiledContract, CompiledDefinition, compile_checked};

/// A pinned operation, compiled, with the shared names its evidence carries.
#[derive(Debug)]
pub(super) struct ResolvedPin {
    pub(super) tool: Arc<str>,
    pub(super) operation: Arc<str>,
    pub(super) pin: Arc<PinRef>,
    variants: Vec<Arc<str>>,
    pub(super) contract: Arc<CompiledContract>,
    pub(super) definition: Arc<CompiledDefinition>,
}

impl ResolvedPin {
    pub(super) fn new(
        tool: &str,
        operation: &str,
        pin: PinRef,
        contract: Arc<CompiledContract>,
        definition: Arc<CompiledDefinition>,
    ) -> Self {
        Self {
            tool: tool.into(),
            operation: operation.into(),
            pin: Arc::new(pin),
            variants: definition.variant_names().map(Arc::from).collect(),
            contract,
            definition,
        }
    }

    /// The shared name of a variant (evidence rows then allocate nothing for it).
    pub(super) fn variant(&self, name: &str) -> Arc<str> {
        self.variants
            .iter()
            .find(|v| &***v == name)
            .cloned()
            .unwrap_or_else(|| name.into())
    }
}

/// What one operation of a simulation is answered by.
#[derive(Debug, Clone)]
pub(super) enum PinEntry {
    Pinned(Arc<ResolvedPin>),
    Unpinned(IncompleteStatus),
    Unreadable(String),
}

/// Every reachable operation of one simulation, by tool and operation name.
#[derive(Debug)]
pub(super) struct PinSet {
    pub(super) mode: SimulationMode,
    pub(super) tools: HashMap<String, HashMap<String, PinEntry>>,
}

impl PinSet {
    pub(super) fn get(&self, tool: &str, operation: &str) -> Option<&PinEntry> {
        self.tools.get(tool)?.get(operation)
    }
}

pub(super) type DefinitionKey = (DefinitionHash, ContractHash);

impl<B: Backend> Dispatcher<B> {
    pub(super) fn compiled_contract(
        &self,
        contract: &OperationContract,
    ) -> Result<Arc<CompiledContract>, String> {
        let hash = contract.hash().map_err(|e| e.to_string())?;
        if let Some(found) = read(&self.contracts).get(&hash) {
            return Ok(found.clone());
        }
        let compiled =
            Arc::new(CompiledContract::new(contract.clone()).map_err(|e| e.to_string())?);
        write(&self.contracts).insert(hash, compiled.clone());
        Ok(compiled)
    }

    fn compiled_definition(
        &self,
        definition_hash: &DefinitionHash,
        definition: &Value,
        contract: &CompiledContract,
    ) -> Result<Arc<CompiledDefinition>, String> {
        let key = (definition_hash.clone(), contract.hash().clone());
        if let Some(found) = read(&self.definitions).get(&key) {
            return Ok(found.clone());
        }
        let compiled = compile_checked(definition, Some(contract)).map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(|d| format!("{} at {:?}: {}", d.code.as_str(), d.path, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let compiled = Arc::new(compiled);
        write(&self.definitions).insert(key, compiled.clone());
        Ok(compiled)
    }

    /// The compiled contract and definition of a pin (from the caches when
    /// they hold them), or why they cannot be compiled.
    pub(super) fn resolve(
        &self,
        definition_hash: &DefinitionHash,
        definition: &Value,
        contract: &OperationContract,
    ) -> Result<(Arc<CompiledContract>, Arc<CompiledDefinition>), String> {
        let contract = self.compiled_contract(contract)?;
        let definition = self.compiled_definition(definition_hash, definition, &contract)?;
        Ok((contract, definition))
    }

    fn pin_set_from(&self, loaded: SimulationPins) -> PinSet {
        let mut tools: HashMap<String, HashMap<String, PinEntry>> = HashMap::new();
        for record in loaded.pins {
            let entry = match &record.pin {
                PinTarget::Unpinned { reason } => PinEntry::Unpinned(*reason),
                PinTarget::Pinned {
                    pin,
                    contract,
                    definition,
                } => match self.resolve(pin.definition_hash(), definition, contract) {
                    Ok((contract, definition)) => PinEntry::Pinned(Arc::new(ResolvedPin::new(
                        &record.tool,
                        &record.operation,
                        pin.clone(),
                        contract,
                        definition,
                    ))),
                    Err(message) => PinEntry::Unreadable(message),
                },
            };
            tools
                .entry(record.tool)
                .or_default()
                .insert(record.operation, entry);
        }
        PinSet {
            mode: loaded.mode,
            tools,
        }
    }

    /// The pin set of an attempt's simulation, loaded once and then cached.
    pub(super) async fn pin_set(
        &self,
        binding: &AttemptBinding,
    ) -> Result<Arc<PinSet>, StoreError> {
        if let Some(found) = read(&self.simulations).get(&binding.simulation) {
            return Ok(found.clone());
        }
        let loaded = self
            .backend
            .simulation_pins(binding.tenant, binding.simulation)
            .await?;
        let set = Arc::new(self.pin_set_from(loaded));
        write(&self.simulations).insert(binding.simulation, set.clone());
        Ok(set)
    }

    /// Caches the pin set a start has just written.
    pub(super) fn remember_pins(&self, simulation: crate::model::SimulationId, set: PinSet) {
        write(&self.simulations).insert(simulation, Arc::new(set));
    }
}

/// `tool/operation@revision N` or `tool/operation@inline <hash>`.
pub(super) fn pin_label(tool: &str, operation: &str, pin: &PinRef) -> String {
    match pin {
        PinRef::Library { revision, .. } => format!("{tool}/{operation}@revision {revision}"),
        PinRef::Inline { definition_hash } => {
            format!("{tool}/{operation}@inline {}", definition_hash.as_str())
        }
        PinRef::Effect { definition_hash } => {
            format!("{tool}/{operation}@effect {}", definition_hash.as_str())
        }
    }
}
