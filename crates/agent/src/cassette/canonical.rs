//! The canonical text of a request, written straight into a sink — the
//! sha256 of a replayed request, or the text of a recorded one — without
//! building the intermediate `serde_json::Value` of [`canonical_request`]
//! and canonicalizing it: a replayed turn is mostly this work, so it is
//! done once, in one pass (docs/performance.md, "Model cassettes").
//!
//! The bytes are exactly `canonical_text(&canonical_request(..))` (RFC
//! 8785): the keys of each object written in sorted order, strings escaped
//! as RFC 8785 (and serde_json) escape them. The identity and each tool's
//! `parameters`, arbitrary JSON, are canonicalized as values; everything
//! else is one of the request's few fixed shapes. The tests hold the two
//! ways equal.
//!
//! [`canonical_request`]: super::canonical_request

use super::canonical_text;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use toolmock_simulation::{FunctionTool, Message, ModelRequest, ToolCallRequest};

/// Where canonical bytes go.
pub(super) trait Sink {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// The canonical text of the parts of a request that do not change from
/// turn to turn of one model's attempt: its identity and its tools.
#[derive(Debug, Clone)]
pub(super) struct Fixed {
    /// The identity's canonical text.
    identity: String,
    /// The tools whose canonical text `tools` is.
    tools_of: Vec<FunctionTool>,
    /// The tools array's canonical text.
    tools: String,
}

impl Fixed {
    /// The fixed parts for `identity` (no tools yet).
    pub(super) fn new(identity: &serde_json::Value) -> Self {
        Self {
            identity: canonical_text(identity),
            tools_of: Vec::new(),
            tools: "[]".to_owned(),
        }
    }

    /// Makes `tools` the tools the text is of (an attempt's model is
    /// offered the same tools every turn: canonicalized once).
    fn offer(&mut self, tools: &[FunctionTool]) {
        if self.tools_of.as_slice() != tools {
            let mut text = Vec::with_capacity(256 * tools.len());
            write_tools(&mut text, tools);
            self.tools = String::from_utf8(text).unwrap_or_default();
            self.tools_of = tools.to_vec();
        }
    }
}

/// Writes the canonical text of `request` (with `fixed`'s identity; its
/// tools made the request's) into `out`.
pub(super) fn write_request(out: &mut impl Sink, fixed: &mut Fixed, request: ModelRequest<'_>) {
    fixed.offer(request.tools);
    let mut ids = Ids::default();
    out.put(b"{\"messages\":[");
    for (i, message) in request.messages.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_message(out, &mut ids, message);
    }
    out.put(b"],\"model\":");
    out.put(fixed.identity.as_bytes());
    out.put(b",\"tools\":");
    out.put(fixed.tools.as_bytes());
    out.put(b"}");
}

/// Tool-call ids renamed `call_1`, `call_2`, … in the order the
/// conversation first names them.
#[derive(Default)]
struct Ids<'a> {
    seen: HashMap<&'a str, usize>,
}

impl<'a> Ids<'a> {
    fn write(&mut self, out: &mut impl Sink, id: &'a str) {
        let next = self.seen.len() + 1;
        let n = *self.seen.entry(id).or_insert(next);
        out.put(b"\"call_");
        out.put(itoa(n, &mut [0u8; 20]));
        out.put(b"\"");
    }
}

