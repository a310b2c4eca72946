//! The state a call reads and the writes it makes: the views a call reads
//! through ([`view`]: a plain state, or a shared base with an attempt's
//! [`overlay`]), `set_state` as a definition writes it ([`set_state`]) and
//! as a call renders it ([`writes`]).

pub(crate) mod merged;
pub(crate) mod overlay;
pub(crate) mod removal;
pub(crate) mod set_state;
pub(crate) mod view;
pub(crate) mod writes;
