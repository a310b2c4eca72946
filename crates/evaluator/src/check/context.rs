//! What every room's check writes into and reads: the [`Checker`] — the
//! diagnostics found so far, the language the document declares, and the
//! table of expression operators — and the helpers every check of a JSON
//! object shares (unknown and missing fields, wrong types).
//!
//! The operator table is handed to the checker by whoever makes it (the
//! check's entry points in `crate::check`, with `crate::expr::OPERATORS`),
//! so the expression compiler and the rooms below it never name an
//! operator family: a family is a row of that table and a room of its own.

use crate::check::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_push};
use crate::expr::tree::Expr;
use crate::language::{Feature, Language};
use serde_json::{Map, Value};

/// Compiles one operator: the checker, the operator's name, its operand,
/// and where the operator's object is in the definition.
pub(crate) type CompileOperator = fn(&mut Checker, &str, &Value, &str) -> Option<Expr>;

/// One expression operator and the function that compiles it.
#[derive(Debug)]
pub(crate) struct OperatorRow {
    pub(crate) name: &'static str,
    pub(crate) compile: CompileOperator,
}

/// The check of one definition as it goes: every problem is collected, not
/// just the first.
#[derive(Debug)]
pub(crate) struct Checker {
    pub(crate) diagnostics: Diagnostics,
    pub(crate) language: Language,
    operators: &'static [OperatorRow],
    /// (Version 3) the named sub-expressions visible where the check is:
    /// the variant's `let`, then the rule's.
    pub(crate) lets: Vec<Named>,
    /// How many named sub-expressions the variant being checked has so far
    /// (each has its own slot of a call's memo).
    pub(crate) let_slots: usize,
    /// (Version 3) how many iterations enclose the expression being checked.
    pub(crate) iteration_depth: usize,
}

/// A named value in sight: a sub-expression of a `let` block (its
/// compiled expression shared by every `$let` that names it), or the
/// element an iteration visits (`as`), kept in its slot while it does.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub(crate) name: Box<str>,
    pub(crate) slot: usize,
    /// `None` for an element: its value is put in the slot by the iteration.
    pub(crate) expr: Option<std::sync::Arc<Expr>>,
    /// Who supplied an element's value (for a `let` name, the state's: the
    /// definition computed it), which decides the blame when it is refused.
    pub(crate) origin: crate::error::Origin,
}

/// Fields of one object: which are allowed, which required.
#[derive(Debug)]
pub(crate) struct Shape {
    pub(crate) allowed: &'static [&'static str],
    pub(crate) required: &'static [&'static str],
    pub(crate) what: &'static str,
}

impl Checker {
    /// A check with no problem yet, of a document not yet read, compiling
    /// the expression operators of `operators`.
    pub(crate) fn new(operators: &'static [OperatorRow]) -> Checker {
        Checker {
            diagnostics: Diagnostics::default(),
            language: Language::new(),
            operators,
            lets: Vec::new(),
            let_slots: 0,
            iteration_depth: 0,
        }
    }

    pub(crate) fn push(&mut self, code: Code, path: impl Into<String>, message: impl Into<String>) {
        self.diagnostics.push(code, path, message);
    }

    /// Notes a feature met at `at` (a diagnostic when the document's
    /// version lacks it).
    pub(crate) fn feature(&mut self, at: &str, feature: Feature<'_>) {
        self.language.feature(&mut self.diagnostics, at, feature);
    }

    /// The function that compiles the operator `name`, if it is one.
    pub(crate) fn compiler_of(&self, name: &str) -> Option<CompileOperator> {
        self.operators
            .iter()
            .find(|row| row.name == name)
            .map(|row| row.compile)
    }

    /// Runs `check` with a language in which every feature is admitted and
    /// already counted: for a part whose feature was noted where the part
    /// begins.
    pub(crate) fn counted<T>(&mut self, check: impl FnOnce(&mut Checker) -> T) -> T {
        let declared = std::mem::replace(&mut self.language, Language::counted());
        let out = check(self);
        self.language = declared;
        out
    }

    /// Unknown and missing fields; true when none is missing or unknown.
    pub(crate) fn shape(&mut self, map: &Map<String, Value>, at: &str, shape: &Shape) -> bool {
        let mut ok = true;
        for key in map.keys() {
            if !shape.allowed.contains(&key.as_str()) {
                self.push(
                    Code::UnknownField,
                    pointer_push(at, key),
                    format!(
                        "{} has no field {key:?}; its fields are {}",
                        shape.what,
                        self.language.listed(shape.allowed)
                    ),
                );
                ok = false;
            }
        }
        for key in shape.required {
            if !map.contains_key(*key) {
                self.push(
                    Code::MissingField,
                    at,
                    format!("{} needs the field {key:?}", shape.what),
                );
                ok = false;
            }
        }
        ok
    }

    pub(crate) fn wrong_type(&mut self, at: &str, expected: &str, got: &Value) {
        self.push(
            Code::WrongType,
            at,
            format!(
                "expected {expected}, found {}",
                toolmock_contract::json_kind(got)
            ),
        );
    }

    pub(crate) fn object<'v>(
        &mut self,
        value: &'v Value,
        at: &str,
        what: &str,
    ) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.wrong_type(at, &format!("{what} (an object)"), other);
                None
            }
        }
    }

    /// An optional `description`, which is a string.
    pub(crate) fn description(&mut self, map: &Map<String, Value>, at: &str) {
        if let Some(d) = map.get("description")
            && !d.is_string()
        {
            self.wrong_type(&pointer_push(at, "description"), "a string", d);
        }
    }
}
