//! Bad input to the `toolmock` binary: every case ends with a clear message
//! (on stderr, or as a diagnostic of `check`), a non-zero exit and no panic.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const TEN_MB: usize = 10 * 1024 * 1024;

/// A scratch folder of its own for each test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "bad-input-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        Scratch(dir)
    }

    fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write a scratch file");
        path
    }

    fn json(&self, name: &str, value: &Value) -> PathBuf {
        self.file(name, serde_json::to_vec(value).expect("serialize"))
    }

    fn missing(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn toolmock(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Ran {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .output()
        .expect("run toolmock");
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert!(!stderr.contains("panicked"), "toolmock panicked: {stderr}");
    let code = status
        .code()
        .unwrap_or_else(|| panic!("toolmock was killed ({status}): {stderr}"));
    Ran {
        code,
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr,
    }
}

impl Ran {
    /// Fails unless the exit code is `code` and `needle` is in stderr.
    fn refused(&self, code: i32, needle: &str) -> &Self {
        assert_eq!(
            self.code, code,
            "exit status; stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {}",
            self.stderr
        );
        assert!(
            self.stderr.starts_with("toolmock: "),
            "a clear message says who speaks: {}",
            self.stderr
        );
        self
    }

    /// Fails unless `check` failed (exit 1) with a diagnostic `code` at `pointer`.
    fn diagnosed(&self, pointer: &str, code: &str) -> &Self {
        assert_eq!(
            self.code, 1,
            "exit status; stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        let needle = format!(": {pointer}: {code}: ");
        assert!(
            self.stdout.lines().any(|l| l.contains(&needle)),
            "no {code} diagnostic at {pointer}; stdout: {}",
            self.stdout
        );
        assert!(
            self.stdout.trim_end().ends_with("problem")
                || self.stdout.trim_end().ends_with("problems"),
            "the report ends with a count: {}",
            self.stdout
        );
        self
    }

    fn no_call_output(&self) -> &Self {
        assert!(
            !self.stdout.contains("{\"ok\"") && !self.stdout.contains("{\"error\""),
            "nothing may be evaluated: {}",
            self.stdout
        );
        self
    }
}

fn contract() -> Value {
    json!({
        "operation": {"source": "mcp", "name": "probe"},
        "description": "probe",
        "input_schema": {"type": "object"},
        "output_schema": {}
    })
}

fn definition() -> Value {
    json!({
        "schema_version": 1,
        "default_variant": "default",
        "initial_state": {"n": 0},
        "variants": {"default": {
            "result": {"echo": {"$input": "x"}},
            "set_state": {"n": {"$input": "x"}},
            "rules": [{"when": [{"source": "input", "path": "x", "op": "eq", "value": 0}], "delay_ms": 1}]
        }},
        "examples": [{"variant": "default", "input": {"x": 1}, "expected": {"echo": 1}}]
    })
}

fn deep_array(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn deep_object(depth: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
}

// ------------------------------------------------------------------ not JSON

#[test]
fn non_json_definition_is_invalid_json() {
    let s = Scratch::new();
    let c = s.json("c.json", &contract());
    for (name, text) in [
        ("words.json", "this is not JSON"),
        ("empty.json", ""),
        ("truncated.json", "{\"schema_version\": 1,"),
        ("nan.json", "{\"schema_version\": NaN}"),
    ] {
        let d = s.file(name, text);
        toolmock(&[&"check", &d, &"--contract", &c]).diagnosed("/", "invalid_json");
        let calls = s.file("calls.jsonl", "{\"input\":{}}\n");
        let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
        assert_eq!(ran.code, 1, "eval of a broken definition: {}", ran.stderr);
        assert!(ran.stderr.contains("invalid_json"), "{}", ran.stderr);
        ran.no_call_output();
    }
}

#[test]
fn non_json_contract_is_refused() {
    let s = Scratch::new();
    let c = s.file("c.json", "{operation: mcp}");
    let d = s.json("d.json", &definition());
    toolmock(&[&"hash", &c]).refused(2, "invalid_json");
    toolmock(&[&"check", &d, &"--contract", &c]).refused(2, "invalid_json");
    let calls = s.file("calls.jsonl", "{\"input\":{}}\n");
    toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &c])
        .refused(2, "invalid_json")
        .no_call_output();
}

#[test]
fn non_json_calls_line_and_state_are_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\nnot json\n");
    let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
    ran.refused(2, "calls.jsonl:2");
    let state = s.file("state.json", "{n: 1}");
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
    toolmock(&[&"eval", &d, &"--calls", &calls, &"--state", &state])
        .refused(2, "state.json")
        .no_call_output();
}

#[test]
fn invalid_utf8_is_refused_everywhere() {
    let s = Scratch::new();
    let bad: &[u8] = b"{\"schema_version\": 1, \"description\": \"\xff\xfe\"}";
    let c = s.json("c.json", &contract());
    let d_bad = s.file("d_bad.json", bad);
    toolmock(&[&"check", &d_bad, &"--contract", &c]).diagnosed("/", "invalid_json");
    let c_bad = s.file(
        "c_bad.json",
        b"{\"operation\":{\"source\":\"mcp\",\"name\":\"\xc3\x28\"},\"input_schema\":{},\"output_schema\":{}}",
    );
    toolmock(&[&"hash", &c_bad]).refused(2, "invalid_json");
    let d = s.json("d.json", &definition());
    let calls = s.file("calls.jsonl", b"{\"input\":{\"x\":\"\xe2\x82\"}}\n");
    toolmock(&[&"eval", &d, &"--calls", &calls]).refused(2, "calls.jsonl:1");
    let state = s.file("state.json", b"{\"n\": \"\xff\"}");
    let calls = s.file("calls2.jsonl", "{\"input\":{\"x\":1}}\n");
    toolmock(&[&"eval", &d, &"--calls", &calls, &"--state", &state]).refused(2, "state.json");
}

// ------------------------------------------------------------------ big and deep

#[test]
fn ten_megabyte_definition_is_too_large() {
    let s = Scratch::new();
    let mut doc = definition();
    doc["description"] = Value::String("x".repeat(TEN_MB));
    let d = s.json("d.json", &doc);
    assert!(std::fs::metadata(&d).expect("metadata").len() > TEN_MB as u64);
    let c = s.json("c.json", &contract());
    toolmock(&[&"check", &d, &"--contract", &c]).diagnosed("/", "too_large");
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
    let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("too_large"), "{}", ran.stderr);
    ran.no_call_output();
}

