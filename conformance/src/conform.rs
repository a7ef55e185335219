//! Runs many traces against a driver in lockstep with the model and reports coverage and
//! divergences: the library behind `cdr conform`.
//!
//! Traces are independent (each starts from a reset), so they are replayed by `jobs` workers
//! in parallel, each with a driver of its own, and can be split into deterministic shards for
//! a CI matrix. The traces are numbered in the order the generator makes them; shard `K/N`
//! takes those whose number is `K-1` modulo `N`. Counts are sums over traces, so the merged
//! report of every shard, or of any number of jobs, is the single run's.

use crate::driver::{Driver, DriverError, ModelDriver};
use crate::generate::{Graph, SplitMix64, random_walk};
use crate::replay::{Compare, Divergence, ReplayError, lockstep};
use recovery_model::{Action, RecoveryModel};
use serde::Serialize;
use stateright::Model;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// Makes a driver for one worker (each job has its own implementation instance).
pub type DriverFactory<'a> = dyn Fn() -> Result<Box<dyn Driver>, DriverError> + Sync + 'a;

/// Called by a worker each time it has replayed a trace: the caller's progress line (`cdr` draws
/// one; the library prints nothing).
pub type OnTrace<'a> = dyn Fn() + Sync + 'a;

/// How a run is split and shown.
#[derive(Clone, Copy, Debug)]
pub struct ConformOptions {
    /// Workers replaying traces in parallel (at least 1).
    pub jobs: usize,
    /// This run replays shard `.0` (1-based) of `.1`.
    pub shard: Option<(usize, usize)>,
    /// Stop after this many diverging traces.
    pub max_divergences: usize,
}

impl Default for ConformOptions {
    fn default() -> Self {
        ConformOptions {
            jobs: 1,
            shard: None,
            max_divergences: 1,
        }
    }
}

/// What a conformance run covered and found. Serializes to the `--json` shape of `cdr conform`.
#[derive(Clone, Debug, Serialize)]
pub struct ConformReport {
    /// The driver's name (`impl`, `flink-2.3.0`).
    pub driver: String,
    /// The shard replayed, `K/N`, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Traces replayed (to their end, to a divergence or to an unsupported step).
    pub traces: usize,
    /// Steps replayed.
    pub steps: usize,
    /// Steps per second of wall-clock time, generation included.
    pub steps_per_second: f64,
    /// Distinct model states reached by replayed steps.
    pub states_covered: usize,
    /// Reachable states of the configuration (edge-complete runs; random walks do not explore
    /// the graph, so they leave it null).
    pub states_total: Option<usize>,
    /// Distinct edges (state, action) replayed (in this shard).
    pub edges_covered: usize,
    /// Edges of the reachable graph (edge-complete runs only).
    pub edges_total: Option<usize>,
    /// Edges this run's traces take for the first time (all of them, unless sharded or cut
    /// short after a divergence; for random walks, the edges they take).
    pub edges_share: usize,
    /// Whether the traces are the edge-complete set (else random walks).
    pub edge_complete: bool,
    /// Action kinds replayed at least once.
    pub action_kinds_covered: usize,
    /// Action kinds of the model (`Action::KINDS`).
    pub action_kinds_total: usize,
    /// Traces that diverged.
    pub divergences: usize,
    /// Wall-clock seconds.
    #[serde(skip)]
    pub seconds: f64,
    /// Action kinds no reachable state enables in this configuration (random walks: no state
    /// the walks visited).
    #[serde(rename = "action_kinds_unreachable")]
    pub kinds_unreachable: Vec<&'static str>,
    /// Action kinds reachable (random walks: enabled in a visited state) but never replayed.
    #[serde(rename = "action_kinds_missed")]
    pub kinds_missed: Vec<&'static str>,
    /// Coverage lost: per action kind, the traces cut because the driver could not perform a
    /// step of that kind.
    pub unsupported: BTreeMap<&'static str, usize>,
    /// Snapshot fields the driver cannot read (left out of every comparison).
    pub unobserved: Vec<String>,
    /// The first divergence (the lowest trace number).
    #[serde(skip)]
    pub first_divergence: Option<Box<Divergence>>,
}

