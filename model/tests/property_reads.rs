//! model/src/properties/reads.rs's declarations checked against the predicates:
//!
//! * (a) on every edge `s → s'` of a set of presets and of every bug-zoo variant on its own
//!   preset, a property whose declared reads the step does not change (`changed_components`)
//!   has the same value in `s` and `s'`;
//! * (b) any two reachable states of a preset (or a variant on its preset) that agree on a
//!   property's declared reads agree on its value (states bucketed by a hash of the declared
//!   components);
//! * leaving a component out of a declaration is caught, so the checks can fail.
//!
//! `cargo test -p recovery-model --test property_reads -- --ignored --nocapture what_each_property_reads`
//! prints the declarations.

use recovery_model::bug_zoo::{VARIANTS, VariantInfo};
use recovery_model::footprint::{Component, Components, changed_components};
use recovery_model::model::GatePolling;
use recovery_model::presets::preset;
use recovery_model::properties::PropertyId;
use recovery_model::properties::reads::{all_reads, reads};
use recovery_model::state::producer::Producer;
use recovery_model::state::{Channel, TaskPc};
use recovery_model::{RecoveryModel, State, Variant};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// The presets checked in `cargo test`: each under about 100k states but `faults`.
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
    "no-trigger",
    "release-floating",
    "shared-pool-floating-only",
    // 330k states, but the only preset whose upstreams fail.
    "faults",
];

/// Bigger presets, run with `--ignored`.
const BIGGER: &[&str] = &[
    "migration",
    "subsume",
    "floating",
    "no-recovery",
    "late",
    "aligned-timeout-two-channels",
    "borrow",
];

/// At most this many failures are kept.
const KEEP: usize = 10;

/// How the declarations are got: the module's own, or one changed to show a check catches it.
type Declared<'a> = &'a dyn Fn(&RecoveryModel, usize, PropertyId) -> Components;

fn declared(m: &RecoveryModel, n: usize, p: PropertyId) -> Components {
    reads(m, n, p)
}

fn model_of(name: &str, variant: Variant) -> RecoveryModel {
    RecoveryModel::new(preset(name).unwrap_or_else(|| panic!("preset {name}")), variant)
}

/// The values of every property in `s`, bit `i` for `PropertyId::ALL[i]`.
fn values(m: &RecoveryModel, s: &State) -> u64 {
    (PropertyId::ALL.iter().enumerate()).fold(0, |acc, (i, p)| acc | u64::from(p.predicate()(m, s)) << i)
}

/// A reachable state graph: the states breadth-first, each property's values in each, and the
/// edges with the components each changed.
struct Graph {
    states: Vec<State>,
    values: Vec<u64>,
    edges: Vec<(u32, u32, Components)>,
}

fn explore(m: &RecoveryModel) -> Graph {
    let mut index: HashMap<State, u32> = HashMap::new();
    let first = m.initial_state();
    index.insert(first.clone(), 0);
    let mut g = Graph {
        values: vec![values(m, &first)],
        states: vec![first],
        edges: Vec::new(),
    };
    let mut actions = Vec::new();
    let mut i = 0;
    while i < g.states.len() {
        actions.clear();
        m.enabled_actions(&g.states[i], &mut actions);
        for &a in &actions {
            let next = m.next(&g.states[i], a);
            let changed = changed_components(&g.states[i], &next);
            let j = match index.get(&next) {
                Some(&j) => j,
                None => {
                    let j = g.states.len() as u32;
                    index.insert(next.clone(), j);
                    g.values.push(values(m, &next));
                    g.states.push(next);
                    j
                }
            };
            g.edges.push((i as u32, j, changed));
        }
        i += 1;
    }
    g
}

/// What one run of check (a) counted and found.
#[derive(Default)]
struct Report {
    states: usize,
    edges: usize,
    /// Per property: edges that changed none of its declared reads (its invisible steps).
    invisible: Vec<usize>,
    /// Per property: edges on which it flipped.
    flips: Vec<usize>,
    failures: Vec<String>,
}

