//! `cdr check --por` against the full search: on every preset small enough for `cargo test` and
//! on every bug-zoo variant on its preset, the reduced search gives every property the verdict
//! the full one gives, finds each variant by its property, and each counterexample it reports
//! is a path of the model; on the fixed model (the findings), the counterexample replays on
//! impl/ step by step. The full tier runs every preset (`--ignored`).

use conformance::impl_driver::ImplDriver;
use conformance::replay::replay;
use recovery_model::bug_zoo::VARIANTS;
use recovery_model::tooling::check::{CheckOptions, CheckReport, Status, check_with_progress};
use recovery_model::{RecoveryModel, Variant, preset};

/// Presets under about 50,000 unique states.
const SMALL: &[&str] = &[
    "drain-wakeup",
    "aligned-timeout",
    "pool-starvation",
    "shared-pool-live",
    "release-window-local",
    "priority-race",
    "late-floating-credit",
    "recovery-buffer-wait",
    "stash-order",
    "shared-pool",
    "shared-pool-floating-only",
    "local-buffers",
    "release-window-remote",
    "release-floating",
    "conversion",
    "no-trigger",
];

fn run(m: &RecoveryModel, name: &str, por: bool) -> CheckReport {
    let options = CheckOptions {
        threads: 1,
        acyclic: true,
        por,
        ..Default::default()
    };
    check_with_progress(m.clone(), name, &[], &options, &mut |_| {})
}

/// Checks `m` both ways; returns the reduced report.
fn agree(m: &RecoveryModel, label: &str) -> CheckReport {
    let full = run(m, label, false);
    let reduced = run(m, label, true);
    for (f, r) in full.properties.iter().zip(&reduced.properties) {
        assert_eq!(f.status, r.status, "{label}: `{}`", f.name);
    }
    assert!(reduced.unique_states <= full.unique_states, "{label}");
    for p in &reduced.properties {
        if let Some(actions) = &p.actions {
            let mut s = m.initial_state();
            let mut enabled = Vec::new();
            for a in actions {
                enabled.clear();
                m.enabled_actions(&s, &mut enabled);
                assert!(enabled.contains(a), "{label}: `{}`: {a:?} is not enabled", p.name);
                s = m.next(&s, *a);
            }
        }
    }
    reduced
}

fn check_presets(names: &[&str]) {
    for name in names {
        let m = RecoveryModel::new(preset(name).expect("a preset"), Variant::Fixed);
        let reduced = agree(&m, name);
        // A finding's counterexample replays on impl/.
        for p in reduced.properties.iter().filter(|p| p.status == Status::Violated) {
            let actions = p.actions.as_ref().expect("a violation has its path");
            let trace = conformance::trace::Trace::record(&m, Some(name), actions).expect("a trace");
            let mut driver = ImplDriver::new(&m.cfg).with_watchdog(std::time::Duration::from_millis(500));
            match replay(&trace, &mut driver) {
                Ok(steps) => assert_eq!(steps, trace.steps.len(), "{name}: `{}`", p.name),
                Err(e) => panic!("{name}: `{}`: {e}", p.name),
            }
        }
    }
}

#[test]
fn the_reduced_search_agrees_with_the_full_one_on_the_small_presets() {
    check_presets(SMALL);
}

#[test]
#[ignore = "every preset: minutes"]
fn the_reduced_search_agrees_with_the_full_one_on_every_preset() {
    let all: Vec<&str> = recovery_model::presets::preset_names()
        .into_iter()
        .filter(|p| !p.starts_with("task"))
        .collect();
    check_presets(&all);
}

/// Each variant on its own preset, where it fits `cargo test`; all with `--ignored`.
fn check_variants(small: bool) {
    for info in VARIANTS.iter().filter(|v| !small || SMALL.contains(&v.preset)) {
        let m = RecoveryModel::new(preset(info.preset).expect("a preset"), info.variant);
        let label = format!("{} on {}", info.name, info.preset);
        let reduced = agree(&m, &label);
        let found = (reduced.properties.iter())
            .find(|p| p.name == info.property.name())
            .expect("reported");
        assert_eq!(found.status, Status::Violated, "{label}: not found by its property");
    }
}

#[test]
fn the_reduced_search_finds_the_variants_of_the_small_presets() {
    check_variants(true);
}

#[test]
#[ignore = "every variant: minutes"]
fn the_reduced_search_finds_every_variant() {
    check_variants(false);
}
