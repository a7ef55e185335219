//! `check`'s breadth-first search (`recovery_model::tooling::search`) against stateright's own: the
//! same state counts, the same depth and the same properties discovered, on every preset small
//! enough for `cargo test` and on every bug-zoo variant; every path it gives is a path of the
//! model to a state that discovers its property, as short as a path there can be; and what it
//! finds does not depend on the number of threads.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::{PRESETS, find_preset};
use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::{shortest_counterexample, shortest_examples};
use recovery_model::tooling::search::{Counters, Frontier, Outcome, SearchOptions, bfs, encoded_size};
use recovery_model::{RecoveryModel, Variant};
use stateright::{Checker, Expectation, Model};

/// Presets compared in the `--ignored` run only: over 50,000 unique states each.
const LARGE: &[&str] = &[
    "tiny",
    "legacy",
    "subsume",
    "no-recovery",
    "late",
    "borrow",
    "floating",
    "faults",
    "migration",
    "ci",
    "wide",
    "deep",
];

fn search(m: &RecoveryModel, threads: usize) -> Outcome {
    search_with(m, threads, Frontier::Whole)
}

fn search_with(m: &RecoveryModel, threads: usize, frontier: Frontier) -> Outcome {
    let options = SearchOptions {
        frontier,
        ..SearchOptions::threads(threads)
    };
    bfs(m, &options, &Counters::default())
}

/// Whether `check`'s search agrees with stateright's on `m`; with `shortest`, also that every
/// path it gives is as short as any (a search more per model).
fn assert_agrees(m: &RecoveryModel, what: &str, shortest: bool) {
    let ours = search(m, 2);
    let theirs = m.clone().checker().threads(1).spawn_bfs().join();
    assert_eq!(ours.states, theirs.state_count(), "{what}: states");
    assert_eq!(ours.unique_states, theirs.unique_state_count(), "{what}: unique states");
    assert_eq!(ours.max_depth, theirs.max_depth(), "{what}: depth");
    // The shortest examples, from one search for all of them.
    let sometimes: Vec<PropertyId> = PropertyId::with_expectation(Expectation::Sometimes).collect();
    let examples = if shortest {
        shortest_examples(m, &sometimes)
    } else {
        Vec::new()
    };
    for (&p, found) in PropertyId::ALL.iter().zip(&ours.discoveries) {
        assert_eq!(
            found.is_some(),
            theirs.discovery(p.name()).is_some(),
            "{what}: whether `{p}` has a discovery"
        );
        let Some(path) = found else { continue };
        ends_where_decided(m, what, p, path);
        let shortest_path = match p.expectation() {
            Expectation::Always | Expectation::Eventually => shortest_counterexample(m, p),
            Expectation::Sometimes if !shortest => continue,
            Expectation::Sometimes => examples[sometimes.iter().position(|&q| q == p).unwrap()].clone(),
        };
        assert_eq!(
            path.len(),
            shortest_path.map_or(0, |s| s.len()),
            "{what}: `{p}`: not a shortest path"
        );
    }
}

/// `path` is a path of `m` that ends where `p` is decided: an `always` property false, a
/// `sometimes` one true, an `eventually` one false in a terminal state.
fn ends_where_decided(m: &RecoveryModel, what: &str, p: PropertyId, path: &[recovery_model::Action]) {
    let mut s = m.init_states().remove(0);
    for &a in path {
        s = m
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{what}: `{p}`: {a:?} is not enabled"));
    }
    let holds = p.predicate()(m, &s);
    match p.expectation() {
        Expectation::Always => assert!(!holds, "{what}: `{p}` holds where its path ends"),
        Expectation::Sometimes => assert!(holds, "{what}: `{p}` does not hold where its example ends"),
        Expectation::Eventually => assert!(m.is_terminal(&s) && !holds, "{what}: `{p}`'s path does not end it"),
    }
}

#[test]
fn the_search_agrees_with_stateright_on_the_small_presets() {
    for p in PRESETS.iter().filter(|p| !LARGE.contains(&p.name)) {
        assert_agrees(&RecoveryModel::new((p.config)(), Variant::Fixed), p.name, true);
    }
}

#[test]
#[ignore = "minutes: every preset but ci, wide and deep, whatever its size"]
fn the_search_agrees_with_stateright_on_every_preset_but_the_largest() {
    for p in PRESETS.iter().filter(|p| !["ci", "wide", "deep"].contains(&p.name)) {
        assert_agrees(&RecoveryModel::new((p.config)(), Variant::Fixed), p.name, true);
    }
}

