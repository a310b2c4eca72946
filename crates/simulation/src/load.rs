//! Reading a simulation document: its JSON Schema, its referenced files, and
//! every static check, all problems at once.

use crate::document::{
    CallMatcher, CaseDoc, DriverDoc, SimulationDocument, Source, StepExpect, ToolFrom, ToolSpec,
    TrajectoryExpect,
};
use crate::problem::{FileProblem, LoadCode};
use crate::reference::{BadReference, FoundReference, Scope, resolve_path, scan, split_head};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolmock_contract::{
    ContractCode, OperationContract, OperationIdentity, OperationSource, Problem, ProblemCode,
    pointer,
};
use toolmock_runtime::model::ToolId;
use toolmock_runtime::model::{AttemptOutcome, NewOperation, SimulationMode, ToolKind};
use toolmock_runtime::model::{NodeDoc, WorkflowDoc};
use toolmock_schema::PlatformManifest;

/// The JSON Schema of the simulation document (also in
/// `fixtures/schemas/simulation.schema.json`, where editors can find it).
pub const SIMULATION_SCHEMA: &str =
    include_str!("../../../fixtures/schemas/simulation.schema.json");

fn schema_validator() -> &'static Result<jsonschema::Validator, String> {
    static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(SIMULATION_SCHEMA).map_err(|e| e.to_string())?;
        jsonschema::validator_for(&schema).map_err(|e| e.to_string())
    })
}

/// Where a JSON document sits: a file and a pointer prefix inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: String,
    /// The pointer of the document in that file (`""`: the whole file).
    pub path: String,
}

impl Origin {
    /// `problem`, whose pointer is inside the document, in the document's file.
    pub fn problem<C: ProblemCode>(&self, problem: Problem<C>) -> FileProblem {
        let path = format!("{}{}", self.path, problem.path);
        FileProblem::new(self.file.clone(), Problem { path, ..problem })
    }
}

/// A tool ready to be installed as a library tool.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedTool {
    /// Its position in `tools`.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ToolKind,
    /// The manifest or contracts it came from.
    pub source_config: Value,
    /// The fallback output schema.
    pub output_schema: Option<Value>,
    /// Its operations.
    pub operations: Vec<NewOperation>,
    /// Its operations' definitions, in document order.
    pub definitions: Vec<LoadedDefinition>,
}

/// One operation's definition and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedDefinition {
    /// The operation's runtime name.
    pub operation: String,
    /// The document.
    pub definition: Value,
    /// Where it was written.
    pub origin: Origin,
}

/// A document with every referenced file read and every static check passed.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSimulation {
    /// The simulation file's name, for problems.
    pub file: String,
    /// The document.
    pub document: SimulationDocument,
    /// Its tools (library tools of the API are not here).
    pub tools: Vec<LoadedTool>,
    /// The API's library tools, by name: already in the tenant's catalog.
    pub library: HashMap<String, ToolId>,
}

impl LoadedSimulation {
    /// The agent's workflows, by name.
    pub fn workflows(&self) -> HashMap<String, WorkflowDoc> {
        self.document
            .agent
            .workflows
            .iter()
            .map(|w| (w.name.clone(), w.clone()))
            .collect()
    }
}

/// Where referenced files are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Files {
    /// Paths are relative to this folder (the embedded run).
    Relative(PathBuf),
    /// Only inline documents (the API's request body).
    InlineOnly,
}

fn first_line_col(e: &serde_json::Error) -> String {
    format!("line {}, column {}: {e}", e.line(), e.column())
}

/// A simulation document as far as it loads: the document with every
/// tool and definition that could be read, and every problem the loader
/// found (none: it loaded cleanly). A document the schema refuses gives no
/// `Loaded`, only its structural problems: until it has its shape, its
/// references cannot be followed.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// What could be read (a tool with problems of its own is left out).
    pub simulation: LoadedSimulation,
    /// Every problem found, in document order.
    pub problems: Vec<FileProblem>,
}

