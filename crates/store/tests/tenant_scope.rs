//! The store's tenant rule, checked on its source: every SQL statement the
//! store sends names `tenant_id`, and a statement with a `WHERE` compares
//! `tenant_id` with a bound parameter (`tenant_id = $n`) in one of them — so
//! a query cannot read or change another tenant's rows by forgetting the
//! tenant (a join on `tenant_id` alone does not count). The few statements that must not be scoped by a
//! tenant are listed in [`EXCEPTIONS`] with their reason (ARCHITECTURE.md
//! and docs/data-model.md say the same); a new one fails here until it is
//! scoped or listed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed expectation must panic

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The functions whose statements are not scoped by a tenant, and why.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "find_capability",
        "a capability token names no tenant: its SHA-256 is the key that finds the tenant and \
         attempt (the hash is unique, and only the token's holder knows it)",
    ),
    (
        "claim_attempts",
        "the attempt queue is every tenant's: a worker claims the oldest queued attempt whatever \
         its tenant, then follows that row's own tenant and id",
    ),
    (
        "reap_expired",
        "the reaper ends expired leases whatever their tenant (by expiry), then follows each \
         row's own tenant and id",
    ),
    (
        "queue_due_verifications",
        "the verification schedules are every tenant's: a worker queues whatever is due, by \
         time, then follows each row's own tenant and tool",
    ),
    (
        "renew_leases",
        "the heartbeat renews the leases one worker holds, found by owner, attempt id and epoch \
         (ids it claimed, each already bound to its tenant)",
    ),
    (
        "claim_verification",
        "the verification queue is every tenant's, like the attempts': a worker ends, by their \
         lease's expiry and claim count, verifications whose workers stopped, whatever their tenant",
    ),
    (
        "write_rows",
        "writes several calls, possibly of several tenants, in one statement: each call's row \
         binds its own tenant (an element of the bound `uuid[]`), and every table is matched on \
         that row's `tenant_id` as well as its attempt",
    ),
    (
        "notify",
        "wakes idle workers with an empty NOTIFY on the queue channel: no table is read",
    ),
    (
        "create_tenant",
        "writes the tenant's own row of `tenants`, whose key is the tenant id (`id`)",
    ),
    (
        "ensure_tenant",
        "writes the tenant's own row of `tenants` (once per token's tenant), keyed by `id`",
    ),
    (
        "check_schema",
        "reads sqlx's `_sqlx_migrations`, the schema's own version history: no tenant's row",
    ),
];

