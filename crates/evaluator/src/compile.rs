//! The structural check of docs/spec.md §3 and §7: walks the raw JSON so that every
//! problem is reported with its path, and builds the compiled definition.

use crate::computed::{ComputedPath, Write};
use crate::diagnostics::{DiagnosticCode as Code, Diagnostics, pointer_index, pointer_push};
use crate::domain::Answer;
use crate::expr::{Expr, ExprCompiler, Source};
use crate::language::{Feature, Language, Version};
use crate::operators::json_kind;
use crate::path::Path;
use serde_json::{Map, Value};

/// The compact document may be at most this many bytes.
pub const MAX_DEFINITION_BYTES: usize = 102_400;
/// At most this many variants.
pub const MAX_VARIANTS: usize = 30;
/// At most this many rules per variant.
pub const MAX_RULES: usize = 100;
/// At most this many examples.
pub const MAX_EXAMPLES: usize = 100;
/// The largest simulated delay.
pub const MAX_DELAY_MS: u32 = 30_000;

/// A definition parsed, checked for structure and compiled: immutable,
/// `Send + Sync`, evaluated without re-parsing anything.
#[derive(Debug, Clone)]
pub struct CompiledDefinition {
    pub(crate) default_variant: usize,
    /// Sorted by name, for binary search.
    pub(crate) variants: Box<[CompiledVariant]>,
    pub(crate) initial_state: Map<String, Value>,
    pub(crate) examples: Box<[CompiledExample]>,
}

/// Compiled `set_state`: each top-level key with its expression.
pub(crate) type StateUpdates = Box<[(Box<str>, Expr)]>;

