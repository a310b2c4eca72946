//! The walker: derives a value from one schema node by node, and says at
//! which keyword it cannot.

use super::errors::DraftCode;
use super::{MAX_DEPTH, MAX_SIZE};
use crate::pointer::{self, type_name};
use serde_json::{Map, Number, Value, json};
use toolmock_contract::Problem;

/// Derives a value from one schema, appending problems with pointers under `base`.
pub(super) fn derive(
    schema: &Value,
    base: &str,
    problems: &mut Vec<Problem<DraftCode>>,
) -> Option<Value> {
    let mut generator = Gen {
        root: schema,
        base,
        problems: Vec::new(),
        refs: Vec::new(),
        depth: 0,
    };
    let value = generator.value(schema, "");
    problems.append(&mut generator.problems);
    value
}

/// Keywords whose presence at a node that is built from its type means no
/// derived value can honestly be claimed to satisfy the schema.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("pattern", "a regular expression constrains the string"),
    ("not", "a negated schema"),
    ("if", "a conditional schema (if/then/else)"),
    (
        "dependentSchemas",
        "schemas that depend on present properties",
    ),
    ("contains", "an array must contain a matching item"),
    ("propertyNames", "every property name is constrained"),
    ("$dynamicRef", "dynamic references"),
    ("$recursiveRef", "recursive references"),
];

/// The sample value of each string format the generator knows.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date" => "2026-01-15",
        "date-time" => "2026-01-15T09:30:00Z",
        "time" => "09:30:00Z",
        "email" | "idn-email" => "user@example.com",
        "uuid" => "3f2c8a4e-9b1d-4c7e-8f6a-2d5b7c9e1a30",
        "uri" | "iri" => "https://example.com/resource",
        "uri-reference" | "iri-reference" => "/resource",
        "uri-template" => "https://example.com/{id}",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.10",
        "ipv6" => "2001:db8::10",
        "duration" => "P1D",
        "json-pointer" => "/example",
        "relative-json-pointer" => "0",
        "regex" => "^example$",
        _ => return None,
    })
}

/// Formats whose sample can be lengthened by padding (before, after).
fn format_padding(format: &str, sample: &str, extra: usize) -> Option<String> {
    let pad = "x".repeat(extra);
    match format {
        "email" | "idn-email" => Some(format!("user{pad}@example.com")),
        "uri" | "iri" | "uri-reference" | "iri-reference" | "json-pointer" => {
            Some(format!("{sample}{pad}"))
        }
        _ => None,
    }
}

struct Gen<'r> {
    root: &'r Value,
    base: &'r str,
    problems: Vec<Problem<DraftCode>>,
    /// Pointers of the `$ref` targets being expanded.
    refs: Vec<String>,
    depth: usize,
}

impl<'r> Gen<'r> {
    fn at(&self, ptr: &str) -> String {
        format!("{}{}", self.base, ptr)
    }

    /// Runs `f` speculatively: on failure its problems are dropped.
    fn attempt<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Result<T, Vec<Problem<DraftCode>>> {
        let mark = self.problems.len();
        match f(self) {
            Some(v) => {
                self.problems.truncate(mark);
                Ok(v)
            }
            None => Err(self.problems.split_off(mark)),
        }
    }

    fn value(&mut self, schema: &Value, ptr: &str) -> Option<Value> {
        if self.depth >= MAX_DEPTH {
            self.problems.push(Problem::new(
                DraftCode::TooDeep,
                self.at(ptr),
                format!("the schema nests deeper than {MAX_DEPTH} levels"),
            ));
            return None;
        }
        self.depth += 1;
        let out = self.value_inner(schema, ptr);
        self.depth -= 1;
        out
    }

