//! model/src/footprint.rs's declarations checked against the model's steps, on every reachable
//! state of a set of presets:
//!
//! * (a) every step changes only components its action declares among its writes;
//! * (b) two enabled actions whose footprints are independent leave each other enabled and
//!   commute: both orders reach the same state;
//! * (c) a step that enables or disables another action writes a component that action reads;
//! * the footprint over every state (`static_footprint`) covers the one in each state.
//!
//! The checks are shown not to be vacuous: they count what they checked, and a declaration
//! with a write, a conflict or a read left out is caught.

use recovery_model::Action;
use recovery_model::bug_zoo::VARIANTS;
use recovery_model::footprint::{Component, Components, Footprint, changed_components, footprint, static_footprint};
use recovery_model::model::GatePolling;
use recovery_model::presets::preset;
use recovery_model::{RecoveryModel, State, Variant};
use std::collections::HashSet;

/// The presets checked in `cargo test`: the whole run stays within seconds in debug builds.
const PRESETS: &[&str] = &[
    "tiny",
    "priority-race",
    "drain-wakeup",
    "late-floating-credit",
    "local-buffers",
    "conversion",
    "legacy",
    "shared-pool",
    "shared-pool-live",
    "pool-starvation",
    "release-window-local",
    "release-window-remote",
    "stash-order",
    "aligned-timeout",
    "recovery-buffer-wait",
    "migration",
    "faults",
    "subsume",
    "no-trigger",
    "release-floating",
    "shared-pool-floating-only",
];

/// Bigger presets, run with `--ignored`.
const BIGGER: &[&str] = &[
    "floating",
    "no-recovery",
    "late",
    "aligned-timeout-two-channels",
    "borrow",
];

/// How the declarations are got: the model's own, or one changed to show a check catches it.
type Declared<'a> = &'a dyn Fn(&RecoveryModel, &State, &Action) -> Footprint;

/// At most this many failures are kept per check.
const KEEP: usize = 10;

/// What one run of the checks counted and found.
#[derive(Default)]
struct Report {
    states: usize,
    edges: usize,
    independent_pairs: usize,
    /// States in which an assertion fired.
    halted: usize,
    /// (a) components a step changed that its action does not declare among its writes.
    undeclared_writes: Vec<String>,
    /// (b) independent pairs that disable each other or do not commute.
    not_independent: Vec<String>,
    /// (c) steps that enable or disable an action without writing anything it reads.
    undeclared_enabling: Vec<String>,
}

impl Report {
    fn failures(&self) -> Vec<&String> {
        (self.undeclared_writes.iter())
            .chain(&self.not_independent)
            .chain(&self.undeclared_enabling)
            .collect()
    }
}

fn keep(list: &mut Vec<String>, message: impl FnOnce() -> String) {
    if list.len() < KEEP {
        list.push(message());
    }
}

/// Every reachable state of `model`, breadth-first.
fn reachable(model: &RecoveryModel) -> Vec<State> {
    let mut seen: HashSet<State> = HashSet::new();
    let mut states = vec![model.initial_state()];
    seen.insert(states[0].clone());
    let mut actions = Vec::new();
    let mut i = 0;
    while i < states.len() {
        actions.clear();
        model.enabled_actions(&states[i], &mut actions);
        for &a in &actions {
            let next = model.next(&states[i], a);
            if seen.insert(next.clone()) {
                states.push(next);
            }
        }
        i += 1;
    }
    states
}

/// The actions enabled in `s`.
fn enabled(model: &RecoveryModel, s: &State) -> Vec<Action> {
    let mut out = Vec::new();
    model.enabled_actions(s, &mut out);
    out
}