#[test]
fn ten_megabyte_contract_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for (name, bytes) in [
        ("garbage.json", vec![b'x'; TEN_MB]),
        ("brackets.json", vec![b'['; TEN_MB]),
        ("spaces.json", vec![b' '; TEN_MB]),
    ] {
        let c = s.file(name, bytes);
        toolmock(&[&"hash", &c]).refused(2, "invalid_json");
        toolmock(&[&"check", &d, &"--contract", &c]).refused(2, "invalid_json");
    }
}

#[test]
fn nesting_ten_thousand_deep_is_refused() {
    let s = Scratch::new();
    let c = s.json("c.json", &contract());
    let d = s.json("d.json", &definition());
    let calls_ok = s.file("ok.jsonl", "{\"input\":{\"x\":1}}\n");
    for (label, deep) in [
        ("array", deep_array(10_000)),
        ("object", deep_object(10_000)),
    ] {
        // definition
        let d_deep = s.file(&format!("d_{label}.json"), &deep);
        toolmock(&[&"check", &d_deep, &"--contract", &c]).diagnosed("/", "invalid_json");
        let wrapped = format!(
            "{{\"schema_version\":1,\"default_variant\":\"d\",\"variants\":{{\"d\":{{\"result\":{deep}}}}},\"examples\":[]}}"
        );
        let d_wrapped = s.file(&format!("dw_{label}.json"), &wrapped);
        toolmock(&[&"check", &d_wrapped, &"--contract", &c]).diagnosed("/", "invalid_json");
        // contract
        let c_deep = s.file(&format!("c_{label}.json"), &deep);
        toolmock(&[&"hash", &c_deep]).refused(2, "invalid_json");
        let c_wrapped = s.file(
            &format!("cw_{label}.json"),
            format!(
                "{{\"operation\":{{\"source\":\"mcp\",\"name\":\"x\"}},\"input_schema\":{deep},\"output_schema\":{{}}}}"
            ),
        );
        toolmock(&[&"hash", &c_wrapped]).refused(2, "invalid_json");
        // calls line
        let calls = s.file(
            &format!("calls_{label}.jsonl"),
            format!("{{\"input\":{{\"x\":{deep}}}}}\n"),
        );
        toolmock(&[&"eval", &d, &"--calls", &calls]).refused(2, "1:");
        // state
        let state = s.file(&format!("state_{label}.json"), format!("{{\"n\":{deep}}}"));
        toolmock(&[&"eval", &d, &"--calls", &calls_ok, &"--state", &state])
            .refused(2, "state")
            .no_call_output();
    }
}