impl Loaded {
    /// The simulation when it loaded cleanly, else every problem.
    pub fn into_result(self) -> Result<LoadedSimulation, Vec<FileProblem>> {
        if self.problems.is_empty() {
            Ok(self.simulation)
        } else {
            Err(self.problems)
        }
    }
}

/// Reads and checks a simulation file, as far as it loads.
pub fn read_file(path: &Path) -> Result<Loaded, Vec<FileProblem>> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        vec![FileProblem::load(
            file.clone(),
            "",
            LoadCode::MissingFile,
            format!("cannot read the simulation file: {e}"),
        )]
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    read_slice(&bytes, &file, &Files::Relative(base))
}

/// Parses and checks a simulation document given as bytes, as far as it loads.
pub fn read_slice(bytes: &[u8], file: &str, files: &Files) -> Result<Loaded, Vec<FileProblem>> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        vec![FileProblem::load(
            file,
            "",
            LoadCode::InvalidJson,
            first_line_col(&e),
        )]
    })?;
    read_value(&value, file, files)
}

/// Checks a parsed document against the schema, then every reference, as
/// far as it loads.
pub fn read_value(value: &Value, file: &str, files: &Files) -> Result<Loaded, Vec<FileProblem>> {
    let problems = schema_problems(value, file);
    if !problems.is_empty() {
        return Err(problems);
    }
    let document: SimulationDocument = serde_json::from_value(value.clone()).map_err(|e| {
        vec![FileProblem::load(
            file,
            "",
            LoadCode::InvalidValue,
            e.to_string(),
        )]
    })?;
    Ok(Loader {
        file: file.to_owned(),
        files: files.clone(),
        problems: Vec::new(),
        library: HashMap::new(),
    }
    .load(document))
}

/// Reads and checks a simulation file: the simulation, or every problem.
pub fn load_file(path: &Path) -> Result<LoadedSimulation, Vec<FileProblem>> {
    read_file(path)?.into_result()
}

/// Parses and checks a simulation document given as bytes.
pub fn load_slice(
    bytes: &[u8],
    file: &str,
    files: &Files,
) -> Result<LoadedSimulation, Vec<FileProblem>> {
    read_slice(bytes, file, files)?.into_result()
}

/// Checks a parsed document against the schema, then every reference.
pub fn load_value(
    value: &Value,
    file: &str,
    files: &Files,
) -> Result<LoadedSimulation, Vec<FileProblem>> {
    read_value(value, file, files)?.into_result()
}

/// The schema's verdict on a document, every violation with its pointer.
pub fn schema_problems(value: &Value, file: &str) -> Vec<FileProblem> {
    let validator = match schema_validator() {
        Ok(v) => v,
        Err(e) => {
            return vec![FileProblem::load(
                file,
                "",
                LoadCode::InvalidValue,
                format!("the simulation schema is unusable: {e}"),
            )];
        }
    };
    let mut problems = Vec::new();
    for error in validator.iter_errors(value) {
        use jsonschema::error::ValidationErrorKind as K;
        let at = error.instance_path().to_string();
        match error.kind() {
            K::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    problems.push(FileProblem::load(
                        file,
                        pointer::push(&at, name),
                        LoadCode::UnknownField,
                        format!("unknown field {name:?}"),
                    ));
                }
            }
            K::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                problems.push(FileProblem::load(
                    file,
                    pointer::push(&at, name),
                    LoadCode::MissingField,
                    format!("the field {name:?} is required"),
                ));
            }
            // The schema says "not with this type" with a false subschema
            // (e.g. `steps` of an external driver).
            K::FalseSchema => {
                let name = at.rsplit('/').next().unwrap_or_default().to_owned();
                problems.push(FileProblem::load(
                    file,
                    at,
                    LoadCode::InvalidValue,
                    format!("the field {name:?} is not allowed here"),
                ));
            }
            K::Type { .. } => {
                problems.push(FileProblem::load(
                    file,
                    at,
                    LoadCode::WrongType,
                    error.to_string(),
                ));
            }
            _ => problems.push(FileProblem::load(
                file,
                at,
                LoadCode::InvalidValue,
                error.to_string(),
            )),
        }
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.code.cmp(&b.code)));
    problems.dedup();
    problems
}

