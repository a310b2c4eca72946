//! Which version of the mock language has which feature: the one table
//! ([`FEATURES`]) every version check reads, and the version a document
//! declares ([`Language`]), checked against it where a feature is met.
//!
//! A feature is a row: what it is (a field, a condition op, an operator, a
//! form a member may take), the first version that has it, and how the
//! check names it. A version-1 document keeps the exact meaning and the
//! exact messages it always had: a later version's op is an unknown op
//! there, a later version's operator, field or form is refused as a
//! feature of that version, and its unknown-field messages list only
//! version 1's fields (docs/mock-language.md, "Version 2"). The ops and
//! operators a message lists are version 1's in every document, as they
//! always were. A new version adds its rows here and its rooms beside the
//! others.

use crate::check::diagnostics::{DiagnosticCode as Code, Diagnostics};

/// A version of the language, as a document declares it (`schema_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Version {
    /// The core: references, `$number`, `$dateAdd`, four condition ops.
    V1 = 1,
    /// Computed paths, nested writes, domain errors, the bounded operators.
    V2 = 2,
    /// Removal from state, ordering conditions, `$if`, named values,
    /// bounded iteration, `$calc`.
    V3 = 3,
}

impl Version {
    /// Every version, oldest first.
    pub(crate) const ALL: [Version; 3] = [Version::V1, Version::V2, Version::V3];

    /// The version a `schema_version` number names.
    pub(crate) fn declared(number: u64) -> Option<Version> {
        Version::ALL.into_iter().find(|v| *v as u64 == number)
    }

    /// Its `schema_version` number.
    pub(crate) fn number(self) -> u8 {
        self as u8
    }
}

