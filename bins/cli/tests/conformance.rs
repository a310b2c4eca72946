//! Runs every conformance vector through the real `toolmock` binary.
//!
//! The project's vectors live in `fixtures/conformance/`; when the shared
//! vectors (an independent set CI keeps beside the repository, in the folder
//! `shared_dir` below) are there, they run too. The comparison semantics are
//! those of the shared vectors' own Python runner (`run` in that folder):
//! numbers by value, booleans are not
//! numbers, `ok` lines compared on variant/rule/result/state/delay_ms,
//! (version 2) `domain_error` lines on variant/rule/error/state/delay_ms, `error`
//! lines on class/code, `expect_exit` for definitions that fail their check.
//! Files are written exactly as that runner writes them (key order kept,
//! indented or compact, UTF-8 or ASCII escapes), so the vectors test the same
//! bytes here and there.
//!
//! Every failing vector is reported by name; the test fails at the end.

use serde_json::Value;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(10);
const MIN_PROJECT_VECTORS: usize = 150;

// ------------------------------------------------------------------ JSON with key order

/// A JSON value that keeps key order and the text of numbers, so that files
/// are re-written exactly as Python's `json.dumps` would write them.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn parse(text: &str) -> Result<J, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("trailing characters at byte {}", p.i));
        }
        Ok(v)
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<J, String> {
        if depth > 200 {
            return Err("nested too deeply".into());
        }
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return Err("unexpected end".into());
        };
        match c {
            b'n' if self.eat("null") => Ok(J::Null),
            b't' if self.eat("true") => Ok(J::Bool(true)),
            b'f' if self.eat("false") => Ok(J::Bool(false)),
            b'"' => self.string().map(J::Str),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(J::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    if self.eat("]") {
                        return Ok(J::Arr(items));
                    }
                    return Err(format!("expected , or ] at byte {}", self.i));
                }
            }
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(J::Obj(members));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(format!("expected a key at byte {}", self.i));
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(":") {
                        return Err(format!("expected : at byte {}", self.i));
                    }
                    members.push((key, self.value(depth + 1)?));
                    self.ws();
                    if self.eat(",") {
                        continue;
                    }
                    if self.eat("}") {
                        return Ok(J::Obj(members));
                    }
                    return Err(format!("expected , or }} at byte {}", self.i));
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                let text =
                    std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
                // Validate with serde_json (it rejects `01`, `1.`, `-` …).
                serde_json::from_str::<serde_json::Number>(text)
                    .map_err(|e| format!("bad number {text:?}: {e}"))?;
                Ok(J::Num(text.to_owned()))
            }
            _ => Err(format!("unexpected byte {c:#x} at {}", self.i)),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        self.i += 4;
        u32::from_str_radix(std::str::from_utf8(h).map_err(|e| e.to_string())?, 16)
            .map_err(|e| e.to_string())
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err("unterminated string".into());
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let e = *self.s.get(self.i + 1).ok_or("bad escape")?;
                    self.i += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            out.push(char::from_u32(code).ok_or("lone surrogate in a vector")?);
                        }
                        _ => return Err(format!("bad escape \\{}", e as char)),
                    }
                }
                _ => {
                    // Copy one UTF-8 character.
                    let rest = std::str::from_utf8(&self.s[self.i..]).map_err(|e| e.to_string())?;
                    let ch = rest.chars().next().ok_or("unterminated string")?;
                    out.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
    }
}

impl J {
    fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, J::Null)
    }

    fn to_value(&self) -> Value {
        serde_json::from_str(&dump(self, None, false)).expect("a parsed vector re-parses")
    }
}

/// Python's `json.dumps`: `indent` None is compact (`,` and `:`), else
/// `indent` spaces with `, ` … `: `; `ascii` escapes everything outside
/// printable ASCII as `\uXXXX` (surrogate pairs beyond the BMP).
fn dump(v: &J, indent: Option<usize>, ascii: bool) -> String {
    let mut out = String::new();
    write_j(&mut out, v, indent, ascii, 0);
    out
}

