//! Reading a manifest by walking the raw JSON, so that one pass reports every
//! problem with its JSON pointer.

use super::model::*;
use super::{is_valid_runtime_name, runtime_name};
use crate::pointer::{self, type_name};
use crate::problems::{self, NormalizeCode, NormalizeProblems};
use crate::salesforce::SalesforceStatus;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use toolmock_contract::Problem;

/// Reads a manifest, reporting every problem.
pub(super) fn read(value: &Value) -> Result<PlatformManifest, NormalizeProblems> {
    let mut reader = Reader::default();
    let manifest = reader.manifest(value);
    match manifest {
        Some(manifest) if reader.errors.is_empty() => Ok(manifest),
        _ => Err(reader.errors),
    }
}

/// Walks a manifest, collecting every problem.
#[derive(Default)]
struct Reader {
    errors: NormalizeProblems,
}

impl Reader {
    fn wrong_type(&mut self, path: &str, expected: &'static str, found: &Value) {
        self.errors
            .push_problem(problems::wrong_type(path, expected, found));
    }

    /// The value as an object, or a `wrong_type` problem.
    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.wrong_type(path, "an object", other);
                None
            }
        }
    }

    /// Reports every member not in `allowed`.
    fn known_fields(&mut self, map: &Map<String, Value>, path: &str, allowed: &[&str]) {
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                self.errors.push_problem(Problem::new(
                    NormalizeCode::UnknownField,
                    pointer::push(path, key),
                    format!("unknown member {field:?}", field = key),
                ));
            }
        }
    }

    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        path: &str,
        field: &'static str,
    ) -> Option<&'v Value> {
        let found = map.get(field);
        if found.is_none() {
            self.errors
                .push_problem(problems::missing_field(path, field));
        }
        found
    }

    fn string(&mut self, value: &Value, path: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(path, "a string", other);
                None
            }
        }
    }

    fn name(&mut self, value: &Value, path: &str) -> Option<String> {
        let name = self.string(value, path)?;
        if name.is_empty() {
            self.errors.push_problem(Problem::new(
                NormalizeCode::EmptyName,
                path,
                "the name must not be empty",
            ));
            return None;
        }
        Some(name)
    }

    fn exact_numbers(&mut self, value: &Value, path: &str) -> bool {
        let found = problems::inexact_numbers(value, path);
        let ok = found.is_empty();
        self.errors.extend(found);
        ok
    }

    /// A schema member: an object or a boolean with exact numbers.
    fn schema(&mut self, value: &Value, path: &str) -> Option<Value> {
        if !(value.is_object() || value.is_boolean()) {
            self.wrong_type(path, "a JSON Schema (an object or a boolean)", value);
            return None;
        }
        if !self.exact_numbers(value, path) {
            return None;
        }
        Some(value.clone())
    }

    /// Checks that a user schema is usable where it ends up, blaming `path`.
    ///
    /// `embedded` is the whole schema the user schema is embedded in. A
    /// schema with references or regular expressions is compiled in place
    /// (so a `$ref` that does not resolve there, or a pattern the linear-time
    /// engine refuses, is caught); any other is checked against its draft's
    /// meta-schema, which finds the same errors far faster.
    fn usable(&mut self, user: &Value, embedded: impl FnOnce() -> Value, path: &str) {
        let result = if needs_compiling(user) {
            toolmock_evaluator::compile_schema(&embedded()).map(|_| ())
        } else {
            jsonschema::meta::validate(user).map_err(|e| e.to_string())
        };
        if let Err(message) = result {
            self.errors.push_problem(Problem::new(
                NormalizeCode::InvalidManifestSchema,
                path,
                format!("not a usable JSON Schema: {message}"),
            ));
        }
    }

    fn manifest(&mut self, value: &Value) -> Option<PlatformManifest> {
        let map = self.object(value, "")?;
        self.known_fields(map, "", &["manifest_version", "tool", "operations"]);
        if let Some(version) = self.required(map, "", "manifest_version")
            && version.as_u64() != Some(MANIFEST_VERSION)
        {
            if version.is_number() {
                self.errors.push_problem(Problem::new(
                    NormalizeCode::UnsupportedVersion,
                    "/manifest_version",
                    format!("manifest_version must be 1, found {found}", found = version),
                ));
            } else {
                self.wrong_type("/manifest_version", "the integer 1", version);
            }
        }
        let tool = self
            .required(map, "", "tool")
            .and_then(|v| self.name(v, "/tool"));
        let operations = self.required(map, "", "operations").and_then(|ops| {
            let Value::Array(items) = ops else {
                self.wrong_type("/operations", "an array", ops);
                return None;
            };
            if items.is_empty() {
                self.errors.push_problem(Problem::new(
                    NormalizeCode::NoOperations,
                    "/operations",
                    "a manifest needs at least one operation",
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            let mut complete = true;
            for (i, item) in items.iter().enumerate() {
                let path = pointer::index("/operations", i);
                let parsed = self.operation(item, &path, tool.as_deref());
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    let name_path = pointer::push(&path, "name");
                    if let Some(first) = seen.get(name) {
                        self.errors.push_problem(Problem::new(
                            NormalizeCode::DuplicateOperation,
                            name_path,
                            format!("the operation {name:?} is already defined at {first}"),
                        ));
                        complete = false;
                    } else if !name.is_empty() {
                        seen.insert(name.to_owned(), name_path);
                    }
                }
                match parsed {
                    Some(op) => out.push(op),
                    None => complete = false,
                }
            }
            complete.then_some(out)
        });
        Some(PlatformManifest {
            tool: tool?,
            operations: operations?,
        })
    }

    fn operation(&mut self, value: &Value, path: &str, tool: Option<&str>) -> Option<Operation> {
        let map = self.object(value, path)?;
        self.known_fields(
            map,
            path,
            &["name", "description", "required", "parameters", "output"],
        );
        let name_path = pointer::push(path, "name");
        let name = self
            .required(map, path, "name")
            .and_then(|v| self.name(v, &name_path));
        if let (Some(tool), Some(name)) = (tool, &name) {
            let expanded = runtime_name(tool, name);
            if !is_valid_runtime_name(&expanded) {
                self.errors.push_problem(Problem::new(NormalizeCode::InvalidRuntimeName, name_path.clone(), format!("the runtime name {name:?} must match ^[A-Za-z0-9_-]{{1,64}}$ (letters, digits, _ and -, at most 64)", name = expanded)));
            }
        }
        let description = match map.get("description") {
            None => Some(None),
            Some(v) => self
                .string(v, &pointer::push(path, "description"))
                .map(Some),
        };
        let parameters = self.required(map, path, "parameters").and_then(|v| {
            let params_path = pointer::push(path, "parameters");
            let Value::Array(items) = v else {
                self.wrong_type(&params_path, "an array", v);
                return None;
            };
            let mut out = Vec::with_capacity(items.len());
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            let mut complete = true;
            for (i, item) in items.iter().enumerate() {
                let p_path = pointer::index(&params_path, i);
                let parsed = self.parameter(item, &p_path);
                // Duplicates are found by the names as written, so that a
                // broken parameter does not hide its twin.
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    let p_name_path = pointer::push(&p_path, "name");
                    if let Some(first) = seen.get(name) {
                        self.errors.push_problem(Problem::new(
                            NormalizeCode::DuplicateParameter,
                            p_name_path,
                            format!("the parameter {name:?} is already defined at {first}"),
                        ));
                        complete = false;
                    } else if !name.is_empty() {
                        seen.insert(name.to_owned(), p_name_path);
                    }
                }
                match parsed {
                    Some(p) => out.push(p),
                    None => complete = false,
                }
            }
            complete.then_some(out)
        });
        // The names the parameters declare, read from the raw JSON so that a
        // broken parameter does not hide a misspelled required name.
        let declared: Option<Vec<&str>> = match map.get("parameters") {
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .filter_map(|p| p.get("name").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        };
        let required = match map.get("required") {
            None => Some(Vec::new()),
            Some(v) => {
                let req_path = pointer::push(path, "required");
                match v {
                    Value::Array(items) => {
                        let mut names = Vec::with_capacity(items.len());
                        let mut complete = true;
                        for (i, item) in items.iter().enumerate() {
                            let item_path = pointer::index(&req_path, i);
                            match self.string(item, &item_path) {
                                Some(n) => {
                                    // Checked against every parameter whose name
                                    // reads, even when another part of it failed.
                                    if let Some(names) = &declared
                                        && !names.contains(&n.as_str())
                                    {
                                        self.errors.push_problem(Problem::new(NormalizeCode::RequiredNotAParameter, item_path, format!("{name:?} is required but is not a parameter of this operation", name = n)));
                                    }
                                    names.push(n);
                                }
                                None => complete = false,
                            }
                        }
                        complete.then_some(names)
                    }
                    other => {
                        self.wrong_type(&req_path, "an array of parameter names", other);
                        None
                    }
                }
            }
        };
        let output = self
            .required(map, path, "output")
            .and_then(|v| self.output(v, &pointer::push(path, "output")));
        Some(Operation {
            name: name?,
            description: description?,
            required: required?,
            parameters: parameters?,
            output: output?,
        })
    }

    fn parameter(&mut self, value: &Value, path: &str) -> Option<Parameter> {
        let map = self.object(value, path)?;
        self.known_fields(
            map,
            path,
            &[
                "name",
                "type",
                "description",
                "required",
                "options",
                "default",
                "items",
            ],
        );
        let name = self
            .required(map, path, "name")
            .and_then(|v| self.name(v, &pointer::push(path, "name")));
        let shown = name.clone().unwrap_or_default();
        let type_path = pointer::push(path, "type");
        let kind = self.required(map, path, "type").and_then(|v| {
            let text = self.string(v, &type_path)?;
            let kind = ParameterType::parse(&text);
            if kind.is_none() {
                self.errors.push_problem(Problem::new(NormalizeCode::UnknownParameterType, type_path.clone(), format!("parameter {parameter:?} has the unknown type {found:?} (expected one of string, number, integer, boolean, object, array, sfdc_field_mapping, async_options)", parameter = shown, found = text)));
            }
            kind
        });
        let description = match map.get("description") {
            None => Some(None),
            Some(v) => self
                .string(v, &pointer::push(path, "description"))
                .map(Some),
        };
        let required = match map.get("required") {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.wrong_type(&pointer::push(path, "required"), "a boolean", other);
                None
            }
        };
        let options = match map.get("options") {
            None => Some(None),
            Some(v) => self
                .options(v, &pointer::push(path, "options"), &shown, kind)
                .map(Some),
        };
        let default = match map.get("default") {
            None => Some(None),
            Some(v) => {
                let d_path = pointer::push(path, "default");
                let mut ok = self.exact_numbers(v, &d_path);
                if let Some(kind) = kind {
                    if !kind.accepts(v) {
                        self.errors.push_problem(Problem::new(NormalizeCode::DefaultTypeMismatch, d_path.clone(), format!("the default of parameter {parameter:?} must be of type {expected}, found {found}", parameter = shown, expected = kind.json_type(), found = type_name(v))));
                        ok = false;
                    } else if let Some(Some(options)) = &options
                        && !options
                            .iter()
                            .any(|o| toolmock_evaluator::json_equal(&o.value, v))
                    {
                        self.errors.push_problem(Problem::new(NormalizeCode::DefaultNotAnOption, d_path.clone(), format!("the default of parameter {parameter:?} is not one of its option values", parameter = shown)));
                        ok = false;
                    }
                }
                ok.then(|| Some(v.clone()))
            }
        };
        let items = match map.get("items") {
            None => Some(None),
            Some(v) => {
                let i_path = pointer::push(path, "items");
                match kind {
                    Some(ParameterType::Array) | None => {
                        let schema = self.schema(v, &i_path);
                        if let Some(schema) = &schema {
                            self.usable(
                                schema,
                                || json!({"type": "array", "items": schema}),
                                &i_path,
                            );
                        }
                        schema.map(Some)
                    }
                    Some(other) => {
                        self.errors.push_problem(Problem::new(NormalizeCode::ItemsWithoutArray, i_path, format!("items is only allowed on array parameters; {parameter:?} is {kind}", parameter = shown, kind = other.as_str())));
                        None
                    }
                }
            }
        };
        Some(Parameter {
            name: name?,
            kind: kind?,
            description: description?,
            required: required?,
            options: options?,
            default: default?,
            items: items?,
        })
    }

    fn options(
        &mut self,
        value: &Value,
        path: &str,
        parameter: &str,
        kind: Option<ParameterType>,
    ) -> Option<Vec<ParameterOption>> {
        let Value::Array(items) = value else {
            self.wrong_type(path, "a non-empty array of {value, label}", value);
            return None;
        };
        if items.is_empty() {
            self.errors.push_problem(Problem::new(
                NormalizeCode::EmptyOptions,
                path,
                format!("parameter {parameter:?} has an empty options list"),
            ));
            return None;
        }
        let mut out: Vec<(ParameterOption, String)> = Vec::with_capacity(items.len());
        let mut complete = true;
        for (i, item) in items.iter().enumerate() {
            let o_path = pointer::index(path, i);
            let Some(map) = self.object(item, &o_path) else {
                complete = false;
                continue;
            };
            self.known_fields(map, &o_path, &["value", "label"]);
            let v_path = pointer::push(&o_path, "value");
            let option_value = self.required(map, &o_path, "value").and_then(|v| {
                if !self.exact_numbers(v, &v_path) {
                    return None;
                }
                if let Some(kind) = kind
                    && !kind.accepts(v)
                {
                    self.errors.push_problem(Problem::new(NormalizeCode::OptionTypeMismatch, v_path.clone(), format!("option value of parameter {parameter:?} must be of type {expected}, found {found}", expected = kind.json_type(), found = type_name(v))));
                    return None;
                }
                if let Some((_, first)) = out
                    .iter()
                    .find(|(o, _)| toolmock_evaluator::json_equal(&o.value, v))
                {
                    self.errors.push_problem(Problem::new(NormalizeCode::DuplicateOption, v_path.clone(), format!("option value {value} of parameter {parameter:?} is already listed at {first}", value = v)));
                    return None;
                }
                Some(v.clone())
            });
            let label = self
                .required(map, &o_path, "label")
                .and_then(|v| self.string(v, &pointer::push(&o_path, "label")));
            match (option_value, label) {
                (Some(value), Some(label)) => out.push((ParameterOption { value, label }, v_path)),
                _ => complete = false,
            }
        }
        complete.then(|| out.into_iter().map(|(o, _)| o).collect())
    }

    fn output(&mut self, value: &Value, path: &str) -> Option<Output> {
        let map = self.object(value, path)?;
        if map.contains_key("envelope") {
            self.known_fields(map, path, &["envelope", "status", "data_schema"]);
            let e_path = pointer::push(path, "envelope");
            let envelope_ok = map
                .get("envelope")
                .and_then(|v| self.string(v, &e_path))
                .is_some_and(|e| {
                    if e == "salesforce" {
                        true
                    } else {
                        self.errors.push_problem(Problem::new(
                            NormalizeCode::UnknownEnvelope,
                            e_path.clone(),
                            format!(
                                "unknown envelope {found:?} (the only envelope is \"salesforce\")",
                                found = e
                            ),
                        ));
                        false
                    }
                });
            let s_path = pointer::push(path, "status");
            let status = self.required(map, path, "status").and_then(|v| {
                let status = v.as_u64().and_then(SalesforceStatus::from_code);
                if status.is_none() {
                    if v.is_number() {
                        self.errors.push_problem(Problem::new(
                            NormalizeCode::InvalidStatus,
                            s_path.clone(),
                            format!(
                                "the Salesforce status must be 200 or 201, found {found}",
                                found = v
                            ),
                        ));
                    } else {
                        self.wrong_type(&s_path, "the integer 200 or 201", v);
                    }
                }
                status
            });
            let d_path = pointer::push(path, "data_schema");
            let data_schema = self
                .required(map, path, "data_schema")
                .and_then(|v| self.schema(v, &d_path));
            let (status, data_schema) = (status?, data_schema?);
            if !envelope_ok {
                return None;
            }
            let output = Output::Salesforce {
                status,
                data_schema,
            };
            if let Output::Salesforce { data_schema, .. } = &output {
                self.usable(data_schema, || output.schema(), &d_path);
            }
            Some(output)
        } else if map.contains_key("schema") {
            self.known_fields(map, path, &["schema"]);
            let s_path = pointer::push(path, "schema");
            let schema = map.get("schema").and_then(|v| self.schema(v, &s_path))?;
            self.usable(&schema, || schema.clone(), &s_path);
            Some(Output::Schema(schema))
        } else {
            self.errors.push_problem(Problem::new(NormalizeCode::InvalidOutput, path, "output must be {\"schema\": S} or {\"envelope\": \"salesforce\", \"status\": 200|201, \"data_schema\": D}"));
            None
        }
    }
}

/// Whether a schema has keywords only a full compile can vet: references
/// (which must resolve where the schema ends up) and regular expressions.
fn needs_compiling(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| {
            matches!(
                k.as_str(),
                "$ref"
                    | "$dynamicRef"
                    | "$recursiveRef"
                    | "$id"
                    | "$anchor"
                    | "pattern"
                    | "patternProperties"
            ) || needs_compiling(v)
        }),
        Value::Array(items) => items.iter().any(needs_compiling),
        _ => false,
    }
}