#[test]
fn the_search_agrees_with_stateright_on_every_bug_zoo_variant() {
    for v in VARIANTS {
        let p = find_preset(v.preset).unwrap();
        // The violated property's path is checked to be a shortest one; the examples are
        // checked to be paths of the model to where they hold.
        assert_agrees(&RecoveryModel::new((p.config)(), v.variant), v.name, false);
    }
}

#[test]
fn what_the_search_finds_does_not_depend_on_the_number_of_threads() {
    for name in ["tiny", "conversion", "shared-pool"] {
        let m = RecoveryModel::new((find_preset(name).unwrap().config)(), Variant::Fixed);
        let one = search(&m, 1);
        for threads in [2, 3] {
            let more = search(&m, threads);
            assert_eq!(
                (more.states, more.unique_states, more.max_depth),
                (one.states, one.unique_states, one.max_depth),
                "{name}"
            );
            assert_eq!(more.discoveries, one.discoveries, "{name}, {threads} threads");
        }
    }
}

#[test]
fn an_encoded_frontier_finds_what_a_whole_one_does() {
    // The presets that reach every kind of element, buffer and thread position, and a variant
    // with a violation to find.
    let cases = [
        ("tiny", Variant::Fixed),
        ("conversion", Variant::Fixed),
        ("shared-pool", Variant::Fixed),
        ("aligned-timeout", Variant::Fixed),
        ("faults", Variant::Fixed),
        ("tiny", Variant::NoResumeConsumption),
    ];
    for (name, variant) in cases {
        let whole = RecoveryModel::new((find_preset(name).unwrap().config)(), variant);
        let (a, b) = (search(&whole, 2), search_with(&whole, 2, Frontier::Encoded));
        assert_eq!(
            (b.states, b.unique_states, b.max_depth),
            (a.states, a.unique_states, a.max_depth),
            "{name}"
        );
        assert_eq!(b.discoveries, a.discoveries, "{name}");
    }
}

/// With the frontier spilled, the parent links are on disk and rebuilt at the end: the same
/// counts and discoveries, each path a path of the model to where its property is decided and
/// as long as the one the links in memory give (which of several shortest paths it is may
/// differ).
#[test]
fn a_spilled_frontier_finds_what_a_whole_one_does_and_leaves_no_file() {
    let dir = std::env::temp_dir().join(format!("cdr-spill-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let variant = VARIANTS
        .iter()
        .find(|v| v.name == "spill-snapshot-at-read-position")
        .unwrap();
    let models = [
        ("tiny", Variant::Fixed),
        ("aligned-timeout", Variant::Fixed),
        (variant.preset, variant.variant),
    ];
    for (name, variant) in models {
        let whole = RecoveryModel::new((find_preset(name).unwrap().config)(), variant);
        let (a, b) = (
            search(&whole, 2),
            search_with(&whole, 2, Frontier::Spilled(dir.clone())),
        );
        assert_eq!(
            (b.states, b.unique_states, b.max_depth),
            (a.states, a.unique_states, a.max_depth),
            "{name}"
        );
        for ((&p, x), y) in PropertyId::ALL.iter().zip(&a.discoveries).zip(&b.discoveries) {
            assert_eq!(x.as_ref().map(Vec::len), y.as_ref().map(Vec::len), "{name}: `{p}`");
            if let Some(path) = y {
                ends_where_decided(&whole, name, p, path);
            }
        }
        assert!(
            b.encoded_bytes_per_state.is_some(),
            "{name}: spilled states are encoded"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "spill files left behind: {left:?}");
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn every_state_of_tiny_decodes_as_it_was_encoded() {
    // A state that decodes to another would make the encoded search explore something else
    // under the original's fingerprint: every reachable state round-trips.
    let m = RecoveryModel::new((find_preset("tiny").unwrap().config)(), Variant::Fixed);
    let (mut seen, mut todo) = (std::collections::HashSet::new(), m.init_states());
    while let Some(s) = todo.pop() {
        let bytes = postcard::to_allocvec(&s).unwrap();
        assert_eq!(postcard::from_bytes::<recovery_model::State>(&bytes).unwrap(), s);
        assert_eq!(bytes.len(), encoded_size(&s));
        let mut actions = Vec::new();
        m.actions(&s, &mut actions);
        for a in actions {
            if let Some(next) = m.next_state(&s, a)
                && seen.insert(recovery_model::tooling::fingerprint::state_fingerprint(&next))
            {
                todo.push(next);
            }
        }
    }
    // Every state but the initial one, which no step leads back to.
    assert_eq!(
        seen.len() + 1,
        search(&m, 1).unique_states,
        "every state of tiny was walked"
    );
}