struct Loader {
    file: String,
    files: Files,
    problems: Vec<FileProblem>,
    library: HashMap<String, ToolId>,
}

/// Operations of a tool the static checks know: names and, where a definition
/// was given, its variant names.
#[derive(Debug, Default)]
struct KnownTool {
    /// `None` for API library tools: their operations are unknown here.
    operations: Option<BTreeMap<String, Option<Vec<String>>>>,
}

impl Loader {
    fn problem(&mut self, at: impl Into<String>, code: LoadCode, message: impl Into<String>) {
        self.problems
            .push(FileProblem::load(self.file.clone(), at, code, message));
    }

    /// Reads a source: inline as it is, or the file its path names.
    fn read_source(&mut self, source: &Source, at: &str) -> Option<(Value, Origin)> {
        match source {
            Source::Inline(value) => Some((
                value.clone(),
                Origin {
                    file: self.file.clone(),
                    path: at.to_owned(),
                },
            )),
            Source::Path(relative) => {
                let Files::Relative(base) = &self.files else {
                    self.problem(
                        at,
                        LoadCode::FileNotAllowed,
                        format!("{relative:?} is a file path; this document must give it inline"),
                    );
                    return None;
                };
                let path = base.join(relative);
                let shown = path.display().to_string();
                let bytes = match std::fs::read(&path) {
                    Ok(b) => b,
                    Err(e) => {
                        self.problem(
                            at,
                            LoadCode::MissingFile,
                            format!("cannot read {shown}: {e}"),
                        );
                        return None;
                    }
                };
                match serde_json::from_slice(&bytes) {
                    Ok(value) => Some((
                        value,
                        Origin {
                            file: shown,
                            path: String::new(),
                        },
                    )),
                    Err(e) => {
                        self.problems.push(FileProblem::load(
                            shown,
                            "",
                            LoadCode::InvalidJson,
                            first_line_col(&e),
                        ));
                        None
                    }
                }
            }
        }
    }

    fn load(mut self, document: SimulationDocument) -> Loaded {
        if document.mode == SimulationMode::RealTools && matches!(self.files, Files::Relative(_)) {
            self.problem(
                "/mode",
                LoadCode::RealToolsNotEmbedded,
                "the embedded runtime has no real tool handlers; real_tools runs go through the API's worker",
            );
        }
        if document.simulation_version != 1 {
            self.problem(
                "/simulation_version",
                LoadCode::UnsupportedVersion,
                format!(
                    "simulation_version {} is not supported; it must be 1",
                    document.simulation_version
                ),
            );
        }
        let mut tools = Vec::new();
        let mut known: HashMap<String, KnownTool> = HashMap::new();
        for (i, spec) in document.tools.iter().enumerate() {
            let at = pointer::index("/tools", i);
            if known.contains_key(&spec.name) {
                self.problem(
                    pointer::push(&at, "name"),
                    LoadCode::DuplicateName,
                    format!("another tool is already called {:?}", spec.name),
                );
                continue;
            }
            let (loaded, k) = self.load_tool(i, spec, &at);
            known.insert(spec.name.clone(), k);
            if let Some(loaded) = loaded {
                tools.push(loaded);
            }
        }
        let workflows: HashMap<&str, usize> = {
            let mut map = HashMap::new();
            for (i, w) in document.agent.workflows.iter().enumerate() {
                let at = pointer::index("/agent/workflows", i);
                if known.contains_key(&w.name) || map.insert(w.name.as_str(), i).is_some() {
                    self.problem(
                        pointer::push(&at, "name"),
                        LoadCode::DuplicateName,
                        format!("another tool or workflow is already called {:?}", w.name),
                    );
                }
            }
            map
        };
        for (k, name) in document.agent.tools.iter().enumerate() {
            if !known.contains_key(name) && !workflows.contains_key(name.as_str()) {
                self.problem(
                    pointer::index("/agent/tools", k),
                    LoadCode::UnknownTool,
                    format!("no tool or workflow is called {name:?}"),
                );
            }
        }
        for (i, w) in document.agent.workflows.iter().enumerate() {
            self.check_workflow(
                w,
                &pointer::index("/agent/workflows", i),
                &known,
                &workflows,
            );
        }
        self.check_cycles(&document.agent.workflows);
        let direct: HashSet<&str> = document.agent.tools.iter().map(String::as_str).collect();
        let mut case_names = HashSet::new();
        for (c, case) in document.cases.iter().enumerate() {
            let at = pointer::index("/cases", c);
            if !case_names.insert(case.name.as_str()) {
                self.problem(
                    pointer::push(&at, "name"),
                    LoadCode::DuplicateName,
                    format!("another case is already called {:?}", case.name),
                );
            }
            self.check_case(case, &at, &known, &workflows, &direct);
        }
        Loaded {
            simulation: LoadedSimulation {
                file: self.file,
                document,
                tools,
                library: self.library,
            },
            problems: self.problems,
        }
    }

