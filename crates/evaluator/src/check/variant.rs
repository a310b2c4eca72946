//! The check of one variant and its rules (docs/spec.md §3): the answer
//! (`result` or a domain error), `set_state`, `delay_ms` and the rules with
//! their conditions; then each distinct path the variant reads gets a memo
//! slot, the operators that read the input alone are marked to be rendered
//! ahead, and the rule index is built.

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::definition::{CompiledRule, CompiledVariant, MAX_DELAY_MS, MAX_RULES};
use crate::domain::answer::Answer;
use crate::expr::tree::Expr;
use crate::rule_index::RuleIndex;
use crate::scope::Source;
use crate::state::writes::{StateUpdates, Write};
use serde_json::Value;

const VARIANT: Shape = Shape {
    allowed: &[
        "description",
        "result",
        "error",
        "set_state",
        "delay_ms",
        "rules",
        "let",
    ],
    // `result` or `error`: see `missing_answer`.
    required: &[],
    what: "a variant",
};
const RULE: Shape = Shape {
    allowed: &[
        "description",
        "when",
        "result",
        "error",
        "set_state",
        "delay_ms",
        "let",
    ],
    required: &[],
    what: "a rule",
};

impl Checker {
    /// One variant (`name`, at `at`): its answer, `set_state`, delay and
    /// rules, each condition and reference given its memo slot.
    pub(crate) fn variant(
        &mut self,
        name: &str,
        value: &Value,
        at: &str,
    ) -> Option<CompiledVariant> {
        let map = self.object(value, at, "a variant")?;
        let before = self.diagnostics.len();
        self.shape(map, at, &VARIANT);
        self.missing_answer(map, at);
        self.description(map, at);
        // The variant's named sub-expressions are in sight in all of it.
        self.lets.clear();
        self.let_slots = 0;
        self.let_block(map, at);
        let result = self.answer(map, at).flatten();
        let answers_error = result.as_ref().is_some_and(Answer::is_error);
        self.set_state_beside_error(map, at, answers_error, true);
        let set_state = match map.get("set_state") {
            Some(v) => self.set_state(v, &pointer_push(at, "set_state")),
            None => Some((Box::default(), Box::default())),
        };
        let delay_ms = match map.get("delay_ms") {
            Some(v) => self.delay(v, &pointer_push(at, "delay_ms")),
            None => Some(0),
        };
        let mut rules = Vec::new();
        if let Some(v) = map.get("rules") {
            let rules_at = pointer_push(at, "rules");
            match v {
                Value::Array(items) => {
                    if items.len() > MAX_RULES {
                        self.push(
                            Code::TooManyRules,
                            &rules_at,
                            format!(
                                "{} rules; at most {MAX_RULES} are allowed per variant",
                                items.len()
                            ),
                        );
                    }
                    for (i, rule) in items.iter().enumerate() {
                        let rule_at = pointer_index(&rules_at, i);
                        if let Some(rule) = self.rule(rule, &rule_at, answers_error) {
                            rules.push(rule);
                        }
                    }
                }
                other => self.wrong_type(&rules_at, "an array of rules", other),
            }
        }
        self.lets.clear();
        if self.diagnostics.len() != before {
            return None;
        }
        let (mut result, (mut set_state, mut writes)) = (result?, set_state?);
        // One memo slot per distinct source and path: the conditions' first,
        // so that the rule index and every condition share theirs, then the
        // references' of the results and state updates.
        let mut distinct: Vec<(Source, String)> = Vec::new();
        let mut slot_of = |key: (Source, &str)| match distinct
            .iter()
            .position(|(s, p)| (*s, p.as_str()) == key)
        {
            Some(slot) => slot,
            None => {
                distinct.push((key.0, key.1.to_owned()));
                distinct.len() - 1
            }
        };
        for condition in rules.iter_mut().flat_map(|r| r.when.iter_mut()) {
            if condition.computed.is_none() && condition.named.is_none() {
                condition.slot = slot_of((condition.source, condition.path.as_str()));
            }
        }
        each_expr(
            &mut result,
            &mut set_state,
            &mut writes,
            &mut rules,
            &mut |expr| {
                expr.for_each_reference(&mut |r| {
                    if let Some(key) = r.key() {
                        r.slot = slot_of(key);
                    }
                });
            },
        );
        // After the slots: the copies kept for rendering ahead carry them.
        let mut input_holes = Vec::new();
        each_expr(
            &mut result,
            &mut set_state,
            &mut writes,
            &mut rules,
            &mut |expr| {
                expr.mark_input_holes(&mut input_holes);
            },
        );
        Some(CompiledVariant {
            input_holes: input_holes.into_iter().map(|(_, e)| e).collect(),
            name: name.into(),
            result,
            set_state,
            writes,
            delay_ms: delay_ms?,
            index: RuleIndex::build(
                &rules.iter().map(|r| &*r.when).collect::<Vec<_>>(),
                &distinct,
            ),
            rules: rules.into_boxed_slice(),
        })
    }

