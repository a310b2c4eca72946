//! Paths into a call's input and state: dot-separated paths
//! ([`dotted`]), references and the paths written as arrays that a
//! reference, a condition or a write may follow ([`reference`](mod@reference), read from
//! a definition by [`parse`]), and one call's segments ([`steps`]).

pub(crate) mod dotted;
pub(crate) mod parse;
pub(crate) mod reference;
pub(crate) mod steps;
