//! Counting the statements a pool sends: a TCP relay between the pool and
//! PostgreSQL that reads the protocol's frontend messages on their way and
//! counts each statement executed — an `Execute` of the extended protocol
//! or a simple `Query` — each of which sqlx sends and waits for alone, so
//! each is one round trip. (Preparing a statement the first time a
//! connection runs it is not counted: it happens once per connection, not
//! per call.) The tests that keep the round trips of a call and of a
//! worker's attempt from creeping back read these counts.

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The statements sent through a relay so far, and its switch to cut its
/// connections.
#[derive(Debug, Clone)]
pub struct RoundTrips {
    sent: Arc<AtomicU64>,
    /// Bumped by [`RoundTrips::sever`]; each connection watches it.
    cuts: Arc<watch::Sender<u64>>,
}

impl Default for RoundTrips {
    fn default() -> Self {
        Self {
            sent: Arc::default(),
            cuts: Arc::new(watch::channel(0).0),
        }
    }
}

impl RoundTrips {
    /// How many statements have been sent.
    pub fn count(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Cuts every connection open through the relay at once, as a failing
    /// network would: the pool sees them drop; a statement already sent runs
    /// on in PostgreSQL (and commits), its answer never arrives. New
    /// connections go through as before.
    pub fn sever(&self) {
        self.cuts.send_modify(|cuts| *cuts += 1);
    }
}

/// A pool of at most `connections` on `pool`'s database as the application
/// role, through a relay that counts its statements.
pub async fn counted_app_pool(pool: &PgPool, connections: u32) -> (PgPool, RoundTrips) {
    let target = crate::as_app_role((*pool.connect_options()).clone());
    let server = format!("{}:{}", target.get_host(), target.get_port());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let trips = RoundTrips::default();
    let counter = trips.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = server.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                if let Ok(upstream) = TcpStream::connect(&server).await {
                    relay(client, upstream, counter).await;
                }
            });
        }
    });
    // Without TLS, so that the relay can read the messages.
    let options: PgConnectOptions = target
        .host("127.0.0.1")
        .port(port)
        .ssl_mode(PgSslMode::Disable);
    let pool = PgPoolOptions::new()
        .max_connections(connections)
        .connect_with(options)
        .await
        .unwrap();
    (pool, trips)
}

/// Copies both ways, counting the client's statements, until either side
/// closes or the relay is severed.
async fn relay(client: TcpStream, upstream: TcpStream, counter: RoundTrips) {
    let mut cuts = counter.cuts.subscribe();
    tokio::select! {
        () = copy_both_ways(client, upstream, counter) => {}
        _ = cuts.changed() => {}
    }
}

async fn copy_both_ways(client: TcpStream, upstream: TcpStream, counter: RoundTrips) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = upstream.into_split();
    let answers = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    });
    // Dropped with this future (a cut), the answers' task stops too.
    let mut answers = AbortOnDrop(answers);
    let mut reader = Frontend::default();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match client_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let statements = reader.feed(&buffer[..read]);
        counter.sent.fetch_add(statements, Ordering::SeqCst);
        if server_write.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    let _ = server_write.shutdown().await;
    let _ = (&mut answers.0).await;
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The frontend's message stream, read as it passes: the startup message
/// (no type byte), then messages of a type byte and a length.
#[derive(Default)]
struct Frontend {
    started: bool,
    /// The bytes of the message header being read.
    header: Vec<u8>,
    /// What is left of the current message's body.
    skip: usize,
}

impl Frontend {
    /// Reads `bytes`; the statements (`E`xecute, `Q`uery) whose header
    /// they complete.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        let mut statements = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let header_len = if self.started { 5 } else { 4 };
            let n = (header_len - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() < header_len {
                break;
            }
            let at = header_len - 4;
            let length = u32::from_be_bytes([
                self.header[at],
                self.header[at + 1],
                self.header[at + 2],
                self.header[at + 3],
            ]) as usize;
            if self.started && matches!(self.header[0], b'E' | b'Q') {
                statements += 1;
            }
            // The length counts itself, not the type byte.
            self.skip = length.saturating_sub(4);
            self.started = true;
            self.header.clear();
        }
        statements
    }
}

#[cfg(test)]
mod tests {
    use super::Frontend;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn statements_are_counted_across_any_split() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&12u32.to_be_bytes());
        stream.extend_from_slice(&196_608u32.to_be_bytes());
        stream.extend_from_slice(b"user");
        for kind in [b'P', b'D', b'S', b'B', b'E', b'S', b'Q', b'B', b'E', b'S'] {
            stream.extend(message(kind, b"EEEEQQQQ"));
        }
        for chunk in [1, 3, 7, 1000] {
            let mut reader = Frontend::default();
            let counted: u64 = stream.chunks(chunk).map(|c| reader.feed(c)).sum();
            assert_eq!(counted, 3, "chunks of {chunk}");
        }
    }
}
