//! The version-2 parts of the structural check: computed paths in
//! conditions, the list form of `set_state`, and the version rule itself.

use super::{Shape, Test, Walker};
use crate::computed::{ComputedPath, Write};
use crate::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::expr::{ExprCompiler, Source};
use crate::language::Feature;
use crate::path::Path;
use serde_json::Value;

/// At most this many writes in one list-form `set_state`.
pub(crate) const MAX_WRITES: usize = 100;

const WRITE: Shape = Shape {
    allowed: &["description", "path", "value"],
    required: &["path", "value"],
    what: "a write",
};

impl Walker {
    /// In version 2, a condition's `value` that is exactly one `$input` or
    /// `$state` reference is read per call; in version 1 it is a literal
    /// (and the warnings say so).
    pub(super) fn is_reference_value(&self, value: &Value) -> bool {
        self.language.admits(Feature::ReferenceValue) && reference_like(value).is_some()
    }

    /// The test of an `eq` (`eq` true) or `ne` condition against a reference.
    pub(super) fn reference_test(&mut self, eq: bool, value: &Value, at: &str) -> Option<Test> {
        let (source, path) = reference_like(value)?;
        self.language
            .feature(&mut self.diagnostics, at, Feature::ReferenceValue);
        let key = match source {
            Source::Input => "$input",
            Source::State => "$state",
        };
        let reference = ExprCompiler {
            diagnostics: &mut self.diagnostics,
            language: &mut self.language,
        }
        .reference(source, path, &pointer_push(at, key), true)?;
        Some(Test::Ref(eq, Box::new(reference)))
    }

    /// A condition's path written as an array.
    pub(super) fn computed_path(&mut self, items: &[Value], at: &str) -> Option<ComputedPath> {
        self.language
            .feature(&mut self.diagnostics, at, Feature::ArrayPath);
        ComputedPath::compile(items, at, &mut self.diagnostics)
    }

    /// Whether a `set_state` array is read as the list form. In a version-2
    /// document it always is; in a version-1 document only when it is
    /// clearly one (every element an object with `path` and `value`), so it
    /// is refused as `version_2_feature`, while any other array stays the
    /// `wrong_type` version 1 has always reported.
    pub(super) fn is_write_list(&self, items: &[Value]) -> bool {
        self.language.admits(Feature::WriteList)
            || (!items.is_empty()
                && items.iter().all(|item| {
                    item.as_object()
                        .is_some_and(|m| m.contains_key("path") && m.contains_key("value"))
                }))
    }

    /// The list form of `set_state`: `[{path, value}, …]`, applied in order.
    pub(super) fn writes(&mut self, items: &[Value], at: &str) -> Option<Box<[Write]>> {
        self.language
            .feature(&mut self.diagnostics, at, Feature::WriteList);
        let before = self.diagnostics.len();
        if items.len() > MAX_WRITES {
            self.push(
                Code::TooManyWrites,
                at,
                format!(
                    "{} writes; at most {MAX_WRITES} are allowed in one set_state",
                    items.len()
                ),
            );
        }
        let mut writes = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_at = pointer_index(at, i);
            let Some(map) = self.object(item, &item_at, "a write {path, value}") else {
                continue;
            };
            self.shape(map, &item_at, &WRITE);
            self.description(map, &item_at);
            let path_at = pointer_push(&item_at, "path");
            let path = match map.get("path") {
                Some(Value::String(raw)) => self.dotted(raw, &path_at),
                Some(Value::Array(items)) => {
                    ComputedPath::compile(items, &path_at, &mut self.diagnostics)
                }
                Some(other) => {
                    self.wrong_type(&path_at, "a path (a string or an array of segments)", other);
                    None
                }
                None => None,
            };
            let path = path.and_then(|path| {
                let top = match path.literal_head() {
                    Some(top) if path.len() > 0 => Box::<str>::from(top),
                    _ => {
                        self.push(
                            Code::InvalidPath,
                            &path_at,
                            "a write's path starts with a literal key: the top-level member of the state it changes",
                        );
                        return None;
                    }
                };
                Some((top, path))
            });
            let value = map
                .get("value")
                .and_then(|v| self.expression(v, &pointer_push(&item_at, "value")));
            if let (Some((top, path)), Some(value)) = (path, value) {
                writes.push(Write { top, path, value });
            }
        }
        (self.diagnostics.len() == before).then(|| writes.into_boxed_slice())
    }

    /// A dot-separated path as a computed path of literal segments.
    fn dotted(&mut self, raw: &str, at: &str) -> Option<ComputedPath> {
        if let Err(e) = Path::parse(raw) {
            self.push(Code::InvalidPath, at, e.message);
            return None;
        }
        let items: Vec<Value> = if raw.is_empty() {
            Vec::new()
        } else {
            raw.split('.')
                .map(|s| Value::String(s.to_owned()))
                .collect()
        };
        ComputedPath::compile(&items, at, &mut self.diagnostics)
    }
}

/// The source and path of an object that is exactly one `$input` or
/// `$state` member.
pub(crate) fn reference_like(value: &Value) -> Option<(Source, &Value)> {
    let map = value.as_object()?;
    let mut entries = map.iter();
    match (entries.next(), entries.next()) {
        (Some((key, path)), None) if key == "$input" => Some((Source::Input, path)),
        (Some((key, path)), None) if key == "$state" => Some((Source::State, path)),
        _ => None,
    }
}