impl Report {
    fn new() -> Self {
        Report {
            invisible: vec![0; PropertyId::ALL.len()],
            flips: vec![0; PropertyId::ALL.len()],
            ..Default::default()
        }
    }

    fn add(&mut self, other: &Report) {
        self.states += other.states;
        self.edges += other.edges;
        for i in 0..PropertyId::ALL.len() {
            self.invisible[i] += other.invisible[i];
            self.flips[i] += other.flips[i];
        }
    }
}

/// Check (a) on every edge of `g`, the graph of `m` (`label` names it in failures).
fn check_edges(m: &RecoveryModel, g: &Graph, label: &str, declared: Declared) -> Report {
    let n = m.cfg.channels.len();
    let reads: Vec<Components> = PropertyId::ALL.iter().map(|&p| declared(m, n, p)).collect();
    let mut r = Report::new();
    r.states = g.states.len();
    r.edges = g.edges.len();
    for &(i, j, changed) in &g.edges {
        let flipped = g.values[i as usize] ^ g.values[j as usize];
        for (k, p) in PropertyId::ALL.iter().enumerate() {
            let flips = flipped >> k & 1 == 1;
            r.flips[k] += usize::from(flips);
            if !changed.is_disjoint(reads[k]) {
                continue;
            }
            r.invisible[k] += 1;
            if flips && r.failures.len() < KEEP {
                let (s, t) = (&g.states[i as usize], &g.states[j as usize]);
                let step = step_between(m, s, t);
                r.failures.push(format!(
                    "{label}: `{p}` goes {} → {} on {step} (state #{i} → #{j}), which changed {changed}, \
                     none of its declared reads {}",
                    g.values[i as usize] >> k & 1 == 1,
                    g.values[j as usize] >> k & 1 == 1,
                    reads[k]
                ));
            }
        }
    }
    r
}

/// An action leading from `s` to `t`, for messages.
fn step_between(m: &RecoveryModel, s: &State, t: &State) -> String {
    let mut actions = Vec::new();
    m.enabled_actions(s, &mut actions);
    (actions.into_iter().find(|&a| m.next(s, a) == *t)).map_or_else(|| "?".into(), |a| format!("{a:?}"))
}

/// A hash of `v`, the same in every run.
fn hash_of(v: impl Hash) -> u64 {
    foldhash::quality::FixedState::with_seed(7).hash_one(v)
}