    fn rule(&mut self, value: &Value, at: &str, variant_errs: bool) -> Option<CompiledRule> {
        let map = self.object(value, at, "a rule")?;
        let before = self.diagnostics.len();
        self.shape(map, at, &RULE);
        self.description(map, at);
        // The rule's named sub-expressions are in sight in the rule only.
        let in_sight = self.lets.len();
        self.let_block(map, at);
        let when = match map.get("when") {
            Some(v) => self.when_list(v, &pointer_push(at, "when")),
            None => Vec::new(),
        };
        let result = self.answer(map, at);
        self.rule_set_state_beside_error(map, at, result.as_ref(), variant_errs);
        let set_state = map
            .get("set_state")
            .map(|v| self.set_state(v, &pointer_push(at, "set_state")));
        let delay_ms = map
            .get("delay_ms")
            .map(|v| self.delay(v, &pointer_push(at, "delay_ms")));
        self.lets.truncate(in_sight);
        if self.diagnostics.len() != before {
            return None;
        }
        let (set_state, writes) = set_state.flatten().unzip();
        Some(CompiledRule {
            when: when.into_boxed_slice(),
            result: result.flatten(),
            set_state,
            writes,
            delay_ms: delay_ms.flatten(),
        })
    }

    fn delay(&mut self, value: &Value, at: &str) -> Option<u32> {
        // Integral floats (`5.0`) count as integers, as everywhere in the language.
        let whole: Option<f64> = match value {
            Value::Number(n) => n.as_f64().filter(|f| f.fract() == 0.0),
            _ => None,
        };
        let Some(ms) = whole else {
            self.wrong_type(at, "an integer number of milliseconds", value);
            return None;
        };
        if (0.0..=f64::from(MAX_DELAY_MS)).contains(&ms) {
            Some(ms as u32)
        } else {
            self.push(
                Code::DelayOutOfRange,
                at,
                format!("delay_ms {value} is outside 0…{MAX_DELAY_MS} (30 seconds of simulated delay at most)"),
            );
            None
        }
    }
}

/// Calls `f` on every expression a variant answers or writes — its own
/// result, `set_state` and writes, then each rule's — in that order.
fn each_expr(
    result: &mut Answer,
    set_state: &mut StateUpdates,
    writes: &mut [Write],
    rules: &mut [CompiledRule],
    f: &mut dyn FnMut(&mut Expr),
) {
    let own = result
        .result_mut()
        .into_iter()
        .chain(set_state.iter_mut().map(|(_, e)| e))
        .chain(writes.iter_mut().flat_map(Write::exprs_mut));
    let rules = rules.iter_mut().flat_map(|r| {
        let updates = r.set_state.iter_mut().flat_map(|u| u.iter_mut());
        let writes = r.writes.iter_mut().flat_map(|w| w.iter_mut());
        r.result
            .iter_mut()
            .filter_map(Answer::result_mut)
            .chain(updates.map(|(_, e)| e))
            .chain(writes.flat_map(Write::exprs_mut))
    });
    own.chain(rules).for_each(f);
}
