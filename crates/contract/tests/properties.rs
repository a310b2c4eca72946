//! Property tests of the contract hash (docs/spec.md §2): key order, whitespace and
//! string escaping of the input never change the hash; a change of meaning does.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use toolmock_contract::{OperationContract, canonical_json};

/// JSON values whose numbers a double holds exactly (the reader refuses others).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        // Integral doubles from 2^53 up to 1e21 are written by JCS as integer
        // digits, which the reader refuses (integers beyond ±2^53): keep out.
        any::<f64>()
            .prop_filter("finite and readable back", |f| {
                f.is_finite() && (f.abs() < 9_007_199_254_740_992.0 || f.abs() >= 1e21)
            })
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[a-zA-Z0-9 éü€😀\u{7f}\u{1}\"\\\\/\n\t]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner.clone(), 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            prop::collection::btree_map(
                "[a-c]{1,2}|[\u{e000}\u{ffff}\u{10000}\u{1f600}]",
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => any::<bool>().prop_map(Value::Bool),
        6 => prop::collection::btree_map(any::<String>(), json_value(), 0..6)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
}

fn contract() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["platform", "mcp", "custom"]),
        any::<String>(),
        prop::option::of(any::<String>()),
        schema(),
        schema(),
    )
        .prop_map(|(source, name, description, input, output)| {
            let mut c = Map::new();
            c.insert("operation".into(), json!({"source": source, "name": name}));
            if let Some(d) = description {
                c.insert("description".into(), Value::String(d));
            }
            c.insert("input_schema".into(), input);
            c.insert("output_schema".into(), output);
            Value::Object(c)
        })
}

/// A tiny deterministic generator for layout choices.
struct Layout {
    seed: u64,
    ascii: bool,
    pretty: bool,
}

impl Layout {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn space(&mut self, out: &mut String) {
        if self.pretty {
            for _ in 0..self.next() % 3 {
                out.push([' ', '\n', '\t', '\r'][(self.next() % 4) as usize]);
            }
        }
    }

    fn string(&mut self, out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            let escape = c == '"'
                || c == '\\'
                || (c as u32) < 0x20
                || (self.ascii && !c.is_ascii())
                || self.next().is_multiple_of(8);
            if escape {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04X}");
                }
            } else {
                out.push(c);
            }
        }
        out.push('"');
    }

    /// Writes `v` with keys in a shuffled order, random whitespace and escapes.
    fn write(&mut self, out: &mut String, v: &Value) {
        self.space(out);
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                for i in (1..entries.len()).rev() {
                    let j = (self.next() % (i as u64 + 1)) as usize;
                    entries.swap(i, j);
                }
                out.push('{');
                for (i, (k, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.space(out);
                    self.string(out, k);
                    self.space(out);
                    out.push(':');
                    self.write(out, item);
                }
                self.space(out);
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.write(out, item);
                }
                self.space(out);
                out.push(']');
            }
            Value::String(s) => self.string(out, s),
            other => out.push_str(&other.to_string()),
        }
        self.space(out);
    }
}

fn hash_of(text: &str) -> String {
    OperationContract::from_json_str(text)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .hash()
        .expect("hashes")
        .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hash_ignores_key_order_whitespace_and_escapes(
        c in contract(), seed in any::<u64>(), ascii in any::<bool>(), pretty in any::<bool>(),
    ) {
        let reference = hash_of(&serde_json::to_string(&c).expect("serialize"));
        prop_assert_eq!(&reference, &hash_of(&serde_json::to_string_pretty(&c).expect("serialize")));
        let mut layout = Layout { seed: seed | 1, ascii, pretty };
        let mut text = String::new();
        layout.write(&mut text, &c);
        prop_assert_eq!(&reference, &hash_of(&text), "{}", text);
        prop_assert_eq!(reference.len(), 64);
        prop_assert!(reference.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    }

    #[test]
    fn hash_changes_with_meaning(c in contract(), extra in any::<String>()) {
        let reference = hash_of(&c.to_string());
        let mut changed = c.clone();
        let description = changed.get("description").and_then(Value::as_str).unwrap_or("").to_owned();
        changed["description"] = Value::String(format!("{description}{extra}."));
        prop_assert_ne!(&reference, &hash_of(&changed.to_string()));
        let mut renamed = c.clone();
        let name = renamed["operation"]["name"].as_str().unwrap_or("").to_owned();
        renamed["operation"]["name"] = Value::String(format!("{name}_"));
        prop_assert_ne!(&reference, &hash_of(&renamed.to_string()));
        let mut wrapped = c.clone();
        wrapped["output_schema"] = json!({"anyOf": [c["output_schema"].clone()]});
        prop_assert_ne!(&reference, &hash_of(&wrapped.to_string()));
    }

    #[test]
    fn missing_description_hashes_as_empty(c in contract()) {
        let mut without = c.clone();
        if let Some(map) = without.as_object_mut() {
            map.remove("description");
        }
        let mut empty = without.clone();
        empty["description"] = Value::String(String::new());
        prop_assert_eq!(hash_of(&without.to_string()), hash_of(&empty.to_string()));
    }

    #[test]
    fn canonical_form_is_a_fixed_point(v in json_value()) {
        let once = canonical_json(&v).expect("canonical");
        let reparsed: Value = serde_json::from_slice(&once).expect("canonical JSON parses");
        prop_assert_eq!(&once, &canonical_json(&reparsed).expect("canonical"));
        let mut layout = Layout { seed: 7, ascii: true, pretty: true };
        let mut text = String::new();
        layout.write(&mut text, &v);
        let shuffled: Value = serde_json::from_str(&text).expect("layout writes JSON");
        prop_assert_eq!(once, canonical_json(&shuffled).expect("canonical"));
    }
}
