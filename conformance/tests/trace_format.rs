//! The trace format: its shape is frozen with insta, it converts to and from a stateright path,
//! and every way a file can be wrong is a typed error, never a panic.

use conformance::driver::ModelDriver;
use conformance::replay::replay;
use conformance::trace::{FORMAT_VERSION, Trace, TraceError, explorer_fragment, to_path};
use recovery_model::{Action, RecoveryModel, Variant, preset};
use stateright::Model;

fn tiny() -> RecoveryModel {
    RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed)
}

/// The first `n` actions taking always the first enabled one: deterministic.
fn first_actions(model: &RecoveryModel, n: usize) -> Vec<Action> {
    let mut driver = ModelDriver::new(model.clone());
    let mut actions = Vec::new();
    for _ in 0..n {
        let Some(a) = driver.enabled().first().copied() else {
            break;
        };
        driver.step(&a);
        actions.push(a);
    }
    actions
}

fn sample() -> Trace {
    let model = tiny();
    let mut trace = Trace::record(&model, Some("tiny"), &first_actions(&model, 4)).unwrap();
    trace.reason = Some("format snapshot".into());
    trace
}

#[test]
fn trace_format_is_frozen() {
    insta::assert_snapshot!(sample().to_json());
}

#[test]
fn trace_survives_a_json_round_trip() {
    let trace = sample();
    assert_eq!(Trace::from_json(&trace.to_json()), Ok(trace));
}

#[test]
fn trace_converts_to_and_from_a_stateright_path() {
    let model = tiny();
    let trace = sample();
    let path = trace.to_path().unwrap();
    assert_eq!(path.last_state(), &{
        let mut d = ModelDriver::new(model.clone());
        trace.actions().iter().for_each(|a| {
            d.step(a);
        });
        d.state().clone()
    });
    let back = Trace::from_path(&model, Some("tiny"), path).unwrap();
    assert_eq!(back.actions(), trace.actions());
    assert_eq!(back.steps, trace.steps);
}

#[test]
fn explorer_link_is_the_path_of_action_indices() {
    let model = tiny();
    let actions = first_actions(&model, 3);
    // Always the first enabled action: index 0 at every step, after the initial state 0.
    assert_eq!(explorer_fragment(&model, &actions).unwrap(), "#/steps/0/0/0/0");
    assert_eq!(sample().explorer, "#/steps/0/0/0/0/0");
}

#[test]
fn model_driver_reproduces_its_own_recorded_observations() {
    let trace = sample();
    let mut driver = ModelDriver::new(trace.model().unwrap());
    assert_eq!(replay(&trace, &mut driver).map_err(|d| d.to_string()), Ok(4));
}

fn edit(f: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
    f(&mut v);
    v.to_string()
}

#[test]
fn trace_of_another_format_version_is_rejected() {
    for other in [FORMAT_VERSION - 1, FORMAT_VERSION + 1] {
        let text = edit(|v| v["format_version"] = serde_json::json!(other));
        let err = Trace::from_json(&text).unwrap_err();
        assert!(matches!(err, TraceError::WrongVersion { .. }), "{err}");
        let expected = format!("version {other} is not supported (this build reads version {FORMAT_VERSION})");
        assert!(err.to_string().contains(&expected), "{err}");
    }
}

#[test]
fn trace_of_another_model_is_rejected() {
    let err = Trace::from_json(&edit(|v| v["model"] = serde_json::json!("two-phase-commit"))).unwrap_err();
    assert_eq!(
        err,
        TraceError::WrongModel {
            found: "two-phase-commit".into()
        }
    );
}

#[test]
fn trace_with_an_action_that_is_not_enabled_is_rejected_at_its_step() {
    let text = edit(|v| {
        v["steps"][1]["action"] =
            serde_json::json!({"action": "recycle", "channel": 1, "buffer": {"kind": "exclusive", "id": 0}})
    });
    match Trace::from_json(&text).unwrap_err() {
        TraceError::NotEnabled { step, action, .. } => {
            assert_eq!(step, 2);
            assert!(action.contains("recycle(x0)"), "{action}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn trace_with_an_unknown_variant_or_preset_is_rejected() {
    let err = Trace::from_json(&edit(|v| v["variant"] = serde_json::json!("no-such-bug"))).unwrap_err();
    assert_eq!(err, TraceError::UnknownVariant("no-such-bug".into()));
    let err = Trace::from_json(&edit(|v| {
        v.as_object_mut().unwrap().remove("config");
        v["preset"] = serde_json::json!("huge");
    }))
    .unwrap_err();
    assert_eq!(err, TraceError::UnknownPreset("huge".into()));
}

#[test]
fn malformed_traces_are_errors_not_panics() {
    for text in [
        "",
        "[]",
        "{\"format_version\": 1}",
        "{\"format_version\": 1, \"model\": \"channel-recovery\"}",
    ] {
        assert!(Trace::from_json(text).is_err(), "{text:?}");
    }
    let err = Trace::from_json(&edit(|v| {
        v["steps"][0]["observation"] = serde_json::json!({"kind": "teleported"})
    }))
    .unwrap_err();
    assert!(matches!(err, TraceError::Malformed(_)), "{err}");
}

#[test]
fn a_path_that_leaves_the_model_is_reported_not_panicked() {
    let model = tiny();
    let bogus = [Action::OnAddCredit { channel: 1 }];
    assert!(matches!(
        to_path(&model, &bogus),
        Err(TraceError::NotEnabled { step: 1, .. })
    ));
    assert!(model.init_states().len() == 1);
}

/// The trace files of docs/findings are the shortest counterexamples `cdr check` gives today,
/// with the observations and snapshots the model predicts now: regenerate one with
/// `cdr check --preset NAME --trace-out FILE` when this fails.
#[test]
fn the_trace_files_of_the_findings_are_current() {
    use recovery_model::expectations::{DRAINER_MISSES_WAKEUP, LATE_FLOATING_CREDIT};
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;
    for (name, property) in [
        ("priority-race", PropertyId::PriorityHonoured),
        ("drain-wakeup", DRAINER_MISSES_WAKEUP[0]),
        ("late-floating-credit", LATE_FLOATING_CREDIT[0]),
    ] {
        let path = format!("{}/../docs/findings/{name}.trace.json", env!("CARGO_MANIFEST_DIR"));
        let stored = Trace::read(std::path::Path::new(&path)).unwrap();
        let model = RecoveryModel::new(preset(name).unwrap(), Variant::Fixed);
        let actions = shortest_counterexample(&model, property).unwrap();
        let fresh = Trace::record(&model, Some(name), &actions).unwrap();
        assert_eq!(stored.steps, fresh.steps, "docs/findings/{name}.trace.json is stale");
        assert_eq!(stored.config, fresh.config, "docs/findings/{name}.trace.json is stale");
    }
}
