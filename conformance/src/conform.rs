//! Runs many traces against a driver in lockstep with the model and reports coverage and
//! divergences: the library behind `cdr conform`.

use crate::driver::{Driver, ModelDriver};
use crate::generate::{Graph, SplitMix64, random_walk};
use crate::replay::{Compare, Divergence, lockstep};
use recovery_model::{Action, RecoveryModel};
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};
use std::time::Instant;

/// What a conformance run covered and found. Serializes to the `--json` shape of `cdr conform`.
#[derive(Clone, Debug, Serialize)]
pub struct ConformReport {
    /// Traces replayed.
    pub traces: usize,
    /// Steps replayed.
    pub steps: usize,
    /// Steps per second of wall-clock time, generation included.
    pub steps_per_second: f64,
    /// Distinct model states reached by replayed steps.
    pub states_covered: usize,
    /// Reachable states of the configuration.
    pub states_total: usize,
    /// Distinct edges (state, action) replayed.
    pub edges_covered: usize,
    /// Edges of the reachable graph.
    pub edges_total: usize,
    /// Action kinds replayed at least once.
    pub action_kinds_covered: usize,
    /// Action kinds of the model (`Action::KINDS`).
    pub action_kinds_total: usize,
    /// Traces that diverged.
    pub divergences: usize,
    /// Wall-clock seconds.
    #[serde(skip)]
    pub seconds: f64,
    /// Action kinds no reachable state enables in this configuration.
    #[serde(rename = "action_kinds_unreachable")]
    pub kinds_unreachable: Vec<&'static str>,
    /// Action kinds reachable but never replayed.
    #[serde(rename = "action_kinds_missed")]
    pub kinds_missed: Vec<&'static str>,
    /// The first divergence.
    #[serde(skip)]
    pub first_divergence: Option<Box<Divergence>>,
}

struct Tally {
    start: Instant,
    traces: usize,
    steps: usize,
    kinds: BTreeSet<&'static str>,
    divergences: usize,
    first: Option<Box<Divergence>>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            start: Instant::now(),
            traces: 0,
            steps: 0,
            kinds: BTreeSet::new(),
            divergences: 0,
            first: None,
        }
    }

    fn run(&mut self, model: &mut ModelDriver, driver: &mut dyn Driver, actions: &[Action], compare: Compare) -> bool {
        self.traces += 1;
        match lockstep(model, driver, actions, compare) {
            Ok(n) => {
                self.steps += n;
                self.kinds.extend(actions.iter().map(Action::method));
                true
            }
            Err(d) => {
                self.steps += d.step;
                self.kinds.extend(actions[..d.step - 1].iter().map(Action::method));
                self.divergences += 1;
                self.first.get_or_insert(d);
                false
            }
        }
    }

    fn report(self, graph: &Graph, states_covered: usize, edges_covered: usize) -> ConformReport {
        let seconds = self.start.elapsed().as_secs_f64();
        let kinds_unreachable = Action::KINDS
            .iter()
            .copied()
            .filter(|k| !graph.kinds.contains(k))
            .collect();
        let kinds_missed = graph
            .kinds
            .iter()
            .copied()
            .filter(|k| !self.kinds.contains(k))
            .collect();
        ConformReport {
            traces: self.traces,
            steps: self.steps,
            steps_per_second: self.steps as f64 / seconds.max(1e-9),
            states_covered,
            states_total: graph.states(),
            edges_covered,
            edges_total: graph.edges(),
            action_kinds_covered: self.kinds.len(),
            action_kinds_total: Action::KINDS.len(),
            divergences: self.divergences,
            seconds,
            kinds_unreachable,
            kinds_missed,
            first_divergence: self.first,
        }
    }
}

/// Replays an edge-complete set of traces of `model` on `driver`. Observations are compared at
/// every step; snapshots from the first newly covered edge of each trace on (the prefix was
/// compared by an earlier trace). Stops after `max_divergences` divergences.
pub fn conform_edges(model: &RecoveryModel, driver: &mut dyn Driver, max_divergences: usize) -> ConformReport {
    let mut tally = Tally::new();
    let graph = Graph::explore(model);
    let mut reference = ModelDriver::new(model.clone());
    let mut visited = vec![false; graph.states()];
    visited[0] = true;
    let mut edges_covered = 0;
    for t in graph.edge_cover() {
        if !tally.run(&mut reference, driver, &t.actions, Compare::From(t.prefix)) {
            if tally.divergences >= max_divergences {
                break;
            }
            continue;
        }
        edges_covered += t.new_edges;
        for s in &t.states {
            visited[*s as usize] = true;
        }
    }
    let states_covered = visited.iter().filter(|v| **v).count();
    tally.report(&graph, states_covered, edges_covered)
}

/// Replays `walks` random walks from `seed` on `driver`, comparing everything at every step.
pub fn conform_random(
    model: &RecoveryModel,
    driver: &mut dyn Driver,
    walks: usize,
    seed: u64,
    max_divergences: usize,
) -> ConformReport {
    let mut tally = Tally::new();
    let graph = Graph::explore(model);
    let mut reference = ModelDriver::new(model.clone());
    let mut rng = SplitMix64::new(seed);
    let (mut states, mut edges) = (HashSet::new(), HashSet::new());
    for _ in 0..walks {
        let (walk, visited) = random_walk(model, &mut rng, 10_000);
        if !tally.run(&mut reference, driver, &walk, Compare::Every) {
            if tally.divergences >= max_divergences {
                break;
            }
            continue;
        }
        for (i, a) in walk.iter().enumerate() {
            edges.insert((visited[i], *a));
        }
        states.extend(visited);
    }
    tally.report(&graph, states.len(), edges.len())
}
