//! Every reader of outside input (trace files, config files, driver-protocol messages) meets
//! arbitrary bytes and arbitrary mutations of valid input with an error, never a panic.

use conformance::driver::{Driver, DriverError};
use conformance::protocol::{Capabilities, Reply, serve};
use conformance::trace::Trace;
use proptest::prelude::*;
use recovery_model::{ModelConfig, RecoveryModel, Variant, preset};
use serde_json::Value;
use std::sync::OnceLock;

/// A valid trace of `tiny` as JSON: a random walk recorded by the model.
fn valid_trace() -> &'static Value {
    static TRACE: OnceLock<Value> = OnceLock::new();
    TRACE.get_or_init(|| {
        let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
        let mut rng = conformance::generate::SplitMix64::new(3);
        let (walk, _) = conformance::generate::random_walk(&model, &mut rng, 30);
        serde_json::to_value(Trace::record(&model, Some("tiny"), &walk).unwrap()).unwrap()
    })
}

/// Every place in `v` (as JSON Pointers), leaves and containers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| pointers(x, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| pointers(x, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..300).prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9\\-]{0,12}".prop_map(Value::from),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
    ]
}

/// `v` with the value at the `pick`-th place replaced (or removed when `remove`).
fn mutate(v: &Value, pick: usize, remove: bool, with: Value) -> Value {
    let mut out = v.clone();
    let mut places = Vec::new();
    pointers(v, String::new(), &mut places);
    let at = &places[pick % places.len()];
    if at.is_empty() {
        return with;
    }
    let (parent, key) = at.rsplit_once('/').unwrap();
    match out.pointer_mut(parent) {
        Some(Value::Object(m)) if remove => {
            m.remove(key);
        }
        Some(Value::Array(a)) if remove => {
            let i: usize = key.parse().unwrap();
            a.remove(i);
        }
        _ => *out.pointer_mut(at).unwrap() = with,
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_no_trace_config_or_reply(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        prop_assert!(Trace::from_json(&text).is_err());
        if let Ok(cfg) = serde_json::from_str::<ModelConfig>(&text) {
            let _ = cfg.validate();
        }
        let _ = Reply::parse(&text);
    }

    #[test]
    fn a_mutated_trace_reads_or_is_refused_and_replays_without_panic(
        pick in any::<usize>(), remove in any::<bool>(), with in replacement()
    ) {
        let text = mutate(valid_trace(), pick, remove, with).to_string();
        if let Ok(trace) = Trace::from_json(&text) {
            // Accepted: every action is enabled, so the model replays it to the end.
            let model = trace.model().unwrap();
            let mut driver = conformance::driver::ModelDriver::new(model);
            let _ = conformance::replay::replay(&trace, &mut driver);
            let _ = conformance::itf::from_trace(&trace);
        }
    }

    #[test]
    fn a_mutated_config_is_valid_and_checkable_or_refused(
        pick in any::<usize>(), remove in any::<bool>(), with in replacement()
    ) {
        let cfg = serde_json::to_value(preset("tiny").unwrap()).unwrap();
        let text = mutate(&cfg, pick, remove, with).to_string();
        if let Ok(cfg) = serde_json::from_str::<ModelConfig>(&text)
            && cfg.validate().is_ok()
        {
            // Within the bounds: the model builds and takes its first steps.
            let model = RecoveryModel::new(cfg, Variant::Fixed);
            let mut rng = conformance::generate::SplitMix64::new(1);
            let _ = conformance::generate::random_walk(&model, &mut rng, 20);
        }
    }

    #[test]
    fn a_driver_answers_every_line_with_one_reply(lines in proptest::collection::vec(
        prop_oneof![
            "[ -~]{0,60}",
            Just(r#"{"op":"hello","protocol":1}"#.to_string()),
            Just(r#"{"op":"snapshot"}"#.to_string()),
            Just(r#"{"op":"apply","action":{"action":"get-next-buffer","channel":9}}"#.to_string()),
            Just(r#"{"op":"apply","action":{"action":"request-partitions"}}"#.to_string()),
            Just(format!(r#"{{"op":"reset","config":{}}}"#, serde_json::to_string(&preset("tiny").unwrap()).unwrap())),
            Just(r#"{"op":"reset","config":{"channels":[],"checkpoints":1}}"#.to_string()),
        ],
        0..12,
    )) {
        let input = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let mut out = Vec::new();
        let make = |cfg: &ModelConfig| -> Result<Box<dyn Driver>, DriverError> {
            cfg.validate().map_err(|reason| DriverError::Unsupported { reason })?;
            Ok(Box::new(conformance::impl_driver::ImplDriver::new(cfg)))
        };
        let caps = Capabilities { name: "impl".into(), protocol: 1, ..Capabilities::default() };
        serve(caps, &make, input.as_bytes(), &mut out).unwrap();
        let replies: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
        let requests = lines.iter().filter(|l| !l.trim().is_empty()).count();
        prop_assert_eq!(replies.len(), requests);
        for r in replies {
            prop_assert!(Reply::parse(r).is_ok(), "{}", r);
        }
    }
}
