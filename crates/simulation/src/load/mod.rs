//! Reading a simulation document: its JSON Schema, its referenced files, and
//! every static check, all problems at once. The tools are read in
//! `tools.rs`, the references checked in `checks.rs`.

mod checks;
pub(crate) mod real;
mod tools;

use crate::document::{FixtureDoc, SimulationDocument, Source};
use crate::problem::{FileProblem, LoadCode};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolmock_contract::{Problem, ProblemCode, pointer};
use toolmock_runtime::model::ToolId;
use toolmock_runtime::model::WorkflowDoc;
use toolmock_runtime::model::{NewOperation, SimulationMode, ToolKind};

/// The JSON Schema of the simulation document (also in
/// `fixtures/schemas/simulation.schema.json`, where editors can find it).
pub const SIMULATION_SCHEMA: &str =
    include_str!("../../../../fixtures/schemas/simulation.schema.json");

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
    /// Paths are relative to this folder, and the document is sent to the
    /// API with them inlined ([`inline_file`], `toolmock submit`): what only
    /// the service can play — library tools, external drivers, real-tools
    /// runs — is left for it to accept.
    ForService(PathBuf),
    /// Only inline documents (the API's request body).
    InlineOnly,
}

impl Files {
    /// The folder paths are read from, unless only inline documents are allowed.
    fn folder(&self) -> Option<&Path> {
        match self {
            Files::Relative(base) | Files::ForService(base) => Some(base),
            Files::InlineOnly => None,
        }
    }
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
    /// Each file that was read, as (the pointer of the path that named it,
    /// its content): what [`inline_file`] puts in place.
    read_files: Vec<(String, Value)>,
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

/// A simulation file's name as problems show it, its bytes, and where the
/// paths it holds are relative to.
fn read_bytes(path: &Path) -> Result<(String, Vec<u8>, Files), Vec<FileProblem>> {
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
    Ok((file, bytes, Files::Relative(base)))
}

/// Reads and checks a simulation file, as far as it loads.
pub fn read_file(path: &Path) -> Result<Loaded, Vec<FileProblem>> {
    let (file, bytes, files) = read_bytes(path)?;
    read_slice(&bytes, &file, &files)
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
        read_files: Vec::new(),
    }
    .load(document))
}

/// A simulation file as one self-contained document: every manifest,
/// contract list and definition it names by path read in place, so that it
/// can be sent where no files are read (the API's `POST /api/simulations`).
/// The file must load cleanly; else every problem, as [`load_file`] gives —
/// except that what only the service plays (library tools by id, external
/// drivers, real-tools runs) is left for the API to accept or refuse.
pub fn inline_file(path: &Path) -> Result<Value, Vec<FileProblem>> {
    let (file, bytes, files) = read_bytes(path)?;
    let files = match files {
        Files::Relative(base) => Files::ForService(base),
        other => other,
    };
    let mut document: Value = serde_json::from_slice(&bytes).map_err(|e| {
        vec![FileProblem::load(
            file.clone(),
            "",
            LoadCode::InvalidJson,
            first_line_col(&e),
        )]
    })?;
    let loaded = read_value(&document, &file, &files)?;
    if !loaded.problems.is_empty() {
        return Err(loaded.problems);
    }
    for (at, content) in loaded.read_files {
        if let Some(slot) = document.pointer_mut(&at) {
            *slot = content;
        }
    }
    // A schema path relative to the file means nothing beside the document.
    if let Some(fields) = document.as_object_mut() {
        fields.remove("$schema");
    }
    Ok(document)
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
    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.code.cmp(b.code)));
    problems.dedup();
    problems
}

struct Loader {
    file: String,
    files: Files,
    problems: Vec<FileProblem>,
    library: HashMap<String, ToolId>,
    read_files: Vec<(String, Value)>,
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
                let Some(base) = self.files.folder() else {
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
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(value) => {
                        self.read_files.push((at.to_owned(), value.clone()));
                        Some((
                            value,
                            Origin {
                                file: shown,
                                path: String::new(),
                            },
                        ))
                    }
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

    /// Reads the shared fixtures' files: each `{"file"}` whose file holds
    /// a JSON object becomes `{"value"}` in the loaded document (and, for
    /// `toolmock submit`, in the document it sends); any other content is
    /// a `wrong_type` at the fixture's `file`.
    fn load_fixtures(&mut self, document: &mut SimulationDocument) {
        for (i, fixture) in document.fixtures.iter_mut().enumerate() {
            let FixtureDoc::File { file } = fixture else {
                continue;
            };
            let at = pointer::index("/fixtures", i);
            let before = self.read_files.len();
            let Some((value, origin)) = self.read_source(&Source::Path(file.clone()), &at) else {
                continue;
            };
            match value {
                Value::Object(members) => {
                    if let Some((_, read)) = self.read_files.get_mut(before) {
                        *read = serde_json::json!({"value": read.take()});
                    }
                    *fixture = FixtureDoc::Value { value: members };
                }
                other => {
                    self.read_files.truncate(before);
                    self.problem(
                        pointer::push(&at, "file"),
                        LoadCode::WrongType,
                        format!(
                            "{} is {}; a fixture is a JSON object whose members become top-level state keys",
                            origin.file,
                            toolmock_contract::json_kind(&other)
                        ),
                    );
                }
            }
        }
    }

    fn load(mut self, mut document: SimulationDocument) -> Loaded {
        self.load_fixtures(&mut document);
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
        if document.mode == SimulationMode::RealTools {
            self.check_real_handlers(&document, &tools);
        }
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
            read_files: self.read_files,
        }
    }
}
