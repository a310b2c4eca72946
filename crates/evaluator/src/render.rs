//! Rendering a compiled expression for one call: as a value ([`value`]),
//! as JSON text ([`text`]) from the literal runs a [`template`] cut when
//! the definition was compiled, and the operators that read the input alone
//! rendered ahead of the state ([`ahead`]), and into a caller's own form
//! of JSON ([`build`]).

pub(crate) mod ahead;
pub(crate) mod build;
pub(crate) mod template;
pub(crate) mod text;
pub(crate) mod value;
