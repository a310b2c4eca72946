//! Why a contract needs an authored mock.

use toolmock_contract::{Problems, problem_codes};

problem_codes! {
    /// One reason a schema needs an authored mock. Paths are rooted at the
    /// contract (`/input_schema/…`, `/output_schema/…`), except for
    /// [`DraftCode::CheckFailed`], whose path is into the draft definition.
    pub enum DraftCode {
        /// A keyword no generated value can be shown to satisfy (`pattern`,
        /// `not`, `if`, `dependentSchemas`, `contains`, `propertyNames`, …).
        UnsupportedKeyword => "unsupported_keyword",
        /// A string `format` the generator has no honest value for under the other constraints.
        UnsupportedFormat => "unsupported_format",
        /// A `$ref` to another document (nothing is ever fetched).
        RemoteRef => "remote_ref",
        /// A local `$ref` that names nothing in the schema.
        UnresolvableRef => "unresolvable_ref",
        /// A `$ref` that, on a required path, leads back to itself: no finite value.
        CyclicRef => "cyclic_ref",
        /// Bounds that no value satisfies (`minimum` above `maximum`, no multiple in range, …).
        ContradictoryBounds => "contradictory_bounds",
        /// A schema nothing satisfies (`false`, an empty `enum`, every branch failing).
        Unsatisfiable => "unsatisfiable",
        /// The input schema does not describe an object (MCP and platform inputs are objects).
        InputNotObject => "input_not_object",
        /// A keyword of the wrong shape met while deriving (`enum` not an
        /// array, `$ref` not a string, an unknown `type`, …).
        MalformedSchema => "malformed_schema",
        /// A schema that does not compile, where the derivation found no keyword to blame.
        UncompilableSchema => "uncompilable_schema",
        /// `minLength`, `minItems` or `minProperties` asks for more than a
        /// definition can hold (100 KB).
        TooLarge => "too_large",
        /// The schema nests deeper than the generator follows.
        TooDeep => "too_deep",
        /// The derived value fails the schema at this keyword (a `default` or
        /// `example` that is itself invalid, or a combination the generator
        /// cannot reconcile).
        SchemaViolation => "schema_violation",
        /// The check of docs/spec.md §7 refused the draft (for example it exceeds 100 KB).
        CheckFailed => "check_failed",
    }
}

/// "Needs an authored mock": every reason the schemas cannot honestly be
/// satisfied by a derived draft (never empty when returned).
pub type DraftProblems = Problems<DraftCode>;