/// The hash of each component of `s`, by bit index: each hashes exactly the fields
/// `changed_components` compares for it, so two states that agree on a component hash it alike.
/// Every field is named, so a new one does not compile until it is given a component.
fn component_hashes(s: &State) -> [u64; 64] {
    let mut out = [0u64; 64];
    let mut set = |c: Component, h: u64| out[c.bit().trailing_zeros() as usize] = h;
    let State {
        channels,
        gate,
        pools,
        task,
        partitions_requested,
        converted,
        closed,
        checkpoints,
        barriers_seen,
        io_pc,
        io_waiting,
        io_buffer,
        task_announce,
        client_backlog,
        client_announce,
        recycler,
        violation,
        alignment,
        ghost_converted,
        ghost_lent_across,
        upstream_recovered,
        aborted,
    } = s;
    for (c, ch) in channels.iter().enumerate() {
        let c = c as u8;
        let Channel {
            queue,
            priority_len,
            stash,
            in_recovery,
            recovery_seq,
            upstream_ready,
            released,
            releasing,
            state_consumed,
            pending_priority,
            listener,
            error,
            last_barrier,
            persister,
            bm,
            unannounced_credit,
            add_credit_queued,
            resume_queued,
            add_credit_in_flight,
            held,
            global_pool,
            producer,
            ghost_pushed,
            ghost_delivered,
            ghost_freed,
            ghost_persisted,
            ghost_replayed,
            ghost_rcb_at,
            ghost_spilled,
            ghost_started_at,
            ghost_barrier_after,
        } = &**ch;
        let Producer {
            emitted,
            barriers,
            subpartition,
            released: upstream_released,
            reader_credit,
            next_seq,
            wire,
            notify_pending,
            notify_blocked,
            backlog_announced,
            blocked,
        } = producer;
        let consumer = (
            (queue, priority_len, stash, in_recovery, recovery_seq, upstream_ready),
            (state_consumed, pending_priority, listener, last_barrier, persister),
            (
                ghost_pushed,
                ghost_delivered,
                ghost_freed,
                ghost_persisted,
                ghost_replayed,
            ),
            (ghost_rcb_at, ghost_spilled, ghost_started_at),
        );
        set(Component::Consumer(c), hash_of(consumer));
        set(Component::Released(c), hash_of((released, releasing)));
        set(Component::Error(c), hash_of(error));
        set(Component::Buffers(c), hash_of((bm, global_pool)));
        set(Component::Held(c), hash_of(held));
        set(
            Component::Credit(c),
            hash_of((unannounced_credit, add_credit_queued, resume_queued)),
        );
        set(Component::CreditWire(c), hash_of(add_credit_in_flight));
        let upstream = (emitted, subpartition, upstream_released, next_seq, notify_pending);
        let sub = (upstream, (notify_blocked, blocked, ghost_barrier_after));
        set(Component::Subpartition(c), hash_of(sub));
        set(Component::Reader(c), hash_of((reader_credit, backlog_announced)));
        set(Component::Wire(c), hash_of(wire));
        set(Component::Barriers(c), hash_of(barriers));
    }
    for (p, pool) in pools.iter().enumerate() {
        set(Component::Pool(p as u8), hash_of(pool));
    }
    let failed = matches!(task, TaskPc::Failed { .. }).then_some(task);
    set(Component::Gate, hash_of(gate));
    set(Component::Task, hash_of(task));
    set(Component::TaskAnnounce, hash_of(task_announce));
    set(Component::Io, hash_of((io_pc, io_waiting, io_buffer)));
    set(Component::Client, hash_of((client_backlog, client_announce)));
    set(Component::Recycler, hash_of(recycler));
    set(Component::Setup, hash_of((partitions_requested, converted)));
    set(Component::Closed, hash_of(closed));
    set(
        Component::Handler,
        hash_of((checkpoints, barriers_seen, alignment, upstream_recovered)),
    );
    set(Component::Aborted, hash_of(aborted));
    set(Component::Halt, hash_of((violation, failed)));
    set(Component::Ghosts, hash_of((ghost_converted, ghost_lent_across)));
    out
}

/// The component hashes of every state of `g`.
fn hashes_of(g: &Graph) -> Vec<[u64; 64]> {
    g.states.iter().map(component_hashes).collect()
}

/// Check (b) for property `k` declared to read `declared`: the states of `g` bucketed by the
/// hash of the declared components; a bucket holding the property both true and false must not
/// have its two representatives agree on every declared component. Returns the number of
/// buckets, and a pair of states (where it holds, where it fails) that agree on `declared`.
/// Panics on a bucket whose representatives differ on a declared component: a fault of
/// [`component_hashes`], not of the declarations.
fn pair_check(g: &Graph, hashes: &[[u64; 64]], k: usize, declared: Components) -> (usize, Option<(u32, u32)>) {
    let bits: Vec<usize> = declared.iter().map(|c| c.bit().trailing_zeros() as usize).collect();
    // Projection hash → (a state where it fails, a state where it holds).
    let mut buckets: HashMap<u64, [Option<u32>; 2]> = HashMap::new();
    for (i, h) in hashes.iter().enumerate() {
        let key = hash_of(bits.iter().map(|&b| h[b]).collect::<Vec<_>>());
        let value = g.values[i] >> k & 1;
        buckets.entry(key).or_default()[value as usize].get_or_insert(i as u32);
    }
    let mut found = None;
    for slot in buckets.values() {
        let [Some(f), Some(t)] = *slot else { continue };
        let differ = changed_components(&g.states[f as usize], &g.states[t as usize]);
        assert!(
            differ.is_disjoint(declared),
            "states #{t} and #{f} hash alike but differ in {differ}: the component hashes are not what \
             changed_components compares"
        );
        found.get_or_insert((t, f));
    }
    (buckets.len(), found)
}

