//! The rules of saving a revision, shared by every backend so that they agree.

use crate::error::SaveRevisionError;
use crate::model::SaveRevision;
use toolmock_contract::{ContractHash, DefinitionHash, OperationContract};
use toolmock_evaluator::{CompiledContract, compile_checked};

/// Checks a save against the operation's current contract, read under the
/// lock that serializes saves of the operation: no contract →
/// `NeedsOutputSchema`; another hash → `ContractChanged { current }`; a
/// definition failing its check (SPEC §7) → `InvalidDefinition` with every
/// diagnostic. Returns the definition's hash.
pub fn check_revision(
    contract: Option<&OperationContract>,
    current: Option<&ContractHash>,
    save: &SaveRevision,
) -> Result<DefinitionHash, SaveRevisionError> {
    let (Some(contract), Some(current)) = (contract, current) else {
        return Err(SaveRevisionError::NeedsOutputSchema);
    };
    if &save.contract_hash != current {
        return Err(SaveRevisionError::ContractChanged {
            current: current.clone(),
        });
    }
    let compiled = CompiledContract::new(contract.clone())
        .map_err(|e| SaveRevisionError::UnusableContract(e.to_string()))?;
    compile_checked(&save.definition, Some(&compiled))
        .map_err(SaveRevisionError::InvalidDefinition)?;
    DefinitionHash::of(&save.definition)
        .map_err(|e| SaveRevisionError::UnhashableDefinition(e.to_string()))
}