fn write_str(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ascii && !(' '..='~').contains(&c) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_j(out: &mut String, v: &J, indent: Option<usize>, ascii: bool, level: usize) {
    let newline = |out: &mut String, level: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * level));
        }
    };
    // Python writes "," between items in both layouts (a newline follows when indented).
    let item_sep = ",";
    let key_sep = if indent.is_some() { ": " } else { ":" };
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Num(text) => out.push_str(text),
        J::Str(s) => write_str(out, s, ascii),
        J::Arr(items) if items.is_empty() => out.push_str("[]"),
        J::Obj(members) if members.is_empty() => out.push_str("{}"),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                write_j(out, item, indent, ascii, level + 1);
            }
            newline(out, level);
            out.push(']');
        }
        J::Obj(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                write_str(out, key, ascii);
                out.push_str(key_sep);
                write_j(out, item, indent, ascii, level + 1);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

// ------------------------------------------------------------------ comparison

/// Python's `a == b` on two numbers parsed by `json.loads`: integers exactly,
/// floats as doubles, an integer and a float by exact value.
fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(i), Some(j)) => i == j,
        (Some(i), None) => b
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f as i128 == i),
        (None, Some(j)) => a
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f as i128 == j),
        (None, None) => a.as_f64() == b.as_f64(),
    }
}

/// Deep JSON equality; numbers by value, booleans are not numbers.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn show(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(400) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

// ------------------------------------------------------------------ running the binary

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn invoke(args: &[&Path]) -> Result<Ran, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start toolmock: {e}"))?;
    let mut out_pipe = child.stdout.take().expect("piped stdout");
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out_pipe.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err_pipe.read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", TIMEOUT.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let stdout = out_reader.join().expect("stdout reader");
    let stderr = String::from_utf8_lossy(&err_reader.join().expect("stderr reader")).into_owned();
    let Some(code) = status.code() else {
        return Err(format!("crashed ({status}): {}", tail(&stderr, 2000)));
    };
    if stderr.contains("panicked") {
        return Err(format!("panicked: {}", tail(&stderr, 2000)));
    }
    let stdout = String::from_utf8(stdout).map_err(|_| "output is not UTF-8".to_owned())?;
    Ok(Ran {
        code,
        stdout,
        stderr,
    })
}

