//! model/src/guard.rs's conjuncts checked against the model, on every reachable state and step
//! of a set of presets and of every bug-zoo variant on its preset, for every action of the
//! configuration (`tooling::por::universe`):
//!
//! * every enabled action is one of the configuration's (the reduction's universe);
//! * an enabled action has every conjunct of its guard true;
//! * a false conjunct stays false across a step that writes none of its components.
//!
//! Together they make the writers of a false conjunct's components a necessary enabling set,
//! which the partial-order reduction relies on. A conjunct given too few components is caught.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::footprint::{Component, Components, changed_components};
use recovery_model::guard::conjuncts;
use recovery_model::presets::preset;
use recovery_model::tooling::por::{class_of, universe};
use recovery_model::{Action, RecoveryModel, State, Variant};
use std::collections::HashSet;

const PRESETS: &[&str] = &[
    "tiny",
    "priority-race",
    "drain-wakeup",
    "late-floating-credit",
    "local-buffers",
    "legacy",
    "shared-pool",
    "pool-starvation",
    "release-window-local",
    "release-window-remote",
    "stash-order",
    "aligned-timeout",
    "recovery-buffer-wait",
    "faults",
];

type Conjuncts<'a> = &'a dyn Fn(&RecoveryModel, &State, &Action) -> Vec<(Components, bool)>;

/// Checks both rules on every reachable state of `model`; returns the failures and how many
/// false conjuncts were carried across a step.
fn check(model: &RecoveryModel, label: &str, conj: Conjuncts) -> (Vec<String>, usize) {
    let all = universe(model);
    let mut failures = Vec::new();
    let mut carried = 0;
    let mut seen: HashSet<State> = HashSet::new();
    let mut states = vec![model.initial_state()];
    seen.insert(states[0].clone());
    let mut i = 0;
    while i < states.len() && failures.len() < 10 {
        let s = states[i].clone();
        i += 1;
        let mut enabled = Vec::new();
        model.enabled_actions(&s, &mut enabled);
        let on: HashSet<Action> = enabled.iter().map(class_of).collect();
        for a in on.iter().filter(|a| !all.contains(a)) {
            failures.push(format!(
                "{label}: {a:?} is enabled but not among the configuration's actions"
            ));
        }
        let before: Vec<Vec<(Components, bool)>> = all.iter().map(|u| conj(model, &s, u)).collect();
        for (u, g) in all.iter().zip(&before) {
            if on.contains(u) && g.iter().any(|(_, holds)| !holds) {
                failures.push(format!("{label}: {u:?} is enabled with a false conjunct: {g:?}"));
            }
        }
        for a in enabled {
            let next = model.next(&s, a);
            let changed = changed_components(&s, &next);
            for (u, g) in all.iter().zip(&before) {
                let after = conj(model, &next, u);
                for (k, (comps, holds)) in g.iter().enumerate() {
                    if *holds || !comps.is_disjoint(changed) {
                        continue;
                    }
                    carried += 1;
                    if after[k].1 {
                        failures.push(format!(
                            "{label}: {a:?} made conjunct {k} of {u:?} true, writing {changed}, none of {comps}"
                        ));
                    }
                }
            }
            if seen.insert(next.clone()) {
                states.push(next);
            }
        }
    }
    (failures, carried)
}

fn model_of(name: &str, variant: Variant) -> RecoveryModel {
    RecoveryModel::new(preset(name).unwrap_or_else(|| panic!("preset {name}")), variant)
}

#[test]
fn every_conjunct_holds_where_its_action_is_enabled_and_stays_false_until_written() {
    for name in PRESETS {
        let (failures, carried) = check(&model_of(name, Variant::Fixed), name, &conjuncts);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(carried > 0, "{name}: no false conjunct was carried across a step");
    }
}

/// The variants whose preset the test above walks; the others with `--ignored`.
#[test]
fn on_the_bug_zoo_variants_of_those_presets() {
    variants(true);
}

#[test]
#[ignore = "a minute in debug builds"]
fn on_every_bug_zoo_variant() {
    variants(false);
}

fn variants(small: bool) {
    for info in VARIANTS.iter().filter(|v| !small || PRESETS.contains(&v.preset)) {
        let label = format!("{} on {}", info.name, info.preset);
        let (failures, _) = check(&model_of(info.preset, info.variant), &label, &conjuncts);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// The client's conjunct for `onBuffer` given without the wire: a response that arrives
/// enables it, and the check says so.
#[test]
fn a_conjunct_missing_a_component_is_caught() {
    let wire_left_out = |m: &RecoveryModel, s: &State, a: &Action| {
        let mut g = conjuncts(m, s, a);
        if matches!(a, Action::OnBuffer { .. }) {
            for (comps, _) in g.iter_mut() {
                *comps = comps.without((0..4).fold(Components::EMPTY, |acc, c| acc | Component::Wire(c).into()));
            }
        }
        g
    };
    let (failures, _) = check(&model_of("tiny", Variant::Fixed), "tiny", &wire_left_out);
    assert!(
        failures.iter().any(|f| f.contains("OnBuffer")),
        "the check misses a conjunct without its component"
    );
}
