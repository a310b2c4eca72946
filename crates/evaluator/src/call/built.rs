//! A call whose result the caller builds in its own form
//! ([`evaluate_into`]), and the parts of a definition's results it may
//! prepare once ([`CompiledDefinition::for_each_constant`]).

use crate::call::outcome::Call;
use crate::call::select::{render_updates, select};
use crate::definition::CompiledDefinition;
use crate::domain::answer::{Answer, DomainError};
use crate::render::build::{Build, Constant};
use crate::scope::{Memo, Scope};
use serde_json::{Map, Value};

/// What a successful call answers when its result was built by a
/// [`Build`] ([`evaluate_into`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltOutcome<'d, N> {
    /// The variant used.
    pub variant: &'d str,
    /// The index of the matched rule in the variant's `rules`, or `None`.
    pub rule: Option<usize>,
    /// The result as built; `None` when the call answered a domain error.
    pub result: Option<N>,
    /// (Version 2) the domain error the call answered instead of a result;
    /// `state_updates` is then empty.
    pub error: Option<DomainError>,
    /// The rendered `set_state`: each top-level key replaces the pre-call state's.
    pub state_updates: Vec<(&'d str, Value)>,
    /// The simulated delay.
    pub delay_ms: u32,
}

impl<N> BuiltOutcome<'_, N> {
    /// Moves the updates into `state`, turning the pre-call state into the
    /// post-call state; gives the result back.
    pub fn commit_to(self, state: &mut Map<String, Value>) -> Option<N> {
        crate::call::outcome::commit(self.state_updates, state);
        self.result
    }
}

/// [`evaluate`](crate::evaluate), but the result is built by `builder` —
/// its literal parts handed over as the definition's own values, only its
/// operators rendered — instead of returned as a [`Value`]: for a caller
/// whose own form of the result (another language's objects) would
/// otherwise be converted from a fresh `Value` every call.
///
/// The answer and any error are exactly [`evaluate`](crate::evaluate)'s
/// (a builder's own error aside).
///
/// ```
/// use serde_json::{json, Map, Value};
/// use toolmock_evaluator::{Build, CallError, Shape, compile, evaluate_into, Call};
///
/// /// Builds `Value`s, counting the literal parts it was handed.
/// struct Values(usize);
/// impl<'d> Build<'d> for Values {
///     type Node = Value;
///     type Array = Vec<Value>;
///     type Object = (Vec<String>, Map<String, Value>);
///     type Error = CallError;
///     fn constant(&mut self, value: &'d Value) -> Result<Value, CallError> {
///         self.0 += 1;
///         Ok(value.clone())
///     }
///     fn rendered(&mut self, value: &Value) -> Result<Value, CallError> { Ok(value.clone()) }
///     fn begin_array(&mut self, len: usize) -> Result<Vec<Value>, CallError> { Ok(Vec::with_capacity(len)) }
///     fn push(&mut self, array: &mut Vec<Value>, item: Value) -> Result<(), CallError> { array.push(item); Ok(()) }
///     fn end_array(&mut self, array: Vec<Value>) -> Result<Value, CallError> { Ok(Value::Array(array)) }
///     fn begin_object(&mut self, shape: Shape<'d>) -> Result<Self::Object, CallError> {
///         Ok((shape.keys().map(str::to_owned).collect(), Map::new()))
///     }
///     fn field(&mut self, object: &mut Self::Object, index: usize, value: Value) -> Result<(), CallError> {
///         object.1.insert(object.0[index].clone(), value);
///         Ok(())
///     }
///     fn end_object(&mut self, object: Self::Object) -> Result<Value, CallError> { Ok(Value::Object(object.1)) }
/// }
///
/// let definition = compile(&json!({
///     "schema_version": 1,
///     "default_variant": "ok",
///     "variants": {"ok": {"result": {"id": {"$input": "id"}, "status": "found"}}},
///     "examples": [{"variant": "ok", "input": {"id": 1}, "expected": {"id": 1, "status": "found"}}]
/// })).expect("the definition compiles");
/// let input = json!({"id": 7});
/// let call = Call { input: &input, state: &Map::new(), variant: None };
/// let mut builder = Values(0);
/// let outcome = evaluate_into(&definition, &call, &mut builder)?;
/// assert_eq!(outcome.result, Some(json!({"id": 7, "status": "found"})));
/// assert_eq!(builder.0, 1);
/// # Ok::<(), toolmock_evaluator::CallError>(())
/// ```
pub fn evaluate_into<'d, B: Build<'d>>(
    definition: &'d CompiledDefinition,
    call: &Call<'_>,
    builder: &mut B,
) -> Result<BuiltOutcome<'d, B::Node>, B::Error> {
    let memo = Memo::new();
    let scope = Scope::new(call.input, call.state, &memo);
    let selected = select(definition, call, &scope)?;
    let (result, error, state_updates) = match selected.result {
        Answer::Result(expr) => (
            Some(expr.build(&scope, builder)?),
            None,
            render_updates(&selected, &scope)?,
        ),
        Answer::Error(error) => (None, Some(error.render(&scope)?), Vec::new()),
    };
    Ok(BuiltOutcome {
        variant: &selected.variant.name,
        rule: selected.rule,
        result,
        error,
        state_updates,
        delay_ms: selected.delay_ms,
    })
}

