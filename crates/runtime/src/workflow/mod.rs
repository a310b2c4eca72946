//! Workflows with real control flow: `tool` nodes (a tool operation or a
//! nested workflow, called through the dispatcher), `branch` nodes (SPEC §5
//! conditions over the workflow's input and node outputs), `return` nodes,
//! `catch` routes on tool nodes, and `effect` nodes that a sandbox start
//! refuses. The format is documented in `docs/workflows.md`.

mod engine;
mod model;

pub use engine::{AttemptContext, CallFailure};
pub use model::{
    Condition, ConditionOp, ConditionSource, DEFAULT_MAX_STEPS, EffectKind, NodeDoc, WorkflowDoc,
    workflow_cycles,
};
