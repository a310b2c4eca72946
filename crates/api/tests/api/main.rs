//! The API in-process (tower's `oneshot` on the router) against a real
//! PostgreSQL: each `#[sqlx::test]` gets its own migrated database.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed expectation must panic

mod agent_service;
mod agents;
mod cassettes;
mod common;
mod concurrent_calls;
mod discover;
mod dispatcher;
mod domain;
mod errors;
mod external_user;
mod fail_closed;
mod generator;
mod hardening;
mod lost_answers;
mod matrix;
mod mcp;
mod modules;
mod openapi;
mod parity;
mod seed;
mod simulated_user;
mod simulations;
mod testing_flow;
mod tools;
mod verifications;
mod worker_clock;
