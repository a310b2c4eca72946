//! The rules of saving a revision, shared by every backend so that they agree.

use crate::error::SaveRevisionError;
use crate::model::SaveRevision;
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::{CompiledContract, compile_checked};

impl SaveRevision {
    /// Checks this save against the operation's current contract, read
    /// under the lock that serializes saves of the operation: no contract →
    /// `NeedsOutputSchema`; another hash → `ContractChanged { current }`; a
    /// definition failing its check (docs/spec.md §7) → `InvalidDefinition` with
    /// every diagnostic. Returns the definition's hash.
    pub fn check(
        &self,
        contract: Option<&OperationContract>,
        current: Option<&ContractHash>,
    ) -> Result<DefinitionHash, SaveRevisionError> {
        let (Some(contract), Some(current)) = (contract, current) else {
            return Err(SaveRevisionError::NeedsOutputSchema);
        };
        if &self.contract_hash != current {
            return Err(SaveRevisionError::ContractChanged {
                current: current.clone(),
            });
        }
        let compiled = CompiledContract::new(contract.clone())
            .map_err(|e| SaveRevisionError::UnusableContract(e.to_string()))?;
        compile_checked(&self.definition, Some(&compiled))
            .map_err(SaveRevisionError::InvalidDefinition)?;
        DefinitionHash::of(&self.definition)
            .map_err(|e| SaveRevisionError::UnhashableDefinition(e.to_string()))
    }
}
