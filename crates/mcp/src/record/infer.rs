//! From one operation's recorded calls to a mock definition: which result
//! leaves echo the input (`$input`), which inputs decide the result
//! (first-match rules with `eq`), and the calls as examples. Pure: no I/O;
//! the caller checks what this builds against the contract.

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use toolmock_contract::canonical_json;

/// The most examples a definition holds (the mock language's limit).
const MAX_EXAMPLES: usize = 100;
/// The most input paths one rule tests before every leaf is used.
const MAX_KEY_PATHS: usize = 3;

/// One recorded call: the arguments and the structured result.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The call's arguments.
    pub input: Value,
    /// Its `structuredContent`.
    pub result: Value,
}

/// How the definition tells its results apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One result for every call.
    Single,
    /// One variant whose first-match rules test the inputs that decide the result.
    Rules,
    /// One variant per result: the same input gave different results, so
    /// the input cannot decide (a test case chooses the variant).
    Variants,
}

/// The definition built, and how.
#[derive(Debug, Clone)]
pub struct Inferred {
    /// The version-1 definition.
    pub definition: Value,
    /// How its results are told apart.
    pub shape: Shape,
    /// The dot paths of the inputs the rules test (for [`Shape::Rules`]).
    pub key_paths: Vec<String>,
    /// `(result path, input path)` of every echo written as `$input`.
    pub echoes: Vec<(String, String)>,
}

fn key(value: &Value) -> String {
    canonical_json(value).map_or_else(
        |_| value.to_string(),
        |b| String::from_utf8_lossy(&b).into_owned(),
    )
}

/// Every scalar leaf of `value` reachable by a mock-language path (keys
/// without dots, non-empty), with its dot path. `null` is not a leaf here:
/// echoing it proves nothing.
fn leaves<'v>(value: &'v Value, prefix: &str, out: &mut Vec<(String, &'v Value)>) {
    let join = |segment: &str| {
        if prefix.is_empty() {
            segment.to_owned()
        } else {
            format!("{prefix}.{segment}")
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if !k.is_empty() && !k.contains('.') {
                    leaves(v, &join(k), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, &join(&i.to_string()), out);
            }
        }
        Value::Null => {}
        scalar => out.push((prefix.to_owned(), scalar)),
    }
}

/// The value at a dot path, as the mock language resolves it.
fn resolve<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(value);
    }
    path.split('.').try_fold(value, |v, segment| match v {
        Value::Object(map) => map.get(segment),
        Value::Array(items) if segment == "0" || !segment.starts_with('0') => {
            segment.parse::<usize>().ok().and_then(|i| items.get(i))
        }
        _ => None,
    })
}

/// The result leaves the recording proves to be echoes of one input path:
/// wherever the result leaf is present, the input path holds an equal value,
/// it held at least two different values across those calls, and no other
/// input path did the same (an ambiguous echo is left literal).
fn echoes(observations: &[Observation]) -> Vec<(String, String)> {
    let mut result_paths: Vec<String> = Vec::new();
    let mut input_paths: Vec<String> = Vec::new();
    for o in observations {
        let mut found = Vec::new();
        leaves(&o.result, "", &mut found);
        for (p, _) in found {
            if !result_paths.contains(&p) {
                result_paths.push(p);
            }
        }
        let mut found = Vec::new();
        leaves(&o.input, "", &mut found);
        for (p, _) in found {
            if !input_paths.contains(&p) {
                input_paths.push(p);
            }
        }
    }
    let mut proven = Vec::new();
    for r in &result_paths {
        let mut candidates = Vec::new();
        for p in &input_paths {
            let mut distinct: Vec<String> = Vec::new();
            let holds = observations.iter().all(|o| match resolve(&o.result, r) {
                None => true,
                Some(out) => match resolve(&o.input, p) {
                    Some(input) if input == out => {
                        let k = key(input);
                        if !distinct.contains(&k) {
                            distinct.push(k);
                        }
                        true
                    }
                    _ => false,
                },
            });
            if holds && distinct.len() >= 2 {
                candidates.push(p.clone());
            }
        }
        if let [only] = candidates.as_slice() {
            proven.push((r.clone(), only.clone()));
        }
    }
    proven
}