/// The decimal digits of `n`, written at the end of `buf`.
fn itoa(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// One message, its keys in sorted order (`actor`, `content`, `role`,
/// `stop`, `tool_call_id`, `tool_calls`), the optional ones only when
/// serde writes them.
fn write_message<'a>(out: &mut impl Sink, ids: &mut Ids<'a>, message: &'a Message) {
    match message {
        Message::System { content } => {
            out.put(b"{\"content\":");
            write_str(out, content);
            out.put(b",\"role\":\"system\"}");
        }
        Message::User {
            content,
            stop,
            tool_calls,
        } => {
            out.put(b"{\"content\":");
            write_str(out, content);
            out.put(b",\"role\":\"user\"");
            if let Some(stop) = stop {
                out.put(b",\"stop\":");
                write_str(out, stop);
            }
            write_calls(out, ids, tool_calls);
            out.put(b"}");
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            out.put(b"{");
            if let Some(content) = content {
                out.put(b"\"content\":");
                write_str(out, content);
                out.put(b",");
            }
            out.put(b"\"role\":\"assistant\"");
            write_calls(out, ids, tool_calls);
            out.put(b"}");
        }
        Message::Tool {
            tool_call_id,
            content,
            actor,
        } => {
            out.put(b"{");
            if !actor.is_agent() {
                out.put(b"\"actor\":");
                write_str(out, actor.as_str());
                out.put(b",");
            }
            out.put(b"\"content\":");
            write_str(out, content);
            out.put(b",\"role\":\"tool\",\"tool_call_id\":");
            ids.write(out, tool_call_id);
            out.put(b"}");
        }
    }
}

/// `,"tool_calls":[…]` when there are any (serde leaves an empty list out).
fn write_calls<'a>(out: &mut impl Sink, ids: &mut Ids<'a>, calls: &'a [ToolCallRequest]) {
    if calls.is_empty() {
        return;
    }
    out.put(b",\"tool_calls\":[");
    for (i, call) in calls.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        out.put(b"{\"arguments\":");
        write_str(out, &call.arguments);
        out.put(b",\"id\":");
        ids.write(out, &call.id);
        out.put(b",\"name\":");
        write_str(out, &call.name);
        out.put(b"}");
    }
    out.put(b"]");
}

/// The tools array: each `{"description","name","parameters"}`.
fn write_tools(out: &mut impl Sink, tools: &[FunctionTool]) {
    out.put(b"[");
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        out.put(b"{\"description\":");
        write_str(out, &tool.description);
        out.put(b",\"name\":");
        write_str(out, &tool.name);
        out.put(b",\"parameters\":");
        out.put(canonical_text(&tool.parameters).as_bytes());
        out.put(b"}");
    }
    out.put(b"]");
}