// ------------------------------------------------------------------ wrong types

#[test]
fn wrong_types_at_every_level_of_a_definition() {
    let s = Scratch::new();
    let c = s.json("c.json", &contract());
    let cases: Vec<(&str, Value)> = vec![
        ("", json!([])),
        ("", json!("definition")),
        ("", json!(1)),
        ("", json!(null)),
        ("", json!(true)),
        ("/schema_version", json!("1")),
        ("/default_variant", json!(["default"])),
        ("/initial_state", json!([1])),
        ("/variants", json!([])),
        ("/variants/default", json!(1)),
        ("/variants/default/set_state", json!("n")),
        ("/variants/default/delay_ms", json!("1")),
        ("/variants/default/rules", json!({})),
        ("/variants/default/rules/0", json!(true)),
        ("/variants/default/rules/0/when", json!("x")),
        ("/variants/default/rules/0/when/0", json!(0)),
        ("/variants/default/rules/0/when/0/path", json!(7)),
        ("/variants/default/rules/0/delay_ms", json!(0.5)),
        ("/variants/default/rules/0/set_state", json!([])),
        ("/variants/default/description", json!(1)),
        ("/examples", json!({})),
        ("/examples/0", json!("default")),
        ("/examples/0/variant", json!(null)),
        ("/examples/0/input", json!([])),
        ("/examples/0/state", json!(1)),
        ("/examples/0/expected_state", json!([])),
        ("/description", json!({})),
        ("/variants/default/result/echo/$input", json!(5)),
    ];
    for (i, (pointer, replacement)) in cases.into_iter().enumerate() {
        let mut doc = definition();
        if pointer.is_empty() {
            doc = replacement;
        } else {
            let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
            let slot = doc
                .pointer_mut(parent)
                .unwrap_or_else(|| panic!("{parent} exists"));
            match slot {
                Value::Object(map) => {
                    map.insert(key.to_owned(), replacement);
                }
                Value::Array(items) => items[key.parse::<usize>().expect("an index")] = replacement,
                _ => panic!("{parent} is a container"),
            }
        }
        let d = s.json(&format!("d{i}.json"), &doc);
        let shown = if pointer.is_empty() { "/" } else { pointer };
        toolmock(&[&"check", &d, &"--contract", &c]).diagnosed(shown, "wrong_type");
    }
    // An array path is the version-2 form: in a version-1 document it is
    // refused as such, not as a wrong type.
    let mut doc = definition();
    doc["variants"]["default"]["rules"][0]["when"][0]["path"] = json!(["x"]);
    let d = s.json("array_path.json", &doc);
    toolmock(&[&"check", &d, &"--contract", &c])
        .diagnosed("/variants/default/rules/0/when/0/path", "version_2_feature");
}

// ------------------------------------------------------------------ calls lines

