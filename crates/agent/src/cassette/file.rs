//! A cassette's files: one per case (`<slug>.jsonl`), one JSON line per
//! exchange, keys sorted (RFC 8785), lines sorted by case, attempt, role,
//! turn and occurrence, so that recording the same conversation again
//! writes the same bytes.

use super::{CassetteError, canonical_text};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::path::Path;
use toolmock_simulation::{ModelReply, ModelRole, ToolCallRequest, Usage};

/// The format of a cassette line (`cassette_version`).
pub const CASSETTE_VERSION: u32 = 1;

/// One recorded request and its answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// Exactly [`CASSETTE_VERSION`].
    pub cassette_version: u32,
    /// The case's name.
    pub case: String,
    /// The attempt's number within its case.
    pub attempt: u32,
    /// Whose request: the agent model's or the judge's.
    pub role: ModelRole,
    /// The role's request number within the attempt (1, 2, …).
    pub turn: u32,
    /// How many times the attempt had sent this very request (1 the first
    /// time): repeated requests are answered in their recorded order.
    pub occurrence: u32,
    /// The sha256 of the canonical request's canonical text.
    pub key: String,
    /// The canonical request (kept as text: read only to name a difference).
    pub request: Box<RawValue>,
    /// What the model answered.
    pub answer: Answer,
}

/// A recorded answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Its tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Its tokens, when the endpoint said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl From<&ModelReply> for Answer {
    fn from(reply: &ModelReply) -> Self {
        Self {
            content: reply.content.clone(),
            tool_calls: reply.tool_calls.clone(),
            usage: reply.usage,
        }
    }
}

impl From<&Answer> for ModelReply {
    fn from(answer: &Answer) -> Self {
        Self {
            content: answer.content.clone(),
            tool_calls: answer.tool_calls.clone(),
            usage: answer.usage,
        }
    }
}

/// The file a case's exchanges are kept in: its name in lower case, every
/// run of other characters than `a-z 0-9` written `-`, at most 60
/// characters, then `.jsonl` (`case` for a name with none). Two cases may
/// share a file: each line names its case.
pub fn file_name(case: &str) -> String {
    let mut slug = String::new();
    for c in case.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-');
    let slug = &slug[..slug.len().min(60)];
    let slug = slug.trim_end_matches('-');
    format!("{}.jsonl", if slug.is_empty() { "case" } else { slug })
}

/// The cassette files of `dir`, by name.
pub(crate) fn files(dir: &Path) -> Result<Vec<std::path::PathBuf>, CassetteError> {
    let unreadable = |e: std::io::Error| CassetteError::Unreadable {
        path: dir.display().to_string(),
        message: e.to_string(),
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unreadable(e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(unreadable)?.path();
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Reads one cassette file: its exchanges, each with its line number.
pub(crate) fn read_file(path: &Path) -> Result<Vec<(usize, Exchange)>, CassetteError> {
    let text = std::fs::read_to_string(path).map_err(|e| CassetteError::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut exchanges = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let exchange = parse_exchange(line).map_err(|message| CassetteError::Invalid {
            path: path.display().to_string(),
            line: i + 1,
            message,
        })?;
        exchanges.push((i + 1, exchange));
    }
    Ok(exchanges)
}

/// One cassette line (or one exchange's JSON): an exchange of the
/// current format, or why not.
pub fn parse_exchange(text: &str) -> Result<Exchange, String> {
    let exchange: Exchange = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if exchange.cassette_version != CASSETTE_VERSION {
        return Err(format!(
            "cassette_version {} is not {CASSETTE_VERSION}",
            exchange.cassette_version
        ));
    }
    Ok(exchange)
}

impl Exchange {
    /// Its cassette line: canonical JSON text, without the newline.
    pub fn line(&self) -> String {
        line(self).unwrap_or_default()
    }
}

/// Writes `exchanges` into `dir` as a cassette folder: each into its
/// case's file (every file that gets one rewritten whole), lines sorted.
pub fn write_cassette(dir: &Path, exchanges: &[Exchange]) -> Result<(), CassetteError> {
    let mut by_file: BTreeMap<String, Vec<&Exchange>> = BTreeMap::new();
    for exchange in exchanges {
        by_file
            .entry(file_name(&exchange.case))
            .or_default()
            .push(exchange);
    }
    write_files(dir, by_file)
}

/// Every exchange of every cassette file in `dir` (none when it does not
/// exist).
pub fn read_dir(dir: &Path) -> Result<Vec<Exchange>, CassetteError> {
    let mut all = Vec::new();
    for path in files(dir)? {
        all.extend(read_file(&path)?.into_iter().map(|(_, e)| e));
    }
    Ok(all)
}

/// The sort order of lines.
pub(crate) fn order(e: &Exchange) -> (&str, u32, ModelRole, u32, u32, &str) {
    (
        e.case.as_str(),
        e.attempt,
        e.role,
        e.turn,
        e.occurrence,
        e.key.as_str(),
    )
}

/// One exchange's line: canonical JSON text.
pub(crate) fn line(exchange: &Exchange) -> Result<String, serde_json::Error> {
    Ok(canonical_text(&serde_json::to_value(exchange)?))
}

/// Writes each file of `by_file` (name → exchanges) into `dir`, its lines
/// sorted, through a temporary file renamed over the old one.
pub(crate) fn write_files(
    dir: &Path,
    by_file: BTreeMap<String, Vec<&Exchange>>,
) -> Result<(), CassetteError> {
    let unwritable = |path: &Path, message: String| CassetteError::Unwritable {
        path: path.display().to_string(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e.to_string()))?;
    for (name, mut exchanges) in by_file {
        exchanges.sort_by(|a, b| order(a).cmp(&order(b)));
        let mut text = String::new();
        for exchange in exchanges {
            text.push_str(&line(exchange).map_err(|e| unwritable(dir, e.to_string()))?);
            text.push('\n');
        }
        let path = dir.join(&name);
        let partial = dir.join(format!(".{name}.partial"));
        std::fs::write(&partial, text).map_err(|e| unwritable(&partial, e.to_string()))?;
        std::fs::rename(&partial, &path).map_err(|e| unwritable(&path, e.to_string()))?;
    }
    Ok(())
}
