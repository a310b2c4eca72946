//! Contract drift: each operation's pinned contract against the real tool's
//! current one — `tools/list` of its MCP server, or the operation of its
//! OpenAPI document — as unchanged, changed (with `toolmock diff`'s report),
//! gone, unchecked, or failed (the schemas could not be read).

use crate::VerifyCode;
use crate::openapi;
use crate::report::{Drift, DriftStatus};
use crate::run::VerifyOptions;
use crate::subject::{OpenApiSource, Subject};
use std::collections::BTreeMap;
use toolmock_contract::OperationContract;
use toolmock_discovery::{Discovery, DiscoveryError};

/// The drift of every operation of `subject`, by operation name, from
/// what its MCP server listed (when it has one) and its OpenAPI document.
pub(crate) async fn drift(
    subject: &Subject,
    listed: Option<Result<Discovery, DiscoveryError>>,
    options: &VerifyOptions,
) -> BTreeMap<String, Drift> {
    let mut found = BTreeMap::new();
    if let Some(listed) = listed {
        match listed {
            Ok(discovery) => {
                for op in &subject.operations {
                    let listed = discovery
                        .operations
                        .iter()
                        .find(|d| d.operation.name == op.name);
                    let drift = match listed {
                        None => gone(
                            "mcp",
                            format!("the server no longer lists a tool {:?}", op.name),
                        ),
                        Some(listed) => match listed.contract() {
                            Some(real) => compare(&op.contract, &real, "mcp"),
                            None => Drift {
                                from: Some("mcp"),
                                message: Some(
                                    "the server declares no output schema for it any more (and the tool gives no fallback)".into(),
                                ),
                                ..Drift::of(DriftStatus::Changed)
                            },
                        },
                    };
                    found.insert(op.name.clone(), drift);
                }
            }
            Err(e) => {
                for op in &subject.operations {
                    found.insert(op.name.clone(), failed(e.code(), e.to_string()));
                }
            }
        }
    }
    if let Some(source) = &subject.openapi {
        match openapi_operations(source, options).await {
            Ok(operations) => {
                for op in &subject.operations {
                    if found.contains_key(&op.name) {
                        continue; // the MCP server said already
                    }
                    let drift = match openapi::find(&operations, &op.name, op.endpoint.as_deref()) {
                        None => gone(
                            "openapi",
                            format!(
                                "the OpenAPI document has no operation {:?} (by operationId or the endpoint's path)",
                                op.name
                            ),
                        ),
                        Some(current) => {
                            let mut real = op.contract.clone();
                            if let Some(schema) = &current.input_schema {
                                real.input_schema = schema.clone();
                            }
                            if let Some(schema) = &current.output_schema {
                                real.output_schema = schema.clone();
                            }
                            compare(&op.contract, &real, "openapi")
                        }
                    };
                    found.insert(op.name.clone(), drift);
                }
            }
            Err((code, message)) => {
                for op in &subject.operations {
                    found
                        .entry(op.name.clone())
                        .or_insert_with(|| failed(code, message.clone()));
                }
            }
        }
    }
    for op in &subject.operations {
        found
            .entry(op.name.clone())
            .or_insert_with(|| Drift::of(DriftStatus::Unchecked));
    }
    found
}

fn gone(from: &'static str, message: String) -> Drift {
    Drift {
        from: Some(from),
        message: Some(message),
        ..Drift::of(DriftStatus::Gone)
    }
}

fn failed(code: &str, message: String) -> Drift {
    Drift {
        code: Some(code.to_owned()),
        message: Some(message),
        ..Drift::of(DriftStatus::Failed)
    }
}

fn compare(pinned: &OperationContract, real: &OperationContract, from: &'static str) -> Drift {
    match toolmock_schema::diff(pinned, real) {
        Ok(diff) if diff.is_unchanged() => Drift {
            from: Some(from),
            real_hash: Some(diff.new_hash.to_string()),
            ..Drift::of(DriftStatus::Unchanged)
        },
        Ok(diff) => Drift {
            from: Some(from),
            real_hash: Some(diff.new_hash.to_string()),
            real_contract: serde_json::to_value(real).ok(),
            diff: Some(diff),
            ..Drift::of(DriftStatus::Changed)
        },
        Err(e) => failed(
            e.code(),
            format!("the real tool's current contract cannot be hashed: {e}"),
        ),
    }
}

/// The operations of the OpenAPI document, fetched when it is a URL.
async fn openapi_operations(
    source: &OpenApiSource,
    options: &VerifyOptions,
) -> Result<Vec<openapi::OpenApiOperation>, (&'static str, String)> {
    let (name, document) = match source {
        OpenApiSource::Document { file, value } => (file.clone(), value.clone()),
        OpenApiSource::Url(url) => (url.clone(), fetch(url, options).await?),
    };
    openapi::operations(&document).map_err(|e| {
        (
            VerifyCode::InvalidOpenapi.as_str(),
            format!("{name}: {}: {}", display(&e.path), e.message),
        )
    })
}

fn display(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

async fn fetch(
    url: &str,
    options: &VerifyOptions,
) -> Result<serde_json::Value, (&'static str, String)> {
    let failed = |message: String| (VerifyCode::OpenapiUnreachable.as_str(), message);
    let client = reqwest::Client::builder()
        .timeout(options.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| failed(format!("cannot make an HTTP client: {e}")))?;
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed(format!("GET {url} failed: {e}")))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("GET {url} answered {status}")));
    }
    let body = toolmock_discovery::read_body(response, options.max_response_bytes)
        .await
        .map_err(|e| failed(format!("GET {url}: {e}")))?;
    serde_json::from_slice(&body).map_err(|e| {
        (
            VerifyCode::InvalidOpenapi.as_str(),
            format!("{url} is not JSON: {e}"),
        )
    })
}