fn tail(s: &str, n: usize) -> &str {
    let s = s.trim();
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `write_json` of the Python runner: indent 2 unless compact, then a newline.
fn write_json(path: &Path, v: &J, compact: bool, ascii: bool) -> Result<(), String> {
    let mut text = dump(v, if compact { None } else { Some(2) }, ascii);
    text.push('\n');
    write(path, &text)
}

fn write_definition(dir: &Path, vec: &J) -> Result<PathBuf, String> {
    let path = dir.join("definition.json");
    match vec.get("definition_text") {
        Some(J::Str(text)) => write(&path, text)?,
        Some(_) => return Err("definition_text is not a string".into()),
        None => write_json(
            &path,
            vec.get("definition").ok_or("vector lacks definition")?,
            false,
            false,
        )?,
    }
    Ok(path)
}

fn get_hash(path: &Path) -> Result<String, String> {
    let hash = Path::new("hash");
    let ran = invoke(&[hash, path])?;
    if ran.code != 0 {
        return Err(format!(
            "hash exited {}: {}",
            ran.code,
            tail(&ran.stderr, 300)
        ));
    }
    Ok(ran.stdout.trim().to_owned())
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn run_hash(vec: &J, dir: &Path) -> Result<(), String> {
    let path = dir.join("contract.json");
    write_json(
        &path,
        vec.get("contract").ok_or("no contract")?,
        false,
        true,
    )?;
    let got = get_hash(&path)?;
    let Some(J::Str(want)) = vec.get("expect") else {
        return Err("expect is not a string".into());
    };
    if &got != want {
        return Err(format!("hash differs: expected {want}, got {got}"));
    }
    Ok(())
}

fn run_hash_equal(vec: &J, dir: &Path) -> Result<(), String> {
    let Some(J::Arr(pair)) = vec.get("contracts") else {
        return Err("contracts is not an array".into());
    };
    let [a, b] = pair.as_slice() else {
        return Err("contracts must hold two contracts".into());
    };
    let pa = dir.join("contract_a.json");
    let pb = dir.join("contract_b.json");
    // Different layouts on purpose: compact UTF-8 versus indented ASCII escapes.
    write_json(&pa, a, true, false)?;
    write_json(&pb, b, false, true)?;
    let (ha, hb) = (get_hash(&pa)?, get_hash(&pb)?);
    for h in [&ha, &hb] {
        if !is_hex64(h) {
            return Err(format!("hash output is not 64 lowercase hex digits: {h:?}"));
        }
    }
    let Some(J::Bool(expect)) = vec.get("expect") else {
        return Err("expect is not a boolean".into());
    };
    if (ha == hb) != *expect {
        return Err(format!(
            "hashes {} but should {} ({ha} / {hb})",
            if ha == hb { "are equal" } else { "differ" },
            if *expect { "be equal" } else { "differ" }
        ));
    }
    Ok(())
}

fn run_check(vec: &J, dir: &Path) -> Result<(), String> {
    let dpath = write_definition(dir, vec)?;
    let cpath = dir.join("contract.json");
    write_json(
        &cpath,
        vec.get("contract").ok_or("no contract")?,
        false,
        false,
    )?;
    let ran = invoke(&[
        Path::new("check"),
        &dpath,
        Path::new("--contract"),
        &cpath,
        Path::new("--json"),
    ])?;
    if ran.code != 0 && ran.code != 1 {
        return Err(format!(
            "check exited {}: {}",
            ran.code,
            tail(&ran.stderr, 300)
        ));
    }
    let report: Value = serde_json::from_str(&ran.stdout).map_err(|_| {
        format!(
            "check --json output is not JSON: {}",
            tail(&ran.stdout, 500)
        )
    })?;
    let (Some(Value::Bool(got_ok)), Some(Value::Array(diagnostics))) =
        (report.get("ok"), report.get("diagnostics"))
    else {
        return Err(format!(
            "check --json output lacks ok/diagnostics: {}",
            show(&report)
        ));
    };
    let mut codes = Vec::new();
    for item in diagnostics {
        match item.get("code") {
            Some(Value::String(code)) => codes.push(code.as_str()),
            _ => return Err(format!("a diagnostic lacks a string code: {}", show(item))),
        }
    }
    let expect = vec.get("expect").ok_or("no expect")?.to_value();
    let want_ok = expect
        .get("ok")
        .and_then(Value::as_bool)
        .ok_or("expect.ok")?;
    if *got_ok != want_ok {
        return Err(format!(
            "ok is {got_ok}, expected {want_ok}; codes {codes:?}"
        ));
    }
    if ran.code != if want_ok { 0 } else { 1 } {
        return Err(format!(
            "exit status {} does not match ok={got_ok}",
            ran.code
        ));
    }
    let missing: Vec<&str> = expect
        .get("codes")
        .and_then(Value::as_array)
        .ok_or("expect.codes")?
        .iter()
        .filter_map(Value::as_str)
        .filter(|c| !codes.contains(c))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing code(s) {}; got {codes:?}",
            missing.join(", ")
        ));
    }
    Ok(())
}

const OK_FIELDS: [&str; 5] = ["variant", "rule", "result", "state", "delay_ms"];
/// A version-2 domain error is an answer too: compared like an `ok` line,
/// with the whole `error` ({code, message, data?}) in place of `result`.
const DOMAIN_ERROR_FIELDS: [&str; 5] = ["variant", "rule", "error", "state", "delay_ms"];