/// The result with each proven echo written as a `$input` reference.
fn template(result: &Value, echoes: &[(String, String)], at: &str) -> Value {
    if let Some((_, input)) = echoes.iter().find(|(r, _)| r == at) {
        return json!({ "$input": input });
    }
    let join = |segment: &str| {
        if at.is_empty() {
            segment.to_owned()
        } else {
            format!("{at}.{segment}")
        }
    };
    match result {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), template(v, echoes, &join(k))))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| template(v, echoes, &join(&i.to_string())))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The smallest set of input leaf paths (up to [`MAX_KEY_PATHS`], else all
/// of them) whose values tell apart every two calls with different
/// templates; `None` when even the whole input cannot.
fn key_paths(observations: &[Observation], templates: &[String]) -> Option<Vec<String>> {
    let mut all: Vec<String> = Vec::new();
    for o in observations {
        let mut found = Vec::new();
        leaves(&o.input, "", &mut found);
        for (p, _) in found {
            if !all.contains(&p) {
                all.push(p);
            }
        }
    }
    // Fewest distinct values first (a category decides more plausibly
    // than an identifier), then by name.
    let distinct_values = |p: &String| {
        let mut values: Vec<Option<String>> = observations
            .iter()
            .map(|o| resolve(&o.input, p).map(key))
            .collect();
        values.sort();
        values.dedup();
        values.len()
    };
    all.sort_by(|a, b| {
        distinct_values(a)
            .cmp(&distinct_values(b))
            .then_with(|| a.cmp(b))
    });
    let decides = |paths: &[String]| {
        let mut seen: BTreeMap<Vec<Option<String>>, &String> = BTreeMap::new();
        observations.iter().zip(templates).all(|(o, t)| {
            let projection: Vec<Option<String>> = paths
                .iter()
                .map(|p| resolve(&o.input, p).map(key))
                .collect();
            *seen.entry(projection).or_insert(t) == t
        })
    };
    // The whole input decides, or nothing does.
    let whole: Vec<String> = observations.iter().map(|o| key(&o.input)).collect();
    let mut by_input: BTreeMap<&String, &String> = BTreeMap::new();
    if !whole
        .iter()
        .zip(templates)
        .all(|(i, t)| *by_input.entry(i).or_insert(t) == t)
    {
        return None;
    }
    let mut chosen: Vec<String> = Vec::new();
    for size in 1..=MAX_KEY_PATHS.min(all.len()) {
        if combinations(&all, size, &mut chosen, 0, &decides) {
            return Some(chosen);
        }
    }
    decides(&all).then_some(all)
}

/// Tries every `size`-subset of `all` (in order) into `chosen`; true when
/// one decides.
fn combinations(
    all: &[String],
    size: usize,
    chosen: &mut Vec<String>,
    from: usize,
    decides: &dyn Fn(&[String]) -> bool,
) -> bool {
    if chosen.len() == size {
        return decides(chosen);
    }
    for i in from..all.len() {
        chosen.push(all[i].clone());
        if combinations(all, size, chosen, i + 1, decides) {
            return true;
        }
        chosen.pop();
    }
    false
}

/// Builds the definition of one operation from its distinct observations
/// (at least one).
pub fn infer(observations: &[Observation]) -> Inferred {
    let echoes = echoes(observations);
    let templates: Vec<Value> = observations
        .iter()
        .map(|o| template(&o.result, &echoes, ""))
        .collect();
    let template_keys: Vec<String> = templates.iter().map(key).collect();
    // Distinct templates in first-seen order, with their call counts.
    let mut distinct: Vec<(String, usize)> = Vec::new();
    for k in &template_keys {
        match distinct.iter_mut().find(|(d, _)| d == k) {
            Some((_, n)) => *n += 1,
            None => distinct.push((k.clone(), 1)),
        }
    }
    let first_of = |k: &str| {
        template_keys
            .iter()
            .position(|t| t == k)
            .map_or(Value::Null, |i| templates[i].clone())
    };
    let (variants, shape, key_paths, variant_of) = if distinct.len() == 1 {
        let mut variants = Map::new();
        variants.insert("recorded".into(), json!({"result": templates[0]}));
        (
            variants,
            Shape::Single,
            Vec::new(),
            vec![0; observations.len()],
        )
    } else if let Some(paths) = key_paths(observations, &template_keys) {
        // The most frequent result answers when no rule matches.
        let default = distinct
            .iter()
            .enumerate()
            .max_by_key(|(i, (_, n))| (*n, std::cmp::Reverse(*i)))
            .map_or(String::new(), |(_, (k, _))| k.clone());
        let mut rules = Vec::new();
        let mut ruled: Vec<Vec<Option<String>>> = Vec::new();
        for (o, k) in observations.iter().zip(&template_keys) {
            if *k == default {
                continue;
            }
            let projection: Vec<Option<String>> = paths
                .iter()
                .map(|p| resolve(&o.input, p).map(key))
                .collect();
            if ruled.contains(&projection) {
                continue;
            }
            ruled.push(projection);
            let when: Vec<Value> = paths
                .iter()
                .map(|p| match resolve(&o.input, p) {
                    Some(v) => json!({"source": "input", "path": p, "op": "eq", "value": v}),
                    None => json!({"source": "input", "path": p, "op": "exists", "value": false}),
                })
                .collect();
            rules.push(json!({"when": when, "result": first_of(k)}));
        }
        let mut variant = Map::new();
        variant.insert("result".into(), first_of(&default));
        variant.insert("rules".into(), Value::Array(rules));
        let mut variants = Map::new();
        variants.insert("recorded".into(), Value::Object(variant));
        (variants, Shape::Rules, paths, vec![0; observations.len()])
    } else {
        let mut variants = Map::new();
        for (i, (k, _)) in distinct.iter().enumerate() {
            variants.insert(format!("result_{}", i + 1), json!({"result": first_of(k)}));
        }
        let variant_of = template_keys
            .iter()
            .map(|k| distinct.iter().position(|(d, _)| d == k).unwrap_or(0))
            .collect();
        (variants, Shape::Variants, Vec::new(), variant_of)
    };
    let names: Vec<String> = variants.keys().cloned().collect();
    let name_of = |i: usize| match shape {
        Shape::Variants => format!("result_{}", i + 1),
        _ => names.first().cloned().unwrap_or_default(),
    };
    // Every variant's first call, then the others in order, up to the limit.
    let mut order: Vec<usize> = Vec::new();
    for v in 0..distinct.len() {
        if let Some(i) = variant_of.iter().position(|x| *x == v)
            && !order.contains(&i)
        {
            order.push(i);
        }
    }
    for i in 0..observations.len() {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    order.truncate(MAX_EXAMPLES);
    order.sort_unstable();
    let examples: Vec<Value> = order
        .iter()
        .map(|&i| {
            json!({"variant": name_of(variant_of[i]), "input": observations[i].input,
                   "expected": observations[i].result})
        })
        .collect();
    let default_variant = match shape {
        Shape::Variants => "result_1".to_owned(),
        _ => "recorded".to_owned(),
    };
    Inferred {
        definition: json!({
            "schema_version": 1,
            "description": "Emitted by toolmock record emit from recorded calls.",
            "default_variant": default_variant,
            "variants": variants,
            "examples": examples,
        }),
        shape,
        key_paths,
        echoes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(input: Value, result: Value) -> Observation {
        Observation { input, result }
    }

    #[test]
    fn an_echo_seen_with_two_values_becomes_an_input_reference() {
        let inferred = infer(&[
            obs(
                json!({"day": "mon", "n": 1}),
                json!({"ref": "R-1", "day": "mon"}),
            ),
            obs(
                json!({"day": "tue", "n": 1}),
                json!({"ref": "R-1", "day": "tue"}),
            ),
        ]);
        assert_eq!(inferred.shape, Shape::Single);
        assert_eq!(
            inferred.definition["variants"]["recorded"]["result"],
            json!({"ref": "R-1", "day": {"$input": "day"}})
        );
        assert_eq!(inferred.echoes, [("day".to_owned(), "day".to_owned())]);
    }

    #[test]
    fn one_call_proves_no_echo() {
        let inferred = infer(&[obs(json!({"day": "mon"}), json!({"day": "mon"}))]);
        assert_eq!(
            inferred.definition["variants"]["recorded"]["result"],
            json!({"day": "mon"})
        );
    }

    #[test]
    fn the_deciding_input_becomes_eq_rules() {
        let inferred = infer(&[
            obs(json!({"city": "A", "unit": "c"}), json!({"t": 1})),
            obs(json!({"city": "B", "unit": "c"}), json!({"t": 2})),
            obs(json!({"city": "A", "unit": "f"}), json!({"t": 1})),
        ]);
        assert_eq!(inferred.shape, Shape::Rules);
        assert_eq!(inferred.key_paths, ["city"]);
        let variant = &inferred.definition["variants"]["recorded"];
        assert_eq!(variant["result"], json!({"t": 1}));
        assert_eq!(
            variant["rules"],
            json!([{"when": [{"source": "input", "path": "city", "op": "eq", "value": "B"}], "result": {"t": 2}}])
        );
        assert_eq!(inferred.definition["examples"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn the_same_input_with_different_results_gives_variants() {
        let inferred = infer(&[
            obs(json!({}), json!({"n": 1})),
            obs(json!({}), json!({"n": 2})),
        ]);
        assert_eq!(inferred.shape, Shape::Variants);
        assert_eq!(
            inferred.definition["variants"],
            json!({"result_1": {"result": {"n": 1}}, "result_2": {"result": {"n": 2}}})
        );
        assert_eq!(inferred.definition["examples"][1]["variant"], "result_2");
    }
}
