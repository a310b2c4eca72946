//! `toolmock`: the command. Everything it does is in the `toolmock_cli`
//! library (`lib.rs`), which the Python package links too, so that its
//! `toolmock` command runs exactly this code.

use std::process::ExitCode;

// Rendering results is allocation-bound; mimalloc makes a call about a third
// cheaper than the system allocator (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(toolmock_cli::main(std::env::args_os()))
}