/// One SQL statement of the source: where it is and its text, with the
/// `{CONST}` pieces of a `format!` replaced by the constants' text.
#[derive(Debug)]
struct Statement {
    file: String,
    function: String,
    sql: String,
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of Rust code, each with its byte offset; comments
/// and character literals skipped, escapes and line continuations applied.
fn literals(code: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'r' if (bytes.get(i + 1) == Some(&b'"') || bytes.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let start = i;
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes[j] == b'#' {
                    hashes += 1;
                    j += 1;
                }
                if bytes[j] != b'"' {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let body_start = j + 1;
                let end = body_start + code[body_start..].find(&close).unwrap();
                found.push((start, end + close.len(), code[body_start..end].to_owned()));
                i = end + close.len();
            }
            b'"' => {
                let start = i;
                let mut text = String::new();
                i += 1;
                while bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        match bytes[i + 1] {
                            b'\n' => {
                                i += 2;
                                while bytes[i].is_ascii_whitespace() {
                                    i += 1;
                                }
                                continue;
                            }
                            b'n' => text.push('\n'),
                            other => text.push(other as char),
                        }
                        i += 2;
                    } else {
                        let c = code[i..].chars().next().unwrap();
                        text.push(c);
                        i += c.len_utf8();
                    }
                }
                i += 1;
                found.push((start, i, text));
            }
            b'\'' => {
                // A character literal ('"', '\'') is skipped; a lifetime is not one.
                if bytes.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while bytes[i] != b'\'' {
                        i += 1;
                    }
                } else if bytes.get(i + 2) == Some(&b'\'') {
                    i += 2;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

/// The name of the last `kind NAME` (e.g. `fn name`) before `at`.
fn last_named(code: &str, at: usize, kind: &str) -> Option<String> {
    let before = &code[..at];
    let start = before.rfind(kind)? + kind.len();
    let name: String = before[start..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    Some(name)
}

const VERBS: &[&str] = &["SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "{"];

fn statements() -> Vec<Statement> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut statements = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let found = literals(code);
        // A `macro_rules!` whose body is one literal (a shared SQL piece).
        let macros: BTreeMap<String, String> = found
            .iter()
            .filter_map(|(start, _, literal)| {
                let name = last_named(code, *start, "macro_rules! ")?;
                let declared = code[..*start].rfind("macro_rules! ")?;
                code[declared..*start]
                    .matches('"')
                    .next()
                    .is_none()
                    .then(|| (name, literal.clone()))
            })
            .collect();
        // Each use of such a macro stands for its literal.
        let mut pieces = found.clone();
        for (name, text) in &macros {
            let call = format!("{name}!()");
            pieces.extend(
                code.match_indices(&call)
                    .map(|(at, _)| (at, at + call.len(), text.clone())),
            );
        }
        pieces.sort_by_key(|(start, _, _)| *start);
        // Pieces separated by nothing but commas and blanks are the pieces
        // of one `concat!`.
        let mut groups: Vec<(usize, String)> = Vec::new();
        let mut last_end = None;
        for (start, end, literal) in pieces {
            let joined = last_end.is_some_and(|e: usize| {
                code[e..start]
                    .chars()
                    .all(|c| c == ',' || c.is_whitespace())
            });
            match groups.last_mut() {
                Some((_, sql)) if joined => sql.push_str(&literal),
                _ => groups.push((start, literal)),
            }
            last_end = Some(end);
        }
        let is_const = |at: usize| {
            let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
            let line = code[line_start..at].trim_start();
            line.starts_with("const ") || line.starts_with("pub(crate) const ")
        };
        // A constant is a piece of the statements that use it, checked there.
        let consts: BTreeMap<String, String> = groups
            .iter()
            .filter(|(at, _)| is_const(*at))
            .map(|(at, sql)| (last_named(code, *at, "const ").unwrap(), sql.clone()))
            .collect();
        for (at, sql) in groups.iter().filter(|(at, _)| !is_const(*at)) {
            let trimmed = sql.trim_start();
            if !VERBS.iter().any(|v| trimmed.starts_with(v)) {
                continue;
            }
            let mut sql = sql.clone();
            for (name, text) in &consts {
                sql = sql.replace(&format!("{{{name}}}"), text);
            }
            if sql.trim_start().starts_with('{') {
                continue; // a format string of something else
            }
            let function = last_named(code, *at, "fn ")
                .or_else(|| last_named(code, *at, "const "))
                .unwrap_or_default();
            statements.push(Statement {
                file: file.strip_prefix(&src).unwrap().display().to_string(),
                function,
                sql,
            });
        }
    }
    statements
}

/// Why a statement is not scoped by the tenant, if it is not: a statement
/// with a `WHERE` filters on the caller's tenant in one — `tenant_id = $n`,
/// a bound parameter, not a join condition or a column compared with
/// another (joins and correlated subqueries then follow ids from the
/// tenant's rows); one without (an `INSERT`) writes `tenant_id`.
fn unscoped(sql: &str) -> Option<String> {
    if !sql.contains("tenant_id") {
        return Some("it never names tenant_id".into());
    }
    let mut clauses = sql.split("WHERE").skip(1).peekable();
    if clauses.peek().is_some() && !clauses.any(tenant_parameter) {
        return Some("no WHERE of it filters on tenant_id = $n".into());
    }
    None
}

/// Whether `clause` compares a `tenant_id` column (of any alias) with a
/// bound parameter: `tenant_id = $1`, `a.tenant_id = $2`.
fn tenant_parameter(clause: &str) -> bool {
    clause.match_indices("tenant_id").any(|(at, _)| {
        let rest = clause[at + "tenant_id".len()..].trim_start();
        rest.strip_prefix('=')
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('$'))
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

#[test]
fn every_statement_is_scoped_by_its_tenant_or_listed() {
    let statements = statements();
    assert!(
        statements.len() > 40,
        "the scan found only {} statements: it no longer reads the store's SQL",
        statements.len()
    );
    let mut offending = Vec::new();
    let mut excepted = std::collections::BTreeSet::new();
    for statement in &statements {
        let Some(why) = unscoped(&statement.sql) else {
            continue;
        };
        if EXCEPTIONS.iter().any(|(f, _)| *f == statement.function) {
            excepted.insert(statement.function.clone());
        } else {
            offending.push(format!(
                "{} {}: {why}: {}",
                statement.file, statement.function, statement.sql
            ));
        }
    }
    assert!(
        offending.is_empty(),
        "statements without the tenant in WHERE: {offending:#?}"
    );
    // A listed exception that no longer needs it is removed from the list.
    let listed: std::collections::BTreeSet<String> =
        EXCEPTIONS.iter().map(|(f, _)| (*f).to_owned()).collect();
    assert_eq!(excepted, listed, "exceptions that no statement needs");
}

#[test]
fn the_scan_catches_a_statement_without_the_tenant() {
    assert!(unscoped("SELECT id FROM tools WHERE name = $1").is_some());
    assert!(unscoped("SELECT tenant_id FROM tools WHERE name = $1").is_some());
    assert!(
        unscoped(
            "SELECT t.id FROM tools t JOIN x ON x.tenant_id = t.tenant_id \
             WHERE t.name = $1"
        )
        .is_some()
    );
    assert!(unscoped("SELECT id FROM tools WHERE tenant_id = $1 AND id = $2").is_none());
    assert!(unscoped("SELECT t.id FROM tools t WHERE t.tenant_id = $2").is_none());
    // A WHERE that names the tenant only to join on it is not a scope.
    assert!(
        unscoped(
            "SELECT a.id FROM attempts a WHERE a.status = 'queued' AND EXISTS \
             (SELECT 1 FROM tests t WHERE t.tenant_id = a.tenant_id)"
        )
        .is_some()
    );
    assert!(unscoped("INSERT INTO agents (tenant_id, id) VALUES ($1, $2)").is_none());
    let code = "fn f() { q(concat!(\"SELECT a \", \"FROM b\")); let c = '\"'; }";
    let found = literals(code);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].2, "SELECT a ");
}