    fn load_tool(
        &mut self,
        index: usize,
        spec: &ToolSpec,
        at: &str,
    ) -> (Option<LoadedTool>, KnownTool) {
        let fields = [
            ("manifest", spec.manifest.is_some(), ToolFrom::Manifest),
            ("contracts", spec.contracts.is_some(), ToolFrom::Contracts),
            ("operations", spec.operations.is_some(), ToolFrom::Custom),
            ("id", spec.id.is_some(), ToolFrom::Library),
        ];
        let mut consistent = true;
        for (field, present, owner) in fields {
            if present && owner != spec.from {
                consistent = false;
                self.problem(
                    pointer::push(at, field),
                    LoadCode::ToolSourceMismatch,
                    format!(
                        "{field:?} belongs to tools with \"from\": {:?}, this one is {:?}",
                        owner.as_str(),
                        spec.from.as_str()
                    ),
                );
            }
            if !present && owner == spec.from {
                consistent = false;
                self.problem(
                    pointer::push(at, field),
                    LoadCode::MissingField,
                    format!("a tool with \"from\": {:?} needs {field:?}", owner.as_str()),
                );
            }
        }
        if !consistent {
            return (None, KnownTool::default());
        }
        let (kind, source_config, operations) = match spec.from {
            ToolFrom::Library => {
                if matches!(self.files, Files::Relative(_)) {
                    self.problem(
                        pointer::push(at, "id"),
                        LoadCode::LibraryToolNotEmbedded,
                        "library tools are referenced by id only in the API; give the tool's manifest, contracts or operations here",
                    );
                } else {
                    match spec.id.as_deref().map(uuid::Uuid::parse_str) {
                        Some(Ok(id)) => {
                            self.library.insert(spec.name.clone(), ToolId(id));
                        }
                        _ => self.problem(
                            pointer::push(at, "id"),
                            LoadCode::InvalidValue,
                            "a library tool's id is its UUID",
                        ),
                    }
                }
                return (None, KnownTool { operations: None });
            }
            ToolFrom::Manifest => {
                let Some(source) = &spec.manifest else {
                    return (None, KnownTool::default());
                };
                let Some((value, origin)) =
                    self.read_source(source, &pointer::push(at, "manifest"))
                else {
                    return (None, KnownTool::default());
                };
                match PlatformManifest::from_value(&value) {
                    Ok(manifest) => {
                        let ops = manifest
                            .contracts()
                            .into_iter()
                            .map(NewOperation::from)
                            .collect();
                        (ToolKind::Platform, value, ops)
                    }
                    Err(errors) => {
                        for e in errors {
                            self.problems.push(origin.problem(e));
                        }
                        return (None, KnownTool::default());
                    }
                }
            }
            ToolFrom::Contracts => {
                let Some(source) = &spec.contracts else {
                    return (None, KnownTool::default());
                };
                let Some((value, origin)) =
                    self.read_source(source, &pointer::push(at, "contracts"))
                else {
                    return (None, KnownTool::default());
                };
                let Some(ops) = self.contract_entries(&value, &origin) else {
                    return (None, KnownTool::default());
                };
                let sources: HashSet<OperationSource> =
                    ops.iter().map(|o| o.operation.source).collect();
                let kind = match sources.into_iter().collect::<Vec<_>>().as_slice() {
                    [OperationSource::Mcp] => ToolKind::Mcp,
                    [OperationSource::Platform] => ToolKind::Platform,
                    _ => ToolKind::Custom,
                };
                (kind, value, ops)
            }
            ToolFrom::Custom => {
                let ops = spec
                    .operations
                    .iter()
                    .flatten()
                    .map(|o| NewOperation {
                        operation: OperationIdentity {
                            source: OperationSource::Custom,
                            name: o.name.clone(),
                        },
                        description: o.description.clone(),
                        input_schema: o.input_schema.clone(),
                        output_schema: o.output_schema.clone(),
                    })
                    .collect::<Vec<_>>();
                let config = serde_json::to_value(&spec.operations).unwrap_or(Value::Null);
                (ToolKind::Custom, config, ops)
            }
        };
        let mut names: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
        for (o, op) in operations.iter().enumerate() {
            if names.insert(op.operation.name.clone(), None).is_some() {
                self.problem(
                    pointer::index(&pointer::push(at, "operations"), o),
                    LoadCode::DuplicateName,
                    format!("the operation {:?} is given twice", op.operation.name),
                );
            }
        }
        let mut definitions = Vec::new();
        for (operation, source) in &spec.definitions {
            let here = pointer::push(&pointer::push(at, "definitions"), operation);
            if !names.contains_key(operation) {
                self.problem(
                    here.clone(),
                    LoadCode::UnknownOperation,
                    format!(
                        "tool {:?} has no operation {operation:?}; it has {}",
                        spec.name,
                        names.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
                continue;
            }
            if let Some((definition, origin)) = self.read_source(source, &here) {
                let variants = definition
                    .get("variants")
                    .and_then(Value::as_object)
                    .map(|m| m.keys().cloned().collect());
                names.insert(operation.clone(), variants);
                definitions.push(LoadedDefinition {
                    operation: operation.clone(),
                    definition,
                    origin,
                });
            }
        }
        (
            Some(LoadedTool {
                index,
                name: spec.name.clone(),
                kind,
                source_config,
                output_schema: spec.output_schema.clone(),
                operations,
                definitions,
            }),
            KnownTool {
                operations: Some(names),
            },
        )
    }

    /// The entries of a `normalize`/`discover` array.
    fn contract_entries(&mut self, value: &Value, origin: &Origin) -> Option<Vec<NewOperation>> {
        let Some(entries) = value.as_array() else {
            self.problems.push(origin.problem(Problem::new(
                LoadCode::WrongType,
                "",
                "a contracts document is the JSON array `toolmock normalize` or `toolmock discover` prints",
            )));
            return None;
        };
        let mut ops = Vec::new();
        let before = self.problems.len();
        for (i, entry) in entries.iter().enumerate() {
            let at = pointer::index("", i);
            let Some(contract) = entry.get("contract") else {
                self.problems.push(origin.problem(Problem::new(
                    LoadCode::MissingField,
                    pointer::push(&at, "contract"),
                    "each entry needs its \"contract\"",
                )));
                continue;
            };
            let identity: Option<OperationIdentity> = contract
                .get("operation")
                .and_then(|o| serde_json::from_value(o.clone()).ok());
            let (Some(identity), Some(input_schema)) = (identity, contract.get("input_schema"))
            else {
                self.problems.push(origin.problem(Problem::new(
                    LoadCode::InvalidValue,
                    pointer::push(&at, "contract"),
                    "a contract needs \"operation\" {source, name} and \"input_schema\"",
                )));
                continue;
            };
            let op = NewOperation {
                operation: identity,
                description: contract
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                input_schema: input_schema.clone(),
                output_schema: contract.get("output_schema").cloned(),
            };
            if let (Some(stated), Some(output_schema)) = (
                entry.get("contract_hash").and_then(Value::as_str),
                op.output_schema.clone(),
            ) {
                let full = OperationContract {
                    operation: op.operation.clone(),
                    description: op.description.clone(),
                    input_schema: op.input_schema.clone(),
                    output_schema,
                };
                match full.hash() {
                    Ok(hash) if hash.as_str() == stated => {}
                    Ok(hash) => self.problems.push(origin.problem(Problem::new(
                        LoadCode::ContractHashMismatch,
                        pointer::push(&at, "contract_hash"),
                        format!(
                            "the entry says {stated} but its contract hashes to {}; re-run normalize or discover",
                            hash.as_str()
                        ),
                    ))),
                    Err(e) => self.problems.push(origin.problem(Problem::new(
                        ContractCode::from(&e),
                        pointer::push(&at, "contract"),
                        e.to_string(),
                    ))),
                }
            }
            ops.push(op);
        }
        (self.problems.len() == before).then_some(ops)
    }

    fn bad_references(&mut self, bad: Vec<BadReference>) {
        for b in bad {
            self.problem(b.at, LoadCode::InvalidReference, b.message);
        }
    }

    fn check_call(
        &mut self,
        at: &str,
        (tool, operation, workflow): (Option<&str>, Option<&str>, Option<&str>),
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
        tolerate_unknown: bool,
        code_for_form: LoadCode,
    ) {
        match (tool, operation, workflow) {
            (None, None, Some(w)) => {
                if !workflows.contains_key(w) && !tolerate_unknown {
                    self.problem(
                        pointer::push(at, "workflow"),
                        LoadCode::UnknownWorkflow,
                        format!("the agent has no workflow {w:?}"),
                    );
                }
            }
            (Some(t), Some(o), None) => {
                if tolerate_unknown {
                    return;
                }
                match known.get(t) {
                    None => self.problem(
                        pointer::push(at, "tool"),
                        LoadCode::UnknownTool,
                        if workflows.contains_key(t) {
                            format!("{t:?} is a workflow; call it with \"workflow\"")
                        } else {
                            format!("no tool is called {t:?}")
                        },
                    ),
                    Some(KnownTool {
                        operations: Some(ops),
                    }) if !ops.contains_key(o) => self.problem(
                        pointer::push(at, "operation"),
                        LoadCode::UnknownTool,
                        format!(
                            "tool {t:?} has no operation {o:?}; it has {}",
                            ops.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ),
                    Some(_) => {}
                }
            }
            _ => self.problem(
                at,
                code_for_form,
                "a call names either \"tool\" and \"operation\", or \"workflow\"",
            ),
        }
    }

    fn check_workflow(
        &mut self,
        workflow: &WorkflowDoc,
        at: &str,
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
    ) {
        let mut ids = HashSet::new();
        for (n, node) in workflow.nodes.iter().enumerate() {
            if !ids.insert(node.id()) {
                self.problem(
                    pointer::push(&pointer::index(&pointer::push(at, "nodes"), n), "id"),
                    LoadCode::DuplicateName,
                    format!("another node is already called {:?}", node.id()),
                );
            }
        }
        if let Some(start) = &workflow.start
            && !ids.contains(start.as_str())
        {
            self.problem(
                pointer::push(at, "start"),
                LoadCode::UnknownNode,
                format!("workflow {:?} has no node {start:?}", workflow.name),
            );
        }
        for (n, node) in workflow.nodes.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "nodes"), n);
            for (field, target) in node.successors() {
                if !ids.contains(target) {
                    self.problem(
                        pointer::push(&here, field),
                        LoadCode::UnknownNode,
                        format!("workflow {:?} has no node {target:?}", workflow.name),
                    );
                }
            }
            let (mut found, mut bad) = (Vec::new(), Vec::new());
            match node {
                NodeDoc::Tool {
                    tool,
                    operation,
                    workflow: nested,
                    arguments,
                    ..
                } => {
                    self.check_call(
                        &here,
                        (tool.as_deref(), operation.as_deref(), nested.as_deref()),
                        known,
                        workflows,
                        false,
                        LoadCode::InvalidNode,
                    );
                    scan(
                        arguments,
                        Scope::Workflow,
                        &pointer::push(&here, "arguments"),
                        &mut found,
                        &mut bad,
                    );
                }
                NodeDoc::Return { value, .. } => {
                    scan(
                        value,
                        Scope::Workflow,
                        &pointer::push(&here, "value"),
                        &mut found,
                        &mut bad,
                    );
                }
                NodeDoc::Branch { when, .. } => {
                    for (k, c) in when.iter().enumerate() {
                        if !crate::reference::valid_path(c.path()) {
                            self.problem(
                                pointer::push(
                                    &pointer::index(&pointer::push(&here, "when"), k),
                                    "path",
                                ),
                                LoadCode::InvalidValue,
                                format!("{:?} is not a path", c.path()),
                            );
                        }
                    }
                }
                NodeDoc::Effect { .. } => {}
            }
            self.bad_references(bad);
            for r in found {
                if r.operator == "$node" {
                    let (node, _) = split_head(&r.path);
                    if !ids.contains(node) {
                        self.problem(
                            pointer::push(&r.at, "$node"),
                            LoadCode::UnknownNode,
                            format!("workflow {:?} has no node {node:?}", workflow.name),
                        );
                    }
                }
            }
        }
    }

