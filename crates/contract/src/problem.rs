//! One shape for every reported problem: a stable code, a JSON pointer and a
//! sentence, kept apart.
//!
//! Each domain (the definition check, manifest and MCP normalization, draft
//! generation, …) declares its codes as an enum with [`problem_codes!`](crate::problem_codes); a
//! problem of that domain is a [`Problem<C>`] and every problem found is a
//! [`Problems<C>`]. The path is never inside the message, so a caller prints
//! it (or not) the way it wants, and nobody has to strip it again.
//!
//! ```
//! use toolmock_contract::{ProblemCode, Problems, problem_codes};
//!
//! problem_codes! {
//!     /// What can be wrong with a greeting.
//!     pub enum GreetingCode {
//!         /// The greeting is empty.
//!         Empty => "empty",
//!     }
//! }
//!
//! let mut problems = Problems::new();
//! problems.push(GreetingCode::Empty, "/greeting", "say something");
//! assert_eq!(problems.as_slice()[0].to_string(), "say something");
//! assert_eq!(problems.to_string(), "/greeting: empty: say something\n");
//! assert!(problems.contains(GreetingCode::Empty));
//! assert_eq!(GreetingCode::ALL, &[GreetingCode::Empty]);
//! assert_eq!(GreetingCode::parse("empty"), Some(GreetingCode::Empty));
//! assert_eq!(GreetingCode::parse("hello"), None);
//! ```

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// A domain's code enum: a closed list of stable, snake_case strings.
/// Implemented by [`problem_codes!`](crate::problem_codes).
pub trait ProblemCode: Copy + Eq + fmt::Debug + 'static {
    /// Every code, in declaration order (what `docs/error-codes.md` lists).
    const ALL: &'static [Self];
    /// The code as written in reports, e.g. `unknown_field`.
    fn as_str(self) -> &'static str;

    /// The code written `text` (a stored code read back, say), if it is one.
    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|code| code.as_str() == text)
    }
}

/// Declares a code enum: the variants with their doc lines and wire strings,
/// `ALL`, `as_str`, `Display`, `Serialize` (as the string), comparison with a
/// `&str`, and [`ProblemCode`].
#[macro_export]
macro_rules! problem_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident => $code:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$doc])* $variant, )*
        }

        impl $name {
            /// Every code, in declaration order.
            $vis const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The code as written in reports.
            $vis const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $code, )*
                }
            }
        }

        impl $crate::ProblemCode for $name {
            const ALL: &'static [$name] = $name::ALL;
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl ::std::cmp::PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

/// One problem: what kind, where (a JSON pointer, `""` for the whole
/// document), and a sentence for humans that does not repeat the path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem<C> {
    /// What kind of problem.
    pub code: C,
    /// JSON pointer into the document the problem is about.
    pub path: String,
    /// A sentence for humans, without the path.
    pub message: String,
}

impl<C: ProblemCode> Problem<C> {
    /// A problem of `code` at `path`.
    pub fn new(code: C, path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            code,
            path: path.into(),
            message: message.into(),
        }
    }

    /// The path as printed: `/` for the whole document.
    pub fn display_path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }
}

/// The message only: where it is and what code it has are the caller's to print.
impl<C: ProblemCode> fmt::Display for Problem<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<C: ProblemCode> std::error::Error for Problem<C> {}

/// Every problem found, in the order found. Empty means none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Problems<C>(Vec<Problem<C>>);

impl<C> Default for Problems<C> {
    fn default() -> Self {
        Problems(Vec::new())
    }
}

impl<C: ProblemCode> Problems<C> {
    /// No problem yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// No problem found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Problem<C>> {
        self.0.iter()
    }

    /// Whether any problem has this code.
    pub fn contains(&self, code: C) -> bool {
        self.0.iter().any(|p| p.code == code)
    }

    /// The problems as a slice.
    pub fn as_slice(&self) -> &[Problem<C>] {
        &self.0
    }

    /// The problems as a vector.
    pub fn into_vec(self) -> Vec<Problem<C>> {
        self.0
    }

    /// Adds a problem.
    pub fn push(&mut self, code: C, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem::new(code, path, message));
    }

    /// Adds a problem built elsewhere.
    pub fn push_problem(&mut self, problem: Problem<C>) {
        self.0.push(problem);
    }

    /// `Ok(value)` when no problem was found, else every problem.
    pub fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl<C> From<Vec<Problem<C>>> for Problems<C> {
    fn from(problems: Vec<Problem<C>>) -> Self {
        Problems(problems)
    }
}

impl<C> From<Problem<C>> for Problems<C> {
    fn from(problem: Problem<C>) -> Self {
        Problems(vec![problem])
    }
}

impl<C> FromIterator<Problem<C>> for Problems<C> {
    fn from_iter<I: IntoIterator<Item = Problem<C>>>(iter: I) -> Self {
        Problems(iter.into_iter().collect())
    }
}