impl ConformReport {
    /// What `--require-complete` finds missing, empty when complete: every edge this run's
    /// traces take first was replayed, no step was unsupported, and, unless the run is one
    /// shard of several, every reachable action kind was replayed and (edge-complete runs)
    /// every edge of the graph.
    pub fn incomplete(&self) -> Vec<String> {
        let mut missing = Vec::new();
        if self.edges_covered < self.edges_share {
            missing.push(format!(
                "{} of the {} edges of this run were not replayed",
                self.edges_share - self.edges_covered,
                self.edges_share
            ));
        }
        for (kind, n) in &self.unsupported {
            missing.push(format!("{n} traces cut at an unsupported {kind}"));
        }
        if self.shard.is_none() {
            if let Some(total) = self.edges_total.filter(|t| *t > self.edges_share) {
                missing.push(format!("{} edges not in any trace", total - self.edges_share));
            }
            if !self.kinds_missed.is_empty() {
                missing.push(format!(
                    "reachable but never replayed: {}",
                    self.kinds_missed.join(", ")
                ));
            }
        }
        missing
    }
}

/// The run stopped on a harness error: no verdict.
#[derive(Clone, Debug)]
pub struct HarnessFailure {
    /// The trace number.
    pub trace: usize,
    /// 1-based step (0: at reset or driver start).
    pub step: usize,
    /// What happened.
    pub message: String,
}

impl std::fmt::Display for HarnessFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "harness error in trace {} at step {}: {}",
            self.trace, self.step, self.message
        )
    }
}

/// One trace to replay.
struct Job {
    index: usize,
    actions: Vec<Action>,
    compare: Compare,
    /// Positions of the steps that take an edge for the first time (edge-complete runs).
    new_at: Vec<u32>,
    /// The state before each step and after the last (ids or fingerprints).
    states: Vec<u64>,
}

/// What one worker saw; tallies merge by addition.
#[derive(Default)]
struct Tally {
    traces: usize,
    steps: usize,
    kinds: BTreeSet<&'static str>,
    divergences: usize,
    first: Option<(usize, Box<Divergence>)>,
    unsupported: BTreeMap<&'static str, usize>,
    edges_new: usize,
    edges_share: usize,
    states: HashSet<u64>,
    edges: HashSet<(u64, Action)>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.traces += other.traces;
        self.steps += other.steps;
        self.kinds.extend(other.kinds);
        self.divergences += other.divergences;
        if let Some((i, d)) = other.first
            && self.first.as_ref().is_none_or(|(j, _)| i < *j)
        {
            self.first = Some((i, d));
        }
        for (k, n) in other.unsupported {
            *self.unsupported.entry(k).or_default() += n;
        }
        self.edges_new += other.edges_new;
        self.edges_share += other.edges_share;
        self.states.extend(other.states);
        self.edges.extend(other.edges);
    }

    /// Records the steps `..performed` of `job` as replayed.
    fn performed(&mut self, job: &Job, performed: usize, by_fingerprint: bool) {
        self.steps += performed;
        self.kinds.extend(job.actions[..performed].iter().map(Action::method));
        self.edges_new += job.new_at.iter().filter(|p| (**p as usize) < performed).count();
        self.states.extend(&job.states[..=performed]);
        if by_fingerprint {
            for (i, a) in job.actions[..performed].iter().enumerate() {
                self.edges.insert((job.states[i], *a));
            }
        }
    }
}

/// Replays `jobs` on drivers from `factory`, with `opts.jobs` workers.
fn run(
    model: &RecoveryModel,
    factory: &DriverFactory,
    opts: ConformOptions,
    jobs: &mut (dyn Iterator<Item = Job> + Send),
    by_fingerprint: bool,
    progress: &OnTrace,
) -> Result<(Tally, String, Vec<String>), HarnessFailure> {
    let shared = Run {
        model,
        factory,
        by_fingerprint,
        progress,
        source: Mutex::new(jobs),
        divergences: AtomicUsize::new(0),
        max: opts.max_divergences.max(1),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        identity: Mutex::new(None),
    };
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..opts.jobs.max(1)).map(|_| scope.spawn(|| shared.work())).collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a conform worker panicked"))
            .collect()
    });
    if let Some(f) = shared.failure.into_inner().unwrap() {
        return Err(f);
    }
    let mut total = Tally::default();
    for t in tallies {
        total.merge(t);
    }
    let (name, unobserved) = shared.identity.into_inner().unwrap().unwrap_or_default();
    Ok((total, name, unobserved))
}

