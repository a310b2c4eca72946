//! Every response body of the API, in one place: what a route answers is
//! built from the runtime's and the store's records by the functions here,
//! and documented (`ToSchema`) here. Routes build views; views know no
//! route.

pub(crate) mod simulations;
pub(crate) mod testing;
pub(crate) mod tools;
pub(crate) mod usage;
pub(crate) mod verifications;
