//! Two results documents of the same suite compared case by case
//! (`toolmock compare`, and the API's comparison of two simulations):
//! per case the pass rate, pass^k, tokens and cost on each side and the
//! change; regressions — a case that held (pass^k) before and does not
//! now — first (docs/cassettes.md, "Comparing two runs").
//!
//! It reads the documents as JSON (`toolmock run --json`, or the API's
//! results), so a document written by an older or newer toolmock still
//! compares by the members it has.

use serde::Serialize;
use serde_json::Value;

/// One side of a compared case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseSide {
    /// Attempts that ended as expected, as a fraction.
    pub pass_rate: f64,
    /// Whether every attempt ended as expected.
    pub pass_k: bool,
    /// Its attempts.
    pub k: u64,
    /// Prompt plus completion tokens (absent: no answer reported usage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Their cost (absent: not priced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl CaseSide {
    /// The side of `case`, a case of a results document.
    pub fn of(case: &Value) -> Self {
        let tokens = &case["tokens"];
        Self {
            pass_rate: case["pass_rate"].as_f64().unwrap_or(0.0),
            pass_k: case["pass_k"]["passed"].as_bool().unwrap_or(false),
            k: case["pass_k"]["k"].as_u64().unwrap_or(0),
            tokens: tokens.is_object().then(|| {
                tokens["prompt_tokens"].as_u64().unwrap_or(0)
                    + tokens["completion_tokens"].as_u64().unwrap_or(0)
            }),
            cost: tokens["cost"].as_f64(),
        }
    }
}

/// What changed for a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It held before and does not now.
    Regression,
    /// It did not hold before and does now.
    Fixed,
    /// It holds, or fails, on both sides.
    Same,
    /// Only HEAD has it.
    Added,
    /// Only BASE has it.
    Removed,
}

impl Change {
    /// Its stable text.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Fixed => "fixed",
            Change::Same => "same",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }
}

/// A case on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseComparison {
    /// The case's name (cases are matched by name).
    pub name: String,
    /// What changed.
    pub change: Change,
    /// Before (absent for an added case).
    pub base: Option<CaseSide>,
    /// After (absent for a removed case).
    pub head: Option<CaseSide>,
}

/// The cases of a results document, by name, in its order; `None` when it
/// is not one (no `cases` list).
pub fn results_cases(document: &Value) -> Option<Vec<(String, Value)>> {
    let cases = document["cases"].as_array()?;
    Some(
        cases
            .iter()
            .map(|c| (c["name"].as_str().unwrap_or_default().to_owned(), c.clone()))
            .collect(),
    )
}

/// Every case of either side compared: regressions first, then HEAD's
/// cases in its order (`added` where BASE lacks them), then the cases only
/// BASE has (`removed`).
pub fn compare_cases(base: &[(String, Value)], head: &[(String, Value)]) -> Vec<CaseComparison> {
    let find = |side: &[(String, Value)], name: &str| {
        side.iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| CaseSide::of(c))
    };
    let mut rows: Vec<CaseComparison> = head
        .iter()
        .map(|(name, case)| {
            let now = CaseSide::of(case);
            let before = find(base, name);
            let change = match &before {
                None => Change::Added,
                Some(b) if b.pass_k && !now.pass_k => Change::Regression,
                Some(b) if !b.pass_k && now.pass_k => Change::Fixed,
                Some(_) => Change::Same,
            };
            CaseComparison {
                name: name.clone(),
                change,
                base: before,
                head: Some(now),
            }
        })
        .collect();
    for (name, case) in base {
        if find(head, name).is_none() {
            rows.push(CaseComparison {
                name: name.clone(),
                change: Change::Removed,
                base: Some(CaseSide::of(case)),
                head: None,
            });
        }
    }
    // Regressions first; otherwise HEAD's order (a stable sort).
    rows.sort_by_key(|r| r.change != Change::Regression);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(name: &str, rate: f64, held: bool, tokens: Option<u64>) -> Value {
        let mut c = json!({"name": name, "pass_rate": rate, "pass_k": {"k": 2, "passed": held}});
        if let Some(t) = tokens {
            c["tokens"] =
                json!({"requests": 1, "prompt_tokens": t, "completion_tokens": 1, "cost": 0.5});
        }
        c
    }

    #[test]
    fn regressions_come_first_then_heads_order_then_removed_cases() {
        let base = results_cases(&json!({"cases": [
            case("a", 1.0, true, Some(10)), case("b", 1.0, true, None),
            case("c", 0.5, false, None), case("gone", 1.0, true, None)]}))
        .unwrap();
        let head = results_cases(&json!({"cases": [
            case("a", 1.0, true, Some(20)), case("new", 1.0, true, None),
            case("c", 1.0, true, None), case("b", 0.5, false, None)]}))
        .unwrap();
        let rows = compare_cases(&base, &head);
        let order: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.change.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("b", "regression"),
                ("a", "same"),
                ("new", "added"),
                ("c", "fixed"),
                ("gone", "removed")
            ]
        );
        let a = &rows[1];
        assert_eq!(a.base.as_ref().unwrap().tokens, Some(11));
        assert_eq!(a.head.as_ref().unwrap().tokens, Some(21));
        assert_eq!(a.head.as_ref().unwrap().cost, Some(0.5));
        assert_eq!(rows[2].base, None);
        assert_eq!(rows[4].head, None);
        assert_eq!(
            serde_json::to_value(&rows[0]).unwrap(),
            json!({"name": "b", "change": "regression",
                   "base": {"pass_rate": 1.0, "pass_k": true, "k": 2},
                   "head": {"pass_rate": 0.5, "pass_k": false, "k": 2}})
        );
        assert_eq!(results_cases(&json!({"summary": {}})), None);
    }
}