/// What check (b) counted and found.
#[derive(Default)]
struct PairReport {
    /// Classes of states that agree on a property's declared reads, summed over the properties.
    classes: usize,
    failures: Vec<String>,
}

/// Check (b) for every property on the graph `g` of `m` (`label` names it in failures).
fn check_pairs(m: &RecoveryModel, g: &Graph, label: &str, declared: Declared) -> PairReport {
    let n = m.cfg.channels.len();
    let hashes = hashes_of(g);
    let mut r = PairReport::default();
    for (k, &p) in PropertyId::ALL.iter().enumerate() {
        let reads = declared(m, n, p);
        let (classes, found) = pair_check(g, &hashes, k, reads);
        r.classes += classes;
        if let Some((t, f)) = found {
            let differ = changed_components(&g.states[f as usize], &g.states[t as usize]);
            r.failures.push(format!(
                "{label}: `{p}` holds in state #{t} and fails in #{f}, which differ only in {differ}, none of \
                 its declared reads {reads}"
            ));
        }
    }
    r
}

fn assert_none(failures: &[String]) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Runs (a) and, with `pairs`, (b) on each preset; fails on any finding; returns the totals.
fn check_presets(names: &[&str], pairs: bool) -> Report {
    let mut total = Report::new();
    for name in names {
        let started = std::time::Instant::now();
        let m = model_of(name, Variant::Fixed);
        let g = explore(&m);
        let r = check_edges(&m, &g, name, &declared);
        assert_none(&r.failures);
        assert!(r.edges > 0, "{name}: nothing checked");
        let mut line = format!("{name}: {} states, {} edges", r.states, r.edges);
        if pairs {
            let pr = check_pairs(&m, &g, name, &declared);
            assert_none(&pr.failures);
            line += &format!(", {} classes", pr.classes);
        }
        println!("{line}, {:.1} s", started.elapsed().as_secs_f64());
        total.add(&r);
    }
    total
}

/// The variants whose state graph on their preset exceeds about 100k states: run with
/// `--ignored`.
const BIG_VARIANTS: &[&str] = &[
    "enable-notify-flag-before-count",
    "floating-credit-during-recovery",
    "no-event-stash",
    "spill-snapshot-after-insertion",
    "trigger-swapped-when-drain-finishes",
    "floating-buffer-not-announced",
    "alignment-leaves-channels-blocked",
    "subsumed-by-older-barrier",
    "migrated-channel-not-queued",
];

fn small_variants() -> impl Iterator<Item = &'static VariantInfo> {
    VARIANTS.iter().filter(|i| !BIG_VARIANTS.contains(&i.name))
}

fn big_variants() -> impl Iterator<Item = &'static VariantInfo> {
    VARIANTS.iter().filter(|i| BIG_VARIANTS.contains(&i.name))
}

/// Runs (a) and (b) on each of `variants` on its own preset; returns the totals.
fn check_variants<'a>(variants: impl Iterator<Item = &'a VariantInfo>) -> Report {
    let mut total = Report::new();
    let mut count = 0;
    for info in variants {
        count += 1;
        let m = model_of(info.preset, info.variant);
        let label = format!("{} on {}", info.name, info.preset);
        let g = explore(&m);
        let r = check_edges(&m, &g, &label, &declared);
        assert_none(&r.failures);
        assert!(r.edges > 0, "{label}");
        assert_none(&check_pairs(&m, &g, &label, &declared).failures);
        println!("{label}: {} states, {} edges", r.states, r.edges);
        total.add(&r);
    }
    println!("{count} variants: {} states, {} edges", total.states, total.edges);
    total
}