impl<C> Extend<Problem<C>> for Problems<C> {
    fn extend<I: IntoIterator<Item = Problem<C>>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<'a, C> IntoIterator for &'a Problems<C> {
    type Item = &'a Problem<C>;
    type IntoIter = std::slice::Iter<'a, Problem<C>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<C> IntoIterator for Problems<C> {
    type Item = Problem<C>;
    type IntoIter = std::vec::IntoIter<Problem<C>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A report: one `PATH: code: message` line per problem.
impl<C: ProblemCode> fmt::Display for Problems<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.0 {
            writeln!(
                f,
                "{}: {}: {}",
                p.display_path(),
                p.code.as_str(),
                p.message
            )?;
        }
        Ok(())
    }
}

impl<C: ProblemCode> std::error::Error for Problems<C> {}

/// One row of a crate's table in `docs/error-codes.md`: the code (without
/// its backticks) and its class column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DocumentedCode<'d> {
    /// The code, e.g. `unknown_field`.
    pub code: &'d str,
    /// The class column, e.g. `tool_input_error` or `sqlstate`.
    pub class: &'d str,
}

/// The rows of the table under `## {crate_name}` in `docs/error-codes.md`,
/// in the order written (a row written twice appears twice). The one reader
/// of that table: every crate's documented-codes test goes through it.
///
/// ```
/// let doc = "# Error codes\n\n## toolmock-x\n\n| code | class | meaning | example |\n|---|---|---|---|\n| `a` | c | m | e |\n\n## toolmock-y\n\n| `b` | c | m | e |\n";
/// let rows = toolmock_contract::documented_rows(doc, "toolmock-x");
/// assert_eq!(rows, [toolmock_contract::DocumentedCode { code: "a", class: "c" }]);
/// ```
pub fn documented_rows<'d>(markdown: &'d str, crate_name: &str) -> Vec<DocumentedCode<'d>> {
    let heading = format!("## {crate_name}");
    markdown
        .lines()
        .skip_while(|line| line.trim_end() != heading)
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .filter(|line| line.starts_with('|') && !line.starts_with("|---"))
        .filter_map(|line| {
            let mut cells = line.split('|').skip(1).map(str::trim);
            let code = cells.next()?.trim_matches('`');
            let class = cells.next().unwrap_or("");
            (code != "code").then_some(DocumentedCode { code, class })
        })
        .collect()
}

/// The codes `docs/error-codes.md` lists for one crate: the first column of
/// the table under `## {crate_name}` ([`documented_rows`]). Each crate's
/// test compares them with its code enums, both ways.
///
/// ```
/// let doc = "# Error codes\n\n## toolmock-x\n\n| code | class | meaning | example |\n|---|---|---|---|\n| `a` | c | m | e |\n\n## toolmock-y\n\n| `b` | c | m | e |\n";
/// let codes = toolmock_contract::documented_codes(doc, "toolmock-x");
/// assert_eq!(codes.into_iter().collect::<Vec<_>>(), ["a"]);
/// ```
pub fn documented_codes<'d>(markdown: &'d str, crate_name: &str) -> BTreeSet<&'d str> {
    documented_rows(markdown, crate_name)
        .into_iter()
        .map(|row| row.code)
        .collect()
}

/// Compares a crate's section of `docs/error-codes.md` with its `codes`,
/// both ways: `Err` names every code missing from the table and every code
/// the table lists that the crate does not have.
pub fn check_documented_codes(
    markdown: &str,
    crate_name: &str,
    codes: &[&str],
) -> Result<(), String> {
    compare(
        crate_name,
        documented_codes(markdown, crate_name),
        codes.iter().copied().collect(),
    )
}

/// [`check_documented_codes`] for a crate whose table's class column is
/// checked too: `rows` are its `(code, class)` pairs, and a pair the table
/// writes twice is an error as well.
pub fn check_documented_classes(
    markdown: &str,
    crate_name: &str,
    rows: &[(&str, &str)],
) -> Result<(), String> {
    let mut documented = BTreeSet::new();
    for row in documented_rows(markdown, crate_name) {
        if !documented.insert((row.code, row.class)) {
            return Err(format!(
                "docs/error-codes.md, section {crate_name}: {} ({}) is listed twice",
                row.code, row.class
            ));
        }
    }
    compare(crate_name, documented, rows.iter().copied().collect())
}

fn compare<T: Ord + fmt::Debug>(
    crate_name: &str,
    documented: BTreeSet<T>,
    actual: BTreeSet<T>,
) -> Result<(), String> {
    let missing: Vec<&T> = actual.difference(&documented).collect();
    let extra: Vec<&T> = documented.difference(&actual).collect();
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "docs/error-codes.md, section {crate_name}: missing {missing:?}, listed but not a code {extra:?}"
        ))
    }
}

/// Every wire string of one code enum.
pub fn code_strings<C: ProblemCode>() -> Vec<&'static str> {
    C::ALL.iter().map(|c| c.as_str()).collect()
}

/// What a JSON value is, as a problem's message names it ("a string",
/// "an array", "null", …): one wording for every checker.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
