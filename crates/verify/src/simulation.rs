//! The subjects of a simulation file (`toolmock verify FILE`): every tool
//! with a real tool to check — an MCP server (`server`, or the `verify`
//! block's), custom operations' HTTP endpoints, an OpenAPI document — with
//! its contracts, its mocks (each checked against its contract), its
//! recordings and its compiled `verify` block. Every problem is reported at
//! once, in its file at its pointer.

use crate::VerifyCode;
use crate::openapi;
use crate::settings::Settings;
use crate::subject::{Mock, OpenApiSource, Recording, Source, Subject, SubjectOperation};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use toolmock_contract::{DefinitionHash, Problem, pointer};
use toolmock_discovery::Endpoint;
use toolmock_evaluator::CompiledContract;
use toolmock_runtime::model::ToolKind;
use toolmock_simulation::document::{ToolFrom, ToolSpec, VerifyDoc};
use toolmock_simulation::{FileProblem, LoadedSimulation, LoadedTool};

/// The subjects of `simulation`, whose relative paths (recordings, OpenAPI
/// files) are read from `base` and whose stdio servers start there.
pub fn subjects(
    simulation: &LoadedSimulation,
    base: &Path,
) -> Result<Vec<Subject>, Vec<FileProblem>> {
    let mut problems = Vec::new();
    let mut subjects = Vec::new();
    for tool in &simulation.tools {
        let spec = &simulation.document.tools[tool.index];
        let at = pointer::index("/tools", tool.index);
        if let Some(subject) = subject(simulation, tool, spec, &at, base, &mut problems) {
            subjects.push(subject);
        }
    }
    if subjects.is_empty() && problems.is_empty() {
        problems.push(problem(
            &simulation.file,
            Problem::new(
                VerifyCode::NothingToVerify,
                "/tools",
                "no tool has a real tool to check: give one a `server`, its operations an `endpoint`, or a `verify` block naming a server or an OpenAPI document",
            ),
        ));
    }
    if problems.is_empty() {
        Ok(subjects)
    } else {
        Err(problems)
    }
}

fn problem(file: &str, problem: Problem<VerifyCode>) -> FileProblem {
    FileProblem::new(file, problem)
}

