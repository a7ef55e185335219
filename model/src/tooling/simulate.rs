//! Seeded simulation, for configurations too large to explore exhaustively: random walks from
//! the initial state that evaluate every property on every state they visit.
//!
//! A walk is chosen by `(seed, walk index)` alone, so a run gives the same result on any number
//! of threads and any violation can be reproduced from its seed. A counterexample is shrunk
//! before it is reported: loops (a state visited twice) are cut out, then single steps are
//! dropped while the rest stays enabled and still refutes the property.
//!
//! Simulation can refute a property, never prove it: an `always` or `eventually` property that
//! no walk refuted is reported as `not_refuted`, not as holding.

use crate::action::Action;
use crate::model::RecoveryModel;
use crate::properties::PropertyId;
use crate::state::State;
use serde::Serialize;
use stateright::{Expectation, Model};
use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Instant;

/// SplitMix64: a small, seedable, portable generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// What to simulate.
#[derive(Clone, Copy, Debug)]
pub struct SimulationOptions {
    /// The run's seed.
    pub seed: u64,
    /// How many walks.
    pub walks: usize,
    /// The longest walk, in steps.
    pub max_steps: usize,
    /// Threads sharing the walks.
    pub threads: usize,
}

/// A simulated verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SimStatus {
    /// An `always`/`eventually` property no walk refuted (not a proof).
    NotRefuted,
    /// A walk refuted it.
    Violated,
    /// A `sometimes` property a walk satisfied.
    ExampleFound,
    /// A `sometimes` property no walk satisfied.
    ExampleNotSeen,
}

/// One property's simulated result.
#[derive(Clone, Debug, Serialize)]
pub struct SimProperty {
    /// Its name.
    pub name: &'static str,
    /// `always`, `eventually` or `sometimes`.
    pub expectation: &'static str,
    /// The verdict.
    pub status: SimStatus,
    /// The first walk (by index) that refuted or satisfied it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk: Option<usize>,
    /// Steps of that walk up to the refuting or satisfying state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_after: Option<usize>,
    /// The counterexample after shrinking (violations only), as readable actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<String>>,
    /// The same path as actions.
    #[serde(skip)]
    pub actions: Option<Vec<Action>>,
}

/// The result of a simulation.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    /// The run's seed.
    pub seed: u64,
    /// Walks run.
    pub walks: usize,
    /// Steps taken over all walks.
    pub steps: usize,
    /// Distinct states visited (by 64-bit fingerprint).
    pub distinct_states: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Every property.
    pub properties: Vec<SimProperty>,
}

impl SimulationReport {
    /// Whether no walk refuted a property.
    pub fn passed(&self) -> bool {
        !self.properties.iter().any(|p| p.status == SimStatus::Violated)
    }
}

