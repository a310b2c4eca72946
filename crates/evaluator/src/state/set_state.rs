//! Reading `set_state` from a definition, in either form: the object form
//! (each top-level key replaced by its expression's value) and version 2's
//! list form (`[{path, value}, …]`, applied in order at nested paths).

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::expr::tree::Expr;
use crate::language::Feature;
use crate::state::writes::{StateUpdates, Write};
use serde_json::Value;

/// At most this many writes in one list-form `set_state`.
pub(crate) const MAX_WRITES: usize = 100;

const WRITE: Shape = Shape {
    allowed: &["description", "path", "value"],
    required: &["path", "value"],
    what: "a write",
};

impl Checker {
    /// `set_state` in either form: the object form's updates (with no
    /// writes), or the list form's writes (with no updates).
    pub(crate) fn set_state(
        &mut self,
        value: &Value,
        at: &str,
    ) -> Option<(StateUpdates, Box<[Write]>)> {
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
        let compiled: Vec<(Box<str>, Expr)> = map
            .iter()
            .map(|(k, v)| (Box::from(k.as_str()), self.compile(v, &pointer_push(at, k))))
            .collect();
        (self.diagnostics.len() == before).then(|| compiled.into_boxed_slice())
    }

    /// Whether a `set_state` array is read as the list form. In a version-2
    /// document it always is; in a version-1 document only when it is
    /// clearly one (every element an object with `path` and `value`), so it
    /// is refused as `version_2_feature`, while any other array stays the
    /// `wrong_type` version 1 has always reported.
    fn is_write_list(&self, items: &[Value]) -> bool {
        self.language.admits(Feature::WriteList)
            || (!items.is_empty()
                && items.iter().all(|item| {
                    item.as_object()
                        .is_some_and(|m| m.contains_key("path") && m.contains_key("value"))
                }))
    }

    /// The list form of `set_state`: `[{path, value}, …]`, applied in order.
    fn writes(&mut self, items: &[Value], at: &str) -> Option<Box<[Write]>> {
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
                Some(Value::String(raw)) => self.dotted_path(raw, &path_at),
                Some(Value::Array(items)) => self.array_path(items, &path_at),
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
}
