//! The structural check of a whole definition (docs/spec.md §3 and §7):
//! walks the raw JSON, so that every problem is reported with its path,
//! and hands each variant and example to its own check.

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_push};
use crate::definition::{
    CompiledDefinition, CompiledExample, CompiledVariant, MAX_DEFINITION_BYTES, MAX_EXAMPLES,
    MAX_VARIANTS,
};
use crate::language::{Version, unsupported};
use crate::nul::nul_paths;
use serde_json::{Map, Value};

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

impl Checker {
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
        nul_paths(doc, "", &mut nul);
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
                unsupported(n),
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

        Some(Structure {
            default_variant: default_variant.map(Box::from),
            variants,
            variants_ok,
            initial_state,
            examples,
            examples_ok,
        })
    }
}

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
