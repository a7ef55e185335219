//! The findings' fixes (`flink_fixes`, docs/findings.md) in the model and in impl/ alike: the
//! presets of the findings replay edge by edge on the implementation with every fix on, and
//! the counterexamples of Flink as it is become runs the fixed implementation agrees with.

use conformance::conform::{ConformOptions, ConformReport, conform_edges};
use conformance::driver::{Driver, ModelDriver};
use conformance::impl_driver::ImplDriver;
use conformance::observation::Observation;
use conformance::replay::{Compare, ReplayError, lockstep, replay};
use conformance::trace::Trace;
use recovery_model::config::FlinkFix;
use recovery_model::expectations::{DRAINER_MISSES_WAKEUP, MIGRATION_PERSISTS_TWICE};
use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::shortest_counterexample;
use recovery_model::{Action, ModelConfig, RecoveryModel, Variant, preset};
use std::time::Duration;

fn with_fixes(cfg: ModelConfig, fixes: &[FlinkFix]) -> ModelConfig {
    ModelConfig {
        flink_fixes: fixes.to_vec(),
        ..cfg
    }
}

/// Replays every edge of `cfg` on the implementation built from the same configuration and
/// asserts full coverage and no divergence.
fn every_edge_without_divergence(label: &str, cfg: ModelConfig) -> ConformReport {
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    // A drainer a fix should have woken fails the run in seconds, not at the default watchdog.
    let factory = || Ok(Box::new(ImplDriver::new(&m.cfg).with_watchdog(Duration::from_secs(20))) as Box<dyn Driver>);
    let r = conform_edges(&m, &factory, ConformOptions::default(), &|| {}).expect("no harness error");
    if let Some(d) = &r.first_divergence {
        panic!("{label}: {d}");
    }
    assert_eq!(
        (Some(r.edges_covered), Some(r.states_covered)),
        (r.edges_total, r.states_total),
        "{label}"
    );
    assert_eq!(r.divergences, 0, "{label}");
    assert!(r.kinds_missed.is_empty(), "{label}: {:?}", r.kinds_missed);
    r
}

fn every_edge_with_every_fix(name: &str) -> ConformReport {
    let cfg = preset(name).unwrap().with_every_fix();
    every_edge_without_divergence(&format!("{name} --flink-fix all"), cfg)
}

/// `priority-from-view-head`: the task's poll reads the view's head; the producer's
/// notification and the task's clear still race (they are steps of their own), but the flag
/// they leave no longer decides what is polled.
#[test]
fn every_edge_of_priority_race_with_every_fix_replays_on_the_implementation_without_divergence() {
    let r = every_edge_with_every_fix("priority-race");
    for kind in ["notifyPriorityEvent", "pullPriorityFromSubpartitionView"] {
        assert!(!r.kinds_unreachable.contains(&kind), "{kind}");
    }
}

/// `wake-on-refused-buffer`: the floating buffer the manager turns down wakes the drainer,
/// whose next `requestBufferBlocking` takes it from the pool.
#[test]
fn every_edge_of_drain_wakeup_with_every_fix_replays_on_the_implementation_without_divergence() {
    let r = every_edge_with_every_fix("drain-wakeup");
    assert!(!r.kinds_unreachable.contains(&"requestBufferBlocking"));
}

/// `announce-under-queue-lock`: a floating buffer a listener takes is announced in the
/// recycler's step that hands it over; impl/ does not stop before that announcement.
#[test]
fn every_edge_of_late_floating_credit_with_every_fix_replays_on_the_implementation_without_divergence() {
    let r = every_edge_with_every_fix("late-floating-credit");
    assert!(!r.kinds_unreachable.contains(&"notifyBufferAvailable"));
}

/// The migration preset without the release: its two channels let a checkpoint start while
/// the local channel's migrated buffer is still queued.
fn migrating() -> ModelConfig {
    ModelConfig {
        release: false,
        ..preset("migration").unwrap()
    }
}

/// `persist-only-upstream-data`: every edge of the migration preset without its release, on
/// the fixed implementation (a checkpoint starts while migrated buffers are queued).
#[test]
fn every_edge_of_migration_without_release_with_every_fix_replays_on_the_implementation_without_divergence() {
    let cfg = migrating();
    assert!(cfg.violated_by_config().contains(&MIGRATION_PERSISTS_TWICE[0]));
    every_edge_without_divergence("migration without release --flink-fix all", cfg.with_every_fix());
}