impl CompiledDefinition {
    /// Calls `f` on every part of every result (of each variant and rule)
    /// that [`evaluate_into`] hands a [`Build`] as the definition's own —
    /// each literal value and each object shape — so that the builder's
    /// form of them can be prepared once, when the definition is compiled.
    pub fn for_each_constant<'d>(&'d self, mut f: impl FnMut(Constant<'d>)) {
        for variant in self.variants.iter() {
            let rules = variant.rules.iter().filter_map(|r| r.result.as_ref());
            for answer in std::iter::once(&variant.result).chain(rules) {
                if let Answer::Result(expr) = answer {
                    expr.for_each_constant(&mut f);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate_into;
    use crate::call::evaluate::evaluate;
    use crate::call::outcome::Call;
    use crate::error::CallError;
    use crate::render::build::{Build, Constant, Shape};
    use serde_json::{Map, Value, json};
    use std::collections::BTreeSet;

    /// Builds values, and notes the address of every constant part and
    /// shape it was handed.
    #[derive(Default)]
    struct Values {
        constants: BTreeSet<usize>,
        shapes: BTreeSet<usize>,
    }

    impl<'d> Build<'d> for Values {
        type Node = Value;
        type Array = Vec<Value>;
        type Object = (Shape<'d>, Map<String, Value>);
        type Error = CallError;

        fn constant(&mut self, value: &'d Value) -> Result<Value, CallError> {
            self.constants.insert(std::ptr::from_ref(value).addr());
            Ok(value.clone())
        }

        fn rendered(&mut self, value: &Value) -> Result<Value, CallError> {
            Ok(value.clone())
        }

        fn begin_array(&mut self, len: usize) -> Result<Vec<Value>, CallError> {
            Ok(Vec::with_capacity(len))
        }

        fn push(&mut self, array: &mut Vec<Value>, item: Value) -> Result<(), CallError> {
            array.push(item);
            Ok(())
        }

        fn end_array(&mut self, array: Vec<Value>) -> Result<Value, CallError> {
            Ok(Value::Array(array))
        }

        fn begin_object(&mut self, shape: Shape<'d>) -> Result<Self::Object, CallError> {
            self.shapes.insert(shape.id());
            Ok((shape, Map::new()))
        }

        fn field(
            &mut self,
            object: &mut Self::Object,
            index: usize,
            value: Value,
        ) -> Result<(), CallError> {
            let key = object.0.keys().nth(index).unwrap_or_default();
            object.1.insert(key.to_owned(), value);
            Ok(())
        }

        fn end_object(&mut self, object: Self::Object) -> Result<Value, CallError> {
            Ok(Value::Object(object.1))
        }
    }

    /// `evaluate_into` answers exactly what `evaluate` answers, and fails
    /// exactly when and how it fails; every constant part and shape it
    /// hands over is one `for_each_constant` names.
    #[test]
    fn built_results_match_rendered_ones() {
        let definition = crate::check::compile(&json!({
            "schema_version": 2,
            "default_variant": "record",
            "initial_state": {"owner": {"name": "Ada", "ids": [7, 8]}},
            "variants": {
                "record": {
                    "result": {
                        "kind": "member", "tags": ["x", {"$input": "tag"}, {"who": {"$state": "owner.name"}, "fixed": {"on": [false, 2]}}],
                        "total": {"$number": {"$input": "amount"}}, "none": {}, "empty": [],
                        "due": {"$dateAdd": {"value": {"$input": "day"}, "hours": 5}},
                        "note": "ü\u{2}\r", "everything": {"$state": ""}
                    },
                    "set_state": {"last_tag": {"$input": "tag"}},
                    "rules": [{"when": [{"source": "input", "path": "tag", "op": "eq", "value": "vip"}],
                               "result": [{"$input": ""}, {"fixed": "yes"}]}]
                },
                "list": {"result": [false, null, 2.25]},
                "text": {"result": "only text"},
                "missing": {"error": {"code": "no_owner", "message": {"$state": "owner.name"}}}
            },
            "examples": [
                {"variant": "record", "input": {"tag": "vip"}, "expected": [{"tag": "vip"}, {"fixed": "yes"}]},
                {"variant": "list", "input": {}, "expected": [false, null, 2.25]},
                {"variant": "text", "input": {}, "expected": "only text"},
                {"variant": "missing", "input": {}, "expected_error": {"code": "no_owner", "message": "Ada"}}
            ]
        }))
        .expect("compiles");
        let (mut constants, mut shapes) = (BTreeSet::new(), BTreeSet::new());
        definition.for_each_constant(|part| match part {
            Constant::Value(value) => {
                constants.insert(std::ptr::from_ref(value).addr());
            }
            Constant::Shape(shape) => {
                shapes.insert(shape.id());
            }
        });
        let state = definition.initial_state().clone();
        let inputs = [
            json!({"tag": "vip"}),
            json!({"tag": [1, {"n": null}], "amount": "99.95", "day": "2026-07-04T10:00:00+02:00"}),
            json!({"tag": "a", "amount": "2e2", "day": "2026-07-04"}),
            json!({"tag": "b", "amount": 4, "day": "2026-06-31"}),
            json!({"tag": "c", "amount": 4}),
        ];
        let (empty, mut oks, mut errors) = (Map::new(), 0, 0);
        let mut built = Values::default();
        for input in &inputs {
            for variant in [
                None,
                Some("list"),
                Some("text"),
                Some("missing"),
                Some("other"),
            ] {
                for state in [&state, &empty] {
                    let call = Call {
                        input,
                        state,
                        variant,
                    };
                    match (
                        evaluate(&definition, &call),
                        evaluate_into(&definition, &call, &mut built),
                    ) {
                        (Ok(value), Ok(into)) => {
                            let result = value.error.is_none().then(|| value.result.clone());
                            assert_eq!(
                                (
                                    result,
                                    value.variant,
                                    value.rule,
                                    &value.error,
                                    &value.state_updates,
                                    value.delay_ms
                                ),
                                (
                                    into.result,
                                    into.variant,
                                    into.rule,
                                    &into.error,
                                    &into.state_updates,
                                    into.delay_ms
                                )
                            );
                            oks += 1;
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(
                                (a.code(), a.to_string(), a.path()),
                                (b.code(), b.to_string(), b.path())
                            );
                            errors += 1;
                        }
                        (a, b) => panic!("{input} {variant:?}: {a:?} vs {b:?}"),
                    }
                }
            }
        }
        assert!(oks >= 20 && errors >= 10, "{oks} answers, {errors} errors");
        assert!(
            built.constants.len() >= 5 && built.shapes.len() == 2,
            "{} constants, {} shapes",
            built.constants.len(),
            built.shapes.len()
        );
        assert!(built.constants.is_subset(&constants) && built.shapes.is_subset(&shapes));
    }
}
