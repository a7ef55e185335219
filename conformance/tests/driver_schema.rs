//! `docs/driver-protocol.schema.json` is the schema derived from the protocol's serde types, it
//! accepts every line a real session writes in both directions, and it refuses malformed
//! messages. Regenerate the file with `UPDATE_SCHEMA=1 cargo test -p conformance --test driver_schema`.

use conformance::driver::{Driver, DriverError};
use conformance::generate::{SplitMix64, random_walk};
use conformance::impl_driver::ImplDriver;
use conformance::protocol::{Request, impl_capabilities, json_schema, serve};
use recovery_model::{ModelConfig, RecoveryModel, Variant, preset};
use serde_json::Value;
use std::path::PathBuf;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/driver-protocol.schema.json")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&json_schema()).expect("the derived schema is a valid JSON Schema")
}

#[test]
fn the_schema_file_is_the_derived_schema() {
    let derived = json_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        let text = serde_json::to_string_pretty(&derived).unwrap() + "\n";
        std::fs::write(schema_path(), text).unwrap();
    }
    let on_disk: Value = serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    assert!(
        on_disk == derived,
        "docs/driver-protocol.schema.json is stale: run UPDATE_SCHEMA=1 cargo test -p conformance --test driver_schema"
    );
}

/// Requests of a session over random walks of `presets`, with a snapshot after every step and a
/// few requests a driver must answer with `error` or `unsupported`.
fn session(presets: &[&str]) -> Vec<String> {
    let mut requests = vec![Request::Hello { protocol: 1 }];
    let mut rng = SplitMix64::new(5);
    for name in presets {
        let cfg: ModelConfig = preset(name).unwrap();
        let model = RecoveryModel::new(cfg.clone(), Variant::Fixed);
        for _ in 0..20 {
            requests.push(Request::Reset { config: cfg.clone() });
            let (actions, _) = random_walk(&model, &mut rng, 80);
            for action in actions {
                requests.push(Request::Apply { action });
                requests.push(Request::Snapshot);
            }
        }
    }
    let mut lines: Vec<String> = requests.iter().map(|r| serde_json::to_string(r).unwrap()).collect();
    // A configuration impl/ refuses (no channels), and a request that is not one.
    let mut empty: ModelConfig = preset("tiny").unwrap();
    empty.channels.clear();
    lines.push(serde_json::to_string(&Request::Reset { config: empty }).unwrap());
    lines.push(r#"{"op":"launch"}"#.into());
    lines.push(serde_json::to_string(&Request::Bye).unwrap());
    lines
}

#[test]
fn every_line_of_a_session_is_valid_in_both_directions() {
    let lines = session(&["tiny", "faults", "local-buffers", "legacy", "late", "floating"]);
    let make = |cfg: &ModelConfig| -> Result<Box<dyn Driver>, DriverError> {
        cfg.validate().map_err(|reason| DriverError::Unsupported { reason })?;
        Ok(Box::new(ImplDriver::new(cfg)))
    };
    let mut output = Vec::new();
    serve(
        impl_capabilities(),
        &make,
        (lines.join("\n") + "\n").as_bytes(),
        &mut output,
    )
    .unwrap();
    let replies: Vec<&str> = std::str::from_utf8(&output).unwrap().lines().collect();
    assert_eq!(replies.len(), lines.len(), "one reply per request");

    let schema = validator();
    let mut kinds = std::collections::BTreeSet::new();
    for line in lines
        .iter()
        .filter(|l| !l.contains("launch"))
        .chain(replies.iter().map(|r| r.to_string()).collect::<Vec<_>>().iter())
    {
        let value: Value = serde_json::from_str(line).unwrap();
        if let Err(e) = schema.validate(&value) {
            panic!("the schema refuses a real message: {e}\n{line}");
        }
        let tag = value.get("reply").or(value.get("op")).and_then(Value::as_str).unwrap();
        let kind = value.pointer("/observation/kind").and_then(Value::as_str).unwrap_or("");
        kinds.insert(format!("{tag}{}{kind}", if kind.is_empty() { "" } else { ":" }));
    }
    // The session reached every message shape, and the observations a caller can see.
    for expected in [
        "hello",
        "reset",
        "apply",
        "snapshot",
        "bye",
        "ready",
        "unsupported",
        "error",
        "observation:done",
        "observation:polled",
        "observation:nothing-polled",
    ] {
        assert!(
            kinds.contains(expected),
            "the session never produced {expected}: {kinds:?}"
        );
    }
}

#[test]
fn malformed_messages_are_refused() {
    let schema = validator();
    for bad in [
        r#"{"op":"apply"}"#,
        r#"{"op":"hello","protocol":"one"}"#,
        r#"{"op":"snapshot","extra":1}"#,
        r#"{"op":"apply","action":{"action":"get-next-buffer"}}"#,
        r#"{"op":"apply","action":{"action":"fly","channel":0}}"#,
        r#"{"reply":"observation","observation":{"kind":"nope"}}"#,
        r#"{"reply":"hello","name":"x","protocol":1,"actions":"all","features":[]}"#,
        r#"{"reply":"error"}"#,
        r#"{"message":"no tag"}"#,
    ] {
        let value: Value = serde_json::from_str(bad).unwrap();
        assert!(!schema.is_valid(&value), "the schema accepts {bad}");
    }
}