fn subject(
    simulation: &LoadedSimulation,
    tool: &LoadedTool,
    spec: &ToolSpec,
    at: &str,
    base: &Path,
    problems: &mut Vec<FileProblem>,
) -> Option<Subject> {
    let file = simulation.file.as_str();
    let block = spec.verify.clone().unwrap_or_default();
    let block_at = pointer::push(at, "verify");
    let before = problems.len();
    let server = server(spec, &block, &block_at, base).unwrap_or_else(|p| {
        problems.push(problem(file, p));
        None
    });
    let openapi = match &block.openapi {
        None => None,
        Some(named) if named.starts_with("http://") || named.starts_with("https://") => {
            Some(OpenApiSource::Url(named.clone()))
        }
        Some(named) => match read_openapi(&base.join(named)) {
            Ok(value) => Some(OpenApiSource::Document {
                file: named.clone(),
                value,
            }),
            Err(message) => {
                problems.push(problem(
                    file,
                    Problem::new(
                        VerifyCode::InvalidOpenapi,
                        pointer::push(&block_at, "openapi"),
                        message,
                    ),
                ));
                None
            }
        },
    };
    let mut operations = Vec::new();
    for (position, op) in tool.operations.iter().enumerate() {
        // An operation without an output schema has no contract to check.
        let Some(contract) = op.effective_contract(tool.output_schema.as_ref()) else {
            continue;
        };
        let compiled_contract = match CompiledContract::new(contract.clone()) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                problems.push(FileProblem {
                    file: file.to_owned(),
                    path: at.to_owned(),
                    code: e.code(),
                    message: format!(
                        "{}: the contract cannot be compiled: {e}",
                        op.operation.name
                    ),
                });
                continue;
            }
        };
        let endpoint = (spec.from == ToolFrom::Custom)
            .then(|| spec.operations.as_ref()?.get(position)?.endpoint.clone())
            .flatten();
        let mock = tool
            .definitions
            .iter()
            .find(|d| d.operation == op.operation.name)
            .and_then(|d| {
                let source = Source {
                    file: d.origin.file.clone(),
                    path: d.origin.path.clone(),
                };
                match toolmock_evaluator::compile_checked(&d.definition, Some(&compiled_contract)) {
                    Ok(compiled) => Some(Mock {
                        hash: DefinitionHash::of(&d.definition)
                            .map(|h| h.to_string())
                            .unwrap_or_default(),
                        definition: d.definition.clone(),
                        compiled: Arc::new(compiled),
                        source,
                    }),
                    Err(diagnostics) => {
                        for diagnostic in diagnostics.as_slice() {
                            problems.push(FileProblem {
                                file: source.file.clone(),
                                path: format!("{}{}", source.path, diagnostic.path),
                                code: diagnostic.code.as_str(),
                                message: diagnostic.message.clone(),
                            });
                        }
                        None
                    }
                }
            });
        operations.push(SubjectOperation {
            name: op.operation.name.clone(),
            contract,
            compiled_contract,
            mock,
            endpoint,
            revision: None,
        });
    }
    let names: Vec<&str> = operations.iter().map(|o| o.name.as_str()).collect();
    let settings = Settings::compile(&block, &names, &block_at).unwrap_or_else(|found| {
        problems.extend(found.into_iter().map(|p| problem(file, p)));
        Settings::default()
    });
    let mut recordings = Vec::new();
    for (i, name) in block.recordings.iter().enumerate() {
        let dir = base.join(name);
        match toolmock_mcp::record::read_calls(&dir) {
            Ok(calls) => recordings.push(Recording {
                name: name.clone(),
                file: Path::new(name)
                    .join(toolmock_mcp::record::CALLS_FILE)
                    .display()
                    .to_string(),
                calls,
            }),
            Err(e) => problems.push(FileProblem {
                file: file.to_owned(),
                path: pointer::index(&pointer::push(&block_at, "recordings"), i),
                code: e.code(),
                message: e.to_string(),
            }),
        }
    }
    let real =
        server.is_some() || openapi.is_some() || operations.iter().any(|o| o.endpoint.is_some());
    if !real {
        if spec.verify.is_some() {
            let why = if tool.kind == ToolKind::Platform {
                "a platform tool has no real tool toolmock can reach"
            } else {
                "the tool names no real tool: give it a `server`, its operations an `endpoint`, or `verify.server` / `verify.openapi`"
            };
            problems.push(problem(
                file,
                Problem::new(VerifyCode::NoRealTool, block_at, why),
            ));
        }
        return None;
    }
    if problems.len() > before {
        return None;
    }
    Some(Subject {
        tool: tool.name.clone(),
        server,
        openapi,
        fallback_output_schema: tool.output_schema.clone(),
        operations,
        settings,
        block: Source {
            file: file.to_owned(),
            path: block_at,
        },
        recordings,
    })
}

/// The MCP server: the block's (a URL or a stdio command started in
/// `base`), else the tool's `server`.
fn server(
    spec: &ToolSpec,
    block: &VerifyDoc,
    at: &str,
    base: &Path,
) -> Result<Option<Endpoint>, Problem<VerifyCode>> {
    let here = pointer::push(at, "server");
    let invalid = |message: String| Problem::new(VerifyCode::InvalidServer, here.clone(), message);
    match &block.server {
        Some(server) => match (&server.url, &server.command) {
            (Some(url), None) => Endpoint::http(url)
                .map(Some)
                .map_err(|e| invalid(e.to_string())),
            (None, Some(command)) => match Endpoint::stdio_command_line(command) {
                Ok(Endpoint::Stdio { program, args, .. }) => Ok(Some(Endpoint::Stdio {
                    program,
                    args,
                    cwd: Some(base.to_path_buf()),
                })),
                Ok(other) => Ok(Some(other)),
                Err(e) => Err(invalid(e.to_string())),
            },
            _ => Err(invalid("give exactly one of `url` and `command`".into())),
        },
        None => match &spec.server {
            Some(server) => Endpoint::http(&server.url)
                .map(Some)
                .map_err(|e| invalid(e.to_string())),
            None => Ok(None),
        },
    }
}

fn read_openapi(file: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    openapi::operations(&value).map_err(|e| {
        format!(
            "{}: {}: {}",
            file.display(),
            if e.path.is_empty() {
                "/"
            } else {
                e.path.as_str()
            },
            e.message
        )
    })?;
    Ok(value)
}
