//! Domain errors (version 2): a variant or rule that answers `error:
//! {code, message, data?}` instead of `result` — an ordinary answer of the
//! mocked operation, not a failed call ([`answer`]), and how a definition
//! writes one ([`error_field`]).

pub(crate) mod answer;
pub(crate) mod error_field;