/// What the workers of one run share: the traces left, and what stops them.
struct Run<'a, 'j> {
    model: &'a RecoveryModel,
    factory: &'a DriverFactory<'a>,
    by_fingerprint: bool,
    progress: &'a OnTrace<'a>,
    source: Mutex<&'j mut (dyn Iterator<Item = Job> + Send)>,
    /// Diverging traces so far, of every worker; the run stops at `max`.
    divergences: AtomicUsize,
    max: usize,
    stop: AtomicBool,
    /// The first harness failure, which stops the run.
    failure: Mutex<Option<HarnessFailure>>,
    /// The driver's name and what it does not observe, from the first driver made.
    identity: Mutex<Option<(String, Vec<String>)>>,
}

impl Run<'_, '_> {
    /// One worker: a driver of its own, replaying traces until none is left or the run stops.
    fn work(&self) -> Tally {
        let mut tally = Tally::default();
        let mut driver = match (self.factory)() {
            Ok(d) => d,
            Err(e) => {
                self.fail(HarnessFailure {
                    trace: 0,
                    step: 0,
                    message: e.to_string(),
                });
                return tally;
            }
        };
        self.identity
            .lock()
            .unwrap()
            .get_or_insert_with(|| (driver.name().to_string(), driver.unobserved().to_vec()));
        let mut reference = ModelDriver::new(self.model.clone());
        while !self.stop.load(Ordering::SeqCst) {
            let Some(job) = self.source.lock().unwrap().next() else {
                break;
            };
            self.replay(&mut tally, &mut reference, driver.as_mut(), &job);
            (self.progress)();
        }
        tally
    }