    fn check_cycles(&mut self, workflows: &[WorkflowDoc]) {
        for cycle in WorkflowDoc::cycles(workflows) {
            let first = cycle.iter().min().copied().unwrap_or(0);
            let mut names: Vec<&str> = cycle.iter().map(|&i| workflows[i].name.as_str()).collect();
            names.push(names[0]);
            self.problem(
                pointer::index("/agent/workflows", first),
                LoadCode::WorkflowCycle,
                format!(
                    "workflows call each other in a cycle: {}",
                    names.join(" -> ")
                ),
            );
        }
    }

    fn check_case(
        &mut self,
        case: &CaseDoc,
        at: &str,
        known: &HashMap<String, KnownTool>,
        workflows: &HashMap<&str, usize>,
        direct: &HashSet<&str>,
    ) {
        let expects_harness = case.expect.outcome == AttemptOutcome::HarnessError;
        for (v, choice) in case.variants.iter().enumerate() {
            let here = pointer::index(&pointer::push(at, "variants"), v);
            match known.get(&choice.tool) {
                None => self.problem(
                    pointer::push(&here, "tool"),
                    LoadCode::UnknownTool,
                    format!("no tool is called {:?}", choice.tool),
                ),
                Some(KnownTool { operations: None }) => {}
                Some(KnownTool {
                    operations: Some(ops),
                }) => match ops.get(&choice.operation) {
                    None => self.problem(
                        pointer::push(&here, "operation"),
                        LoadCode::UnknownTool,
                        format!(
                            "tool {:?} has no operation {:?}",
                            choice.tool, choice.operation
                        ),
                    ),
                    Some(Some(variants))
                        if !variants.contains(&choice.variant) && !expects_harness =>
                    {
                        self.problem(
                            pointer::push(&here, "variant"),
                            LoadCode::UnknownVariant,
                            format!(
                                "{}/{} has no variant {:?}; it has {} (a case that means to hit unknown_variant expects \"outcome\": \"harness_error\")",
                                choice.tool,
                                choice.operation,
                                choice.variant,
                                variants.join(", ")
                            ),
                        );
                    }
                    Some(_) => {}
                },
            }
        }
        if case.driver == DriverDoc::External && matches!(self.files, Files::Relative(_)) {
            self.problem(
                pointer::push(&pointer::push(at, "driver"), "type"),
                LoadCode::ExternalDriverNotEmbedded,
                "an external driver is played by an agent outside toolmock through the API; toolmock run has nobody to play it (give the case scripted steps)",
            );
        }
        let steps = case.driver.steps();
        let steps_at = pointer::push(&pointer::push(at, "driver"), "steps");
        let mut earlier: HashSet<&str> = HashSet::new();
        let data = Value::Object(case.data.clone());
        for (s, step) in steps.iter().enumerate() {
            let here = pointer::index(&steps_at, s);
            let tolerate = matches!(&step.expect, Some(StepExpect::HarnessError(code)) if code == "unknown_tool");
            self.check_call(
                &here,
                (
                    step.tool.as_deref(),
                    step.operation.as_deref(),
                    step.workflow.as_deref(),
                ),
                known,
                workflows,
                tolerate,
                LoadCode::InvalidValue,
            );
            let name = step.workflow.as_deref().or(step.tool.as_deref());
            if let Some(name) = name
                && !tolerate
                && (known.contains_key(name) || workflows.contains_key(name))
                && !direct.contains(name)
            {
                self.problem(
                    pointer::push(
                        &here,
                        if step.workflow.is_some() {
                            "workflow"
                        } else {
                            "tool"
                        },
                    ),
                    LoadCode::UnknownTool,
                    format!("the agent cannot call {name:?} directly; add it to /agent/tools"),
                );
            }
            let (mut found, mut bad) = (Vec::new(), Vec::new());
            scan(
                &step.arguments,
                Scope::Step,
                &pointer::push(&here, "arguments"),
                &mut found,
                &mut bad,
            );
            for (key, value) in step.repair.iter().flatten() {
                scan(
                    value,
                    Scope::Step,
                    &pointer::push(&pointer::push(&here, "repair"), key),
                    &mut found,
                    &mut bad,
                );
            }
            self.bad_references(bad);
            for r in found {
                self.check_step_reference(&r, &earlier, &data);
            }
            if let Some(id) = &step.id
                && !earlier.insert(id.as_str())
            {
                self.problem(
                    pointer::push(&here, "id"),
                    LoadCode::DuplicateName,
                    format!("another step of this case is already called {id:?}"),
                );
            }
        }
        let trajectory_at = pointer::push(&pointer::push(at, "expect"), "trajectory");
        for (t, expect) in case.expect.trajectory.iter().enumerate() {
            let here = pointer::index(&trajectory_at, t);
            let matchers: Vec<(String, &CallMatcher)> = match expect {
                TrajectoryExpect::Used { call }
                | TrajectoryExpect::NotUsed { call }
                | TrajectoryExpect::Count { call, .. } => {
                    vec![(pointer::push(&here, "call"), call)]
                }
                TrajectoryExpect::Sequence { calls, .. } => calls
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (pointer::index(&pointer::push(&here, "calls"), k), c))
                    .collect(),
            };
            for (m_at, m) in matchers {
                match known.get(&m.tool) {
                    None => self.problem(
                        pointer::push(&m_at, "tool"),
                        LoadCode::UnknownTool,
                        format!(
                            "no tool is called {:?} (trajectories see tool calls; a workflow shows as the calls of its nodes)",
                            m.tool
                        ),
                    ),
                    Some(KnownTool {
                        operations: Some(ops),
                    }) => {
                        if let Some(o) = &m.operation
                            && !ops.contains_key(o)
                        {
                            self.problem(
                                pointer::push(&m_at, "operation"),
                                LoadCode::UnknownTool,
                                format!("tool {:?} has no operation {o:?}", m.tool),
                            );
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }

    fn check_step_reference(&mut self, r: &FoundReference, earlier: &HashSet<&str>, data: &Value) {
        match r.operator.as_str() {
            "$case" if resolve_path(data, &r.path).is_none() => {
                self.problem(
                    pointer::push(&r.at, "$case"),
                    LoadCode::UnknownCaseData,
                    format!("the case's data has nothing at {:?}", r.path),
                );
            }
            "$step" => {
                let (id, rest) = split_head(&r.path);
                if !earlier.contains(id) {
                    self.problem(
                        pointer::push(&r.at, "$step"),
                        LoadCode::DanglingStepReference,
                        format!("no earlier step has the id {id:?}"),
                    );
                    return;
                }
                let (part, _) = split_head(rest);
                if !matches!(part, "result" | "arguments" | "error") {
                    self.problem(
                        pointer::push(&r.at, "$step"),
                        LoadCode::InvalidReference,
                        format!(
                            "{:?} must continue with result, arguments or error after the step id",
                            r.path
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