#[derive(Debug, Clone)]
pub(crate) struct CompiledVariant {
    pub(crate) name: Box<str>,
    /// `result`, or (version 2) `error`.
    pub(crate) result: Answer,
    pub(crate) set_state: StateUpdates,
    /// The list form of `set_state` (version 2); empty for the object form.
    pub(crate) writes: Box<[Write]>,
    pub(crate) delay_ms: u32,
    pub(crate) rules: Box<[CompiledRule]>,
    /// Set when enough rules test one path against distinct strings.
    pub(crate) index: Option<RuleIndex>,
    /// One copy of each distinct operator of the variant that reads the
    /// input alone, by [`crate::expr::InputHole`] id.
    pub(crate) input_holes: Box<[Expr]>,
}

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
    fn build(rules: &[CompiledRule], paths: &[(Source, String)]) -> Option<RuleIndex> {
        fn key_of(rule: &CompiledRule, slot: usize) -> Option<&str> {
            rule.when.iter().find_map(|c| match &c.test {
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
                    rules.iter().filter(|r| key_of(r, slot).is_some()).count(),
                )
            })
            .max_by_key(|&(slot, count)| (count, std::cmp::Reverse(slot)))?;
        if count < MIN_INDEXED_RULES {
            return None;
        }
        let probe = rules
            .iter()
            .flat_map(|r| r.when.iter())
            .find(|c| c.slot == slot)?;
        let mut keyed: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
        let mut unkeyed = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let i = u32::try_from(i).ok()?;
            match key_of(rule, slot) {
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

#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) when: Box<[CompiledCondition]>,
    pub(crate) result: Option<Answer>,
    pub(crate) set_state: Option<StateUpdates>,
    /// Set exactly when `set_state` is (see [`CompiledVariant::writes`]).
    pub(crate) writes: Option<Box<[Write]>>,
    pub(crate) delay_ms: Option<u32>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledCondition {
    pub(crate) source: Source,
    pub(crate) path: Path,
    /// A version-2 path written as an array (then `path` is empty and
    /// unused, and the condition has no memo slot).
    pub(crate) computed: Option<Box<ComputedPath>>,
    pub(crate) test: Test,
    /// Conditions of one variant that read the same source and path share a
    /// slot, so one call resolves each distinct path once.
    pub(crate) slot: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum Test {
    Eq(Value),
    Ne(Value),
    In(Box<[Value]>),
    Exists(bool),
    /// Version 2: `eq` (true) or `ne` (false) against a reference's value.
    Ref(bool, Box<crate::expr::Reference>),
    /// Version 2: `contains`, `subset_of`, `eq_ci`.
    V2(Box<crate::conditions_v2::V2Test>),
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledExample {
    pub(crate) index: usize,
    pub(crate) variant: Box<str>,
    pub(crate) input: Value,
    pub(crate) state: Option<Map<String, Value>>,
    pub(crate) expected: Expected,
    pub(crate) expected_state: Option<Map<String, Value>>,
}

/// Fields of one object: which are allowed, which required.
struct Shape {
    allowed: &'static [&'static str],
    required: &'static [&'static str],
    what: &'static str,
}

const DOCUMENT: Shape = Shape {
    allowed: &[
        "schema_version",
        "description",
        "default_variant",
        "initial_state",
        "variants",
        "examples",
    ],
    required: &["schema_version", "default_variant", "variants", "examples"],
    what: "the definition",
};
const VARIANT: Shape = Shape {
    allowed: domain_errors::VARIANT_FIELDS,
    // `result` or `error`: see `missing_answer`.
    required: &[],
    what: "a variant",
};
const RULE: Shape = Shape {
    allowed: domain_errors::RULE_FIELDS,
    required: &[],
    what: "a rule",
};
const CONDITION: Shape = Shape {
    allowed: &["source", "path", "op", "value"],
    required: &["source", "path", "op", "value"],
    what: "a condition",
};
const EXAMPLE: Shape = Shape {
    allowed: domain_errors::EXAMPLE_FIELDS,
    // `expected` or `expected_error`: see `expected`.
    required: &["variant", "input"],
    what: "an example",
};

#[path = "compile_error.rs"]
mod domain_errors;
#[path = "compile_v2.rs"]
mod v2;
pub(crate) use domain_errors::Expected;
pub(crate) use v2::reference_like;

/// The compact size of a document, counted without allocating it.
pub(crate) fn compact_size(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` into a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

pub(crate) struct Walker {
    pub(crate) diagnostics: Diagnostics,
    pub(crate) language: Language,
}

/// The result of the structural pass: the compiled parts, or `None` where a
/// part was broken (so that later stages can still check the rest).
pub(crate) struct Structure {
    pub(crate) default_variant: Option<Box<str>>,
    pub(crate) variants: Vec<Option<CompiledVariant>>,
    pub(crate) variants_ok: bool,
    pub(crate) initial_state: Map<String, Value>,
    pub(crate) examples: Vec<CompiledExample>,
    /// Every example was well formed.
    pub(crate) examples_ok: bool,
}

impl Walker {
    pub(crate) fn new() -> Self {
        Walker {
            diagnostics: Diagnostics::default(),
            language: Language::new(),
        }
    }

    fn push(&mut self, code: Code, path: impl Into<String>, message: impl Into<String>) {
        self.diagnostics.push(code, path, message);
    }

    /// Unknown and missing fields; true when none is missing or unknown.
    fn shape(&mut self, map: &Map<String, Value>, at: &str, shape: &Shape) -> bool {
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

    fn wrong_type(&mut self, at: &str, expected: &str, got: &Value) {
        self.push(
            Code::WrongType,
            at,
            format!("expected {expected}, found {}", json_kind(got)),
        );
    }

    fn object<'v>(
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

    fn description(&mut self, map: &Map<String, Value>, at: &str) {
        if let Some(d) = map.get("description")
            && !d.is_string()
        {
            self.wrong_type(&pointer_push(at, "description"), "a string", d);
        }
    }

    pub(crate) fn document(&mut self, doc: &Value) -> Option<Structure> {
        let size = compact_size(doc);
        if size > MAX_DEFINITION_BYTES {
            self.push(
                Code::TooLarge,
                "",
                format!("the definition is {size} bytes compact; at most {MAX_DEFINITION_BYTES} are allowed"),
            );
        }
        let mut nul = Vec::new();
        crate::nul::nul_paths(doc, "", &mut nul);
        for path in nul {
            self.push(
                Code::NulCharacter,
                path,
                "U+0000 (NUL) is not allowed in a definition: no store can keep it",
            );
        }
        let map = self.object(doc, "", "a definition")?;
        self.shape(map, "", &DOCUMENT);
        self.description(map, "");
        match map.get("schema_version") {
            None => {}
            Some(v) if let Some(version) = v.as_u64().and_then(Version::declared) => {
                self.language.declare(version);
            }
            Some(Value::Number(n)) => self.push(
                Code::UnsupportedSchemaVersion,
                "/schema_version",
                crate::language::unsupported(n),
            ),
            Some(other) => self.wrong_type("/schema_version", "the integer 1", other),
        }
        let default_variant = match map.get("default_variant") {
            Some(Value::String(name)) => Some(name.as_str()),
            Some(other) => {
                self.wrong_type("/default_variant", "a variant name (a string)", other);
                None
            }
            None => None,
        };
        let initial_state = match map.get("initial_state") {
            None => Map::new(),
            Some(v) => self
                .object(v, "/initial_state", "the initial state")
                .cloned()
                .unwrap_or_default(),
        };

        let mut variants = Vec::new();
        let mut variant_names: Option<Vec<&str>> = None;
        let mut variants_ok = true;
        if let Some(v) = map.get("variants") {
            if let Some(entries) = self.object(v, "/variants", "the variants by name") {
                if entries.is_empty() {
                    self.push(
                        Code::TooFewVariants,
                        "/variants",
                        "a definition needs at least one variant",
                    );
                }
                if entries.len() > MAX_VARIANTS {
                    self.push(
                        Code::TooManyVariants,
                        "/variants",
                        format!(
                            "{} variants; at most {MAX_VARIANTS} are allowed",
                            entries.len()
                        ),
                    );
                }
                for (name, variant) in entries {
                    let at = pointer_push("/variants", name);
                    if name.is_empty() {
                        self.push(
                            Code::InvalidVariantName,
                            &at,
                            "a variant name must not be empty",
                        );
                    }
                    let compiled = self.variant(name, variant, &at);
                    variants_ok &= compiled.is_some();
                    variants.push(compiled);
                }
                variant_names = Some(entries.keys().map(String::as_str).collect());
            } else {
                variants_ok = false;
            }
        } else {
            variants_ok = false;
        }

        if let (Some(name), Some(names)) = (default_variant, &variant_names)
            && !names.contains(&name)
        {
            self.push(
                Code::UnknownDefaultVariant,
                "/default_variant",
                format!("default_variant {name:?} names no variant; the variants are {names:?}"),
            );
        }

        let mut examples = Vec::new();
        let mut examples_ok = true;
        if let Some(v) = map.get("examples") {
            match v {
                Value::Array(items) => {
                    if items.is_empty() {
                        self.push(
                            Code::TooFewExamples,
                            "/examples",
                            "a definition needs at least one example",
                        );
                    }
                    if items.len() > MAX_EXAMPLES {
                        self.push(
                            Code::TooManyExamples,
                            "/examples",
                            format!(
                                "{} examples; at most {MAX_EXAMPLES} are allowed",
                                items.len()
                            ),
                        );
                    }
                    for (i, item) in items.iter().enumerate() {
                        match self.example(i, item, variant_names.as_deref()) {
                            Some(example) => examples.push(example),
                            None => examples_ok = false,
                        }
                    }
                }
                other => {
                    self.wrong_type("/examples", "an array of examples", other);
                    examples_ok = false;
                }
            }
        } else {
            examples_ok = false;
        }

        if let (Some(names), Some(Value::Array(items))) = (&variant_names, map.get("examples")) {
            let named: Vec<&str> = items
                .iter()
                .filter_map(|e| e.get("variant").and_then(Value::as_str))
                .collect();
            for name in names {
                if !named.contains(name) {
                    self.push(
                        Code::VariantWithoutExample,
                        pointer_push("/variants", name),
                        format!(
                            "variant {name:?} has no example; every variant needs at least one"
                        ),
                    );
                }
            }
        }

        self.language.unused_declaration(&mut self.diagnostics);
        Some(Structure {
            default_variant: default_variant.map(Box::from),
            variants,
            variants_ok,
            initial_state,
            examples,
            examples_ok,
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

    /// `set_state` in either form: the object form's updates (with no
    /// writes), or the list form's writes (with no updates).
    fn set_state(&mut self, value: &Value, at: &str) -> Option<(StateUpdates, Box<[Write]>)> {
        if let Value::Array(items) = value
            && self.is_write_list(items)
        {
            return self
                .writes(items, at)
                .map(|writes| (Box::default(), writes));
        }
        self.object_updates(value, at)
            .map(|updates| (updates, Box::default()))
    }

    fn object_updates(&mut self, value: &Value, at: &str) -> Option<StateUpdates> {
        let map = self.object(value, at, "set_state")?;
        let before = self.diagnostics.len();
        let mut compiler = ExprCompiler {
            diagnostics: &mut self.diagnostics,
            language: &mut self.language,
        };
        let compiled: Vec<(Box<str>, Expr)> = map
            .iter()
            .map(|(k, v)| {
                (
                    Box::from(k.as_str()),
                    compiler.compile(v, &pointer_push(at, k)),
                )
            })
            .collect();
        (self.diagnostics.len() == before).then(|| compiled.into_boxed_slice())
    }

    fn expression(&mut self, value: &Value, at: &str) -> Option<Expr> {
        let before = self.diagnostics.len();
        let expr = ExprCompiler {
            diagnostics: &mut self.diagnostics,
            language: &mut self.language,
        }
        .compile(value, at);
        (self.diagnostics.len() == before).then_some(expr)
    }

    fn variant(&mut self, name: &str, value: &Value, at: &str) -> Option<CompiledVariant> {
        let map = self.object(value, at, "a variant")?;
        let before = self.diagnostics.len();
        self.shape(map, at, &VARIANT);
        self.missing_answer(map, at);
        self.description(map, at);
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
            if condition.computed.is_none() {
                condition.slot = slot_of((condition.source, condition.path.as_str()));
            }
        }
        let rule_exprs = rules.iter_mut().flat_map(|r| {
            let updates = r.set_state.iter_mut().flat_map(|u| u.iter_mut());
            let writes = r.writes.iter_mut().flat_map(|w| w.iter_mut());
            r.result
                .iter_mut()
                .filter_map(Answer::result_mut)
                .chain(updates.map(|(_, e)| e))
                .chain(writes.map(|w| &mut w.value))
        });
        let variant_exprs = result
            .result_mut()
            .into_iter()
            .chain(set_state.iter_mut().map(|(_, e)| e))
            .chain(writes.iter_mut().map(|w| &mut w.value));
        for expr in variant_exprs.chain(rule_exprs) {
            expr.for_each_reference(&mut |r| {
                if let Some(key) = r.key() {
                    r.slot = slot_of(key);
                }
            });
        }
        // After the slots: the copies kept for rendering ahead carry them.
        let mut input_holes = Vec::new();
        let rule_exprs = rules.iter_mut().flat_map(|r| {
            let updates = r.set_state.iter_mut().flat_map(|u| u.iter_mut());
            let writes = r.writes.iter_mut().flat_map(|w| w.iter_mut());
            r.result
                .iter_mut()
                .filter_map(Answer::result_mut)
                .chain(updates.map(|(_, e)| e))
                .chain(writes.map(|w| &mut w.value))
        });
        let variant_exprs = result
            .result_mut()
            .into_iter()
            .chain(set_state.iter_mut().map(|(_, e)| e))
            .chain(writes.iter_mut().map(|w| &mut w.value));
        for expr in variant_exprs.chain(rule_exprs) {
            expr.mark_input_holes(&mut input_holes);
        }
        Some(CompiledVariant {
            input_holes: input_holes.into_iter().map(|(_, e)| e).collect(),
            name: name.into(),
            result,
            set_state,
            writes,
            delay_ms: delay_ms?,
            index: RuleIndex::build(&rules, &distinct),
            rules: rules.into_boxed_slice(),
        })
    }

    fn rule(&mut self, value: &Value, at: &str, variant_errs: bool) -> Option<CompiledRule> {
        let map = self.object(value, at, "a rule")?;
        let before = self.diagnostics.len();
        self.shape(map, at, &RULE);
        self.description(map, at);
        let mut when = Vec::new();
        if let Some(v) = map.get("when") {
            let when_at = pointer_push(at, "when");
            match v {
                Value::Array(items) => {
                    for (i, condition) in items.iter().enumerate() {
                        if let Some(c) = self.condition(condition, &pointer_index(&when_at, i)) {
                            when.push(c);
                        }
                    }
                }
                other => self.wrong_type(&when_at, "an array of conditions", other),
            }
        }
        let result = self.answer(map, at);
        self.rule_set_state_beside_error(map, at, result.as_ref(), variant_errs);
        let set_state = map
            .get("set_state")
            .map(|v| self.set_state(v, &pointer_push(at, "set_state")));
        let delay_ms = map
            .get("delay_ms")
            .map(|v| self.delay(v, &pointer_push(at, "delay_ms")));
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

    fn condition(&mut self, value: &Value, at: &str) -> Option<CompiledCondition> {
        let map = self.object(value, at, "a condition")?;
        let mut ok = self.shape(map, at, &CONDITION);
        let source = match map.get("source") {
            Some(Value::String(s)) if s == "input" => Some(Source::Input),
            Some(Value::String(s)) if s == "state" => Some(Source::State),
            Some(other) => {
                self.push(
                    Code::InvalidCondition,
                    pointer_push(at, "source"),
                    format!("a condition's source is \"input\" or \"state\", not {other}"),
                );
                None
            }
            None => None,
        };
        let mut computed = None;
        let path = match map.get("path") {
            Some(Value::String(raw)) => match Path::parse(raw) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.push(Code::InvalidPath, pointer_push(at, "path"), e.message);
                    None
                }
            },
            Some(Value::Array(items)) => {
                computed = self.computed_path(items, &pointer_push(at, "path"));
                computed.as_ref().map(|_| Path::whole())
            }
            Some(other) => {
                self.wrong_type(&pointer_push(at, "path"), "a path string", other);
                None
            }
            None => None,
        };
        let value = map.get("value");
        let test = match (map.get("op"), value) {
            (Some(Value::String(op)), Some(v)) => match op.as_str() {
                "eq" | "ne" if self.is_reference_value(v) => {
                    self.reference_test(op == "eq", v, &pointer_push(at, "value"))
                }
                "eq" => Some(Test::Eq(v.clone())),
                // Version 1 has always called these unknown ops; it still does.
                op if crate::conditions_v2::OPS.contains(&op)
                    && self.language.admits(Feature::Op(op)) =>
                {
                    self.v2_test(op, v, at)
                }
                "ne" => Some(Test::Ne(v.clone())),
                "in" => match v {
                    Value::Array(items) => Some(Test::In(items.clone().into_boxed_slice())),
                    other => {
                        self.push(
                            Code::InvalidCondition,
                            pointer_push(at, "value"),
                            format!("op \"in\" needs an array value, not {}", json_kind(other)),
                        );
                        None
                    }
                },
                "exists" => match v {
                    Value::Bool(b) => Some(Test::Exists(*b)),
                    other => {
                        self.push(
                            Code::InvalidCondition,
                            pointer_push(at, "value"),
                            format!(
                                "op \"exists\" needs a boolean value, not {}",
                                json_kind(other)
                            ),
                        );
                        None
                    }
                },
                other => {
                    self.push(
                        Code::InvalidCondition,
                        pointer_push(at, "op"),
                        format!(
                            "unknown op {other:?}; the ops are {}",
                            crate::language::core_ops()
                        ),
                    );
                    None
                }
            },
            (Some(other), _) if !other.is_string() => {
                self.push(
                    Code::InvalidCondition,
                    pointer_push(at, "op"),
                    format!(
                        "a condition's op is one of {}, not {other}",
                        crate::language::core_ops_quoted()
                    ),
                );
                None
            }
            _ => None,
        };
        ok &= source.is_some() && path.is_some() && test.is_some();
        if !ok {
            return None;
        }
        Some(CompiledCondition {
            slot: crate::expr::NO_SLOT,
            source: source?,
            path: path?,
            computed: computed.map(Box::new),
            test: test?,
        })
    }

    fn example(
        &mut self,
        index: usize,
        value: &Value,
        variants: Option<&[&str]>,
    ) -> Option<CompiledExample> {
        let at = pointer_index("/examples", index);
        let map = self.object(value, &at, "an example")?;
        let mut ok = self.shape(map, &at, &EXAMPLE);
        let expected = self.expected(map, &at);
        ok &= expected.is_some();
        self.description(map, &at);
        let variant = match map.get("variant") {
            Some(Value::String(name)) => {
                if let Some(names) = variants
                    && !names.contains(&name.as_str())
                {
                    self.push(
                        Code::ExampleUnknownVariant,
                        pointer_push(&at, "variant"),
                        format!("example names variant {name:?}, which does not exist"),
                    );
                    ok = false;
                }
                Some(name.as_str())
            }
            Some(other) => {
                self.wrong_type(
                    &pointer_push(&at, "variant"),
                    "a variant name (a string)",
                    other,
                );
                None
            }
            None => None,
        };
        let input = match map.get("input") {
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(other) => {
                self.wrong_type(
                    &pointer_push(&at, "input"),
                    "the call's input (an object)",
                    other,
                );
                None
            }
            None => None,
        };
        let optional_object = |walker: &mut Walker, key: &str| match map.get(key) {
            None => Some(None),
            Some(v) => walker
                .object(v, &pointer_push(&at, key), key)
                .map(|m| Some(m.clone())),
        };
        let state = optional_object(self, "state");
        let expected_state = optional_object(self, "expected_state");
        if !ok {
            return None;
        }
        Some(CompiledExample {
            index,
            variant: variant?.into(),
            input: input?,
            state: state?,
            expected: expected?,
            expected_state: expected_state?,
        })
    }
}

impl CompiledDefinition {
    /// Assembles a definition whose structure passed.
    pub(crate) fn assemble(structure: Structure) -> Option<CompiledDefinition> {
        if !structure.variants_ok || !structure.examples_ok {
            return None;
        }
        let mut variants: Vec<CompiledVariant> =
            structure.variants.into_iter().collect::<Option<_>>()?;
        variants.sort_by(|a, b| a.name.cmp(&b.name));
        let default_name = structure.default_variant?;
        let default_variant = variants
            .binary_search_by(|v| (*v.name).cmp(&default_name))
            .ok()?;
        Some(CompiledDefinition {
            default_variant,
            variants: variants.into_boxed_slice(),
            initial_state: structure.initial_state,
            examples: structure.examples.into_boxed_slice(),
        })
    }

    /// The state a fresh attempt starts with.
    pub fn initial_state(&self) -> &Map<String, Value> {
        &self.initial_state
    }

    /// The variant names, sorted.
    pub fn variant_names(&self) -> impl Iterator<Item = &str> {
        self.variants.iter().map(|v| &*v.name)
    }

    /// The name of the default variant.
    pub fn default_variant(&self) -> &str {
        &self.variants[self.default_variant].name
    }

    pub(crate) fn variant(&self, name: Option<&str>) -> Option<&CompiledVariant> {
        self.variant_index(name).and_then(|i| self.variants.get(i))
    }

    pub(crate) fn variant_index(&self, name: Option<&str>) -> Option<usize> {
        match name {
            None => Some(self.default_variant),
            Some(name) => self.variants.binary_search_by(|v| (*v.name).cmp(name)).ok(),
        }
    }
}