    /// Replays `job` in lockstep with the model, and counts it in `tally`.
    fn replay(&self, tally: &mut Tally, reference: &mut ModelDriver, driver: &mut dyn Driver, job: &Job) {
        tally.traces += 1;
        tally.edges_share += job.new_at.len();
        match lockstep(reference, driver, &job.actions, job.compare) {
            Ok(n) => tally.performed(job, n, self.by_fingerprint),
            Err(ReplayError::Diverged(d)) => {
                tally.performed(job, d.step - 1, false);
                tally.divergences += 1;
                if tally.first.as_ref().is_none_or(|(j, _)| job.index < *j) {
                    tally.first = Some((job.index, d));
                }
                if self.divergences.fetch_add(1, Ordering::SeqCst) + 1 >= self.max {
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
            Err(ReplayError::Unsupported { step, action, .. }) => {
                tally.performed(job, step - 1, self.by_fingerprint);
                *tally.unsupported.entry(action.method()).or_default() += 1;
            }
            Err(ReplayError::Harness { step, message }) => self.fail(HarnessFailure {
                trace: job.index,
                step,
                message,
            }),
        }
    }

    /// Keeps the run's first harness failure and stops every worker.
    fn fail(&self, failure: HarnessFailure) {
        self.failure.lock().unwrap().get_or_insert(failure);
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn in_shard(index: usize, shard: Option<(usize, usize)>) -> bool {
    shard.is_none_or(|(k, n)| index % n == k - 1)
}

/// What the configuration offers: totals of the reachable graph where it was explored, and the
/// action kinds that can occur.
struct Offered<'a> {
    states: Option<usize>,
    edges: Option<usize>,
    kinds: &'a BTreeSet<&'static str>,
}

fn report(
    offered: Offered,
    opts: ConformOptions,
    start: Instant,
    (tally, driver, unobserved): (Tally, String, Vec<String>),
    states_covered: usize,
    edges_covered: usize,
    edges_share: usize,
) -> ConformReport {
    let seconds = start.elapsed().as_secs_f64();
    let kinds_unreachable = Action::KINDS
        .iter()
        .copied()
        .filter(|k| !offered.kinds.contains(k))
        .collect();
    let kinds_missed = offered
        .kinds
        .iter()
        .copied()
        .filter(|k| !tally.kinds.contains(k))
        .collect();
    ConformReport {
        driver,
        shard: opts.shard.map(|(k, n)| format!("{k}/{n}")),
        traces: tally.traces,
        steps: tally.steps,
        steps_per_second: tally.steps as f64 / seconds.max(1e-9),
        states_covered,
        states_total: offered.states,
        edges_covered,
        edges_total: offered.edges,
        edges_share,
        edge_complete: true,
        action_kinds_covered: tally.kinds.len(),
        action_kinds_total: Action::KINDS.len(),
        divergences: tally.divergences,
        seconds,
        kinds_unreachable,
        kinds_missed,
        unsupported: tally.unsupported,
        unobserved,
        first_divergence: tally.first.map(|(_, d)| d),
    }
}

/// Replays an edge-complete set of traces of `model` (or shard `opts.shard` of it). Observations
/// are compared at every step; snapshots from the first newly covered edge of each trace on
/// (the prefix was compared by the trace that covered it). `progress` is called once per trace.
pub fn conform_edges(
    model: &RecoveryModel,
    factory: &DriverFactory,
    opts: ConformOptions,
    progress: &OnTrace,
) -> Result<ConformReport, HarnessFailure> {
    let start = Instant::now();
    let graph = Graph::explore(model);
    let mut jobs = graph
        .edge_cover()
        .enumerate()
        .filter(|(i, _)| in_shard(*i, opts.shard))
        .map(|(index, t)| {
            let mut states = Vec::with_capacity(t.states.len() + 1);
            states.push(0); // every trace starts at the initial state, number 0
            states.extend(t.states.iter().map(|s| *s as u64));
            Job {
                index,
                compare: Compare::From(t.prefix),
                new_at: t.new_at,
                states,
                actions: t.actions,
            }
        });
    let outcome = run(model, factory, opts, &mut jobs, false, progress)?;
    let states_covered = outcome.0.states.len();
    let (edges_covered, share) = (outcome.0.edges_new, outcome.0.edges_share);
    let kinds = graph.kinds.iter().copied().collect();
    let offered = Offered {
        states: Some(graph.states()),
        edges: Some(graph.edges()),
        kinds: &kinds,
    };
    Ok(report(
        offered,
        opts,
        start,
        outcome,
        states_covered,
        edges_covered,
        share,
    ))
}

/// Replays `walks` random walks from `seed` (or shard `opts.shard` of them), comparing
/// everything at every step. The walks are drawn in order from one generator, so a walk is
/// the same whatever the jobs and shards. The reachable graph is not explored (that is what
/// makes walks cheap on large presets): kinds are judged by the states the walks visit.
pub fn conform_random(
    model: &RecoveryModel,
    factory: &DriverFactory,
    walks: usize,
    seed: u64,
    opts: ConformOptions,
    progress: &OnTrace,
) -> Result<ConformReport, HarnessFailure> {
    let start = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let enabled: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut jobs = (0..walks)
        .map(|index| {
            let (actions, states, kinds) = walk_with_enabled_kinds(model, &mut rng);
            (index, actions, states, kinds)
        })
        .filter(|(i, ..)| in_shard(*i, opts.shard))
        .map(|(index, actions, states, kinds)| {
            enabled.lock().unwrap().extend(kinds);
            Job {
                index,
                actions,
                compare: Compare::Every,
                new_at: Vec::new(),
                states,
            }
        });
    let outcome = run(model, factory, opts, &mut jobs, true, progress)?;
    let (states, edges) = (outcome.0.states.len(), outcome.0.edges.len());
    let kinds = enabled.into_inner().unwrap();
    let offered = Offered {
        states: None,
        edges: None,
        kinds: &kinds,
    };
    let mut r = report(offered, opts, start, outcome, states, edges, edges);
    r.edge_complete = false;
    Ok(r)
}

/// A random walk (as [`random_walk`]) with the action kinds enabled at the states it visits.
fn walk_with_enabled_kinds(
    model: &RecoveryModel,
    rng: &mut SplitMix64,
) -> (Vec<Action>, Vec<u64>, BTreeSet<&'static str>) {
    let (walk, visited) = random_walk(model, rng, 10_000);
    let mut kinds = BTreeSet::new();
    let mut state = model.init_states().remove(0);
    let mut enabled = Vec::new();
    for a in walk.iter().map(Some).chain([None]) {
        enabled.clear();
        model.actions(&state, &mut enabled);
        kinds.extend(enabled.iter().map(Action::method));
        if let Some(a) = a {
            state = model.next_state(&state, *a).expect("a walk takes enabled actions");
        }
    }
    (walk, visited, kinds)
}