fn fingerprint(s: &State) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The generator of walk `walk` of a run seeded `seed`.
fn walk_rng(seed: u64, walk: usize) -> SplitMix64 {
    let mut mix = SplitMix64::new(seed ^ (walk as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    SplitMix64::new(mix.next_u64())
}

/// Whether `s` refutes property `p` (index into [`PropertyId::ALL`]) as the checker defines it: an
/// `always` predicate false anywhere, an `eventually` predicate false in a terminal state.
fn refutes(model: &RecoveryModel, p: usize, s: &State) -> bool {
    let (e, pred) = (PropertyId::ALL[p].expectation(), PropertyId::ALL[p].predicate());
    match e {
        Expectation::Always => !pred(model, s),
        Expectation::Eventually => model.is_terminal(s) && !pred(model, s),
        Expectation::Sometimes => false,
    }
}

/// The first state of each property's refutation or example on one walk: (property, step).
struct Walk {
    steps: usize,
    states: Vec<u64>,
    hits: Vec<(usize, usize)>,
    actions: Vec<Action>,
}

fn run_walk(model: &RecoveryModel, rng: &mut SplitMix64, max_steps: usize) -> Walk {
    let inits = model.init_states();
    let mut s = inits[rng.below(inits.len())].clone();
    let mut walk = Walk {
        steps: 0,
        states: vec![fingerprint(&s)],
        hits: Vec::new(),
        actions: Vec::new(),
    };
    let mut seen = vec![false; PropertyId::ALL.len()];
    let mut enabled = Vec::new();
    loop {
        for (p, id) in PropertyId::ALL.iter().enumerate() {
            let hit = match id.expectation() {
                Expectation::Sometimes => id.predicate()(model, &s),
                _ => refutes(model, p, &s),
            };
            if hit && !std::mem::replace(&mut seen[p], true) {
                walk.hits.push((p, walk.steps));
            }
        }
        if walk.steps == max_steps {
            return walk;
        }
        enabled.clear();
        model.actions(&s, &mut enabled);
        let successors: Vec<(Action, State)> = enabled
            .drain(..)
            .filter_map(|a| model.next_state(&s, a).map(|n| (a, n)))
            .collect();
        if successors.is_empty() {
            return walk;
        }
        let pick = rng.below(successors.len());
        let (a, next) = successors.into_iter().nth(pick).expect("in range");
        walk.actions.push(a);
        walk.steps += 1;
        walk.states.push(fingerprint(&next));
        s = next;
    }
}

/// Replays `actions` from the initial state, each one enabled where it is taken, and returns the
/// states, or None if a step is not enabled.
fn replay(model: &RecoveryModel, actions: &[Action]) -> Option<Vec<State>> {
    let mut s = model.init_states().into_iter().next()?;
    let mut states = vec![s.clone()];
    let mut enabled = Vec::new();
    for a in actions {
        enabled.clear();
        model.actions(&s, &mut enabled);
        if !enabled.contains(a) {
            return None;
        }
        s = model.next_state(&s, *a)?;
        states.push(s.clone());
    }
    Some(states)
}

/// The shortest prefix of `actions` whose last state refutes `p`, if any.
fn refuting_prefix(model: &RecoveryModel, p: usize, actions: &[Action]) -> Option<Vec<Action>> {
    let states = replay(model, actions)?;
    let at = states.iter().position(|s| refutes(model, p, s))?;
    Some(actions[..at].to_vec())
}

/// Shrinks a counterexample of property `p`: cuts loops, then drops single steps while the rest
/// stays enabled and still refutes `p`, until no single step can go.
pub fn shrink(model: &RecoveryModel, p: usize, actions: &[Action]) -> Vec<Action> {
    let Some(mut best) = refuting_prefix(model, p, actions) else {
        return actions.to_vec();
    };
    // Loops: a state visited twice makes the steps between them unnecessary.
    if let Some(states) = replay(model, &best) {
        let fps: Vec<u64> = states.iter().map(fingerprint).collect();
        let mut cut = Vec::new();
        let mut i = 0;
        while i < best.len() {
            let last_same = fps.iter().rposition(|f| *f == fps[i]).unwrap_or(i);
            if last_same > i {
                i = last_same;
                continue;
            }
            cut.push(best[i]);
            i += 1;
        }
        if let Some(shorter) = refuting_prefix(model, p, &cut) {
            best = shorter;
        }
    }
    // Single steps.
    loop {
        let mut improved = false;
        let mut i = 0;
        while i < best.len() {
            let mut candidate = best.clone();
            candidate.remove(i);
            match refuting_prefix(model, p, &candidate) {
                Some(shorter) => {
                    best = shorter;
                    improved = true;
                }
                None => i += 1,
            }
        }
        if !improved {
            return best;
        }
    }
}

/// Runs `opts.walks` seeded walks of at most `opts.max_steps` steps and evaluates every property
/// on every state; violations are shrunk.
pub fn simulate(model: &RecoveryModel, opts: SimulationOptions) -> SimulationReport {
    let start = Instant::now();
    let threads = opts.threads.clamp(1, opts.walks.max(1));
    type Part = (usize, HashSet<u64>, Vec<(usize, usize, usize, Vec<Action>)>);
    let parts: Vec<Part> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut steps = 0;
                    let mut states = HashSet::new();
                    // (property, walk, step, actions) of the first hit of each property here.
                    let mut first: Vec<(usize, usize, usize, Vec<Action>)> = Vec::new();
                    for w in (t..opts.walks).step_by(threads) {
                        let mut rng = walk_rng(opts.seed, w);
                        let walk = run_walk(model, &mut rng, opts.max_steps);
                        steps += walk.steps;
                        states.extend(walk.states.iter().copied());
                        for (p, at) in walk.hits {
                            if !first.iter().any(|f| f.0 == p) {
                                first.push((p, w, at, walk.actions[..at].to_vec()));
                            }
                        }
                    }
                    (steps, states, first)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a walk panicked"))
            .collect()
    });
    let mut steps = 0;
    let mut states = HashSet::new();
    let mut first: Vec<Option<(usize, usize, Vec<Action>)>> = vec![None; PropertyId::ALL.len()];
    for (s, st, hits) in parts {
        steps += s;
        states.extend(st);
        for (p, w, at, actions) in hits {
            // The lowest walk index wins, whatever thread ran it.
            if first[p].as_ref().is_none_or(|f| w < f.0) {
                first[p] = Some((w, at, actions));
            }
        }
    }
    let properties = PropertyId::ALL
        .iter()
        .enumerate()
        .map(|(p, id)| {
            let e = &id.expectation();
            let hit = first[p].take();
            let (status, actions) = match (e, &hit) {
                (Expectation::Sometimes, Some((_, _, a))) => (SimStatus::ExampleFound, Some(a.clone())),
                (Expectation::Sometimes, None) => (SimStatus::ExampleNotSeen, None),
                (_, Some((_, _, a))) => (SimStatus::Violated, Some(shrink(model, p, a))),
                (_, None) => (SimStatus::NotRefuted, None),
            };
            SimProperty {
                name: id.name(),
                expectation: crate::tooling::check::expectation_name(e),
                status,
                walk: hit.as_ref().map(|h| h.0),
                found_after: hit.as_ref().map(|h| h.1),
                trace: (status == SimStatus::Violated)
                    .then(|| {
                        actions
                            .as_ref()
                            .map(|a| a.iter().map(|a| model.format_action(a)).collect())
                    })
                    .flatten(),
                actions: actions.filter(|_| status == SimStatus::Violated),
            }
        })
        .collect();
    SimulationReport {
        seed: opts.seed,
        walks: opts.walks,
        steps,
        distinct_states: states.len(),
        seconds: start.elapsed().as_secs_f64(),
        properties,
    }
}