/// Runs the checks on every reachable state of `model` (`label` names it in failures); (b) and
/// (c) only with `pairs`.
fn check(model: &RecoveryModel, label: &str, declared: Declared, pairs: bool) -> Report {
    let mut r = Report::default();
    for (i, s) in reachable(model).iter().enumerate() {
        r.states += 1;
        r.halted += usize::from(s.violation.is_some());
        let actions = enabled(model, s);
        let mut steps = Vec::with_capacity(actions.len());
        for &a in &actions {
            let next = model.next(s, a);
            let f = declared(model, s, &a);
            let changed = changed_components(s, &next);
            r.edges += 1;
            for c in changed.without(f.writes).iter() {
                keep(&mut r.undeclared_writes, || {
                    format!(
                        "{label}: {a:?} in state #{i} changed {c}, not among its declared writes {}",
                        f.writes
                    )
                });
            }
            assert!(
                f.writes.is_subset(f.reads),
                "{label}: {a:?} writes what it does not read"
            );
            // The footprint over every state covers the one in this state.
            let any = static_footprint(model, s, &a);
            assert!(
                f.reads.is_subset(any.reads) && f.writes.is_subset(any.writes),
                "{label}: {a:?} in state #{i} declares {f:?}, more than over every state, {any:?}"
            );
            let after = if pairs { enabled(model, &next) } else { Vec::new() };
            steps.push((a, next, f, after));
        }
        if !pairs {
            continue;
        }
        for (a, _, fa, after) in &steps {
            let toggled = (after.iter().filter(|b| !actions.contains(b)).map(|b| (b, "enables"))).chain(
                actions
                    .iter()
                    .filter(|b| *b != a && !after.contains(b))
                    .map(|b| (b, "disables")),
            );
            for (b, how) in toggled {
                let fb = declared(model, s, b);
                if fa.writes.is_disjoint(fb.reads) {
                    keep(&mut r.undeclared_enabling, || {
                        format!(
                            "{label}: {a:?} {how} {b:?} in state #{i}, but writes {} and {b:?} reads {}",
                            fa.writes, fb.reads
                        )
                    });
                }
            }
        }
        for (x, (a, sa, fa, after_a)) in steps.iter().enumerate() {
            for (b, sb, fb, after_b) in &steps[x + 1..] {
                if !fa.independent(fb) {
                    continue;
                }
                r.independent_pairs += 1;
                let problem = if !after_a.contains(b) {
                    Some(format!("{a:?} disables {b:?}"))
                } else if !after_b.contains(a) {
                    Some(format!("{b:?} disables {a:?}"))
                } else if model.next(sa, *b) != model.next(sb, *a) {
                    Some(format!("{a:?} and {b:?} do not commute"))
                } else {
                    None
                };
                if let Some(p) = problem {
                    keep(&mut r.not_independent, || {
                        format!("{label}: in state #{i}, {p}, though declared independent: {fa:?} and {fb:?}")
                    });
                }
            }
        }
    }
    r
}

fn declared(model: &RecoveryModel, s: &State, a: &Action) -> Footprint {
    footprint(model, s, a)
}

fn model_of(name: &str, variant: Variant) -> RecoveryModel {
    RecoveryModel::new(preset(name).unwrap_or_else(|| panic!("preset {name}")), variant)
}

/// Runs every check on each preset, fails on any finding, and returns the totals.
fn check_presets(names: &[&str]) -> Report {
    let mut total = Report::default();
    for name in names {
        let started = std::time::Instant::now();
        let r = check(&model_of(name, Variant::Fixed), name, &declared, true);
        let failures = r.failures();
        assert!(
            failures.is_empty(),
            "{name}:\n{}",
            failures.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n")
        );
        assert!(r.edges > 0, "{name}: nothing checked");
        println!(
            "{name}: {} states, {} edges, {} independent pairs, {:.1} s",
            r.states,
            r.edges,
            r.independent_pairs,
            started.elapsed().as_secs_f64()
        );
        total.states += r.states;
        total.edges += r.edges;
        total.independent_pairs += r.independent_pairs;
    }
    assert!(total.independent_pairs > 0, "no independent pair: (b) checked nothing");
    total
}

/// docs/model.md's sentence on the figures, as the test measures them.
fn figures_sentence(r: &Report) -> String {
    let with_commas = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (k, ch) in digits.chars().enumerate() {
            if k > 0 && (digits.len() - k).is_multiple_of(3) {
                out.push(',');
            }
            out.push(ch);
        }
        out
    };
    format!(
        "On the {} presets `cargo test` checks, that is {} reachable states, {} edges and {} independent pairs.",
        PRESETS.len(),
        with_commas(r.states),
        with_commas(r.edges),
        with_commas(r.independent_pairs)
    )
}

#[test]
fn every_step_writes_what_its_action_declares_and_independent_actions_commute() {
    let total = check_presets(PRESETS);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
    let heading = "### Reads and writes of each action (model/src/footprint.rs)";
    let section = doc
        .split(heading)
        .nth(1)
        .expect("docs/model.md has the section on footprints");
    // The section up to the next chapter, its lines joined.
    let section = section.split("\n## ").next().unwrap();
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = figures_sentence(&total);
    assert!(
        section.contains(&sentence),
        "docs/model.md's section on footprints should say:\n{sentence}"
    );
    for name in PRESETS.iter().chain(BIGGER) {
        let named = section.contains(&format!("`{name}`"));
        assert!(
            named,
            "docs/model.md's section on footprints should name the preset {name}"
        );
    }
}

