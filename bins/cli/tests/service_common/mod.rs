//! The API on a real socket and workers over a test database, in the test
//! process, for the tests that run `toolmock submit` against them.

#![allow(dead_code, clippy::unwrap_used)]

use sqlx::PgPool;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolmock_api::{ApiConfig, AppState, AuthConfig, Claims, mint_hs256, router};
use toolmock_worker::Agents;

const SECRET: &[u8] = b"submit test secret, at least 32 bytes";

/// A token of tenant `acme` with `permissions`.
pub(crate) fn token(permissions: &[&str]) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    mint_hs256(
        SECRET,
        &Claims {
            sub: "submitter".into(),
            tenant: "acme".into(),
            permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
            exp: now + 3600,
            iat: Some(now),
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

/// The API and two workers (`NAME-1`, `NAME-2`) with `agents`, stopped when
/// dropped.
pub(crate) struct Service {
    pub(crate) base: String,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl Service {
    pub(crate) async fn start(pool: &PgPool, name: &str, agents: &Agents) -> Service {
        let auth = AuthConfig::hs256(SECRET).unwrap();
        let app = router(AppState::new(pool.clone(), auth, ApiConfig::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let mut stops = Vec::new();
        for n in 1..=2 {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let mut config = toolmock_worker::WorkerConfig::new(format!("{name}-{n}"));
            config.poll = Duration::from_millis(50);
            let store = toolmock_store::PgStore::new(pool.clone());
            tokio::spawn(toolmock_worker::run_with(
                store,
                config,
                agents.clone(),
                async {
                    let _ = stopped.await;
                },
            ));
            stops.push(stop);
        }
        Service { base, stops }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
    }
}