    fn value_inner(&mut self, schema: &Value, ptr: &str) -> Option<Value> {
        let map = match schema {
            Value::Bool(true) => return Some(Value::Null),
            Value::Bool(false) => {
                self.problems.push(Problem::new(
                    DraftCode::Unsatisfiable,
                    self.at(ptr),
                    format!(
                        "unsatisfiable: {detail}",
                        detail = "the schema false accepts nothing"
                    ),
                ));
                return None;
            }
            Value::Object(map) => map,
            other => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(ptr),
                    format!(
                        "not a usable JSON Schema: a schema must be an object or a boolean, found {}",
                        type_name(other)
                    ),
                ));
                return None;
            }
        };
        // 1. Values the schema itself offers.
        if let Some(v) = map.get("default") {
            return Some(v.clone());
        }
        if let Some(Value::Array(examples)) = map.get("examples")
            && let Some(v) = examples.first()
        {
            return Some(v.clone());
        }
        if let Some(v) = map.get("const") {
            return Some(v.clone());
        }
        if let Some(e) = map.get("enum") {
            return self.enum_member(map, e, ptr);
        }
        // 2. Keywords no built value can honestly satisfy.
        let mut unsupported = false;
        for (keyword, reason) in UNSUPPORTED {
            if map.contains_key(*keyword) {
                self.problems.push(Problem::new(
                    DraftCode::UnsupportedKeyword,
                    self.at(&pointer::push(ptr, keyword)),
                    format!(
                        "{keyword} cannot be satisfied by a derived value: {reason}",
                        keyword = keyword,
                        reason = reason
                    ),
                ));
                unsupported = true;
            }
        }
        if let Some(Value::Object(deps)) = map.get("dependencies")
            && deps.values().any(|d| d.is_object() || d.is_boolean())
        {
            self.problems.push(Problem::new(
                DraftCode::UnsupportedKeyword,
                self.at(&pointer::push(ptr, "dependencies")),
                format!(
                    "{keyword} cannot be satisfied by a derived value: {reason}",
                    keyword = "dependencies",
                    reason = "schemas that depend on present properties"
                ),
            ));
            unsupported = true;
        }
        if map.contains_key("patternProperties") && !map.contains_key("properties") {
            self.problems.push(Problem::new(
                DraftCode::UnsupportedKeyword,
                self.at(&pointer::push(ptr, "patternProperties")),
                format!(
                    "{keyword} cannot be satisfied by a derived value: {reason}",
                    keyword = "patternProperties",
                    reason = "an object described only by name patterns has no derivable members"
                ),
            ));
            unsupported = true;
        }
        if unsupported {
            return None;
        }
        // 3. References.
        if let Some(r) = map.get("$ref") {
            return self.reference(r, ptr);
        }
        // 4. Combinators.
        if let Some(all) = map.get("allOf") {
            return self.all_of(map, all, ptr);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(branches) = map.get(keyword) {
                return self.branches(branches, &pointer::push(ptr, keyword));
            }
        }
        // 5. Built from the type.
        self.typed(map, ptr)
    }

    fn enum_member(&mut self, map: &Map<String, Value>, e: &Value, ptr: &str) -> Option<Value> {
        let e_ptr = pointer::push(ptr, "enum");
        let Value::Array(members) = e else {
            self.problems.push(Problem::new(
                DraftCode::MalformedSchema,
                self.at(&e_ptr),
                format!(
                    "not a usable JSON Schema: {message}",
                    message = "enum must be an array"
                ),
            ));
            return None;
        };
        let types = declared_types(map);
        let found = members.iter().find(|m| {
            types
                .as_ref()
                .is_none_or(|ts| ts.iter().any(|t| type_matches(t, m)))
        });
        match found {
            Some(v) => Some(v.clone()),
            None if members.is_empty() => {
                self.problems.push(Problem::new(
                    DraftCode::Unsatisfiable,
                    self.at(&e_ptr),
                    format!("unsatisfiable: {detail}", detail = "the enum is empty"),
                ));
                None
            }
            None => {
                self.problems.push(Problem::new(
                    DraftCode::ContradictoryBounds,
                    self.at(&e_ptr),
                    format!(
                        "contradictory bounds: {detail}",
                        detail = "no enum member has the declared type"
                    ),
                ));
                None
            }
        }
    }

    fn reference(&mut self, r: &Value, ptr: &str) -> Option<Value> {
        let r_ptr = self.at(&pointer::push(ptr, "$ref"));
        let Value::String(reference) = r else {
            self.problems.push(Problem::new(
                DraftCode::MalformedSchema,
                r_ptr,
                format!(
                    "not a usable JSON Schema: {message}",
                    message = "$ref must be a string"
                ),
            ));
            return None;
        };
        let Some(fragment) = reference.strip_prefix('#') else {
            self.problems.push(Problem::new(DraftCode::RemoteRef, r_ptr, format!("the $ref {reference:?} points outside the schema (remote references are never fetched)")));
            return None;
        };
        let resolved = if fragment.is_empty() || fragment.starts_with('/') {
            let decoded = percent_decode(fragment);
            self.root.pointer(&decoded).map(|t| (t, decoded))
        } else {
            find_anchor(self.root, fragment, "")
        };
        let Some((target, target_ptr)) = resolved else {
            self.problems.push(Problem::new(
                DraftCode::UnresolvableRef,
                r_ptr,
                format!("the $ref {reference:?} does not resolve inside the schema"),
            ));
            return None;
        };
        if self.refs.contains(&target_ptr) {
            self.problems.push(Problem::new(DraftCode::CyclicRef, r_ptr, format!("the $ref {reference:?} is cyclic on a required path; no finite value can be derived")));
            return None;
        }
        self.refs.push(target_ptr.clone());
        let out = self.value(target, &target_ptr);
        self.refs.pop();
        out
    }

    fn all_of(&mut self, map: &Map<String, Value>, all: &Value, ptr: &str) -> Option<Value> {
        let a_ptr = pointer::push(ptr, "allOf");
        let Value::Array(parts) = all else {
            self.problems.push(Problem::new(
                DraftCode::MalformedSchema,
                self.at(&a_ptr),
                format!(
                    "not a usable JSON Schema: {message}",
                    message = "allOf must be an array"
                ),
            ));
            return None;
        };
        let mut own = map.clone();
        own.remove("allOf");
        let mut values = Vec::new();
        let mut failed = false;
        if own.keys().any(|k| is_assertion(k)) {
            match self.value(&Value::Object(own), ptr) {
                Some(v) => values.push(v),
                None => failed = true,
            }
        }
        for (i, part) in parts.iter().enumerate() {
            match self.value(part, &pointer::index(&a_ptr, i)) {
                Some(v) => values.push(v),
                None => failed = true,
            }
        }
        if failed {
            return None;
        }
        let mut merged: Option<Value> = None;
        for v in values {
            merged = Some(match (merged, v) {
                (None, v) => v,
                (Some(Value::Object(mut acc)), Value::Object(more)) => {
                    for (k, v) in more {
                        acc.entry(k).or_insert(v);
                    }
                    Value::Object(acc)
                }
                // Unconstrained parts (null) give way to constrained ones.
                (Some(Value::Null), v) => v,
                (Some(acc), _) => acc,
            });
        }
        Some(merged.unwrap_or(Value::Null))
    }

    fn branches(&mut self, branches: &Value, b_ptr: &str) -> Option<Value> {
        let Value::Array(items) = branches else {
            self.problems.push(Problem::new(
                DraftCode::MalformedSchema,
                self.at(b_ptr),
                format!(
                    "not a usable JSON Schema: {message}",
                    message = "anyOf/oneOf must be an array"
                ),
            ));
            return None;
        };
        // Non-null branches first: a nullable value gets a real value.
        let mut order: Vec<usize> = (0..items.len())
            .filter(|&i| !is_null_schema(&items[i]))
            .collect();
        order.extend((0..items.len()).filter(|&i| is_null_schema(&items[i])));
        let mut failures = Vec::new();
        for i in order {
            match self.attempt(|g| g.value(&items[i], &pointer::index(b_ptr, i))) {
                Ok(v) => return Some(v),
                Err(problems) => failures.extend(problems),
            }
        }
        if failures.is_empty() {
            failures.push(Problem::new(
                DraftCode::Unsatisfiable,
                self.at(b_ptr),
                format!(
                    "unsatisfiable: {detail}",
                    detail = "no branch to choose from"
                ),
            ));
        }
        self.problems.extend(failures);
        None
    }

    fn typed(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let types = declared_types(map).unwrap_or_else(|| vec![inferred_type(map).to_owned()]);
        let mut order: Vec<&String> = types.iter().filter(|t| t.as_str() != "null").collect();
        order.extend(types.iter().filter(|t| t.as_str() == "null"));
        if order.len() == 1 {
            return self.of_type(map, order[0], ptr);
        }
        let mut failures = Vec::new();
        for t in order {
            match self.attempt(|g| g.of_type(map, t, ptr)) {
                Ok(v) => return Some(v),
                Err(problems) => failures.extend(problems),
            }
        }
        if failures.is_empty() {
            failures.push(Problem::new(
                DraftCode::Unsatisfiable,
                self.at(&pointer::push(ptr, "type")),
                format!("unsatisfiable: {detail}", detail = "the type list is empty"),
            ));
        }
        self.problems.extend(failures);
        None
    }

    fn of_type(&mut self, map: &Map<String, Value>, t: &str, ptr: &str) -> Option<Value> {
        match t {
            "null" => Some(Value::Null),
            "boolean" => Some(Value::Bool(true)),
            "string" => self.string(map, ptr),
            "integer" => self.integer(map, ptr),
            "number" => self.number(map, ptr),
            "array" => self.array(map, ptr),
            "object" => self.object(map, ptr),
            "any" => Some(Value::Null),
            other => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(&pointer::push(ptr, "type")),
                    format!("not a usable JSON Schema: unknown type {other:?}"),
                ));
                None
            }
        }
    }

    /// The value of a size keyword (`minLength`, …), refusing sizes no draft can hold.
    fn size(&mut self, map: &Map<String, Value>, ptr: &str, keyword: &str) -> Option<usize> {
        let n = map.get(keyword).and_then(Value::as_u64).unwrap_or(0);
        if n > MAX_SIZE {
            self.problems.push(Problem::new(
                DraftCode::TooLarge,
                self.at(&pointer::push(ptr, keyword)),
                format!(
                    "{requested} is more than a draft definition can hold (100 KB)",
                    requested = n
                ),
            ));
            return None;
        }
        usize::try_from(n).ok()
    }

    fn contradiction(&mut self, ptr: &str, keyword: &str, detail: String) {
        self.problems.push(Problem::new(
            DraftCode::ContradictoryBounds,
            self.at(&pointer::push(ptr, keyword)),
            format!("contradictory bounds: {detail}"),
        ));
    }

    /// A length or item-count range: `None` (with a problem reported) when
    /// the minimum is unusable or exceeds the maximum.
    fn size_bounds(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        min_keyword: &str,
        max_keyword: &str,
    ) -> Option<(usize, Option<usize>)> {
        let min = self.size(map, ptr, min_keyword)?;
        let max = map
            .get(max_keyword)
            .and_then(Value::as_u64)
            .map(|m| m as usize);
        if let Some(max) = max
            && min > max
        {
            self.contradiction(
                ptr,
                min_keyword,
                format!("{min_keyword} {min} exceeds {max_keyword} {max}"),
            );
            return None;
        }
        Some((min, max))
    }

    fn string(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let (min, max) = self.size_bounds(map, ptr, "minLength", "maxLength")?;
        let fits = |len: usize| len >= min && max.is_none_or(|m| len <= m);
        if let Some(Value::String(format)) = map.get("format")
            && let Some(sample) = format_sample(format)
        {
            let len = sample.chars().count();
            if fits(len) {
                return Some(json!(sample));
            }
            if len < min
                && let Some(padded) = format_padding(format, sample, min - len)
                && fits(padded.chars().count())
            {
                return Some(json!(padded));
            }
            self.problems.push(Problem::new(
                DraftCode::UnsupportedFormat,
                self.at(&pointer::push(ptr, "format")),
                format!(
                    "no value of format {format:?} can be derived: its sample {sample:?} does not fit minLength {min}{}",
                    max.map(|m| format!(" and maxLength {m}"))
                        .unwrap_or_default()
                ),
            ));
            return None;
        }
        // Formats the validator does not know are annotations only.
        let mut text = String::from("example");
        if text.len() < min {
            text.push_str(&"x".repeat(min - text.len()));
        }
        if let Some(max) = max {
            text.truncate(max);
        }
        Some(Value::String(text))
    }

    fn number_keyword(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        keyword: &str,
    ) -> Option<Option<f64>> {
        match map.get(keyword) {
            None => Some(None),
            Some(Value::Number(n)) => Some(n.as_f64()),
            // Draft 4's boolean exclusive bounds modify minimum/maximum.
            Some(Value::Bool(_)) if keyword.starts_with("exclusive") => Some(None),
            Some(other) => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(&pointer::push(ptr, keyword)),
                    format!(
                        "not a usable JSON Schema: {keyword} must be a number, found {}",
                        type_name(other)
                    ),
                ));
                None
            }
        }
    }

    /// The bounds of a number: (lower, lower exclusive, upper, upper exclusive).
    fn bounds(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Bounds> {
        let minimum = self.number_keyword(map, ptr, "minimum")?;
        let maximum = self.number_keyword(map, ptr, "maximum")?;
        let ex_min = self.number_keyword(map, ptr, "exclusiveMinimum")?;
        let ex_max = self.number_keyword(map, ptr, "exclusiveMaximum")?;
        let draft4_ex_min = map.get("exclusiveMinimum") == Some(&Value::Bool(true));
        let draft4_ex_max = map.get("exclusiveMaximum") == Some(&Value::Bool(true));
        let mut lo: Option<(f64, bool, &'static str)> =
            minimum.map(|m| (m, draft4_ex_min, "minimum"));
        if let Some(x) = ex_min
            && lo.is_none_or(|(m, _, _)| x >= m)
        {
            lo = Some((x, true, "exclusiveMinimum"));
        }
        let mut hi: Option<(f64, bool, &'static str)> =
            maximum.map(|m| (m, draft4_ex_max, "maximum"));
        if let Some(x) = ex_max
            && hi.is_none_or(|(m, _, _)| x <= m)
        {
            hi = Some((x, true, "exclusiveMaximum"));
        }
        let multiple = match self.number_keyword(map, ptr, "multipleOf")? {
            Some(m) if m > 0.0 && m.is_finite() => Some(m),
            Some(_) => {
                self.problems.push(Problem::new(
                    DraftCode::MalformedSchema,
                    self.at(&pointer::push(ptr, "multipleOf")),
                    format!(
                        "not a usable JSON Schema: {message}",
                        message = "multipleOf must be greater than 0"
                    ),
                ));
                return None;
            }
            None => None,
        };
        Some(Bounds { lo, hi, multiple })
    }

    fn integer(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let b = self.bounds(map, ptr)?;
        let lo =
            b.lo.map(|(x, ex, _)| if ex { x.floor() + 1.0 } else { x.ceil() });
        let hi =
            b.hi.map(|(x, ex, _)| if ex { x.ceil() - 1.0 } else { x.floor() });
        let step = match b.multiple {
            None => 1.0,
            Some(m) if m.fract() == 0.0 => m,
            Some(m) => match (1..=1000u32).map(f64::from).find(|q| {
                let r = q / m;
                (r - r.round()).abs() < 1e-9
            }) {
                Some(q) => q,
                None => {
                    self.problems.push(Problem::new(
                        DraftCode::UnsupportedKeyword,
                        self.at(&pointer::push(ptr, "multipleOf")),
                        format!(
                            "multipleOf cannot be satisfied by a derived value: no small integer is a multiple of {m}"
                        ),
                    ));
                    return None;
                }
            },
        };
        let k = self.pick_multiple(lo, hi, step, &b, ptr)?;
        let v = k * step;
        if v.abs() > 9_007_199_254_740_992.0 {
            let keyword = b.lo.or(b.hi).map(|(_, _, k)| k).unwrap_or("minimum");
            self.contradiction(ptr, keyword, "the bounds lie beyond ±2^53".into());
            return None;
        }
        Some(Value::Number(Number::from(v as i64)))
    }

    /// The multiplier `k` of `step` to use: 1 when in range, else the
    /// nearest bound.
    fn pick_multiple(
        &mut self,
        lo: Option<f64>,
        hi: Option<f64>,
        step: f64,
        b: &Bounds,
        ptr: &str,
    ) -> Option<f64> {
        let kmin = lo.map(|l| (l / step).ceil());
        let kmax = hi.map(|h| (h / step).floor());
        // 1 × step when it lies in range (a count of 1 reads better than 0),
        // else the bound nearest to it.
        let k = match (kmin, kmax) {
            (a, z) if a.is_none_or(|a| a <= 1.0) && z.is_none_or(|z| z >= 1.0) => 1.0,
            (Some(a), _) if a > 1.0 => a,
            (_, Some(z)) => z,
            (Some(a), None) => a,
            (None, None) => 1.0,
        };
        if let (Some(a), Some(z)) = (kmin, kmax)
            && a > z
        {
            let keyword = b.lo.map(|(_, _, k)| k).unwrap_or("minimum");
            let detail = match b.multiple {
                Some(m) => format!("no multiple of {m} lies between the lower and upper bounds"),
                None => "the lower bound exceeds the upper bound".into(),
            };
            self.contradiction(ptr, keyword, detail);
            return None;
        }
        Some(k)
    }

    fn number(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let b = self.bounds(map, ptr)?;
        if let (Some((l, lex, lk)), Some((h, hex, _))) = (b.lo, b.hi)
            && (l > h || (l == h && (lex || hex)))
        {
            self.contradiction(
                ptr,
                lk,
                format!("the lower bound {l} is not below the upper bound {h}"),
            );
            return None;
        }
        match b.multiple {
            Some(m) => {
                let lo = b.lo.map(|(x, ex, _)| {
                    let k = (x / m).ceil();
                    if ex && k * m <= x { k + 1.0 } else { k }
                });
                let hi = b.hi.map(|(x, ex, _)| {
                    let k = (x / m).floor();
                    if ex && k * m >= x { k - 1.0 } else { k }
                });
                let k = self.pick_multiple(lo, hi, 1.0, &b, ptr)?;
                // Rounding to m's decimals can cross a bound written with more
                // digits: take the first candidate that lies within the bounds.
                let within = |v: f64| {
                    b.lo.is_none_or(|(x, ex, _)| if ex { v > x } else { v >= x })
                        && b.hi
                            .is_none_or(|(x, ex, _)| if ex { v < x } else { v <= x })
                };
                let ks = [k, k - 1.0, k + 1.0];
                let candidates = ks
                    .iter()
                    .map(|k| round_like(k * m, m))
                    .chain(ks.iter().map(|k| k * m));
                for v in candidates {
                    if within(v) {
                        return Some(number_value(v));
                    }
                }
                self.problems.push(Problem::new(
                    DraftCode::UnsupportedKeyword,
                    self.at(&pointer::push(ptr, "multipleOf")),
                    format!(
                        "multipleOf cannot be satisfied by a derived value: no multiple of {m} can be written exactly within the bounds"
                    ),
                ));
                None
            }
            None => {
                // An integer when one lies in range, else the midpoint.
                let lo =
                    b.lo.map(|(x, ex, _)| if ex { x.floor() + 1.0 } else { x.ceil() });
                let hi =
                    b.hi.map(|(x, ex, _)| if ex { x.ceil() - 1.0 } else { x.floor() });
                match (lo, hi) {
                    (Some(a), Some(z)) if a > z => {
                        let (l, _, _) = b.lo.unwrap_or((0.0, false, ""));
                        let (h, _, _) = b.hi.unwrap_or((0.0, false, ""));
                        Some(number_value((l + h) / 2.0))
                    }
                    (a, z) if a.is_none_or(|a| a <= 1.0) && z.is_none_or(|z| z >= 1.0) => {
                        Some(number_value(1.0))
                    }
                    (Some(a), _) if a > 1.0 => Some(number_value(a)),
                    (_, Some(z)) => Some(number_value(z)),
                    (Some(a), None) => Some(number_value(a)),
                    (None, None) => Some(number_value(1.0)),
                }
            }
        }
    }

    fn array(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let (min, max) = self.size_bounds(map, ptr, "minItems", "maxItems")?;
        let unique = map.get("uniqueItems") == Some(&Value::Bool(true));
        // Tuples: prefixItems (2020-12) or an array of items (older drafts).
        let (tuple, tuple_key, rest, rest_key) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(prefix)), items) => (Some(prefix), "prefixItems", items, "items"),
            (None, Some(Value::Array(prefix))) => (
                Some(prefix),
                "items",
                map.get("additionalItems"),
                "additionalItems",
            ),
            (_, items) => (None, "", items, "items"),
        };
        let mut out = Vec::new();
        if let Some(prefix) = tuple {
            let t_ptr = pointer::push(ptr, tuple_key);
            for (i, s) in prefix.iter().enumerate() {
                if max.is_some_and(|m| out.len() >= m) {
                    break;
                }
                let item_ptr = pointer::index(&t_ptr, i);
                if i < min {
                    out.push(self.value(s, &item_ptr)?);
                } else {
                    match self.attempt(|g| g.value(s, &item_ptr)) {
                        Ok(v) => out.push(v),
                        Err(_) => break,
                    }
                }
            }
            if out.len() >= min {
                return Some(Value::Array(out));
            }
        }
        let r_ptr = pointer::push(ptr, rest_key);
        let default_schema = Value::Bool(true);
        let item_schema = rest.unwrap_or(&default_schema);
        if item_schema == &Value::Bool(false) {
            if out.len() < min {
                self.contradiction(
                    ptr,
                    "minItems",
                    format!("minItems {min} needs items that {rest_key}: false forbids"),
                );
                return None;
            }
            return Some(Value::Array(out));
        }
        let wanted = if tuple.is_some() {
            min
        } else {
            min.max(1).min(max.unwrap_or(usize::MAX))
        };
        if wanted > out.len() {
            let needed = min > out.len();
            if unique && wanted - out.len() + usize::from(!out.is_empty()) > 1 {
                if needed {
                    self.problems.push(Problem::new(
                        DraftCode::UnsupportedKeyword,
                        self.at(&pointer::push(ptr, "uniqueItems")),
                        format!(
                            "uniqueItems cannot be satisfied by a derived value: {min} distinct items would be needed"
                        ),
                    ));
                    return None;
                }
                return Some(Value::Array(out));
            }
            let item = if needed {
                self.value(item_schema, &r_ptr)?
            } else {
                match self.attempt(|g| g.value(item_schema, &r_ptr)) {
                    Ok(v) => v,
                    Err(_) => return Some(Value::Array(out)),
                }
            };
            while out.len() < wanted {
                out.push(item.clone());
            }
        }
        Some(Value::Array(out))
    }

    fn object(&mut self, map: &Map<String, Value>, ptr: &str) -> Option<Value> {
        let empty = Map::new();
        let properties = match map.get("properties") {
            Some(Value::Object(p)) => p,
            _ => &empty,
        };
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let min = self.size(map, ptr, "minProperties")?;
        let max = map
            .get("maxProperties")
            .and_then(Value::as_u64)
            .map(|m| m as usize);
        if let Some(max) = max {
            if min > max {
                self.contradiction(
                    ptr,
                    "minProperties",
                    format!("minProperties {min} exceeds maxProperties {max}"),
                );
                return None;
            }
            if required.len() > max {
                self.contradiction(
                    ptr,
                    "maxProperties",
                    format!(
                        "{} required properties exceed maxProperties {max}",
                        required.len()
                    ),
                );
                return None;
            }
        }
        let additional = map.get("additionalProperties");
        let p_ptr = pointer::push(ptr, "properties");
        let mut out = Map::new();
        let mut failed = false;
        for (i, name) in required.iter().enumerate() {
            if out.contains_key(*name) {
                continue;
            }
            let value = if let Some(s) = properties.get(*name) {
                self.value(s, &pointer::push(&p_ptr, name))
            } else {
                match additional {
                    Some(Value::Bool(false)) => {
                        self.problems.push(Problem::new(DraftCode::ContradictoryBounds, self.at(&pointer::index(&pointer::push(ptr, "required"), i)), format!("contradictory bounds: {name:?} is required but additionalProperties is false and it is not among the properties")));
                        None
                    }
                    Some(s) => self.value(s, &pointer::push(ptr, "additionalProperties")),
                    None => Some(json!("example")),
                }
            };
            match value {
                Some(v) => {
                    out.insert((*name).to_owned(), v);
                }
                None => failed = true,
            }
        }
        if failed {
            return None;
        }
        // Optional properties: included when they can be derived and room remains.
        for (name, s) in properties {
            if out.contains_key(name) || max.is_some_and(|m| out.len() >= m) {
                continue;
            }
            let at = pointer::push(&p_ptr, name);
            if let Ok(v) = self.attempt(|g| g.value(s, &at)) {
                out.insert(name.clone(), v);
            }
        }
        let mut n = 1;
        while out.len() < min {
            let name = format!("property{n}");
            n += 1;
            if out.contains_key(&name) {
                continue;
            }
            let value = match additional {
                Some(Value::Bool(false)) => {
                    self.contradiction(
                        ptr,
                        "minProperties",
                        format!("minProperties {min} needs more properties than additionalProperties: false allows"),
                    );
                    return None;
                }
                Some(s) => self.value(s, &pointer::push(ptr, "additionalProperties"))?,
                None => json!("example"),
            };
            out.insert(name, value);
        }
        Some(Value::Object(out))
    }
}

