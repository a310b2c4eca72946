//! A start's model cassette (docs/cassettes.md, "Through the API and
//! workers"): taken out of the start's body and checked line by line before
//! the simulation is stored with it.

use crate::error::{ApiCode, ApiError, Listed};
use serde_json::Value;
use toolmock_agent::CassetteMode;
use toolmock_agent::cassette::{Exchange, parse_exchange};
use toolmock_contract::pointer;

/// The most exchanges one start may carry.
pub(crate) const MAX_EXCHANGES: usize = 100_000;

/// A start's `cassette` member, taken out of `body` (the rest is the
/// simulation document): its mode and its exchanges as cassette lines,
/// each checked (its format, and its key the hash of its request).
pub(crate) fn take_cassette(
    body: &mut Value,
) -> Result<Option<(CassetteMode, Vec<String>)>, ApiError> {
    let Some(cassette) = body.as_object_mut().and_then(|o| o.remove("cassette")) else {
        return Ok(None);
    };
    let mut problems = Vec::new();
    let problem = |path: String, message: String| Listed::new("cassette_invalid", path, message);
    let mode = match cassette.get("mode") {
        None => Some(CassetteMode::Replay),
        Some(Value::String(text)) => CassetteMode::parse(text),
        Some(_) => None,
    };
    if mode.is_none() {
        problems.push(problem(
            "/cassette/mode".into(),
            "the mode is \"record\", \"replay\" or \"auto\"".into(),
        ));
    }
    let exchanges = match cassette.get("exchanges") {
        None => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => {
            problems.push(problem(
                "/cassette/exchanges".into(),
                "the exchanges are an array of cassette exchanges".into(),
            ));
            &[][..]
        }
    };
    if exchanges.len() > MAX_EXCHANGES {
        problems.push(problem(
            "/cassette/exchanges".into(),
            format!(
                "{} exchanges: at most {MAX_EXCHANGES} travel with one start",
                exchanges.len()
            ),
        ));
    }
    match &cassette {
        Value::Object(members) => {
            let known = |k: &&String| matches!(k.as_str(), "mode" | "exchanges");
            if let Some(extra) = members.keys().find(|k| !known(k)) {
                problems.push(problem(
                    pointer::push("/cassette", extra),
                    "a cassette has only `mode` and `exchanges`".into(),
                ));
            }
        }
        _ => problems.push(problem(
            "/cassette".into(),
            "the cassette is an object: {\"mode\", \"exchanges\"}".into(),
        )),
    }
    let mut lines = Vec::with_capacity(exchanges.len());
    for (i, item) in exchanges.iter().enumerate().take(MAX_EXCHANGES) {
        let at = pointer::index("/cassette/exchanges", i);
        match checked(item) {
            Ok(exchange) => lines.push(exchange.line()),
            Err(message) => problems.push(problem(at, message)),
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::unprocessable(
            ApiCode::InvalidCassette,
            format!("the cassette is not usable ({} problem(s))", problems.len()),
            problems,
        ));
    }
    Ok(mode.map(|mode| (mode, lines)))
}

/// One exchange of a start's cassette: of the current format, its key the
/// hash of its request (a line edited by hand is refused, as
/// `toolmock check-cassette` refuses it).
fn checked(item: &Value) -> Result<Exchange, String> {
    let exchange = parse_exchange(&item.to_string())?;
    let text = toolmock_contract::canonical_json(
        &serde_json::from_str::<Value>(exchange.request.get()).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8(text).map_err(|e| e.to_string())?;
    if toolmock_agent::cassette::request_key(&text) != exchange.key {
        return Err("its key is not the sha256 of its request".into());
    }
    Ok(exchange)
}
