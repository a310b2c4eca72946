//! Conditions (docs/spec.md §6 step 2): what a condition compiles to and
//! whether it holds ([`condition`]), how a definition writes one
//! ([`when`]), and one room per family of later ops — [`membership`]
//! (`contains`, `subset_of`), [`folding`] (`eq_ci`) and [`ordering`] (`lt`,
//! `le`, `gt`, `ge`) — sharing how their value is read ([`want`]).

pub(crate) mod choice;
pub(crate) mod condition;
pub(crate) mod equality;
pub(crate) mod folding;
pub(crate) mod membership;
pub(crate) mod ordering;
pub(crate) mod want;
pub(crate) mod when;
