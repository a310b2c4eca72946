//! `toolmock serve --http` in the background of a library caller (the
//! Python package's `toolmock.serve`): the same load, dispatcher, case and
//! HTTP routes as the command, on a runtime of its own, until the caller
//! stops it. Nothing is printed; the caller asks for attempts and results.

use super::{
    Prepared, ServeArgs, embed, limits, listen, prepare, serve_http, watch_idle, write_files,
};
use crate::Refusal;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use toolmock_mcp::{CancellationToken, Embedded, ServeError};
use toolmock_runtime::MemoryStore;
use toolmock_simulation::{AttemptResult, RunResults};

/// `toolmock serve`'s flags alone, for [`Background::start`].
#[derive(Debug, clap::Parser)]
#[command(name = "toolmock serve", no_binary_name = true)]
struct ServeOnly {
    #[command(flatten)]
    args: ServeArgs,
}

/// A simulation's case served over streamable HTTP in the background:
/// attempt `n` at `http://ADDR/attempts/n/mcp`, exactly as `toolmock serve
/// --http ADDR` serves it (`POST /attempts` and `POST /attempts/n/finish`
/// too), each attempt judged when it ends.
///
/// Dropping it without [`Background::stop`] stops the server without
/// judging the attempts still open.
pub struct Background {
    /// `None` once stopped.
    runtime: Option<Runtime>,
    embedded: Arc<Embedded<MemoryStore>>,
    addr: SocketAddr,
    stop: CancellationToken,
    server: Option<JoinHandle<std::io::Result<()>>>,
    args: ServeArgs,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("addr", &self.addr)
            .field("case", &self.case())
            .finish_non_exhaustive()
    }
}

impl Background {
    /// Starts serving: `args` are the command's arguments after `serve`
    /// (the file, then flags, `--http ADDR` among them; port 0 picks a free
    /// one), parsed by the same clap definition. `--stdio` and
    /// `--attempts` are refused: the caller decides when serving ends.
    pub fn start<I, T>(args: I) -> Result<Self, Refusal>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args = crate::parse_args::<ServeOnly, _, _>("serve", args)?.args;
        let Some(addr) = args.http else {
            return Err(Refusal::Options(
                "a background server serves HTTP: give --http ADDR".into(),
            ));
        };
        if args.attempts.is_some() {
            return Err(Refusal::Options(
                "--attempts stops the command by itself; a background server stops when its caller stops it".into(),
            ));
        }
        let file = args.simulation.display().to_string();
        let failed = |e: &dyn std::fmt::Display, code: Option<&'static str>| Refusal::Failed {
            code,
            message: format!(
                "{file}: {}{e}",
                code.map_or(String::new(), |c| format!("{c}: "))
            ),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| failed(&e, None))?;
        let (dispatcher, loaded) = match prepare(&args, &runtime)? {
            Prepared::Ready(dispatcher, loaded) => (dispatcher, loaded),
            Prepared::Refused(problems) => return Err(Refusal::Problems(problems)),
        };
        let limits = limits(&args);
        let case = args.case.clone();
        let user = args
            .user
            .standalone()
            .map_err(|e| failed(&e, Some(e.code())))?;
        let stop = CancellationToken::new();
        let started = runtime.block_on(async {
            let embedded = embed(dispatcher, loaded, (case.as_deref(), user), limits).await?;
            let (listener, bound) = listen(addr).await?;
            if let Some(idle) = limits.idle {
                watch_idle(&embedded, &stop, idle);
            }
            let server = tokio::spawn(serve_http(embedded.clone(), listener, bound, stop.clone()));
            Ok::<_, ServeError>((embedded, bound, server))
        });
        let (embedded, addr, server) = started.map_err(|e| match e {
            ServeError::Problems(problems) => Refusal::Problems(problems),
            other => failed(&other, Some(other.code())),
        })?;
        Ok(Background {
            runtime: Some(runtime),
            embedded,
            addr,
            stop,
            server: Some(server),
            args,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The served case's name.
    pub fn case(&self) -> &str {
        &self.embedded.case().name
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> Result<F::Output, Refusal> {
        self.runtime
            .as_ref()
            .map(|runtime| runtime.block_on(future))
            .ok_or_else(|| Refusal::Failed {
                code: None,
                message: "the server was stopped".into(),
            })
    }

    fn serve_error(&self, e: &ServeError) -> Refusal {
        Refusal::Failed {
            code: Some(e.code()),
            message: format!("{}: {}: {e}", self.args.simulation.display(), e.code()),
        }
    }

    /// A new attempt (the next unused number), started.
    pub fn new_attempt(&self) -> Result<u32, Refusal> {
        self.block_on(self.embedded.new_attempt())?
            .map_err(|e| self.serve_error(&e))
    }

    /// Ends attempt `number` and judges it, as `POST /attempts/n/finish`
    /// does; waits for its running calls.
    pub fn finish(&self, number: u32) -> Result<AttemptResult, Refusal> {
        self.block_on(self.embedded.finish(number))?
            .map_err(|e| self.serve_error(&e))
    }

    /// The results document of the attempts ended so far.
    pub fn results(&self) -> Result<RunResults, Refusal> {
        self.block_on(self.embedded.results())
    }

    /// Stops serving (a call being answered is answered first), ends every
    /// attempt still open, writes `--json`, `--junit` and `--evidence` as
    /// the command does, and returns the results document.
    pub fn stop(mut self) -> Result<RunResults, Refusal> {
        self.stop.cancel();
        let server = self.server.take();
        let outcome = self.block_on(async {
            if let Some(server) = server {
                // The server's own end (a listener error) does not keep the
                // attempts from being judged.
                let _ = server.await;
            }
            self.embedded.finish_all().await?;
            Ok::<_, ServeError>(self.embedded.results().await)
        })?;
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_millis(200));
        }
        let results = outcome.map_err(|e| self.serve_error(&e))?;
        write_files(&self.args, &results)?;
        Ok(results)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