#[test]
fn calls_line_that_is_not_an_object_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for line in ["[1]", "5", "\"input\"", "null", "true"] {
        let calls = s.file("calls.jsonl", format!("{line}\n"));
        toolmock(&[&"eval", &d, &"--calls", &calls])
            .refused(2, "calls.jsonl:1")
            .no_call_output();
    }
}

/// serde reads a struct from an array too; docs/spec.md §11 reads only objects. Both
/// shapes used to be evaluated (as a call of the `default` variant, and as a
/// call whose input is `{"input": …}`); the lines after the bad one are not
/// evaluated, the ones before are.
#[test]
fn calls_line_that_is_an_array_of_call_parts_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for line in [
        r#"[{"x":1},"default"]"#,
        r#"[{"input":{"x":1}}]"#,
        r#"  [{"x":1}]"#,
    ] {
        let calls = s.file(
            "calls.jsonl",
            format!("{{\"input\":{{\"x\":2}}}}\n\n{line}\n{{\"input\":{{\"x\":3}}}}\n"),
        );
        let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
        ran.refused(2, "calls.jsonl:3")
            .refused(2, "must be a JSON object, not an array");
        assert_eq!(ran.stdout.lines().count(), 1, "{}", ran.stdout);
        assert!(ran.stdout.contains("\"echo\":2"), "{}", ran.stdout);
    }
}

/// `--calls -` reads the calls from standard input.
#[test]
fn calls_can_come_from_standard_input() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .arg("eval")
        .arg(&d)
        .args(["--calls", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolmock");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("a stdin pipe");
        stdin
            .write_all(b"{\"input\":{\"x\":1}}\n{\"input\":{\"x\":0}}\n[1]\n")
            .expect("write the calls");
    }
    let out = child.wait_with_output().expect("toolmock ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stderr.contains("standard input:3"), "{stderr}");
}

#[test]
fn calls_line_with_unknown_fields_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for (line, field) in [
        ("{\"input\":{},\"extra\":1}", "extra"),
        ("{\"input\":{},\"state\":{}}", "state"),
        ("{\"inputs\":{}}", "inputs"),
    ] {
        let calls = s.file("calls.jsonl", format!("{line}\n"));
        toolmock(&[&"eval", &d, &"--calls", &calls]).refused(2, field);
    }
}

#[test]
fn calls_line_whose_input_is_not_an_object_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for line in [
        "{\"input\":[]}",
        "{\"input\":\"x\"}",
        "{\"input\":null}",
        "{\"input\":1}",
        "{}",
        "{\"variant\":\"default\"}",
        "{\"input\":{},\"variant\":5}",
    ] {
        let calls = s.file("calls.jsonl", format!("{line}\n"));
        toolmock(&[&"eval", &d, &"--calls", &calls]).refused(2, "calls.jsonl:1");
    }
}

#[test]
fn bad_calls_line_after_good_ones_names_its_line() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let calls = s.file(
        "calls.jsonl",
        "{\"input\":{\"x\":1}}\n\n{\"input\":{\"x\":2}}\n{\"input\":[]}\n",
    );
    let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
    ran.refused(2, "calls.jsonl:4");
}

#[test]
fn empty_calls_file_prints_nothing_and_succeeds() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for (name, text) in [("empty.jsonl", ""), ("blank.jsonl", "\n\n  \n\t\r\n")] {
        let calls = s.file(name, text);
        let ran = toolmock(&[&"eval", &d, &"--calls", &calls]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        assert_eq!(ran.stdout, "", "no output for no calls");
        assert_eq!(ran.stderr, "", "no complaint for no calls");
    }
}

// ------------------------------------------------------------------ files and arguments