/// Per property: edges on which it flipped, and the share of edges invisible to it.
fn print_flips(r: &Report) {
    for (k, p) in PropertyId::ALL.iter().enumerate() {
        println!(
            "  {:>6} flips, {:>5.1}% of edges invisible: {p}",
            r.flips[k],
            100.0 * r.invisible[k] as f64 / r.edges.max(1) as f64
        );
    }
}

#[test]
fn a_step_that_changes_none_of_a_propertys_reads_keeps_its_value() {
    let r = check_presets(PRESETS, true);
    println!("{} presets: {} states, {} edges", PRESETS.len(), r.states, r.edges);
    print_flips(&r);
    // Every property checked on some edge that did not concern it: the check is not vacuous.
    for (k, p) in PropertyId::ALL.iter().enumerate() {
        let everything = r.invisible[k] == 0;
        assert!(
            !everything || *p == PropertyId::EveryBufferReturnsHome,
            "`{p}`: no step left its reads alone"
        );
    }
}

/// Runs (a) and (b) on every other variant of the default run, from `first` (two tests, which
/// `cargo test` runs side by side).
fn check_half_of_the_variants(first: usize) {
    for name in BIG_VARIANTS {
        assert!(VARIANTS.iter().any(|i| i.name == *name), "no variant {name}");
    }
    let r = check_variants(small_variants().skip(first).step_by(2));
    print_flips(&r);
    // The variants break `always` properties: those flips are the ones the check must see.
    let always_flips: usize = (PropertyId::ALL.iter().enumerate())
        .filter(|(_, p)| p.expectation() == stateright::Expectation::Always)
        .map(|(k, _)| r.flips[k])
        .sum();
    assert!(always_flips > 0, "no variant flips an `always` property");
}

#[test]
fn on_the_bug_zoo_variants_too() {
    check_half_of_the_variants(0);
}

#[test]
fn on_the_other_bug_zoo_variants_too() {
    check_half_of_the_variants(1);
}

#[test]
fn with_any_channel_polled_too() {
    // The gate's queue not modelled: the properties about it read nothing.
    let m = model_of("tiny", Variant::Fixed).with_polling(GatePolling::AnyChannelWithData);
    let g = explore(&m);
    assert_none(&check_edges(&m, &g, "tiny, any channel polled", &declared).failures);
    assert_none(&check_pairs(&m, &g, "tiny, any channel polled", &declared).failures);
}

#[test]
#[ignore = "the bigger presets: a minute or more in debug builds"]
fn the_bigger_presets_too() {
    check_presets(BIGGER, true);
}

#[test]
#[ignore = "the bigger variants: half a minute in debug builds"]
fn the_bigger_variants_too() {
    check_variants(big_variants());
}

/// The declaration of `p` without component `c`.
fn without(p: PropertyId, c: Component) -> impl Fn(&RecoveryModel, usize, PropertyId) -> Components {
    move |m, n, q| {
        let r = reads(m, n, q);
        if q == p { r.without(c.into()) } else { r }
    }
}

/// Leaves `c` out of `p`'s declaration on `model` (`label`) and returns what (a) and, with
/// `pairs`, (b) find about `p`.
fn leave_out(label: &str, m: &RecoveryModel, p: PropertyId, c: Component, pairs: bool) -> (Vec<String>, Vec<String>) {
    let g = explore(m);
    let edges = check_edges(m, &g, label, &without(p, c)).failures;
    let pairs = if pairs {
        check_pairs(m, &g, label, &without(p, c)).failures
    } else {
        Vec::new()
    };
    let about_p = |f: &Vec<String>| f.iter().filter(|f| f.contains(p.name())).cloned().collect();
    (about_p(&edges), about_p(&pairs))
}

