//! A library tool on the service, as a subject: the settings an operator
//! gives it (`PUT /api/tools/{id}/verification`: its `verify` block, where
//! its real tool is, the schedule) checked against the tool, and the
//! subject a worker verifies — each operation's current contract and its
//! latest revision's mock.

use crate::VerifyCode;
use crate::settings::Settings;
use crate::subject::{Mock, OpenApiSource, Source, Subject, SubjectOperation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use toolmock_contract::{Problem, pointer};
use toolmock_discovery::Endpoint;
use toolmock_evaluator::CompiledContract;
use toolmock_runtime::model::{LibraryTool, ToolKind};
use toolmock_simulation::document::VerifyDoc;

/// A library tool's verification settings (the API's body, kept as the
/// verification runs them).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// The `verify` block: `safe`, `variants`, `matchers`, `chains`, and
    /// `openapi` as an `http(s)://` URL. `server` and `recordings` are the
    /// command line's (a process to start, files to read) and are refused.
    #[serde(default)]
    pub verify: VerifyDoc,
    /// An MCP tool's staging copy: verified there instead of at the URL the
    /// tool was discovered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_url: Option<String>,
    /// A custom tool's operations' HTTP endpoints (a `POST` of the arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
}

fn is_http(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

impl ToolSettings {
    /// Every URL the verification may reach, with its pointer (for an
    /// allow-list).
    pub fn urls<'a>(&'a self, tool: &'a LibraryTool) -> Vec<(String, &'a str)> {
        let mut urls = Vec::new();
        match &self.sandbox_url {
            Some(url) => urls.push(("/sandbox_url".to_owned(), url.as_str())),
            None => {
                if let Some(url) = tool.source_config.get("url").and_then(|u| u.as_str()) {
                    urls.push((String::new(), url));
                }
            }
        }
        for (name, url) in &self.endpoints {
            urls.push((pointer::push("/endpoints", name), url.as_str()));
        }
        if let Some(url) = &self.verify.openapi {
            urls.push(("/verify/openapi".to_owned(), url.as_str()));
        }
        urls
    }

    /// Checks the settings against `tool`: every problem, with its pointer
    /// into the settings.
    pub fn check(&self, tool: &LibraryTool) -> Result<Settings, Vec<Problem<VerifyCode>>> {
        let mut problems = Vec::new();
        let names: Vec<&str> = tool
            .operations
            .iter()
            .map(|o| o.operation.name.as_str())
            .collect();
        if self.verify.server.is_some() {
            problems.push(Problem::new(
                VerifyCode::NotOnTheService,
                "/verify/server",
                "the service verifies a tool at the URL it was discovered from, or `sandbox_url`; it starts no process",
            ));
        }
        if !self.verify.recordings.is_empty() {
            problems.push(Problem::new(
                VerifyCode::NotOnTheService,
                "/verify/recordings",
                "recordings are folders on disk: replay them with `toolmock verify`",
            ));
        }
        if let Some(url) = &self.verify.openapi
            && !is_http(url)
        {
            problems.push(Problem::new(
                VerifyCode::InvalidOpenapi,
                "/verify/openapi",
                format!(
                    "{url:?}: the service reads an OpenAPI document from an http(s):// URL only"
                ),
            ));
        }
        if let Some(url) = &self.sandbox_url {
            if tool.kind != ToolKind::Mcp {
                problems.push(Problem::new(
                    VerifyCode::InvalidSandboxUrl,
                    "/sandbox_url",
                    format!("a {} tool has no MCP server to point elsewhere: give its operations `endpoints`", tool.kind.as_str()),
                ));
            } else if !is_http(url) {
                problems.push(Problem::new(
                    VerifyCode::InvalidSandboxUrl,
                    "/sandbox_url",
                    format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
        }
        for (name, url) in &self.endpoints {
            let at = pointer::push("/endpoints", name);
            if tool.kind != ToolKind::Custom {
                problems.push(Problem::new(
                    VerifyCode::NoRealTool,
                    at,
                    format!(
                        "only a custom tool's operations have endpoints; this is a {} tool",
                        tool.kind.as_str()
                    ),
                ));
            } else if !names.contains(&name.as_str()) {
                problems.push(Problem::new(
                    VerifyCode::UnknownOperation,
                    at,
                    format!("the tool has no operation {name:?}"),
                ));
            } else if !is_http(url) {
                problems.push(Problem::new(
                    VerifyCode::InvalidServer,
                    at,
                    format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
        }
        let settings = Settings::compile(&self.verify, &names, "/verify");
        match settings {
            Ok(settings) if problems.is_empty() => Ok(settings),
            Ok(_) => Err(problems),
            Err(more) => {
                problems.extend(more);
                Err(problems)
            }
        }
    }

    /// Whether the tool has a real tool to check with these settings.
    pub fn reaches(&self, tool: &LibraryTool) -> bool {
        self.sandbox_url.is_some()
            || (tool.kind == ToolKind::Mcp && tool.source_config.get("url").is_some())
            || !self.endpoints.is_empty()
            || self.verify.openapi.is_some()
    }

    /// The subject a worker verifies: every operation with a contract, its
    /// latest revision's mock, the real tool these settings name.
    pub fn subject(&self, tool: &LibraryTool) -> Result<Subject, Vec<Problem<VerifyCode>>> {
        let settings = self.check(tool)?;
        if !self.reaches(tool) {
            return Err(vec![Problem::new(
                VerifyCode::NoRealTool,
                "",
                format!(
                    "{} names no real tool: an MCP tool discovered from a URL, a `sandbox_url`, `endpoints` or `verify.openapi`",
                    tool.name
                ),
            )]);
        }
        let url = self
            .sandbox_url
            .clone()
            .or_else(|| {
                tool.source_config
                    .get("url")
                    .and_then(|u| u.as_str())
                    .map(str::to_owned)
            })
            .filter(|_| tool.kind == ToolKind::Mcp);
        let server = match url {
            Some(url) => Some(Endpoint::http(&url).map_err(|e| {
                vec![Problem::new(
                    VerifyCode::InvalidServer,
                    "/sandbox_url",
                    e.to_string(),
                )]
            })?),
            None => None,
        };
        let mut operations = Vec::new();
        for view in &tool.operations {
            let Some(contract) = view.contract.clone() else {
                continue;
            };
            let compiled_contract = match CompiledContract::new(contract.clone()) {
                Ok(c) => Arc::new(c),
                Err(_) => continue,
            };
            // The revision was checked when it was saved; evaluated here as saved.
            let mock = view.latest.as_ref().and_then(|latest| {
                let compiled = toolmock_evaluator::compile(&latest.definition).ok()?;
                Some(Mock {
                    definition: latest.definition.clone(),
                    compiled: Arc::new(compiled),
                    hash: latest.definition_hash.to_string(),
                    source: Source {
                        file: format!("revision {}", latest.revision),
                        path: String::new(),
                    },
                })
            });
            operations.push(SubjectOperation {
                name: view.operation.name.clone(),
                contract,
                compiled_contract,
                endpoint: self.endpoints.get(&view.operation.name).cloned(),
                revision: view
                    .latest
                    .as_ref()
                    .filter(|_| mock.is_some())
                    .map(|l| l.revision),
                mock,
            });
        }
        Ok(Subject {
            tool: tool.name.clone(),
            server,
            openapi: self.verify.openapi.clone().map(OpenApiSource::Url),
            fallback_output_schema: tool.output_schema.clone(),
            operations,
            settings,
            block: Source {
                file: "verification settings".into(),
                path: "/verify".into(),
            },
            recordings: Vec::new(),
        })
    }
}