/// A feature some version of the language has: a row of [`FEATURES`],
/// named as a document writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature<'n> {
    /// A member of a variant, rule or example (`error`, `expected_error`).
    Field(&'n str),
    /// A condition op (`eq`, `contains`, …).
    Op(&'n str),
    /// An expression operator (`$input`, `$add`, …).
    Operator(&'n str),
    /// A path written as an array of segments.
    ArrayPath,
    /// The list form of `set_state`: `[{path, value}, …]`.
    WriteList,
    /// A condition value that is exactly one `$input`/`$state` reference.
    ReferenceValue,
    /// A write of the list form of `set_state` that removes (`{"remove": …}`).
    Removal,
    /// A write of the list form of `set_state` that updates elements (`{"update": …}`).
    Update,
    /// A condition whose `source` is `let` (a named value).
    LetSource,
}

/// One feature, the first version that has it, and how messages name it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub(crate) feature: Feature<'static>,
    pub(crate) since: Version,
    pub(crate) what: &'static str,
}

const fn row(feature: Feature<'static>, since: Version, what: &'static str) -> Row {
    Row {
        feature,
        since,
        what,
    }
}

use Feature::{
    ArrayPath, Field, LetSource, Op, Operator, ReferenceValue, Removal, Update, WriteList,
};
use Version::{V1, V2, V3};

/// Which feature needs which version. The version-1 rows are listed too,
/// in the order messages list them.
pub(crate) const FEATURES: &[Row] = &[
    row(Op("eq"), V1, "the condition op eq"),
    row(Op("ne"), V1, "the condition op ne"),
    row(Op("in"), V1, "the condition op in"),
    row(Op("exists"), V1, "the condition op exists"),
    row(Operator("$input"), V1, "the $input operator"),
    row(Operator("$state"), V1, "the $state operator"),
    row(Operator("$number"), V1, "the $number operator"),
    row(Operator("$dateAdd"), V1, "the $dateAdd operator"),
    row(Field("error"), V2, "an error answer"),
    row(Field("expected_error"), V2, "expected_error"),
    row(ArrayPath, V2, "a path written as an array"),
    row(WriteList, V2, "the list form of set_state"),
    row(ReferenceValue, V2, "a condition value that is a reference"),
    row(Op("contains"), V2, "the condition op contains"),
    row(Op("subset_of"), V2, "the condition op subset_of"),
    row(Op("eq_ci"), V2, "the condition op eq_ci"),
    row(Operator("$add"), V2, "the $add operator (money arithmetic)"),
    row(Operator("$sub"), V2, "the $sub operator (money arithmetic)"),
    row(Operator("$mul"), V2, "the $mul operator (money arithmetic)"),
    row(
        Operator("$round"),
        V2,
        "the $round operator (money arithmetic)",
    ),
    row(Operator("$append"), V2, "the $append operator"),
    row(Operator("$merge"), V2, "the $merge operator"),
    row(Operator("$find"), V2, "the $find operator"),
    row(Operator("$sort"), V2, "the $sort operator"),
    row(Operator("$pluck"), V2, "the $pluck operator"),
    row(Removal, V3, "a removal (a write {\"remove\": path})"),
    row(Op("lt"), V3, "the condition op lt"),
    row(Op("le"), V3, "the condition op le"),
    row(Op("gt"), V3, "the condition op gt"),
    row(Op("ge"), V3, "the condition op ge"),
    row(Operator("$if"), V3, "the $if operator"),
    row(Operator("$abs"), V3, "the $abs operator (money arithmetic)"),
    row(Operator("$neg"), V3, "the $neg operator (money arithmetic)"),
    row(Operator("$concat"), V3, "the $concat operator"),
    row(Operator("$format"), V3, "the $format operator"),
    row(Operator("$object"), V3, "the $object operator"),
    row(Operator("$json"), V3, "the $json operator"),
    row(Field("let"), V3, "a let block"),
    row(Operator("$let"), V3, "the $let operator"),
    row(Operator("$map"), V3, "the $map operator"),
    row(Operator("$filter"), V3, "the $filter operator"),
    row(Operator("$any"), V3, "the $any operator"),
    row(Operator("$all"), V3, "the $all operator"),
    row(Operator("$sum"), V3, "the $sum operator"),
    row(Operator("$count"), V3, "the $count operator"),
    row(Operator("$min"), V3, "the $min operator"),
    row(Operator("$max"), V3, "the $max operator"),
    row(Operator("$zip"), V3, "the $zip operator"),
    row(Operator("$update"), V3, "the $update operator"),
    row(Operator("$calc"), V3, "the $calc operator"),
    row(Update, V3, "an update (a write {\"update\": path})"),
    row(LetSource, V3, "a condition whose source is let"),
];

/// The row of a feature; `None` for one no version has.
fn row_of(feature: Feature<'_>) -> Option<&'static Row> {
    FEATURES.iter().find(|r| r.feature == feature)
}

/// The names of the rows of one version that `pick` selects, in the table's order.
fn names_of(
    version: Version,
    pick: fn(Feature<'static>) -> Option<&'static str>,
) -> Vec<&'static str> {
    FEATURES
        .iter()
        .filter(|r| r.since == version)
        .filter_map(|r| pick(r.feature))
        .collect()
}

/// `a, b, c and d`.
fn and_list(items: &[&str]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The version a document declares, as its check goes. A document may
/// declare a later version than its features need (`"schema_version": 3`
/// with version-1 features only): that is accepted, and it means what the
/// earlier version means.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Language {
    /// What `schema_version` says; version 1 also while it is missing or
    /// broken (which is reported on its own).
    declared: Version,
}

impl Language {
    /// A document not yet read: version 1.
    pub(crate) fn new() -> Language {
        Language { declared: V1 }
    }

    /// A language in which every feature is admitted: for a part whose
    /// feature was noted where the part begins (a `$find`
    /// inside a path written as an array).
    pub(crate) fn counted() -> Language {
        let latest = Version::ALL[Version::ALL.len() - 1];
        Language { declared: latest }
    }

    /// Notes the document's `schema_version`.
    pub(crate) fn declare(&mut self, version: Version) {
        self.declared = version;
    }

    /// Whether the declared version has `feature`.
    pub(crate) fn admits(&self, feature: Feature<'_>) -> bool {
        row_of(feature).is_some_and(|r| r.since <= self.declared)
    }

    /// Notes `feature` met at `at`; in a document that declares an earlier
    /// version than the feature's, it is a diagnostic there.
    pub(crate) fn feature(&self, diagnostics: &mut Diagnostics, at: &str, feature: Feature<'_>) {
        let Some(row) = row_of(feature) else {
            return;
        };
        if self.declared < row.since {
            diagnostics.push(
                match row.since {
                    V3 => Code::Version3Feature,
                    _ => Code::Version2Feature,
                },
                at,
                format!(
                    "{} is a version-{since} feature, and this document says \"schema_version\": {declared}; write \"schema_version\": {since} to use it",
                    row.what,
                    since = row.since.number(),
                    declared = self.declared.number(),
                ),
            );
        }
    }

    /// The fields an unknown-field message lists: those of `allowed` the
    /// declared version has, so that a version-1 document's messages stay
    /// as they were before version 2 added its fields.
    pub(crate) fn listed(&self, allowed: &[&str]) -> String {
        let shown: Vec<&str> = allowed
            .iter()
            .copied()
            .filter(|f| {
                FEATURES
                    .iter()
                    .find(|r| r.feature == Field(f))
                    .is_none_or(|r| r.since <= self.declared)
            })
            .collect();
        shown.join(", ")
    }
}

/// `schema_version` naming no version.
pub(crate) fn unsupported(number: &serde_json::Number) -> String {
    let versions: Vec<String> = Version::ALL
        .iter()
        .map(|v| v.number().to_string())
        .collect();
    let versions: Vec<&str> = versions.iter().map(String::as_str).collect();
    format!(
        "schema_version {number} is not supported; the versions are {}",
        and_list(&versions)
    )
}

impl Language {
    /// The condition ops an unknown op's message lists: version 1's in a
    /// version-1 document (as they always were), every op of the declared
    /// version in a later one (`eq, ne, in, exists, contains, …`).
    pub(crate) fn ops_listed(&self) -> String {
        if self.declared == V1 {
            return core_ops();
        }
        let ops: Vec<&str> = FEATURES
            .iter()
            .filter(|r| r.since <= self.declared)
            .filter_map(|r| match r.feature {
                Op(name) => Some(name),
                _ => None,
            })
            .collect();
        and_list(&ops)
    }
}

/// Version 1's condition ops, as an unknown op's message lists them
/// (`eq, ne, in and exists`).
pub(crate) fn core_ops() -> String {
    and_list(&names_of(V1, |f| match f {
        Op(name) => Some(name),
        _ => None,
    }))
}

/// Version 1's condition ops quoted (`"eq", "ne", "in", "exists"`).
pub(crate) fn core_ops_quoted() -> String {
    let quoted: Vec<String> = names_of(V1, |f| match f {
        Op(name) => Some(name),
        _ => None,
    })
    .iter()
    .map(|op| format!("{op:?}"))
    .collect();
    quoted.join(", ")
}

/// Version 1's operators (`$input, $state, $number and $dateAdd`).
pub(crate) fn core_operators() -> Vec<&'static str> {
    names_of(V1, |f| match f {
        Operator(name) => Some(name),
        _ => None,
    })
}

/// Version 1's operators in a sentence: `$input, $state, $number and $dateAdd`.
pub(crate) fn core_operators_listed() -> String {
    and_list(&core_operators())
}