/// What channel 0 persisted, for every checkpoint, in order.
fn persisted_by_channel_0(driver: &mut ImplDriver) -> Vec<String> {
    let snapshot = driver.snapshot().unwrap();
    let persisted = snapshot.channels[0].persisted.values().flatten();
    persisted.map(|item| format!("{item:?}")).collect()
}

/// The counterexample of FLINK-40016 (a migrated buffer written by `checkpointStarted` and
/// again when it is polled) is a run of the fixed model too; impl/ with
/// `persist-only-upstream-data` agrees with it step by step, and nothing is persisted twice.
#[test]
fn the_migration_counterexample_persists_each_buffer_once_with_persist_only_upstream_data() {
    let flink = RecoveryModel::new(migrating(), Variant::Fixed);
    let actions = shortest_counterexample(&flink, PropertyId::PersistedAtMostOnce).expect("FLINK-40016 is found");
    let fixed = RecoveryModel::new(
        with_fixes(migrating(), &[FlinkFix::PersistOnlyUpstreamData]),
        Variant::Fixed,
    );
    let mut reference = ModelDriver::new(fixed.clone());
    let mut driver = ImplDriver::new(&fixed.cfg);
    if let Err(e) = lockstep(&mut reference, &mut driver, &actions, Compare::Every) {
        panic!("{e}");
    }
    let persisted = persisted_by_channel_0(&mut driver);
    let mut unique = persisted.clone();
    unique.sort();
    unique.dedup();
    assert!(!persisted.is_empty(), "the checkpoint persisted the migrated buffer");
    assert_eq!(unique.len(), persisted.len(), "persisted twice: {persisted:?}");
    // Without the fix impl/ writes the polled buffer again, as Flink 2.3.0 does.
    let mut reference = ModelDriver::new(flink.clone());
    let mut driver = ImplDriver::new(&flink.cfg);
    if let Err(e) = lockstep(&mut reference, &mut driver, &actions, Compare::Every) {
        panic!("{e}");
    }
    let persisted = persisted_by_channel_0(&mut driver);
    assert!(persisted.len() > unique.len(), "{persisted:?}");
}

/// The drain-wakeup counterexample, then the step the fix makes possible: the drainer, woken
/// by the refused buffer, takes it from the pool and appends its recovered buffer. The trace
/// carries its configuration, fixes included, so a replay builds impl/ with them; built
/// without them, impl/'s drainer is never woken.
#[test]
fn a_trace_of_a_fixed_configuration_replays_with_its_fixes() {
    let flink = RecoveryModel::new(preset("drain-wakeup").unwrap(), Variant::Fixed);
    let mut actions = shortest_counterexample(&flink, DRAINER_MISSES_WAKEUP[0]).expect("the finding is found");
    assert!(matches!(actions.last(), Some(Action::Recycle { .. })), "{actions:?}");
    actions.extend([
        Action::RequestBufferBlocking { channel: 0 },
        Action::OnRecoveredStateBuffer { channel: 0 },
    ]);
    let fixed = RecoveryModel::new(
        with_fixes(preset("drain-wakeup").unwrap(), &[FlinkFix::WakeOnRefusedBuffer]),
        Variant::Fixed,
    );
    let trace = Trace::record(&fixed, Some("drain-wakeup"), &actions).expect("enabled with the fix");
    let n = actions.len();
    assert_eq!(
        trace.steps[n - 2].observation,
        Observation::Done,
        "the drainer takes f0"
    );
    let trace = Trace::from_json(&trace.to_json()).unwrap();
    let model = trace.model().unwrap();
    assert_eq!(model.cfg.flink_fixes, vec![FlinkFix::WakeOnRefusedBuffer]);
    let mut driver = ImplDriver::new(&model.cfg).with_watchdog(Duration::from_secs(10));
    match replay(&trace, &mut driver) {
        Ok(steps) => assert_eq!(steps, n),
        Err(e) => panic!("{e}"),
    }
    let mut unfixed = ImplDriver::new(&flink.cfg).with_watchdog(Duration::from_millis(300));
    match replay(&trace, &mut unfixed) {
        Err(ReplayError::Harness { step, message }) => {
            assert_eq!(step, n - 1, "{message}");
            assert!(message.contains("neither returned nor parked"), "{message}");
        }
        other => panic!("the drainer was woken without the fix: {other:?}"),
    }
}
