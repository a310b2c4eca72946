//! Typed identifiers. Every row is named by a random UUID (v4); the newtypes
//! keep a tool id from being passed where an attempt id is expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh random identifier.
            pub fn random() -> Self {
                Self(Uuid::new_v4())
            }

            /// The UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }
    };
}

id_type!(
    /// A tenant: the unit of isolation. Every read and write names one.
    TenantId
);
id_type!(
    /// A library tool.
    ToolId
);
id_type!(
    /// One operation of a library tool.
    OperationId
);
id_type!(
    /// An agent.
    AgentId
);
id_type!(
    /// A simulation: one start, its pins, test cases and attempts.
    SimulationId
);
id_type!(
    /// A test case of a simulation.
    TestCaseId
);
id_type!(
    /// One run of one test case; fixture state lives per attempt.
    AttemptId
);
