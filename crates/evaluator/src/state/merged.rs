//! The merged state written as JSON straight from its layers: the base's
//! values where the attempt wrote nothing, the overlay's where it did,
//! neither copied. A reader that shows an attempt's whole state (the API's
//! attempt view) then holds the text it writes, never a merged copy of a
//! shared fixture database; the text is exactly that of
//! [`StateView::whole`] written with `serde_json`.

use crate::state::overlay::Patch;
use crate::state::view::{Sorted, StateView};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

impl Serialize for StateView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(overlay) = self.overlay else {
            return self.base.serialize(serializer);
        };
        members(serializer, Some(self.base), &overlay.members)
    }
}

/// A patch over a base value, written merged.
struct Merged<'a> {
    base: Option<&'a Value>,
    patch: &'a Patch,
}

impl Serialize for Merged<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.patch {
            Patch::Value(v) => v.serialize(serializer),
            // Only an array's element is ever merged as removed: `null`,
            // as `Patch::merged` leaves it.
            Patch::Removed => serializer.serialize_unit(),
            Patch::Members(patches) => match self.base {
                Some(Value::Array(items)) => {
                    let mut seq = serializer.serialize_seq(Some(items.len()))?;
                    for (i, item) in items.iter().enumerate() {
                        match patches.get(&i.to_string()) {
                            Some(patch) => seq.serialize_element(&Merged {
                                base: Some(item),
                                patch,
                            })?,
                            None => seq.serialize_element(item)?,
                        }
                    }
                    seq.end()
                }
                Some(Value::Object(map)) => members(serializer, Some(map), patches),
                // Over a missing or scalar base: an object of the patches.
                _ => members(serializer, None, patches),
            },
        }
    }
}

/// An object: `base`'s members (none when `None`) with `patches` over them,
/// in key order.
fn members<S: Serializer>(
    serializer: S,
    base: Option<&Map<String, Value>>,
    patches: &BTreeMap<String, Patch>,
) -> Result<S::Ok, S::Error> {
    let kept = base
        .into_iter()
        .flat_map(|b| b.keys())
        .map(String::as_str)
        .filter(|k| !patches.contains_key(*k));
    let written = patches
        .iter()
        .filter(|(_, p)| !matches!(p, Patch::Removed))
        .map(|(k, _)| k.as_str());
    let mut map = serializer.serialize_map(None)?;
    for key in Sorted::new(kept, written) {
        let below = base.and_then(|b| b.get(key));
        match patches.get(key) {
            Some(patch) => map.serialize_entry(key, &Merged { base: below, patch })?,
            None => map.serialize_entry(key, &below)?,
        }
    }
    map.end()
}