/// A JSON string as RFC 8785 writes it: `"` and `\` escaped, the control
/// characters as `\b \t \n \f \r` or `\u00xx` (lower-case hex), every other
/// character as itself.
pub(super) fn write_str(out: &mut impl Sink, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.put(b"\"");
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            _ => continue,
        };
        out.put(&bytes[start..i]);
        out.put(escape);
        start = i + 1;
    }
    out.put(&bytes[start..]);
    out.put(b"\"");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::canonical_request;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// The streamed text and the canonicalized value's text.
    fn both(identity: &Value, messages: &[Message], tools: &[FunctionTool]) -> (String, String) {
        let request = ModelRequest { messages, tools };
        let mut streamed = Vec::new();
        write_request(&mut streamed, &mut Fixed::new(identity), request);
        (
            String::from_utf8(streamed).expect("UTF-8"),
            canonical_text(&canonical_request(identity, request)),
        )
    }

    fn tool(name: &str, parameters: Value) -> FunctionTool {
        FunctionTool {
            name: name.into(),
            description: format!("Does {name}. \"Quoted\", \\ back, tab\t, é, 😀"),
            parameters,
        }
    }

    #[test]
    fn every_message_shape_streams_as_the_canonical_value_writes_it() {
        let identity =
            json!({"temperature": 0.2, "seed": 7, "model": "m", "z": [1.5e300, -0.0, 1e-7]});
        let call = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "notes__add".into(),
            arguments: "{\"text\": \"a\\nb\"}".into(),
        };
        let messages = vec![
            Message::System {
                content: "You keep notes.\u{0}\u{1f}\u{7f}\u{2028}".into(),
            },
            Message::user("add \"milk\"\r\n\u{8}\u{c}"),
            Message::Assistant {
                content: None,
                tool_calls: vec![call("x-9"), call("a-1")],
            },
            Message::tool("x-9", "{\"id\":\"n-1\"}"),
            Message::tool("a-1", "{\"error\":{}}"),
            Message::Assistant {
                content: Some(String::new()),
                tool_calls: vec![],
            },
            Message::User {
                content: String::new(),
                stop: None,
                tool_calls: vec![call("u-1")],
            },
            Message::Tool {
                tool_call_id: "u-1".into(),
                content: "{}".into(),
                actor: toolmock_simulation::Actor::User,
            },
            Message::User {
                content: "done ###STOP###".into(),
                stop: Some("###STOP###".into()),
                tool_calls: vec![],
            },
            Message::Assistant {
                content: Some("Added n-1.".into()),
                tool_calls: vec![call("x-9")],
            },
        ];
        let tools = vec![
            tool(
                "notes__add",
                json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 10}},
                       "required": ["text"], "€": 1, "a": 2, "\u{10000}": 3, "\u{ff61}": 4}),
            ),
            tool("get", json!({"type": "object"})),
        ];
        let (streamed, canonical) = both(&identity, &messages, &tools);
        assert_eq!(streamed, canonical);
        let (streamed, canonical) = both(&json!({}), &messages[..1], &[]);
        assert_eq!(streamed, canonical);
    }

    #[test]
    fn the_tools_are_written_again_when_they_change() {
        let mut fixed = Fixed::new(&json!({"model": "m"}));
        let messages = [Message::user("hi")];
        let mut text = |tools: &[FunctionTool]| {
            let mut out = Vec::new();
            write_request(
                &mut out,
                &mut fixed,
                ModelRequest {
                    messages: &messages,
                    tools,
                },
            );
            String::from_utf8(out).expect("UTF-8")
        };
        let one = [tool("a", json!({}))];
        let two = [tool("b", json!({}))];
        assert!(text(&one).contains("\"name\":\"a\""));
        assert!(text(&two).contains("\"name\":\"b\""));
        assert!(text(&[]).ends_with("\"tools\":[]}"));
    }

    /// Any text: control characters, quotes, back-slashes and characters
    /// beyond the BMP included.
    fn any_text() -> BoxedStrategy<String> {
        proptest::collection::vec(any::<char>(), 0..12)
            .prop_map(|chars| chars.into_iter().collect())
            .boxed()
    }

    fn message() -> impl Strategy<Value = Message> {
        let text = any_text();
        let call = (text.clone(), text.clone(), text.clone()).prop_map(|(id, name, arguments)| {
            ToolCallRequest {
                id,
                name,
                arguments,
            }
        });
        prop_oneof![
            text.clone().prop_map(|content| Message::System { content }),
            (
                text.clone(),
                proptest::option::of(text.clone()),
                proptest::collection::vec(call.clone(), 0..3)
            )
                .prop_map(|(content, stop, tool_calls)| Message::User {
                    content,
                    stop,
                    tool_calls
                }),
            (
                proptest::option::of(text.clone()),
                proptest::collection::vec(call, 0..3)
            )
                .prop_map(|(content, tool_calls)| Message::Assistant {
                    content,
                    tool_calls
                }),
            (text.clone(), text, any::<bool>()).prop_map(|(tool_call_id, content, user)| {
                Message::Tool {
                    tool_call_id,
                    content,
                    actor: if user {
                        toolmock_simulation::Actor::User
                    } else {
                        toolmock_simulation::Actor::Agent
                    },
                }
            }),
        ]
    }

    proptest! {
        #[test]
        fn any_conversation_streams_as_the_canonical_value_writes_it(
            messages in proptest::collection::vec(message(), 0..8),
            names in proptest::collection::vec(any_text(), 0..3),
        ) {
            let tools: Vec<FunctionTool> = names
                .iter()
                .map(|n| tool(n, json!({"type": "object", "description": n})))
                .collect();
            let (streamed, canonical) = both(&json!({"model": "m", "seed": 3}), &messages, &tools);
            prop_assert_eq!(streamed, canonical);
        }
    }
}
