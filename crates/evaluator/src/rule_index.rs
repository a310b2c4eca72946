//! The rule index: a shortcut through first-match order for variants
//! whose rules test one path against many strings. It skips only rules
//! that cannot hold, so a call answers what a scan in order answers.

use crate::conditions::condition::{CompiledCondition, Test};
use crate::paths::dotted::Path;
use crate::scope::Source;
use serde_json::Value;

/// A shortcut through first-match order (docs/spec.md §6 step 2) for the common
/// shape where many rules test one path with `eq` against a string: a rule
/// keyed under the string `k` holds only for a call whose value at that path
/// is exactly `k` (a string equals nothing but the same string), so a call
/// looks its value up once and tries, in order, only the rules keyed under it
/// and the rules without such a test. Every rule tried is still tried whole,
/// so the answer is the linear scan's.
#[derive(Debug, Clone)]
pub(crate) struct RuleIndex {
    pub(crate) source: Source,
    pub(crate) path: Path,
    /// The memo slot of the indexed path (the conditions reading it share it).
    pub(crate) slot: usize,
    /// Sorted by string; each list of rule indices ascending.
    keyed: Box<[KeyedRules]>,
    /// The rules without an `eq` string test on the path, ascending.
    unkeyed: Box<[u32]>,
}

/// A string and the rules (ascending) that test the indexed path against it.
type KeyedRules = (Box<str>, Box<[u32]>);

/// Variants with fewer keyed rules are scanned in order: the index pays only
/// when it lets a call skip several rules.
const MIN_INDEXED_RULES: usize = 8;

impl RuleIndex {
    /// The index for `rules` (slots already assigned), or `None` when no path
    /// is tested with `eq` against a string by at least [`MIN_INDEXED_RULES`] rules.
    pub(crate) fn build(
        rules: &[&[CompiledCondition]],
        paths: &[(Source, String)],
    ) -> Option<RuleIndex> {
        fn key_of(when: &[CompiledCondition], slot: usize) -> Option<&str> {
            when.iter().find_map(|c| match &c.test {
                Test::Eq(Value::String(s)) if c.slot == slot => Some(s.as_str()),
                _ => None,
            })
        }
        // The discriminating path is the one most rules key on. The empty
        // path is never chosen: on state it is the whole state, never a string.
        let (slot, count) = paths
            .iter()
            .enumerate()
            .filter(|(_, (_, path))| !path.is_empty())
            .map(|(slot, _)| {
                (
                    slot,
                    rules
                        .iter()
                        .filter(|when| key_of(when, slot).is_some())
                        .count(),
                )
            })
            .max_by_key(|&(slot, count)| (count, std::cmp::Reverse(slot)))?;
        if count < MIN_INDEXED_RULES {
            return None;
        }
        let probe = rules
            .iter()
            .flat_map(|when| when.iter())
            .find(|c| c.slot == slot)?;
        let mut keyed: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
        let mut unkeyed = Vec::new();
        for (i, when) in rules.iter().enumerate() {
            let i = u32::try_from(i).ok()?;
            match key_of(when, slot) {
                Some(key) => keyed.entry(key).or_default().push(i),
                None => unkeyed.push(i),
            }
        }
        Some(RuleIndex {
            source: probe.source,
            path: probe.path.clone(),
            slot,
            keyed: keyed
                .into_iter()
                .map(|(k, v)| (k.into(), v.into_boxed_slice()))
                .collect(),
            unkeyed: unkeyed.into_boxed_slice(),
        })
    }

    /// The rules that can hold for a call whose value at the path is
    /// `found`, in their original order.
    pub(crate) fn candidates(&self, found: Option<&Value>) -> impl Iterator<Item = usize> + '_ {
        let keyed: &[u32] = match found {
            Some(Value::String(s)) => self
                .keyed
                .binary_search_by(|(k, _)| (**k).cmp(s.as_str()))
                .map_or(&[], |at| &self.keyed[at].1),
            _ => &[],
        };
        Merged {
            a: keyed,
            b: &self.unkeyed,
        }
    }
}

/// Two ascending lists of rule indices, merged in ascending order.
struct Merged<'a> {
    a: &'a [u32],
    b: &'a [u32],
}

impl Iterator for Merged<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let next = match (self.a.split_first(), self.b.split_first()) {
            (Some((&x, rest)), Some((&y, _))) if x < y => {
                self.a = rest;
                x
            }
            (_, Some((&y, rest))) => {
                self.b = rest;
                y
            }
            (Some((&x, rest)), None) => {
                self.a = rest;
                x
            }
            (None, None) => return None,
        };
        usize::try_from(next).ok()
    }
}
