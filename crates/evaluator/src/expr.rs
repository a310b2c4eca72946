//! Expressions (docs/spec.md §4, docs/mock-language.md): the compiled tree
//! ([`tree`]), the compiler that builds it ([`compiler`]), and one room per
//! operator family, each owning its syntax, its check and its evaluation
//! (and, for the arithmetic ones, the operator as a pure function):
//!
//! - `$number` in [`numbers`], `$dateAdd` in [`dates`];
//! - money arithmetic (`$add`, `$sub`, `$mul`, `$round`, and version 3's
//!   `$abs`, `$neg`) in [`decimals`];
//! - `$append` and `$merge` in [`collections`];
//! - `$sort` and `$pluck` in [`lists`];
//! - `$find` in [`find`];
//! - `$concat` and `$format` (version 3) in [`strings`];
//! - `$object` and `$json` (version 3) in [`projection`];
//! - `$let` (version 3, with the `let` blocks and the elements in sight)
//!   in [`naming`];
//! - `$map`, `$filter`, `$any`, `$all`, `$update` (version 3) in
//!   [`iteration`]; `$sum`, `$count`, `$min`, `$max`, `$zip` in
//!   [`aggregates`]; `$calc` (version 3) in [`calc`];
//! - `$if` in `crate::conditions::choice` (it is written with conditions).
//!
//! [`OPERATORS`] is the table the compiler reads: a family is a room and
//! its rows here (with the version that has each operator in
//! `crate::language`). `$input` and `$state` are references, read by the
//! paths room (`crate::paths`).

use crate::check::context::OperatorRow;

pub(crate) mod aggregates;
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub, dead_code))]
pub(crate) mod calc;
pub(crate) mod collections;
pub(crate) mod compiler;
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub, dead_code))]
pub(crate) mod dates;
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub, dead_code))]
pub(crate) mod decimals;
pub(crate) mod find;
pub(crate) mod iteration;
pub(crate) mod lists;
pub(crate) mod naming;
#[cfg_attr(not(feature = "operators"), allow(unreachable_pub, dead_code))]
pub(crate) mod numbers;
pub(crate) mod projection;
pub(crate) mod strings;
pub(crate) mod tree;

/// Every expression operator but the references, and the room that compiles it.
pub(crate) const OPERATORS: &[OperatorRow] = &[
    OperatorRow {
        name: "$number",
        compile: numbers::compile,
    },
    OperatorRow {
        name: "$dateAdd",
        compile: dates::compile,
    },
    OperatorRow {
        name: "$add",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$sub",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$mul",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$round",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$abs",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$neg",
        compile: decimals::compile,
    },
    OperatorRow {
        name: "$append",
        compile: collections::compile,
    },
    OperatorRow {
        name: "$merge",
        compile: collections::compile,
    },
    OperatorRow {
        name: "$find",
        compile: find::compile,
    },
    OperatorRow {
        name: "$sort",
        compile: lists::compile,
    },
    OperatorRow {
        name: "$pluck",
        compile: lists::compile,
    },
    OperatorRow {
        name: "$concat",
        compile: strings::compile,
    },
    OperatorRow {
        name: "$format",
        compile: strings::compile,
    },
    OperatorRow {
        name: "$object",
        compile: projection::compile,
    },
    OperatorRow {
        name: "$json",
        compile: projection::compile,
    },
    OperatorRow {
        name: "$let",
        compile: naming::compile,
    },
    OperatorRow {
        name: "$map",
        compile: iteration::compile,
    },
    OperatorRow {
        name: "$filter",
        compile: iteration::compile,
    },
    OperatorRow {
        name: "$any",
        compile: iteration::compile,
    },
    OperatorRow {
        name: "$all",
        compile: iteration::compile,
    },
    OperatorRow {
        name: "$update",
        compile: iteration::compile,
    },
    OperatorRow {
        name: "$sum",
        compile: aggregates::compile,
    },
    OperatorRow {
        name: "$count",
        compile: aggregates::compile,
    },
    OperatorRow {
        name: "$min",
        compile: aggregates::compile,
    },
    OperatorRow {
        name: "$max",
        compile: aggregates::compile,
    },
    OperatorRow {
        name: "$zip",
        compile: aggregates::compile,
    },
    OperatorRow {
        name: "$calc",
        compile: calc::compile,
    },
    OperatorRow {
        name: "$if",
        compile: crate::conditions::choice::compile,
    },
];
