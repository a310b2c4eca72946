//! The Python examples of docs/mcp.md, run as written against the real
//! `toolmock serve`: each block that opens with `# pip install …` is run by
//! the client it names — the MCP Python SDK 2.x (`.cache/mcp-venv`), or the
//! SDK 1.x with LangChain's MCP adapters and the OpenAI Agents SDK
//! (`.cache/mcp-frameworks-venv`) — and must print, line by line, what the
//! comments of its `print` lines say. What toolmock recorded is read back
//! from the results documents: which attempts the client made, and which
//! calls each recorded (a per-call stdio client's attempts, the calls an
//! agent SDK never sent).
//!
//! A block that uses `http://127.0.0.1:8765/attempts/1/mcp` is pointed at a
//! `toolmock serve --http` of its own; one that starts `toolmock` over stdio
//! finds, first on its PATH, a `toolmock` that adds `--json` to the real
//! binary's arguments, so every process it starts leaves its results.

mod serve_common;

use serde_json::Value;
use serve_common::{Served, calendar, installed, root, scratch, text};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The address the page's HTTP examples name.
const PAGE_BASE: &str = "http://127.0.0.1:8765";

/// One runnable example of the page.
struct Example {
    /// Its line in docs/mcp.md.
    line: usize,
    code: String,
    /// Runs with the SDK 2.x (else with the frameworks' SDK 1.x).
    sdk2: bool,
    /// What its `print` lines print, in order.
    prints: Vec<String>,
}

fn examples() -> Vec<Example> {
    let page = std::fs::read_to_string(root().join("docs/mcp.md")).expect("docs/mcp.md");
    let lines: Vec<&str> = page.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "```python" {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = start
            + lines[start..]
                .iter()
                .position(|l| l.trim() == "```")
                .expect("a closed block");
        i = end + 1;
        let body = &lines[start..end];
        let Some(first) = body.first().filter(|l| l.starts_with("# pip install ")) else {
            continue;
        };
        let prints = body
            .iter()
            .filter(|l| l.trim_start().starts_with("print("))
            .map(|l| {
                l.rsplit_once("  # ")
                    .unwrap_or_else(|| {
                        panic!("docs/mcp.md:{}: a print without its output: {l}", start + 1)
                    })
                    .1
                    .to_owned()
            })
            .collect();
        out.push(Example {
            line: start,
            code: body.join("\n") + "\n",
            sdk2: first.contains("\"mcp>=2\""),
            prints,
        });
    }
    out
}

/// `toolmock serve --http` of the calendar's case `books_a_day`, writing
/// its results to `results` when stopped.
fn books_a_day(results: &Path) -> Served {
    let results = results.to_str().expect("utf-8");
    Served::start(&calendar(), &["--case", "books_a_day", "--json", results])
}

/// The calls each attempt of a results document recorded, as
/// `operation:status`.
fn attempts(results: &Value) -> Vec<Vec<String>> {
    results["cases"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| {
            a["calls"]
                .as_array()
                .expect("calls")
                .iter()
                .map(|c| {
                    format!(
                        "{}:{}",
                        c["operation"].as_str().expect("operation"),
                        c["status"].as_str().expect("status")
                    )
                })
                .collect()
        })
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("results")).expect("JSON")
}

