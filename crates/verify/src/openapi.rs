//! The current schemas of HTTP operations, read from an OpenAPI 3 document:
//! each operation's JSON request body schema and its first 2xx JSON
//! response schema, with local `$ref`s (`#/components/schemas/…`) inlined so
//! they compare with a contract's self-contained schemas. Pure.

use serde_json::{Map, Value};
use toolmock_contract::pointer;

/// The most `$ref`s one schema may inline (a guard against a document
/// whose references fan out without end).
const MAX_INLINED: usize = 10_000;

/// One operation of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenApiOperation {
    /// `operationId`, when it has one.
    pub id: Option<String>,
    /// `get`, `post`, … (lower case, as the document writes them).
    pub method: String,
    /// The path template (`/notes`).
    pub path: String,
    /// Its pointer in the document (`/paths/~1notes/post`).
    pub at: String,
    /// The `application/json` request body's schema, refs inlined.
    pub input_schema: Option<Value>,
    /// The first 2xx `application/json` response's schema, refs inlined.
    pub output_schema: Option<Value>,
}

/// Why a document cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenApiError {
    /// A JSON pointer into the document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every operation of an OpenAPI 3 document, in document order.
pub fn operations(document: &Value) -> Result<Vec<OpenApiOperation>, OpenApiError> {
    let version = document.get("openapi").and_then(Value::as_str);
    if !version.is_some_and(|v| v.starts_with("3.")) {
        return Err(OpenApiError {
            path: "/openapi".into(),
            message: "not an OpenAPI 3 document (its `openapi` member is not \"3.x\")".into(),
        });
    }
    let Some(paths) = document.get("paths").and_then(Value::as_object) else {
        return Err(OpenApiError {
            path: "/paths".into(),
            message: "the document has no `paths` object".into(),
        });
    };
    let mut found = Vec::new();
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let at = pointer::push(&pointer::push("/paths", path), method);
            let input_schema = operation
                .pointer("/requestBody/content/application~1json/schema")
                .map(|s| inline(document, s, &pointer::push(&at, "requestBody")))
                .transpose()?;
            let output_schema = success_schema(operation)
                .map(|(status, s)| {
                    inline(
                        document,
                        s,
                        &pointer::push(&pointer::push(&at, "responses"), status),
                    )
                })
                .transpose()?;
            found.push(OpenApiOperation {
                id: operation
                    .get("operationId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                method: method.to_owned(),
                path: path.clone(),
                at,
                input_schema,
                output_schema,
            });
        }
    }
    Ok(found)
}

/// The first 2xx response (by status, `2XX` last) with a JSON schema.
fn success_schema(operation: &Value) -> Option<(&str, &Value)> {
    let responses = operation.get("responses")?.as_object()?;
    let mut statuses: Vec<&String> = responses
        .keys()
        .filter(|s| s.starts_with('2') && s.len() == 3)
        .collect();
    statuses.sort_by_key(|s| (s.as_str() == "2XX" || s.as_str() == "2xx", s.as_str()));
    statuses.into_iter().find_map(|status| {
        let schema = responses[status].pointer("/content/application~1json/schema")?;
        Some((status.as_str(), schema))
    })
}

/// `schema` with every local `$ref` replaced by what it names.
fn inline(document: &Value, schema: &Value, at: &str) -> Result<Value, OpenApiError> {
    let mut budget = MAX_INLINED;
    let mut stack = Vec::new();
    inline_value(document, schema, at, &mut stack, &mut budget)
}

