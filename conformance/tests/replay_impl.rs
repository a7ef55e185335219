//! Replays against the implementation: every edge of `tiny`, a deliberately broken driver, and
//! the bug zoo's counterexamples, which must not be reproducible on the fixed implementation.

mod common;

use common::StashAtHead;
use conformance::conform::conform_edges;
use conformance::driver::ModelDriver;
use conformance::impl_driver::ImplDriver;
use conformance::replay::{Compare, lockstep};
use recovery_model::check::shortest_counterexample;
use recovery_model::variant::VARIANTS;
use recovery_model::{Action, RecoveryModel, Variant, preset};
use std::time::Duration;

fn model(name: &str, variant: Variant) -> RecoveryModel {
    RecoveryModel::new(preset(name).unwrap(), variant)
}

#[test]
fn every_edge_of_tiny_replays_on_the_implementation_without_divergence() {
    let m = model("tiny", Variant::Fixed);
    let mut driver = ImplDriver::new(&m.cfg);
    let r = conform_edges(&m, &mut driver, 1);
    if let Some(d) = &r.first_divergence {
        panic!("{d}");
    }
    assert_eq!((r.edges_covered, r.states_covered), (r.edges_total, r.states_total));
    assert_eq!(r.divergences, 0);
    // tiny has no release, no floating buffer and no conversion.
    assert_eq!(r.action_kinds_covered, Action::KINDS.len() - 3);
}

#[test]
fn broken_driver_replaying_the_stash_at_the_head_is_reported_with_step_and_diff() {
    // The bug zoo's counterexample for the same bug, replayed against the fixed model.
    let buggy = model("tiny", Variant::StashReplayedAtHead);
    let actions = shortest_counterexample(&buggy, "priority events first").expect("the variant is caught");
    let fixed = model("tiny", Variant::Fixed);
    let mut reference = ModelDriver::new(fixed.clone());
    let mut broken = StashAtHead::new(ImplDriver::new(&fixed.cfg));
    let d = lockstep(&mut reference, &mut broken, &actions, Compare::Every).expect_err("the broken driver diverges");
    let consumed = actions
        .iter()
        .position(|a| matches!(a, Action::OnRecoveredStateConsumed { .. }))
        .unwrap();
    assert_eq!(d.step, consumed + 1, "{d}");
    assert!(matches!(d.action(), Action::OnRecoveredStateConsumed { channel: 1 }));
    let report = d.to_string();
    assert!(report.contains(&format!("at step {}", d.step)), "{report}");
    assert!(report.contains("--- model\n+++ impl"), "{report}");
    // The replayed event moved: behind the queued barrier in the model, ahead of it here.
    assert!(report.contains("+          \"item\": \"e0\""), "{report}");
    assert!(report.contains("-          \"item\": \"e0\""), "{report}");
}

#[test]
fn no_bug_zoo_counterexample_is_reproducible_on_the_fixed_implementation() {
    for info in VARIANTS {
        let m = model(info.preset, info.variant);
        let actions = shortest_counterexample(&m, info.property).unwrap_or_else(|| panic!("{}: not caught", info.name));
        let mut reference = ModelDriver::new(m.clone());
        let mut driver = ImplDriver::new(&m.cfg).with_timeout(Duration::from_millis(500));
        let result = lockstep(&mut reference, &mut driver, &actions, Compare::Every);
        let d = result.expect_err(&format!("{}: the implementation reproduced the bug", info.name));
        println!(
            "{:<42} {:>2} steps, diverges at step {:>2}: {}",
            info.name,
            actions.len(),
            d.step,
            d.readable[d.step - 1]
        );
    }
}