fn compare_line(i: usize, want: &Value, got: &Value) -> Result<(), String> {
    let answer = [("ok", OK_FIELDS), ("domain_error", DOMAIN_ERROR_FIELDS)]
        .into_iter()
        .find_map(|(kind, fields)| want.get(kind).map(|w| (kind, fields, w)));
    if let Some((kind, fields, want_ok)) = answer {
        let Some(got_ok) = got.get(kind).filter(|v| v.is_object()) else {
            return Err(format!("call {i}: expected {kind}, got {}", show(got)));
        };
        for field in fields {
            let Some(g) = got_ok.get(field) else {
                return Err(format!("call {i}: {kind} lacks {field}"));
            };
            let w = want_ok
                .get(field)
                .ok_or("vector answer line lacks a field")?;
            if !json_equal(w, g) {
                return Err(format!(
                    "call {i}: {field} differs: expected {}, got {}",
                    show(w),
                    show(g)
                ));
            }
        }
    } else {
        let want_error = want
            .get("error")
            .ok_or("vector line is neither ok nor error")?;
        let Some(e) = got.get("error").filter(|v| v.is_object()) else {
            return Err(format!(
                "call {i}: expected error {}/{}, got {}",
                show(&want_error["class"]),
                show(&want_error["code"]),
                show(got)
            ));
        };
        for field in ["class", "code"] {
            if e.get(field) != want_error.get(field) {
                return Err(format!(
                    "call {i}: error {field} is {}, expected {}",
                    e.get(field).map_or("nothing".into(), show),
                    show(&want_error[field])
                ));
            }
        }
    }
    Ok(())
}

fn run_eval(vec: &J, dir: &Path) -> Result<(), String> {
    let dpath = write_definition(dir, vec)?;
    let calls_path = dir.join("calls.jsonl");
    let Some(J::Arr(calls)) = vec.get("calls") else {
        return Err("calls is not an array".into());
    };
    let mut text = String::new();
    for call in calls {
        text.push_str(&dump(call, None, false));
        text.push('\n');
    }
    write(&calls_path, &text)?;
    let cpath = dir.join("contract.json");
    let spath = dir.join("state.json");
    let mut args: Vec<&Path> = vec![Path::new("eval"), &dpath, Path::new("--calls"), &calls_path];
    if let Some(contract) = vec.get("contract").filter(|c| !c.is_null()) {
        write_json(&cpath, contract, false, false)?;
        args.extend([Path::new("--contract"), cpath.as_path()]);
    }
    if let Some(state) = vec.get("state").filter(|s| !s.is_null()) {
        write_json(&spath, state, false, false)?;
        args.extend([Path::new("--state"), spath.as_path()]);
    }
    let ran = invoke(&args)?;
    if let Some(J::Num(want_exit)) = vec.get("expect_exit") {
        if ran.code.to_string() != *want_exit {
            return Err(format!(
                "eval exited {}, expected {want_exit}: {}{}",
                ran.code,
                tail(&ran.stdout, 500),
                tail(&ran.stderr, 500)
            ));
        }
        for line in ran.stdout.split('\n') {
            if let Ok(item) = serde_json::from_str::<Value>(line)
                && ["ok", "domain_error", "error"]
                    .iter()
                    .any(|kind| item.get(*kind).is_some_and(Value::is_object))
            {
                return Err(format!(
                    "eval printed a call result although the definition fails its check: {}",
                    tail(line, 500)
                ));
            }
        }
        return Ok(());
    }
    if ran.code != 0 {
        return Err(format!(
            "eval exited {}: {}",
            ran.code,
            tail(
                if ran.stderr.trim().is_empty() {
                    &ran.stdout
                } else {
                    &ran.stderr
                },
                300
            )
        ));
    }
    // Split on "\n" only: a JSON string may hold U+2028 and other separators raw.
    let mut got = Vec::new();
    for line in ran.stdout.split('\n') {
        let line = line.trim_end_matches('\r');
        if line.trim_matches([' ', '\t', '\r']).is_empty() {
            continue;
        }
        got.push(
            serde_json::from_str::<Value>(line).map_err(|_| {
                format!("eval printed a line that is not JSON: {}", tail(line, 500))
            })?,
        );
    }
    let expect = vec.get("expect").ok_or("no expect")?.to_value();
    let expect = expect.as_array().ok_or("expect is not an array")?;
    if got.len() != expect.len() {
        return Err(format!(
            "eval printed {} lines for {} calls",
            got.len(),
            expect.len()
        ));
    }
    for (i, (want, line)) in expect.iter().zip(&got).enumerate() {
        compare_line(i, want, line)?;
    }
    Ok(())
}