#[test]
fn a_component_left_out_of_a_declaration_is_caught() {
    // (a): the gate is done only once nothing is on the wire; a released channel's `onBuffer`
    // dropping the last `BufferResponse` changes nothing else and ends the run. And the first
    // assertion that fires flips the property that reports it.
    let cases = [
        ("legacy", PropertyId::EveryBufferReturnsHome, Component::Wire(1)),
        ("late-floating-credit", PropertyId::NoProtocolViolation, Component::Halt),
    ];
    for (name, p, c) in cases {
        let (edges, _) = leave_out(name, &model_of(name, Variant::Fixed), p, c, false);
        assert!(!edges.is_empty(), "(a) on {name} missed `{p}` without {c}");
    }
    // (b): credit on its way back in a `BufferResponse` counts. Two states that agree on
    // everything else the property reads, the manager and the reader's credit included, but
    // not on the wire, differ in whether credit and buffers agree. (a) misses it: no step
    // changes the wire without the manager or the reader.
    let (name, p, c) = ("late-floating-credit", PropertyId::NoLostCredit, Component::Wire(0));
    let (edges, pairs) = leave_out(name, &model_of(name, Variant::Fixed), p, c, true);
    assert!(edges.is_empty() && !pairs.is_empty(), "{edges:#?}\n{pairs:#?}");
}

/// Whether some edge of `g` flips property `k` while changing nothing of `declared`.
fn flips_unseen(g: &Graph, k: usize, declared: Components) -> bool {
    (g.edges.iter()).any(|&(i, j, changed)| {
        (g.values[i as usize] ^ g.values[j as usize]) >> k & 1 == 1 && changed.is_disjoint(declared)
    })
}

/// For each property and each component it declares, whether leaving the component out is
/// caught by (a) or (b) on the presets and variants of the default run: a component never caught may
/// be read needlessly, or only in states these do not reach.
#[test]
#[ignore = "a diagnostic: a minute in debug builds"]
fn which_left_out_components_are_caught() {
    let models = (PRESETS
        .iter()
        .map(|name| (name.to_string(), model_of(name, Variant::Fixed))))
    .chain(small_variants().map(|i| (i.name.to_string(), model_of(i.preset, i.variant))));
    // Per property: component → the first model that catches its absence.
    let mut caught: Vec<HashMap<Component, String>> = vec![HashMap::new(); PropertyId::ALL.len()];
    let mut declared = vec![Components::EMPTY; PropertyId::ALL.len()];
    for (label, m) in models {
        let g = explore(&m);
        let hashes = hashes_of(&g);
        let n = m.cfg.channels.len();
        for (k, &p) in PropertyId::ALL.iter().enumerate() {
            let r = reads(&m, n, p);
            declared[k] |= r;
            for c in r.iter() {
                let without = r.without(c.into());
                let edge = || flips_unseen(&g, k, without);
                if !caught[k].contains_key(&c) && (edge() || pair_check(&g, &hashes, k, without).1.is_some()) {
                    caught[k].insert(c, label.clone());
                }
            }
        }
    }
    for (k, p) in PropertyId::ALL.iter().enumerate() {
        let (hit, missed): (Vec<Component>, Vec<Component>) =
            declared[k].iter().partition(|c| caught[k].contains_key(c));
        let hit: Vec<String> = hit.iter().map(|c| format!("{c} ({})", caught[k][c])).collect();
        let missed: Vec<String> = missed.iter().map(|c| c.to_string()).collect();
        println!(
            "{p}:\n  caught: {}\n  never caught: {}",
            hit.join(", "),
            missed.join(", ")
        );
    }
}

/// The declarations, per property, for a few presets' shapes.
#[test]
#[ignore = "prints the declarations"]
fn what_each_property_reads() {
    for name in [
        "tiny",
        "local-buffers",
        "shared-pool",
        "legacy",
        "aligned-timeout-two-channels",
    ] {
        let m = model_of(name, Variant::Fixed);
        let n = m.cfg.channels.len();
        println!("== {name} ({n} channels)");
        for &p in PropertyId::ALL {
            let r = reads(&m, n, p);
            println!("  {:>2} {p}: {r}", r.0.count_ones());
        }
        let always = all_reads(&m, n, PropertyId::with_expectation(stateright::Expectation::Always));
        println!("  every `always` property: {always}");
    }
}