#[test]
fn missing_files_are_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let c = s.json("c.json", &contract());
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
    let gone = s.missing("gone.json");
    toolmock(&[&"hash", &gone]).refused(2, "gone.json");
    toolmock(&[&"check", &gone, &"--contract", &c]).refused(2, "gone.json");
    toolmock(&[&"check", &d, &"--contract", &gone]).refused(2, "gone.json");
    toolmock(&[&"eval", &gone, &"--calls", &calls]).refused(2, "gone.json");
    toolmock(&[&"eval", &d, &"--calls", &gone]).refused(2, "gone.json");
    toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &gone]).refused(2, "gone.json");
    toolmock(&[&"eval", &d, &"--calls", &calls, &"--state", &gone])
        .refused(2, "gone.json")
        .no_call_output();
    // A folder is not a file either.
    toolmock(&[&"eval", &d, &"--calls", &s.0]).refused(2, "cannot read");
    toolmock(&[&"hash", &s.0]).refused(2, "cannot read");
}

#[test]
fn state_that_is_not_an_object_is_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
    for text in ["[1]", "\"state\"", "5", "null", "true"] {
        let state = s.file("state.json", text);
        toolmock(&[&"eval", &d, &"--calls", &calls, &"--state", &state])
            .refused(2, "must be a JSON object")
            .no_call_output();
    }
}

#[test]
fn unusable_arguments_are_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for args in [
        vec!["check"],
        vec!["eval"],
        vec!["hash"],
        vec!["frobnicate"],
        vec!["check", "--json"],
    ] {
        let all: Vec<&dyn AsRef<std::ffi::OsStr>> = args
            .iter()
            .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
            .collect();
        let ran = toolmock(&all);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert!(!ran.stderr.trim().is_empty(), "{args:?} says why");
    }
    // check without --contract
    let ran = toolmock(&[&"check", &d]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("--contract"), "{}", ran.stderr);
}

#[test]
fn contracts_with_wrong_shapes_are_refused() {
    let s = Scratch::new();
    for (name, value, needle) in [
        ("array.json", json!([]), "wrong_shape"),
        (
            "no_schema.json",
            json!({"operation": {"source": "mcp", "name": "x"}, "input_schema": {}}),
            "output_schema",
        ),
        (
            "bad_source.json",
            json!({"operation": {"source": "soap", "name": "x"}, "input_schema": {}, "output_schema": {}}),
            "soap",
        ),
        (
            "schema_string.json",
            json!({"operation": {"source": "mcp", "name": "x"}, "input_schema": "object", "output_schema": {}}),
            "input_schema",
        ),
    ] {
        let c = s.json(name, &value);
        toolmock(&[&"hash", &c]).refused(2, needle);
    }
}

/// docs/spec.md §2: an integer literal is refused only when no double holds it, in
/// `hash`, `check` and `eval` alike. (The hashes of exact big integers are
/// checked against an independent JCS implementation by the vectors
/// `hash_exact_big_integers` and `hasheq_exact_big_integer_and_float_forms_equal`.)
#[test]
fn contract_integers_a_double_cannot_hold_are_refused() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
    for number in [
        "9007199254740993",
        "-9007199254740993",
        "18446744073709551615",
        "100000000000000000000000",
        "-100000000000000000000000",
    ] {
        let c = s.file(
            "c.json",
            format!(
                "{{\"operation\":{{\"source\":\"mcp\",\"name\":\"x\"}},\"input_schema\":{{\"maximum\":{number}}},\"output_schema\":{{}}}}"
            ),
        );
        toolmock(&[&"hash", &c]).refused(2, "inexact_number");
        toolmock(&[&"check", &d, &"--contract", &c]).refused(2, "inexact_number");
        toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &c])
            .refused(2, "inexact_number")
            .no_call_output();
    }
    // Integers a double holds exactly are accepted at any size.
    for number in [
        "100000000000000000000",
        "18446744073709551616",
        "-18446744073709551616",
        "1152921504606846976",
    ] {
        let c = s.file(
            "c.json",
            format!(
                "{{\"operation\":{{\"source\":\"mcp\",\"name\":\"x\"}},\"input_schema\":{{\"maximum\":{number}}},\"output_schema\":{{}}}}"
            ),
        );
        let ran = toolmock(&[&"hash", &c]);
        assert_eq!(ran.code, 0, "{number}: {}", ran.stderr);
        let ran = toolmock(&[&"check", &d, &"--contract", &c]);
        assert_eq!(ran.code, 0, "{number}: {}", ran.stderr);
        let ran = toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &c]);
        assert_eq!(ran.code, 0, "{number}: {}", ran.stderr);
        assert!(
            ran.stdout.starts_with("{\"ok\""),
            "{number}: {}",
            ran.stdout
        );
    }
    // 2^53 itself is exact and hashes.
    let c = s.file(
        "c.json",
        "{\"operation\":{\"source\":\"mcp\",\"name\":\"x\"},\"input_schema\":{\"maximum\":9007199254740992},\"output_schema\":{}}",
    );
    let ran = toolmock(&[&"hash", &c]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.stdout.trim().len(), 64);
}