/// Numeric bounds of one schema node.
struct Bounds {
    lo: Option<(f64, bool, &'static str)>,
    hi: Option<(f64, bool, &'static str)>,
    multiple: Option<f64>,
}

/// A finite double as a JSON number, written as an integer when it is one.
fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::Number(Number::from(v as i64))
    } else {
        Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// Rounds `v` to as many decimals as `m` has, so `3 × 0.1` is written `0.3`.
fn round_like(v: f64, m: f64) -> f64 {
    let text = format!("{m}");
    let decimals = text.split_once('.').map(|(_, d)| d.len()).unwrap_or(0);
    if decimals == 0 || decimals > 15 {
        return v;
    }
    let scale = 10f64.powi(decimals as i32);
    (v * scale).round() / scale
}

fn declared_types(map: &Map<String, Value>) -> Option<Vec<String>> {
    match map.get("type") {
        Some(Value::String(t)) => Some(vec![t.clone()]),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        other => type_name(v) == other || (other == "number" && v.is_number()),
    }
}

fn inferred_type(map: &Map<String, Value>) -> &'static str {
    let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "maxProperties",
    ]) {
        "object"
    } else if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
    ]) {
        "array"
    } else if has(&["minLength", "maxLength", "format"]) {
        "string"
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        "number"
    } else {
        "any"
    }
}

