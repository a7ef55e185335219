//! Traces in Apalache's Informal Trace Format (ITF, ADR-015): one JSON object with `#meta`,
//! `vars` and `states`, each state a record of every variable. A trace's states are the
//! model's abstract snapshots (the initial one first), with the action that led to each and
//! what a caller saw, so that any ITF reader (Apalache's tooling, Quint's, the `itf` crate)
//! can replay or display a `cdr` trace.
//!
//! Encoding: integers as `{"#bigint": "n"}`, lists as arrays, records as objects, the
//! per-checkpoint `persisted` and `spilled` maps as `{"#map": [[k, v], ...]}`; absent optional fields are left
//! out of their record.
//!
//! Names: every variable and record field is an identifier in Python, Rust and Quint alike, so
//! that readers which turn records into named tuples (itf-py) or Quint records take them. The
//! names the JSON traces use that are keywords there are renamed ([`RENAMED`]): the action
//! taken is the variable `action_taken` and its name the field `name` (`action` is a Quint
//! keyword), and a channel's `global` segments are `global_pool` (a Python keyword).

use crate::driver::ModelDriver;
use crate::trace::Trace;
use serde_json::{Map, Value, json};

/// The variables of every state, in order.
pub const VARS: [&str; 7] = [
    "action_taken",
    "observation",
    "channels",
    "gate",
    "task",
    "netty_client",
    "recycler",
];

/// Record fields the JSON traces name with a keyword of Python, Rust or Quint, and their ITF
/// names.
pub const RENAMED: [(&str, &str); 2] = [("action", "name"), ("global", "global_pool")];

fn itf_name(key: &str) -> &str {
    RENAMED
        .iter()
        .find(|(json, _)| *json == key)
        .map_or(key, |(_, itf)| itf)
}

/// `value` (plain JSON from serde) in ITF's encoding.
pub fn encode(value: &Value) -> Value {
    encode_field(None, value)
}

fn encode_field(key: Option<&str>, value: &Value) -> Value {
    match value {
        Value::Number(n) => json!({ "#bigint": n.to_string() }),
        Value::Array(items) => Value::Array(items.iter().map(encode).collect()),
        Value::Object(map) if matches!(key, Some("persisted" | "spilled")) => Value::Object(Map::from_iter([(
            "#map".to_string(),
            Value::Array(map.iter().map(|(k, v)| json!([{ "#bigint": k }, encode(v)])).collect()),
        )])),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (itf_name(k).to_string(), encode_field(Some(k), v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The ITF form of `trace`: state 0 is the initial state (action `init`, observation `none`),
/// state `i` the state after step `i`.
pub fn from_trace(trace: &Trace) -> Result<Value, String> {
    let model = trace.model().map_err(|e| e.to_string())?;
    let initial = ModelDriver::new(model).predicted_snapshot();
    let state = |index: usize, action: Value, observation: Value, snapshot: Value| {
        let mut record = Map::new();
        record.insert("#meta".into(), json!({ "index": index }));
        record.insert(VARS[0].into(), encode(&action));
        record.insert("observation".into(), encode(&observation));
        for var in &VARS[2..] {
            record.insert(var.to_string(), encode_field(Some(var), &snapshot[var]));
        }
        Value::Object(record)
    };
    let mut states = vec![state(
        0,
        json!({ "action": "init" }),
        json!({ "kind": "none" }),
        to_json(&initial),
    )];
    for (i, step) in trace.steps.iter().enumerate() {
        states.push(state(
            i + 1,
            to_json(&step.action),
            to_json(&step.observation),
            to_json(&step.snapshot),
        ));
    }
    let description = format!(
        "channel-recovery trace: preset {} / variant {}{}",
        trace.preset.as_deref().unwrap_or("(config)"),
        trace.variant,
        trace.reason.as_ref().map_or_else(String::new, |r| format!(" / {r}"))
    );
    Ok(json!({
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": "cdr",
            "description": description,
        },
        "vars": VARS,
        "states": states,
    }))
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}
