//! `toolmock discover`.

use crate::{Failure, input, output};
use clap::{ArgGroup, Args};
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use toolmock_discovery::{Endpoint, Options};
use toolmock_schema::ContractEntry;

/// Discover the tools of an MCP server and print their operation contracts.
///
/// Connects with the official MCP client over stdio (--stdio spawns the
/// command; it is split into words like a shell would, without expansion)
/// or streamable HTTP (--url), lists every tool (following nextCursor) and
/// prints the same JSON array as `toolmock normalize`: per tool
/// {"status": "ready", "contract", "contract_hash", "output_schema_source", "hints"}.
/// A tool without an output schema (and no --fallback-output-schema) is
/// listed as {"status": "needs_output_schema", "contract": {…without
/// output_schema}} with no hash: it cannot be mocked until it has one.
/// Title and annotations are untrusted hints, outside the contract.
///
/// Exits 0 when the tools were listed, 1 when the server's tools cannot be
/// normalized, 2 when the server cannot be reached or started.
///
/// Example:
///   toolmock discover --stdio "python3 server.py"
///   toolmock discover --url http://127.0.0.1:8000/mcp --fallback-output-schema tool-output.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[command(group(ArgGroup::new("endpoint").required(true).args(["stdio", "url"])))]
pub(crate) struct DiscoverArgs {
    /// The server's command line, e.g. "python3 server.py --flag".
    #[arg(long, value_name = "COMMAND")]
    stdio: Option<String>,
    /// The server's streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp.
    #[arg(long)]
    url: Option<String>,
    /// The library tool's own output_schema: used for tools that declare none.
    #[arg(long, value_name = "SCHEMA.json")]
    fallback_output_schema: Option<PathBuf>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    timeout: u64,
    /// Also write each ready contract to DIR/NAME.contract.json.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &DiscoverArgs) -> Result<u8, Failure> {
    let endpoint = match (&args.stdio, &args.url) {
        (Some(command), _) => Endpoint::stdio_command_line(command),
        (None, Some(url)) => Endpoint::http(url),
        (None, None) => return Err(Failure::usage("give --stdio COMMAND or --url URL")),
    }
    .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let fallback = match &args.fallback_output_schema {
        Some(path) => {
            let bytes = input::read_file(path)?;
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|e| Failure::usage(format!("{}: not valid JSON: {e}", path.display())))?;
            Some(value)
        }
        None => None,
    };
    let options = Options {
        fallback_output_schema: fallback,
        timeout: Duration::from_secs(args.timeout.max(1)),
    };
    let discovery = match toolmock_discovery::discover_blocking(&endpoint, &options) {
        Ok(discovery) => discovery,
        Err(toolmock_discovery::DiscoveryError::InvalidTools(errors)) => {
            let _ = output::print_problems(&mut std::io::stderr().lock(), "toolmock", &errors);
            return Ok(1);
        }
        Err(e) => return Err(Failure::usage(format!("{}: {e}", e.code()))),
    };
    let server = &discovery.server;
    let ready = discovery
        .operations
        .iter()
        .filter(|o| o.output.is_some())
        .count();
    let _ = writeln!(
        std::io::stderr(),
        "toolmock: {} from {} {} (MCP {}): {} tool{} on {} page{}, {ready} ready, {} need an output schema",
        if discovery.operations.is_empty() {
            "no tools"
        } else {
            "discovered"
        },
        server.name.as_deref().unwrap_or("an unnamed server"),
        server.version.as_deref().unwrap_or(""),
        server.protocol_version.as_deref().unwrap_or("?"),
        discovery.operations.len(),
        if discovery.operations.len() == 1 {
            ""
        } else {
            "s"
        },
        discovery.pages,
        if discovery.pages == 1 { "" } else { "s" },
        discovery.operations.len() - ready,
    );
    let mut entries = Vec::with_capacity(discovery.operations.len());
    for op in &discovery.operations {
        let entry = ContractEntry::of_discovered(op)
            .map_err(|e| Failure::usage(format!("{}: {}: {e}", op.operation.name, e.code())))?;
        entries.push(entry);
    }
    if let Some(dir) = &args.out {
        output::write_contracts(dir, entries.iter().filter(|e| e.contract_hash.is_some()))?;
    }
    output::print_entries(&entries)?;
    Ok(0)
}