#[test]
#[ignore = "the bigger presets: seconds each"]
fn the_bigger_presets_too() {
    check_presets(BIGGER);
}

#[test]
fn with_any_channel_polled_too() {
    let model = model_of("tiny", Variant::Fixed).with_polling(GatePolling::AnyChannelWithData);
    let r = check(&model, "tiny, any channel polled", &declared, true);
    assert!(r.failures().is_empty(), "{:#?}", r.failures());
    assert!(r.independent_pairs > 0);
}

/// Runs (a) on each bug-zoo variant, on its own preset, and with `pairs` (b) and (c) too;
/// returns the number of states in which an assertion fired.
fn check_variants(pairs: bool) -> usize {
    let mut halted = 0;
    for info in VARIANTS {
        let model = model_of(info.preset, info.variant);
        let label = format!("{} on {}", info.name, info.preset);
        let r = check(&model, &label, &declared, pairs);
        let failures = r.failures();
        assert!(
            failures.is_empty(),
            "{label}:\n{}",
            failures.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n")
        );
        assert!(r.edges > 0, "{label}");
        halted += r.halted;
    }
    halted
}

/// The variants' steps, some of which fire assertions, on each variant's own preset.
#[test]
fn every_bug_zoo_variant_writes_what_its_actions_declare() {
    let halted = check_variants(false);
    assert!(
        halted > 0,
        "some variants fire assertions, whose halt the declarations name"
    );
}

#[test]
#[ignore = "half a minute in debug builds"]
fn every_bug_zoo_variant_commutes_where_declared_independent() {
    check_variants(true);
}

/// The channel of an action that has one.
fn channel(a: &Action) -> u8 {
    a.channel().expect("a channel action")
}

#[test]
fn a_write_left_out_of_a_declaration_is_caught() {
    let without_wire = |m: &RecoveryModel, s: &State, a: &Action| {
        let mut f = footprint(m, s, a);
        if let Action::SendBuffer { .. } = a {
            f.writes = f.writes.without(Component::Wire(channel(a)).into());
        }
        f
    };
    let r = check(&model_of("tiny", Variant::Fixed), "tiny", &without_wire, false);
    assert!(
        r.undeclared_writes
            .iter()
            .any(|f| f.contains("SendBuffer") && f.contains("changed wire#1")),
        "{:#?}",
        r.undeclared_writes
    );
}

#[test]
fn a_conflict_left_out_of_a_declaration_is_caught() {
    // The upstream's barrier and the server's send both take the subpartition's lock: the
    // barrier overtakes what the send would take.
    let without_subpartition = |m: &RecoveryModel, s: &State, a: &Action| {
        let mut f = footprint(m, s, a);
        if let Action::EmitCheckpointBarrier { .. } = a {
            let sub: Components = Component::Subpartition(channel(a)).into();
            f = Footprint {
                reads: f.reads.without(sub),
                writes: f.writes.without(sub),
            };
        }
        f
    };
    let r = check(&model_of("tiny", Variant::Fixed), "tiny", &without_subpartition, true);
    assert!(
        r.not_independent
            .iter()
            .any(|f| f.contains("EmitCheckpointBarrier") && f.contains("SendBuffer")),
        "{:#?}",
        r.not_independent
    );
}

#[test]
fn a_read_left_out_of_a_declaration_is_caught() {
    // `onBuffer` hands a backlog on, and the client does nothing else until `onSenderBacklog`.
    let without_client = |m: &RecoveryModel, s: &State, a: &Action| {
        let mut f = footprint(m, s, a);
        if let Action::SendAddCredit { .. } = a {
            let client: Components = Component::Client.into();
            f.reads = f.reads.without(client);
        }
        f
    };
    let r = check(&model_of("tiny", Variant::Fixed), "tiny", &without_client, true);
    assert!(
        r.undeclared_enabling
            .iter()
            .any(|f| f.contains("OnBuffer") && f.contains("disables SendAddCredit"))
            || r.not_independent.iter().any(|f| f.contains("SendAddCredit")),
        "{:#?} {:#?}",
        r.undeclared_enabling,
        r.not_independent
    );
}
