//! Reading a rule's conditions from a definition (`{source, path, op,
//! value}`): the source, the path (dotted, or written as an array), and the
//! op with its value — version 1's ops here, every later op in its own room
//! through [`OPS`].

use crate::check::context::{Checker, Shape};
use crate::check::diagnostics::{DiagnosticCode as Code, pointer_index, pointer_push};
use crate::conditions::condition::{CompiledCondition, Test};
use crate::conditions::condition::{ConditionOp, Subject};
use crate::conditions::equality;
use crate::conditions::folding;
use crate::conditions::membership;
use crate::conditions::ordering;
use crate::conditions::want::Needs;
use crate::error::CallError;
use crate::expr::naming::NamedPath;
use crate::expr::tree::Expr;
use crate::language::{Feature, core_ops_quoted};
use crate::paths::dotted::Path;
use crate::paths::parse::reference_like;
use crate::scope::{NO_SLOT, Source};
use serde_json::Value;
use toolmock_contract::json_kind;

/// Compiles one later op with its `value`: the checker, the op, the value
/// and where the value is.
type CompileOp = fn(&mut Checker, &str, &Value, &str) -> Option<Test>;

/// The condition ops beyond version 1's, and the room that compiles each
/// (the version that has each is in `crate::language`).
const OPS: &[(&str, CompileOp)] = &[
    ("contains", membership::contains),
    ("subset_of", membership::subset_of),
    ("eq_ci", folding::eq_ci),
    ("lt", ordering::compare),
    ("le", ordering::compare),
    ("gt", ordering::compare),
    ("ge", ordering::compare),
];

fn compiler_of(op: &str) -> Option<CompileOp> {
    OPS.iter().find(|(name, _)| *name == op).map(|(_, c)| *c)
}

const CONDITION: Shape = Shape {
    allowed: &["source", "path", "op", "value"],
    required: &["source", "path", "op", "value"],
    what: "a condition",
};

impl Checker {
    /// A `when` (of a rule or of `$if`) at `at`: an array of conditions,
    /// each compiled (the ones with problems reported and left out).
    pub(crate) fn when_list(&mut self, value: &Value, at: &str) -> Vec<CompiledCondition> {
        let mut when = Vec::new();
        match value {
            Value::Array(items) => {
                for (i, condition) in items.iter().enumerate() {
                    if let Some(c) = self.condition(condition, &pointer_index(at, i)) {
                        when.push(c);
                    }
                }
            }
            other => self.wrong_type(at, "an array of conditions", other),
        }
        when
    }