/// Issue 11.1: a 2 KB schema whose `$defs` levels each reach the next twice
/// made validating one invalid input take seconds (20 levels: 12 s). It is
/// refused when the contract is compiled, the same way every time.
#[test]
fn exponential_schemas_are_refused_before_any_call() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for levels in [20, 26] {
        let mut defs = serde_json::Map::new();
        for level in 0..levels {
            let next = format!("#/$defs/l{}", level + 1);
            defs.insert(
                format!("l{level}"),
                json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}, {"minProperties": 1}]}]}),
            );
        }
        defs.insert(format!("l{levels}"), json!({"type": "object"}));
        let c = s.json(
            "c.json",
            &json!({
                "operation": {"source": "mcp", "name": "x"},
                "input_schema": {"$defs": defs, "$ref": "#/$defs/l0"},
                "output_schema": {}
            }),
        );
        let calls = s.file("calls.jsonl", "{\"input\":{}}\n");
        toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &c])
            .refused(2, "schema_too_complex")
            .refused(2, &format!("/$defs/l{}", levels - 10))
            .no_call_output();
        toolmock(&[&"check", &d, &"--contract", &c]).refused(2, "schema_too_complex");
    }
}

#[test]
fn schemas_never_fetch_remote_references() {
    let s = Scratch::new();
    let d = s.json("d.json", &definition());
    for target in [
        "https://example.com/schema.json",
        "file:///etc/passwd",
        "other.json",
    ] {
        let c = s.json(
            "c.json",
            &json!({
                "operation": {"source": "mcp", "name": "x"},
                "input_schema": {"$ref": target},
                "output_schema": {}
            }),
        );
        toolmock(&[&"check", &d, &"--contract", &c]).refused(2, "invalid_schema");
        let calls = s.file("calls.jsonl", "{\"input\":{\"x\":1}}\n");
        toolmock(&[&"eval", &d, &"--calls", &calls, &"--contract", &c])
            .refused(2, "invalid_schema")
            .no_call_output();
    }
}

/// Runs `toolmock ARGS` with its stdout a pipe whose reader has already gone
/// (as `toolmock … | head -c 0` leaves it): every write fails with EPIPE.
fn toolmock_into_a_closed_pipe(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolmock"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolmock");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("toolmock ends");
    let code = output.status.code().expect("toolmock exits, no signal");
    (code, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_closed_output_pipe_ends_the_command_quietly_with_its_own_exit_code() {
    let example = "fixtures/examples/book-appointment";
    let cases: [(&[&str], i32); 5] = [
        (
            &["normalize", "fixtures/salesforce/salesforce.manifest.json"],
            0,
        ),
        (&["hash", &format!("{example}/contract.json")], 0),
        (
            &[
                "eval",
                &format!("{example}/mock.json"),
                "--contract",
                &format!("{example}/contract.json"),
                "--calls",
                &format!("{example}/calls.jsonl"),
            ],
            0,
        ),
        (&["run", "fixtures/healthplus/simulation.json", "--json"], 0),
        (
            &["run", "fixtures/healthplus/simulation.json", "--check"],
            0,
        ),
    ];
    for (args, expected) in cases {
        let (code, stderr) = toolmock_into_a_closed_pipe(args);
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
        assert_eq!(code, expected, "{args:?}: {stderr}");
    }
}