/// Runs `example` in a scratch folder holding `suite.json` (the calendar
/// fixture); returns the attempts toolmock recorded, sorted.
fn run(example: &Example) -> Vec<Vec<String>> {
    let dir = scratch();
    std::fs::copy(calendar(), dir.join("suite.json")).expect("suite.json");
    let results = dir.join("results");
    std::fs::create_dir_all(&results).expect("results folder");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin folder");
    let wrapper = bin.join("toolmock");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n: > '{dir}/stdio-'$$.started\nexec '{bin}' \"$@\" --json '{dir}/stdio-'$$.json\n",
            bin = env!("CARGO_BIN_EXE_toolmock"),
            dir = results.display()
        ),
    )
    .expect("the toolmock wrapper");
    let mut mode = std::fs::metadata(&wrapper).expect("wrapper").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&wrapper, mode).expect("chmod");

    let http = results.join("http.json");
    let served = example.code.contains(PAGE_BASE).then(|| books_a_day(&http));
    let code = match &served {
        Some(served) => example.code.replace(PAGE_BASE, &served.base),
        None => example.code.clone(),
    };
    let script = dir.join("example.py");
    std::fs::write(&script, code).expect("example.py");
    let venv = if example.sdk2 {
        ".cache/mcp-venv"
    } else {
        ".cache/mcp-frameworks-venv"
    };
    let python = installed(root().join(venv).join("bin/python"));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(python)
        .arg(&script)
        .current_dir(&dir)
        .env("PATH", path)
        .output()
        .expect("python runs");
    let at = format!("docs/mcp.md:{}", example.line);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{at}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let printed: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(printed, example.prints, "{at}: {}", text(&out.stderr));

    let mut recorded = Vec::new();
    if let Some(served) = served {
        let _ = served.stop();
        recorded.extend(attempts(&read_json(&http)));
    }
    // A stdio server writes its results as its session closes, which the
    // client need not wait for: wait until every process it started has.
    let began = Instant::now();
    loop {
        let files = stdio_results(&results);
        let written = files.iter().all(|f| f.1.is_some());
        if written || began.elapsed() > Duration::from_secs(20) {
            for (file, results) in files {
                let results =
                    results.unwrap_or_else(|| panic!("{at}: {} never written", file.display()));
                recorded.extend(attempts(&results));
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    recorded.sort();
    recorded
}

/// The results file of each stdio process started (its `.started` mark),
/// read once it is complete.
fn stdio_results(dir: &Path) -> Vec<(PathBuf, Option<Value>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("results folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "started"))
        .map(|p| p.with_extension("json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let read = std::fs::read(&f)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            (f, read)
        })
        .collect()
}

fn calls(attempts: &[&[&str]]) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = attempts
        .iter()
        .map(|a| a.iter().map(|c| (*c).to_owned()).collect())
        .collect();
    all.sort();
    all
}

/// Every example prints what the page says, and toolmock recorded what the
/// page says about it: one attempt per session of a stdio client, none of
/// the calls the OpenAI Agents SDK refused itself.
#[test]
fn the_python_examples_of_docs_mcp_run_as_written() {
    let examples = examples();
    let expected: [(&str, Vec<Vec<String>>); 6] = [
        ("the SDK 2.x Client", calls(&[&["book:ok"]])),
        ("the SDK 1.x ClientSession", calls(&[&["book:ok"]])),
        (
            // get_tools() lists in one process and calls each tool in its
            // own; the session is one process for both calls.
            "LangChain's adapters over stdio",
            calls(&[
                &[],
                &["book:ok"],
                &["booked_day:ok"],
                &["book:ok", "booked_day:ok"],
            ]),
        ),
        (
            "LangChain's adapters over --http",
            calls(&[&["book:ok", "booked_day:ok"]]),
        ),
        (
            // The call without `day` never reached toolmock.
            "the OpenAI Agents SDK",
            calls(&[&["book:tool_input_error"]]),
        ),
        ("the capabilities", calls(&[&[]])),
    ];
    assert_eq!(
        examples.len(),
        expected.len(),
        "docs/mcp.md's runnable Python examples at lines {:?}",
        examples.iter().map(|e| e.line).collect::<Vec<_>>()
    );
    for (example, (what, attempts)) in examples.iter().zip(expected) {
        assert_eq!(
            run(example),
            attempts,
            "{what} (docs/mcp.md:{}): the attempts toolmock recorded",
            example.line
        );
    }
}

/// What docs/mcp.md says the model meets under the OpenAI Agents SDK when
/// it leaves out a required argument: the SDK's own failure text for the
/// tool (its default `failure_error_function`), through the function tool
/// an agent run calls; toolmock records nothing.
#[test]
fn the_openai_agents_sdk_answers_a_missing_argument_itself() {
    const AGENT_RUN: &str = r#"
import asyncio, sys
from agents import Agent, RunContextWrapper
from agents.mcp import MCPServerStreamableHttp, MCPUtil
from agents.tool_context import ToolContext

async def main(url):
    async with MCPServerStreamableHttp(params={"url": url}) as server:
        agent = Agent(name="agent", mcp_servers=[server])
        tools = await MCPUtil.get_function_tools(server, False, RunContextWrapper(context=None), agent)
        book = next(tool for tool in tools if tool.name == "book")
        context = ToolContext(context=None, tool_name="book", tool_call_id="call-1", tool_arguments="{}")
        print(await book.on_invoke_tool(context, "{}"))

asyncio.run(main(sys.argv[1]))
"#;
    let dir = scratch();
    let results = dir.join("results.json");
    let served = books_a_day(&results);
    let python = installed(root().join(".cache/mcp-frameworks-venv/bin/python"));
    let out = Command::new(python)
        .args(["-c", AGENT_RUN, &served.url(1)])
        .output()
        .expect("python runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim_end(),
        "An error occurred while running the tool. Please try again."
    );
    let _ = served.stop();
    assert_eq!(attempts(&read_json(&results)), [Vec::<String>::new()]);
}