    /// One condition of a rule's `when`, at `at`.
    pub(crate) fn condition(&mut self, value: &Value, at: &str) -> Option<CompiledCondition> {
        if let Some(test) = self.test_condition(value, at) {
            return test;
        }
        let map = self.object(value, at, "a condition")?;
        let mut ok = self.shape(map, at, &CONDITION);
        let lets = self.language.admits(Feature::LetSource);
        let mut source = match map.get("source") {
            Some(Value::String(s)) if s == "input" => Some(Source::Input),
            Some(Value::String(s)) if s == "state" => Some(Source::State),
            Some(Value::String(s)) if s == "let" && lets => Some(Source::State),
            Some(other) => {
                self.push(
                    Code::InvalidCondition,
                    pointer_push(at, "source"),
                    format!(
                        "a condition's source is \"input\"{}, not {other}",
                        if lets {
                            ", \"state\" or \"let\""
                        } else {
                            " or \"state\""
                        }
                    ),
                );
                None
            }
            None => None,
        };
        let mut computed = None;
        let mut named = None;
        let path = match map.get("path") {
            _ if lets && map.get("source").and_then(Value::as_str) == Some("let") => {
                let path_at = pointer_push(at, "path");
                self.feature(&pointer_push(at, "source"), Feature::LetSource);
                named = self.let_source_path(map.get("path"), &path_at);
                if let Some(found) = &named {
                    source = Some(match found.origin() {
                        crate::error::Origin::Input => Source::Input,
                        _ => Source::State,
                    });
                }
                named.as_ref().map(|_| Path::whole())
            }
            Some(Value::String(raw)) => match Path::parse(raw) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.push(Code::InvalidPath, pointer_push(at, "path"), e.message);
                    None
                }
            },
            Some(Value::Array(items)) => {
                let path_at = pointer_push(at, "path");
                self.feature(&path_at, Feature::ArrayPath);
                computed = self.array_path(items, &path_at);
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
                "eq" | "ne" if self.names_let(v) => {
                    let want = self.want(op, Needs::Any, false, v, &pointer_push(at, "value"))?;
                    Some(equality::equals(op == "eq", want))
                }
                "eq" | "ne" if self.is_reference_value(v) => {
                    self.reference_test(op == "eq", v, &pointer_push(at, "value"))
                }
                "eq" => Some(Test::Eq(v.clone())),
                // Version 1 has always called a later version's ops unknown ops; it still does.
                op if self.language.admits(Feature::Op(op)) && compiler_of(op).is_some() => {
                    self.feature(&pointer_push(at, "op"), Feature::Op(op));
                    let compile = compiler_of(op)?;
                    compile(self, op, v, &pointer_push(at, "value"))
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
                            self.language.ops_listed()
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
                        core_ops_quoted()
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
            slot: NO_SLOT,
            source: source?,
            path: path?,
            computed: computed.map(Box::new),
            named,
            test: test?,
        })
    }

    /// (Version 3) a `when` element that is exactly one `$any` or `$all`:
    /// `None` when `value` is not one; else the condition (holding when
    /// the test gives `true`), or `Some(None)` when it has problems.
    fn test_condition(&mut self, value: &Value, at: &str) -> Option<Option<CompiledCondition>> {
        let Value::Object(map) = value else {
            return None;
        };
        if !map.contains_key("$any") && !map.contains_key("$all") {
            return None;
        }
        if map.len() != 1 {
            self.push(
                Code::InvalidCondition,
                at,
                "a condition that is $any or $all is an object with that one member",
            );
            return Some(None);
        }
        let expr = self.node(value, at);
        if !matches!(expr, Expr::Op(_)) {
            return Some(None);
        }
        Some(Some(CompiledCondition {
            slot: NO_SLOT,
            source: Source::State,
            path: Path::whole(),
            computed: None,
            named: None,
            test: Test::Op(Box::new(Holds(expr))),
        }))
    }

    /// The path of a condition whose source is `let`: a dotted string or an
    /// array, whose first segment is a name in sight.
    fn let_source_path(&mut self, path: Option<&Value>, at: &str) -> Option<Box<NamedPath>> {
        let dotted = path.is_some_and(Value::is_string);
        let items: Vec<Value> = match path? {
            Value::String(raw) => match Path::parse(raw) {
                Ok(parsed) if !raw.is_empty() => parsed
                    .segments()
                    .iter()
                    .map(|s| Value::String(s.key.to_string()))
                    .collect(),
                Ok(_) => {
                    self.push(
                        Code::InvalidPath,
                        at,
                        "the path of a let condition starts with a name in sight",
                    );
                    return None;
                }
                Err(e) => {
                    self.push(Code::InvalidPath, at, e.message);
                    return None;
                }
            },
            Value::Array(items) => items.clone(),
            other => {
                self.wrong_type(at, "a path string or an array", other);
                return None;
            }
        };
        let Some((Value::String(name), rest)) = items.split_first() else {
            self.push(
                Code::InvalidPath,
                at,
                "the path of a let condition starts with a name in sight",
            );
            return None;
        };
        self.named_path(name, rest, at, usize::from(!dotted))
            .map(Box::new)
    }

    /// In version 2, a condition's `value` that is exactly one `$input` or
    /// `$state` reference is read per call; in version 1 it is a literal
    /// (and the warnings say so).
    fn is_reference_value(&self, value: &Value) -> bool {
        self.language.admits(Feature::ReferenceValue) && reference_like(value).is_some()
    }

    /// The test of an `eq` (`eq` true) or `ne` condition against a reference.
    fn reference_test(&mut self, eq: bool, value: &Value, at: &str) -> Option<Test> {
        let (source, path) = reference_like(value)?;
        self.feature(at, Feature::ReferenceValue);
        let reference = self.reference(source, path, &pointer_push(at, source.operator()), true)?;
        Some(Test::Ref(eq, Box::new(reference)))
    }
}

/// `$any` or `$all` as a condition: it holds when the test gives `true`.
#[derive(Debug, Clone)]
struct Holds(Expr);

impl ConditionOp for Holds {
    fn holds(&self, _found: Option<&Value>, subject: &Subject<'_, '_>) -> Result<bool, CallError> {
        Ok(self.0.render(subject.scope)? == Value::Bool(true))
    }

    fn reads_found(&self) -> bool {
        false
    }

    fn clone_op(&self) -> Box<dyn ConditionOp> {
        Box::new(self.clone())
    }
}