fn inline_value(
    document: &Value,
    value: &Value,
    at: &str,
    stack: &mut Vec<String>,
    budget: &mut usize,
) -> Result<Value, OpenApiError> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let Some(target) = reference.strip_prefix('#') else {
                    return Err(OpenApiError {
                        path: pointer::push(at, "$ref"),
                        message: format!(
                            "{reference:?} is not a reference inside the document; only #/… references are followed"
                        ),
                    });
                };
                if stack.iter().any(|r| r == reference) {
                    return Err(OpenApiError {
                        path: pointer::push(at, "$ref"),
                        message: format!(
                            "{reference:?} refers to itself through {}: a recursive schema cannot be inlined",
                            stack.join(" → ")
                        ),
                    });
                }
                if *budget == 0 {
                    return Err(OpenApiError {
                        path: pointer::push(at, "$ref"),
                        message: format!("more than {MAX_INLINED} references to inline"),
                    });
                }
                *budget -= 1;
                let Some(named) = document.pointer(target) else {
                    return Err(OpenApiError {
                        path: pointer::push(at, "$ref"),
                        message: format!("{reference:?} names nothing in the document"),
                    });
                };
                stack.push(reference.clone());
                let inlined = inline_value(document, named, target, stack, budget);
                stack.pop();
                let mut inlined = inlined?;
                // Siblings of `$ref` (a description, say) are kept beside what it names.
                if let Value::Object(out) = &mut inlined {
                    for (key, sibling) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                        let sibling = inline_value(
                            document,
                            sibling,
                            &pointer::push(at, key),
                            stack,
                            budget,
                        )?;
                        out.insert(key.clone(), sibling);
                    }
                }
                return Ok(inlined);
            }
            let mut out = Map::new();
            for (key, child) in map {
                out.insert(
                    key.clone(),
                    inline_value(document, child, &pointer::push(at, key), stack, budget)?,
                );
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, child)| inline_value(document, child, &pointer::index(at, i), stack, budget))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// The document's operation for a custom operation `name` whose endpoint is
/// `endpoint`: the one whose `operationId` is `name`, else the `post` whose
/// path template ends the endpoint's path.
pub fn find<'a>(
    operations: &'a [OpenApiOperation],
    name: &str,
    endpoint: Option<&str>,
) -> Option<&'a OpenApiOperation> {
    if let Some(found) = operations.iter().find(|o| o.id.as_deref() == Some(name)) {
        return Some(found);
    }
    let path = endpoint
        .and_then(|url| reqwest::Url::parse(url).ok())?
        .path()
        .to_owned();
    operations
        .iter()
        .filter(|o| o.method == "post")
        .find(|o| path == o.path || path.ends_with(&o.path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> Value {
        json!({
            "openapi": "3.1.0",
            "paths": {
                "/notes": {"post": {
                    "operationId": "add",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Note"}}}},
                    "responses": {
                        "400": {"description": "bad"},
                        "201": {"content": {"application/json": {"schema": {
                            "type": "object", "properties": {"saved": {"$ref": "#/components/schemas/Text", "description": "what was saved"}}
                        }}}}
                    }
                }},
                "/loop": {"post": {
                    "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}}}
                }}
            },
            "components": {"schemas": {
                "Note": {"type": "object", "properties": {"text": {"$ref": "#/components/schemas/Text"}}, "required": ["text"]},
                "Text": {"type": "string"},
                "Tree": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Tree"}}}
            }}
        })
    }

    #[test]
    fn schemas_are_read_with_their_references_inlined() {
        let mut doc = document();
        doc["paths"].as_object_mut().map(|p| p.remove("/loop"));
        let ops = operations(&doc).expect("usable");
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].id.as_deref(), Some("add"));
        assert_eq!(ops[0].at, "/paths/~1notes/post");
        assert_eq!(
            ops[0].input_schema,
            Some(
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
            )
        );
        assert_eq!(
            ops[0].output_schema,
            Some(
                json!({"type": "object", "properties": {"saved": {"type": "string", "description": "what was saved"}}})
            )
        );
        assert_eq!(
            find(&ops, "add", None).map(|o| o.path.as_str()),
            Some("/notes")
        );
        assert_eq!(
            find(&ops, "other", Some("http://127.0.0.1:9/api/notes")).map(|o| o.path.as_str()),
            Some("/notes")
        );
        assert!(find(&ops, "other", Some("http://127.0.0.1:9/else")).is_none());
    }

    #[test]
    fn a_recursive_schema_and_a_non_openapi_document_are_refused_with_pointers() {
        let error = operations(&document()).expect_err("recursive");
        assert_eq!(error.path, "/components/schemas/Tree/properties/child/$ref");
        let error = operations(&json!({"swagger": "2.0"})).expect_err("not 3");
        assert_eq!(error.path, "/openapi");
    }
}
