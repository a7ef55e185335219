//! The stubborn sets of `tooling::por` keep every terminal state. With the properties'
//! visibility they reduce nothing on the presets (docs/performance.md), so the agreement of
//! verdicts (conformance/tests/por.rs) cannot fail there; with no action visible they do prune,
//! and stubborn sets without visibility still keep every deadlock: every terminal state of the
//! full graph (a finished run, or one where an assertion fired) is reached by the reduced
//! search. That checks the conflicts, the guards' necessary enabling sets and the treatment of
//! `halt` on graphs the reduction really cuts, presets and bug-zoo variants alike.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::footprint::Components;
use recovery_model::presets::preset;
use recovery_model::tooling::por::Reduction;
use recovery_model::{Action, RecoveryModel, State, Variant};
use std::collections::HashSet;

const PRESETS: &[&str] = &[
    "tiny",
    "priority-race",
    "drain-wakeup",
    "late-floating-credit",
    "local-buffers",
    "shared-pool",
    "pool-starvation",
    "release-window-local",
    "stash-order",
    "aligned-timeout",
    "recovery-buffer-wait",
];

/// The terminal states reachable from the initial one, following `reduce`'s choice in each
/// state; and the number of edges followed.
fn terminals(m: &RecoveryModel, reduce: &dyn Fn(&State, &mut Vec<Action>)) -> (HashSet<State>, usize) {
    let mut seen: HashSet<State> = HashSet::new();
    let mut todo = vec![m.initial_state()];
    seen.insert(todo[0].clone());
    let (mut out, mut edges) = (HashSet::new(), 0);
    let mut actions = Vec::new();
    while let Some(s) = todo.pop() {
        actions.clear();
        m.enabled_actions(&s, &mut actions);
        if actions.is_empty() {
            out.insert(s);
            continue;
        }
        reduce(&s, &mut actions);
        for &a in &actions {
            edges += 1;
            let next = m.next(&s, a);
            if seen.insert(next.clone()) {
                todo.push(next);
            }
        }
    }
    (out, edges)
}

/// Checks `m`; returns the edges the reduction left out.
fn keeps_every_terminal_state(m: &RecoveryModel, label: &str) -> usize {
    let (full, all_edges) = terminals(m, &|_, _| {});
    let reduction = Reduction::new(m, Components::EMPTY);
    let (reduced, edges) = terminals(m, &|s, actions| reduction.reduce(m, s, actions));
    let missed = full.difference(&reduced).count();
    assert_eq!(missed, 0, "{label}: {missed} of {} terminal states missed", full.len());
    assert!(reduced.is_subset(&full), "{label}");
    all_edges - edges
}

#[test]
fn with_no_action_visible_the_reduction_prunes_and_keeps_every_terminal_state() {
    let mut pruned = 0;
    for name in PRESETS {
        let m = RecoveryModel::new(preset(name).expect("a preset"), Variant::Fixed);
        pruned += keeps_every_terminal_state(&m, name);
    }
    assert!(pruned > 0, "the reduction pruned nothing: the check is vacuous");
}

#[test]
fn on_the_bug_zoo_variants_of_those_presets_too() {
    for info in VARIANTS.iter().filter(|v| PRESETS.contains(&v.preset)) {
        let m = RecoveryModel::new(preset(info.preset).expect("a preset"), info.variant);
        keeps_every_terminal_state(&m, &format!("{} on {}", info.name, info.preset));
    }
}

#[test]
#[ignore = "every variant: a minute"]
fn on_every_bug_zoo_variant() {
    for info in VARIANTS {
        let m = RecoveryModel::new(preset(info.preset).expect("a preset"), info.variant);
        keeps_every_terminal_state(&m, &format!("{} on {}", info.name, info.preset));
    }
}

/// A choice that is no stubborn set, the first enabled action alone, misses terminal states,
/// and the check says so.
#[test]
fn a_choice_that_is_not_stubborn_misses_terminal_states() {
    let m = RecoveryModel::new(preset("tiny").expect("a preset"), Variant::Fixed);
    let (full, _) = terminals(&m, &|_, _| {});
    let (first_only, _) = terminals(&m, &|_, actions| actions.truncate(1));
    assert!(full.difference(&first_only).count() > 0);
}

/// Visibility where it prunes: each variant of those presets, checked with only its own
/// property's reads visible (`cdr check --por` makes every property's reads visible, which
/// prunes nothing on the presets), is still found by that property.
#[test]
fn with_only_its_property_visible_each_variant_is_still_found() {
    use recovery_model::properties::PropertyId;
    use recovery_model::properties::reads::reads;
    use recovery_model::tooling::search::{Counters, SearchOptions, bfs};
    use std::sync::Arc;
    let mut pruned = 0;
    for info in VARIANTS.iter().filter(|v| PRESETS.contains(&v.preset)) {
        let m = RecoveryModel::new(preset(info.preset).expect("a preset"), info.variant);
        let visible = reads(&m, m.cfg.channels.len(), info.property);
        let run = |por: Option<Reduction>| {
            let options = SearchOptions {
                threads: 1,
                por: por.map(Arc::new),
                ..Default::default()
            };
            bfs(&m, &options, &Counters::default())
        };
        let full = run(None);
        let reduced = run(Some(Reduction::new(&m, visible)));
        let at = PropertyId::ALL
            .iter()
            .position(|p| *p == info.property)
            .expect("a property");
        assert!(
            reduced.discoveries[at].is_some(),
            "{} on {}: not found with its property's reads visible",
            info.name,
            info.preset
        );
        pruned += full.states - reduced.states;
    }
    assert!(pruned > 0, "nothing was pruned: the check is vacuous");
}
