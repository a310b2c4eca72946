//! One call (docs/spec.md §6): what a call is and answers ([`outcome`]),
//! how the answer is chosen ([`select`]), and the ways in —
//! [`evaluate`](crate::evaluate) and what adds to it ([`evaluate`], the
//! module), a call against a layered state ([`layered`]), a call in two
//! halves ([`prepared`]), a call whose result the caller builds ([`built`]).

pub(crate) mod built;
pub(crate) mod evaluate;
pub(crate) mod layered;
pub(crate) mod outcome;
pub(crate) mod prepared;
pub(crate) mod select;
