//! The cassette flags (`--cassette DIR`, `--cassette-mode MODE`), apart
//! from the endpoint flags so that every process that plays `model` cases
//! takes both by flattening the two.

use super::{Cassette, CassetteError, CassetteMode};
use crate::Models;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the model exchanges are recorded or replayed from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CassetteFlags {
    /// A folder of recorded model exchanges (docs/cassettes.md): requests of
    /// the agent model, the simulated user's model and the judge are
    /// answered from it, or recorded into it, as --cassette-mode says.
    #[arg(long, value_name = "DIR", env = "TOOLMOCK_CASSETTE")]
    pub cassette: Option<PathBuf>,
    /// record: send every request and keep it; replay (the default): answer
    /// from the cassette only, a missing answer is harness_error
    /// (cassette_miss), never a live call; auto: replay what it has,
    /// record what it lacks.
    #[arg(long, value_name = "MODE", env = "TOOLMOCK_CASSETTE_MODE", value_enum)]
    pub cassette_mode: Option<CassetteMode>,
}

/// Why the cassette flags cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CassetteFlagsError {
    /// `--cassette-mode` without `--cassette`.
    #[error("--cassette-mode needs --cassette")]
    ModeWithoutCassette,
    /// `record` with no model and no judge to record.
    #[error(
        "--cassette-mode record needs a model to record: --model-url and --model, --user-model, or --judge-model"
    )]
    NothingToRecord,
    /// The cassette cannot be read.
    #[error("{code}: {source}", code = .source.code())]
    Cassette {
        /// Why.
        #[from]
        source: CassetteError,
    },
}

impl CassetteFlagsError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            CassetteFlagsError::ModeWithoutCassette => "cassette_mode_without_cassette",
            CassetteFlagsError::NothingToRecord => "nothing_to_record",
            CassetteFlagsError::Cassette { source } => source.code(),
        }
    }
}

impl CassetteFlags {
    /// `models` through the cassette the flags name (unchanged without
    /// one), and the cassette, to save once the run is done. In `replay`
    /// every role is answered from the cassette, configured or not (an
    /// endpoint given only names the model the requests are keyed by); in
    /// `record` and `auto` each configured model is recorded, and in `auto`
    /// a role with recordings but no endpoint is replayed.
    pub fn apply(
        &self,
        models: Models,
    ) -> Result<(Models, Option<Arc<Cassette>>), CassetteFlagsError> {
        let Some(dir) = &self.cassette else {
            return match self.cassette_mode {
                Some(_) => Err(CassetteFlagsError::ModeWithoutCassette),
                None => Ok((models, None)),
            };
        };
        let mode = self.cassette_mode.unwrap_or(CassetteMode::Replay);
        if mode == CassetteMode::Record
            && models.model.is_none()
            && models.judge.is_none()
            && models.user.is_none()
        {
            return Err(CassetteFlagsError::NothingToRecord);
        }
        let cassette = Cassette::open(dir, mode)?;
        Ok((cassette.tape(models), Some(cassette)))
    }
}
