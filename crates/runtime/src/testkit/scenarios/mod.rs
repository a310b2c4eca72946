//! The scenarios of the behaviour suite, by concern. Each takes a fresh
//! backend and panics, saying which guarantee broke, when one does.

mod access;
mod arguments;
mod bounds;
mod calls;
mod domain;
mod faults;
mod finish;
mod leases;
mod revisions;
mod start;
mod state;
mod storage;

pub use access::{capabilities_follow_the_lease, tenancy_is_total};
pub use arguments::{
    arbitrary_arguments_are_always_answered, nul_in_arguments_is_a_tool_input_error,
};
pub use bounds::starts_are_bounded;
pub use calls::{
    delays_use_the_sleeper, real_tools_runs_use_the_executor, result_is_exactly_rendered,
};
pub use domain::domain_errors_are_evidence;
pub use faults::{harness_faults_never_pass, tool_input_errors_are_recoverable};
pub use finish::{
    concurrent_finishes_have_one_winner, finish_honours_the_lease, lost_faults_fail_every_finisher,
};
pub use leases::{expired_leases_refuse_every_call, nothing_real_runs_after_the_lease};
pub use revisions::revisions_are_dense;
pub use start::{
    incomplete_starts_fail_closed, start_refusals, workflow_cycles_and_effects_are_refused_at_start,
};
pub use state::{attempts_are_isolated, linearizable_state, shared_fixtures_are_one_base};
pub use storage::storage_faults_never_pass;
