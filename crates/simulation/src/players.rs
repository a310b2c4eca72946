//! What plays a simulation besides its document: the options of a run, and
//! the players of its model cases (the model, the judge, the agent's
//! functions and system message, each model attempt's deadline).

use crate::conversation::{ChatModel, FunctionMap, system_message};
use crate::load::LoadedSimulation;
use std::sync::Arc;
use std::time::Duration;

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Attempts run at once.
    pub jobs: usize,
    /// Keep every attempt's raw records (for `--evidence`).
    pub keep_raw: bool,
    /// The model that plays `model` cases (none: such cases cannot run).
    pub model: Option<Arc<dyn ChatModel>>,
    /// The judge model that grades `judge` rubrics (none: they cannot run).
    pub judge: Option<Arc<dyn ChatModel>>,
    /// How long a model-driven attempt may run (none:
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]); past it, it ends `harness_error`
    /// (`attempt_timeout`).
    pub attempt_timeout: Option<Duration>,
}

/// How long a model-driven attempt may run by default
/// (`--attempt-timeout-secs`): past it the attempt ends `harness_error`
/// (`attempt_timeout`), however long its model keeps it waiting.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What plays a simulation's model cases besides its document: the model
/// and the judge (each `None` where none is configured), the agent's
/// functions and its system message. Built once per simulation.
#[derive(Debug, Clone)]
pub struct Players {
    pub(crate) model: Option<Arc<dyn ChatModel>>,
    pub(crate) judge: Option<Arc<dyn ChatModel>>,
    pub(crate) functions: FunctionMap,
    pub(crate) system: String,
    pub(crate) attempt_timeout: Duration,
}

impl Default for Players {
    fn default() -> Self {
        Self {
            model: None,
            judge: None,
            functions: FunctionMap::default(),
            system: String::new(),
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
        }
    }
}

impl Players {
    /// The players of `loaded`'s agent with `model` and `judge`.
    pub fn new(
        loaded: &LoadedSimulation,
        model: Option<Arc<dyn ChatModel>>,
        judge: Option<Arc<dyn ChatModel>>,
    ) -> Self {
        Self {
            model,
            judge,
            functions: FunctionMap::of_agent(loaded),
            system: system_message(&loaded.document.agent),
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
        }
    }

    /// With each model-driven attempt's deadline `limit` (default
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]).
    #[must_use]
    pub fn with_attempt_timeout(mut self, limit: Duration) -> Self {
        self.attempt_timeout = limit;
        self
    }
}
