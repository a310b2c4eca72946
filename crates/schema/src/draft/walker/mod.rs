//! The walker: derives a value from one schema node by node, and says at
//! which keyword it cannot.

mod scalars;

use super::errors::DraftCode;
use super::{MAX_DEPTH, MAX_SIZE};
use crate::pointer::{self, type_name};
use serde_json::{Map, Value, json};
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