/// Keywords that constrain a value (as opposed to annotations and containers).
fn is_assertion(keyword: &str) -> bool {
    !matches!(
        keyword,
        "$schema"
            | "$id"
            | "$anchor"
            | "$comment"
            | "$defs"
            | "definitions"
            | "$vocabulary"
            | "title"
            | "description"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
    )
}

fn is_null_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.get("type") == Some(&json!("null")) || map.get("const") == Some(&Value::Null)
        }
        _ => false,
    }
}

/// Decodes `%XX` escapes of a URI fragment (JSON pointers in `$ref`).
fn percent_decode(text: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Finds the subschema with `$anchor` (or a draft-07 `$id: "#name"`) `name`.
fn find_anchor<'v>(value: &'v Value, name: &str, ptr: &str) -> Option<(&'v Value, String)> {
    match value {
        Value::Object(map) => {
            let hit = map.get("$anchor").and_then(Value::as_str) == Some(name)
                || map
                    .get("$id")
                    .and_then(Value::as_str)
                    .and_then(|id| id.strip_prefix('#'))
                    == Some(name);
            if hit {
                return Some((value, ptr.to_owned()));
            }
            map.iter()
                .find_map(|(k, v)| find_anchor(v, name, &pointer::push(ptr, k)))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_anchor(v, name, &pointer::index(ptr, i))),
        _ => None,
    }
}
