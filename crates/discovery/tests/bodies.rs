//! Every body read from a real tool's HTTP endpoint is bounded (issue 32,
//! item 4): a real HTTP server streaming a chunked answer without end, or
//! announcing one longer than the limit, fails the call with
//! `response_too_large` as soon as the limit is passed, and the executor
//! goes on answering.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolmock_discovery::{RealAnswer, RealExecutor};
use toolmock_runtime::backend::ExternalExecutor;
use toolmock_runtime::model::RealHandler;

/// A real HTTP server: `/endless` answers 200 with a chunked body written
/// until the client hangs up, `/long` a 200 announcing 64 MiB, anything
/// else `{"ok": true}`. Its base URL.
async fn server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&seen).into_owned();
                if head.starts_with("POST /endless") {
                    let start = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                    if socket.write_all(start.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = format!("{:x}\r\n{}\r\n", 65536, "x".repeat(65536));
                    while socket.write_all(chunk.as_bytes()).await.is_ok() {}
                } else if head.starts_with("POST /long") {
                    let start = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 67108864\r\n\r\n[";
                    let _ = socket.write_all(start.as_bytes()).await;
                } else {
                    let body = r#"{"ok": true}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[tokio::test]
async fn an_endless_or_overlong_answer_is_response_too_large() {
    let base = server().await;
    let handler = |path: &str| RealHandler::Http {
        url: format!("{base}{path}"),
    };
    let operations = BTreeMap::from([
        (
            ("crm".to_owned(), "endless".to_owned()),
            handler("/endless"),
        ),
        (("crm".to_owned(), "long".to_owned()), handler("/long")),
        (("crm".to_owned(), "find".to_owned()), handler("/find")),
    ]);
    let executor =
        RealExecutor::new(operations, Duration::from_secs(60)).with_max_response_bytes(1024 * 1024);
    for operation in ["endless", "long"] {
        let began = Instant::now();
        let error = executor
            .answer("crm", operation, &json!({}))
            .await
            .expect_err(operation);
        assert!(
            error.contains("response_too_large") && error.contains("1048576-byte limit"),
            "{operation}: {error}"
        );
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "cut at the limit"
        );
        // The same through the dispatcher's seam (recorded as external_failed).
        let error = executor
            .execute("crm", operation, &json!({}))
            .await
            .expect_err(operation);
        assert!(error.contains("response_too_large"), "{operation}: {error}");
    }
    // And the executor goes on answering.
    assert_eq!(
        executor.answer("crm", "find", &json!({})).await.unwrap(),
        RealAnswer::Result(json!({"ok": true}))
    );
}

/// A multi-tenant process's executor (issue 32, item 6) refuses an HTTP
/// handler or MCP server whose host is loopback, naming the class only and
/// sending nothing; the operator's host allow-list lets it through.
#[tokio::test]
async fn a_private_target_is_refused_unless_allowed() {
    use toolmock_discovery::TargetPolicy;
    let base = server().await;
    let operations = BTreeMap::from([
        (
            ("crm".to_owned(), "find".to_owned()),
            RealHandler::Http {
                url: format!("{base}/find"),
            },
        ),
        (
            ("crm".to_owned(), "lookup".to_owned()),
            RealHandler::Mcp {
                url: format!("{base}/mcp"),
            },
        ),
    ]);
    let closed = RealExecutor::new(operations.clone(), Duration::from_secs(10))
        .with_targets(TargetPolicy::default());
    for operation in ["find", "lookup"] {
        let error = closed
            .answer("crm", operation, &json!({}))
            .await
            .expect_err(operation);
        assert!(
            error.contains("private_target") && error.contains("loopback address"),
            "{operation}: {error}"
        );
    }
    let listed =
        RealExecutor::new(operations, Duration::from_secs(10)).with_targets(TargetPolicy {
            allow_private: false,
            allowed_hosts: vec!["127.0.0.1".into()],
        });
    assert_eq!(
        listed.answer("crm", "find", &json!({})).await.unwrap(),
        RealAnswer::Result(json!({"ok": true}))
    );
}
