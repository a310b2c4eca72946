//! Reading `set_state` from a definition, in either form: the object form
//! (each top-level key replaced by its expression's value) and version 2's
//! list form (`[{path, value}, …]`, applied in order at nested paths).

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::error::Origin;
use crate::expr::find::{needs_selection, selection};
use crate::expr::iteration;
use crate::expr::tree::Expr;
use crate::language::Feature;
use crate::state::writes::{Action, StateUpdates, Write};
use serde_json::{Map, Value};

/// At most this many writes in one list-form `set_state`.
pub(crate) const MAX_WRITES: usize = 100;

const WRITE: Shape = Shape {
    allowed: &["description", "path", "value"],
    required: &["path", "value"],
    what: "a write",
};

const UPDATE: Shape = Shape {
    allowed: &[
        "description",
        "update",
        "as",
        "where",
        "where_ci",
        "when",
        "value",
        "merge",
    ],
    required: &["update"],
    what: "an update",
};

const REMOVAL: Shape = Shape {
    allowed: &["description", "remove", "where", "where_ci"],
    required: &["remove"],
    what: "a removal",
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
            if map.contains_key("update") {
                if let Some(write) = self.update_write(map, &item_at) {
                    writes.push(write);
                }
                continue;
            }
            if map.contains_key("remove") {
                if let Some(write) = self.removal(map, &item_at) {
                    writes.push(write);
                }
                continue;
            }
            self.shape(map, &item_at, &WRITE);
            self.description(map, &item_at);
            let path = self.write_path(map.get("path"), &pointer_push(&item_at, "path"), 1);
            let value = map
                .get("value")
                .and_then(|v| self.expression(v, &pointer_push(&item_at, "value")));
            if let (Some((top, path)), Some(value)) = (path, value) {
                writes.push(Write {
                    top,
                    path,
                    action: Action::Set(value),
                });
            }
        }
        (self.diagnostics.len() == before).then(|| writes.into_boxed_slice())
    }

    /// A removal `{"remove": path, "where"?, "where_ci"?}` (version 3): the
    /// member the path names, or — with `where`/`where_ci` — the members of
    /// the collection it names that match.
    fn removal(&mut self, map: &Map<String, Value>, at: &str) -> Option<Write> {
        self.language
            .feature(&mut self.diagnostics, at, Feature::Removal);
        let before = self.diagnostics.len();
        self.shape(map, at, &REMOVAL);
        self.description(map, at);
        let selects = map.contains_key("where") || map.contains_key("where_ci");
        // Removing a member needs its parent: a path of at least two
        // segments; removing the members of a collection needs only the
        // collection, which may be a top-level member.
        let shortest = if selects { 1 } else { 2 };
        let path = self.write_path(map.get("remove"), &pointer_push(at, "remove"), shortest);
        let chosen = if selects {
            needs_selection(self, map, at, "a removal");
            selection(self, map, at, "a removal").map(Some)
        } else {
            Some(None)
        };
        match (path, chosen) {
            (Some((top, path)), Some(chosen)) if self.diagnostics.len() == before => Some(Write {
                top,
                path,
                action: Action::Remove(chosen),
            }),
            _ => None,
        }
    }

    /// An update `{"update": path, "as"?, "where"?, "where_ci"?, "when"?,
    /// "value" | "merge"}` (version 3): the member the path names, or —
    /// with a selection — the members of the collection it names that are
    /// selected, each replaced or merged with the element in sight.
    fn update_write(&mut self, map: &Map<String, Value>, at: &str) -> Option<Write> {
        self.language
            .feature(&mut self.diagnostics, at, Feature::Update);
        let before = self.diagnostics.len();
        self.shape(map, at, &UPDATE);
        self.description(map, at);
        let selects = ["where", "where_ci", "when"]
            .iter()
            .any(|k| map.contains_key(*k));
        let path = self.write_path(
            map.get("update"),
            &pointer_push(at, "update"),
            if selects { 1 } else { 2 },
        );
        let change =
            iteration::enter(self, at, |c| iteration::change(c, map, at, Origin::State)).flatten();
        match (path, change) {
            (Some((top, path)), Some(change)) if self.diagnostics.len() == before => Some(Write {
                top,
                path,
                action: Action::Update(Box::new(change)),
            }),
            _ => None,
        }
    }

    /// A write's or a removal's path at `at`: a dotted string or an array
    /// of at least `shortest` segments whose first is a literal key (the
    /// top-level member it changes).
    fn write_path(
        &mut self,
        raw: Option<&Value>,
        at: &str,
        shortest: usize,
    ) -> Option<(Box<str>, crate::paths::reference::ComputedPath)> {
        let path = match raw {
            Some(Value::String(raw)) => self.dotted_path(raw, at),
            Some(Value::Array(items)) => self.array_path(items, at),
            Some(other) => {
                self.wrong_type(at, "a path (a string or an array of segments)", other);
                None
            }
            None => None,
        }?;
        let top = match path.literal_head() {
            Some(top) if path.len() > 0 => Box::<str>::from(top),
            _ => {
                self.push(
                    Code::InvalidPath,
                    at,
                    "a write's path starts with a literal key: the top-level member of the state it changes",
                );
                return None;
            }
        };
        if path.len() < shortest {
            self.push(
                Code::InvalidPath,
                at,
                "a removal or an update without a selection names its member inside a top-level member (at least two segments); to change a whole top-level member, write it a value",
            );
            return None;
        }
        Some((top, path))
    }
}