fn run_vector(path: &Path, scratch: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let vec = Parser::parse(&text).map_err(|e| format!("malformed vector: {e}"))?;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = scratch.join(format!("v{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let outcome = match vec.get("kind") {
        Some(J::Str(kind)) if kind == "hash" => run_hash(&vec, &dir),
        Some(J::Str(kind)) if kind == "hash_equal" => run_hash_equal(&vec, &dir),
        Some(J::Str(kind)) if kind == "check" => run_check(&vec, &dir),
        Some(J::Str(kind)) if kind == "eval" => run_eval(&vec, &dir),
        other => Err(format!("unknown vector kind {other:?}")),
    };
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn vectors_in(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    names
}

#[test]
fn conformance_vectors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let project = vectors_in(&root.join("fixtures/conformance"));
    let shared_dir = root.join("../shared/conformance");
    let shared = if shared_dir.is_dir() {
        vectors_in(&shared_dir)
    } else {
        Vec::new()
    };
    let mut all: Vec<(String, PathBuf)> = Vec::new();
    for p in &project {
        all.push((format!("fixtures/{}", stem(p)), p.clone()));
    }
    // The HealthPlus call sequences (healthplus_vectors.rs keeps them current).
    let healthplus = vectors_in(&root.join("fixtures/conformance/healthplus"));
    assert!(
        !healthplus.is_empty(),
        "no vectors in fixtures/conformance/healthplus"
    );
    for p in &healthplus {
        all.push((format!("fixtures/healthplus/{}", stem(p)), p.clone()));
    }
    for p in &shared {
        all.push((format!("shared/{}", stem(p)), p.clone()));
    }

    let scratch =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("conformance-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let mut failures: Vec<(String, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut failed = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((label, path)) = all.get(i) else {
                            break failed;
                        };
                        if let Err(why) = run_vector(path, &scratch) {
                            failed.push((label.clone(), why));
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a worker"))
            .collect()
    });
    let _ = std::fs::remove_dir_all(&scratch);
    failures.sort();

    for (label, why) in &failures {
        eprintln!("FAIL {label}: {why}");
    }
    eprintln!(
        "{} passed, {} failed ({} project vectors, {} shared)",
        all.len() - failures.len(),
        failures.len(),
        project.len(),
        shared.len()
    );
    assert!(
        project.len() >= MIN_PROJECT_VECTORS,
        "only {} project vectors in fixtures/conformance; at least {MIN_PROJECT_VECTORS} are required",
        project.len()
    );
    assert!(
        failures.is_empty(),
        "{} conformance vector(s) failed: {}",
        failures.len(),
        failures
            .iter()
            .map(|(label, _)| label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod self_test {
    use super::*;

    #[test]
    fn writes_json_like_python() {
        let v = Parser::parse(r#"{"b": [1, 2.50, {}], "a": "é\u0001😀\u007f", "e": []}"#).unwrap();
        assert_eq!(
            dump(&v, None, false),
            "{\"b\":[1,2.50,{}],\"a\":\"é\\u0001😀\u{7f}\",\"e\":[]}"
        );
        assert_eq!(
            dump(&v, Some(2), true),
            "{\n  \"b\": [\n    1,\n    2.50,\n    {}\n  ],\n  \"a\": \"\\u00e9\\u0001\\ud83d\\ude00\\u007f\",\n  \"e\": []\n}"
        );
        assert!(Parser::parse("[1,]").is_err());
        assert!(Parser::parse("01").is_err());
    }

    #[test]
    fn compares_like_python() {
        use serde_json::json;
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(!json_equal(&json!(true), &json!(1)));
        assert!(!json_equal(
            &json!(9007199254740993u64),
            &json!(9007199254740992.0)
        ));
        assert!(json_equal(
            &json!({"a": [1, {"b": 2}]}),
            &json!({"a": [1.0, {"b": 2.0}]})
        ));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }
}
