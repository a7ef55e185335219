//! Running the checker: verdicts for every property, the shortest counterexample of each
//! violated one, and the acyclicity check that makes `eventually` sound.

use crate::action::Action;
use crate::model::RecoveryModel;
use crate::properties::PropertyId;
use crate::state::State;
use crate::tooling::fingerprint::fingerprint;
use crate::tooling::por::Reduction;
use crate::tooling::progress::RankCheck;
use crate::tooling::search::{Counters, Frontier, SearchOptions, bfs};
use serde::Serialize;
use stateright::{Expectation, Model};
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// A property's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// An `always`/`eventually` property with no counterexample.
    Holds,
    /// An `always`/`eventually` property with a counterexample.
    Violated,
    /// A `sometimes` property with an example.
    ExampleFound,
    /// A `sometimes` property without an example.
    ExampleMissing,
}

/// One property's result.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyResult {
    /// Its name.
    pub name: &'static str,
    /// `always`, `eventually` or `sometimes`.
    pub expectation: &'static str,
    /// The verdict.
    pub status: Status,
    /// The counterexample or example as readable actions (shortest for counterexamples).
    pub trace: Option<Vec<String>>,
    /// A `sometimes` property this configuration cannot reach by design.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unreachable_by_design: bool,
    /// A safety property the configuration's delivery violates by design: the modelled Flink
    /// version's defect (`ModelConfig::violated_by_config`), reported but not failing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub violated_by_design: bool,
    /// The same path as actions, for trace files and Explorer links.
    #[serde(skip)]
    pub actions: Option<Vec<Action>>,
}

impl PropertyResult {
    /// The verdict a correct model gets: holds, or an example found, unless the configuration
    /// declares the property violated or the example unreachable by design.
    pub fn expected(&self) -> Status {
        match self.expectation {
            "sometimes" if self.unreachable_by_design => Status::ExampleMissing,
            _ if self.violated_by_design => Status::Violated,
            "sometimes" => Status::ExampleFound,
            _ => Status::Holds,
        }
    }

    /// Whether the verdict is one a correct model may get: the expected one, or for a
    /// property a finding may violate in this configuration (`violated_by_config` is keyed on
    /// what the finding needs, not on whether this configuration reaches it), holds.
    pub fn as_expected(&self) -> bool {
        self.status == self.expected() || (self.violated_by_design && self.status == Status::Holds)
    }

    /// Whether this verdict makes the check fail.
    pub fn fails(&self) -> bool {
        (self.status == Status::Violated && !self.violated_by_design)
            || (self.status == Status::ExampleMissing && !self.unreachable_by_design)
    }
}

/// How a check decided that the state graph is acyclic. In JSON, "ranking" or "search".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcyclicBy {
    /// Every edge the search generated increased [`crate::tooling::progress::rank`].
    Ranking,
    /// A depth-first search for a back edge found none.
    Search,
}

/// The result of checking one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Always "channel-recovery".
    pub model: &'static str,
    /// The preset name, or the config file.
    pub preset: String,
    /// The variant (kebab-case).
    pub variant: String,
    /// The changes to Flink's code switched on (`ModelConfig::flink_fixes`, kebab-case); empty:
    /// Flink as it is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flink_fixes: Vec<&'static str>,
    /// States visited, counting revisits.
    pub states: usize,
    /// Unique states.
    pub unique_states: usize,
    /// Longest path explored.
    pub max_depth: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Whether the reachable state graph is acyclic (liveness soundness); None if not checked.
    pub acyclic: Option<bool>,
    /// How acyclicity was decided; None if not checked.
    pub acyclic_by: Option<AcyclicBy>,
    /// Every property.
    pub properties: Vec<PropertyResult>,
    /// With an encoded frontier, the mean size of an encoded state, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoded_bytes_per_state: Option<f64>,
    /// Whether the search followed stubborn sets only (`--por`): the counts are then the
    /// reduced graph's, and a counterexample not always a shortest one.
    pub partial_order_reduction: bool,
}

impl CheckReport {
    /// Whether every property holds and every example was found.
    pub fn passed(&self) -> bool {
        !self.properties.iter().any(PropertyResult::fails) && self.acyclic != Some(false)
    }
}

/// `always`, `eventually` or `sometimes`.
pub fn expectation_name(e: &Expectation) -> &'static str {
    match e {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
}

/// Runs the breadth-first search ([`crate::tooling::search`]) on `model` with `threads`, then finds the shortest counterexample of
/// each violated property with a single-threaded BFS of its own.
pub fn check(
    model: RecoveryModel,
    preset: &str,
    unreachable: &[PropertyId],
    threads: usize,
    acyclic: bool,
) -> CheckReport {
    let options = CheckOptions {
        threads,
        acyclic,
        frontier: Frontier::Whole,
        por: false,
    };
    check_with_progress(model, preset, unreachable, &options, &mut |_| {})
}

/// How [`check`] searches.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Threads of the search.
    pub threads: usize,
    /// Whether to decide if the reachable graph is acyclic (which `eventually` verdicts need).
    pub acyclic: bool,
    /// Where the states of a level wait to be searched.
    pub frontier: Frontier,
    /// Whether to follow only a stubborn set of each state's actions (`--por`).
    pub por: bool,
}

/// How far a running check has come.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// States visited, counting revisits.
    pub states: usize,
    /// Unique states.
    pub unique_states: usize,
    /// Longest path so far.
    pub max_depth: usize,
}

/// [`check`], calling `on_progress` about every 100 ms while the search runs.
pub fn check_with_progress(
    model: RecoveryModel,
    preset: &str,
    unreachable: &[PropertyId],
    options: &CheckOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    let acyclic = options.acyclic;
    let start = Instant::now();
    let variant = model.variant.name().to_string();
    let flink_fixes = model.cfg.flink_fixes.iter().map(|f| f.name()).collect();
    let ranks = Arc::new(RankCheck::default());
    let search = SearchOptions {
        threads: options.threads,
        frontier: options.frontier.clone(),
        ranks: acyclic.then(|| Arc::clone(&ranks)),
        por: options.por.then(|| Arc::new(Reduction::for_properties(&model))),
    };
    let counters = Counters::default();
    let outcome = std::thread::scope(|scope| {
        // The search hands its outcome over a channel, so that the wait for it ends when it
        // does, not at the next progress report.
        let (done, finished) = std::sync::mpsc::channel();
        let (model, options, counters) = (&model, &search, &counters);
        let search = scope.spawn(move || {
            let _ = done.send(bfs(model, options, counters));
        });
        loop {
            match finished.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(outcome) => break outcome,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => on_progress(Progress {
                    states: counters.states.load(Ordering::Relaxed),
                    unique_states: counters.unique_states.load(Ordering::Relaxed),
                    max_depth: counters.max_depth.load(Ordering::Relaxed),
                }),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    std::panic::resume_unwind(search.join().expect_err("the search ended without an outcome"))
                }
            }
        }
    });
    let mut properties = Vec::new();
    for (&p, found) in PropertyId::ALL.iter().zip(outcome.discoveries) {
        let e = p.expectation();
        let status = match (&e, &found) {
            (Expectation::Sometimes, Some(_)) => Status::ExampleFound,
            (Expectation::Sometimes, None) => Status::ExampleMissing,
            (_, Some(_)) => Status::Violated,
            (_, None) => Status::Holds,
        };
        let actions = match status {
            // The reduced search's path: a shortest one would need the full search.
            Status::Violated if options.por => found,
            Status::Violated => shortest_counterexample(&model, p).or(found),
            _ => found,
        };
        let trace = actions
            .as_ref()
            .map(|a| a.iter().map(|a| model.format_action(a)).collect());
        let unreachable_by_design = unreachable.contains(&p) || model.cfg.unreachable_by_config().contains(&p);
        let by_design = model.cfg.violated_by_config();
        properties.push(PropertyResult {
            name: p.name(),
            expectation: expectation_name(&e),
            status,
            trace,
            unreachable_by_design,
            violated_by_design: by_design.contains(&p),
            actions,
        });
    }
    // The search saw every edge (it never stops early). If every edge increased the rank, no
    // path returns to a state. With `--por` it saw the reduced graph's edges: an acyclic reduced
    // graph meets the cycle proviso vacuously, so every infinite path of the whole graph would
    // have an equivalent infinite one in it; there is none, so the whole graph is acyclic too.
    let (acyclic, acyclic_by) = match acyclic {
        true => {
            let (yes, by) = acyclicity(&model, outcome.states > 0, &ranks);
            (Some(yes), Some(by))
        }
        false => (None, None),
    };
    CheckReport {
        model: "channel-recovery",
        preset: preset.to_string(),
        variant,
        flink_fixes,
        states: outcome.states,
        unique_states: outcome.unique_states,
        max_depth: outcome.max_depth,
        seconds: start.elapsed().as_secs_f64(),
        acyclic,
        acyclic_by,
        properties,
        encoded_bytes_per_state: outcome.encoded_bytes_per_state,
        partial_order_reduction: options.por,
    }
}

/// Whether `model`'s reachable graph is acyclic, and how that was decided: by the ranking
/// function, when a search that saw every edge (`exhaustive`) found none that failed to
/// increase it, else by the depth-first search.
pub fn acyclicity(model: &RecoveryModel, exhaustive: bool, ranks: &RankCheck) -> (bool, AcyclicBy) {
    if exhaustive && ranks.non_increasing() == 0 {
        (true, AcyclicBy::Ranking)
    } else {
        (graph_is_acyclic(model), AcyclicBy::Search)
    }
}

/// Single-threaded breadth-first search for the first state that refutes property `p`: for
/// `always`, a state where it is false; for `eventually`, a terminal state where it is false
/// (the predicates are stable and the graph acyclic, so that is exactly a path that never
/// satisfies it). Its path is a shortest counterexample. `sometimes` properties have none.
pub fn shortest_counterexample(model: &RecoveryModel, p: PropertyId) -> Option<Vec<Action>> {
    let (e, pred) = (p.expectation(), p.predicate());
    if e == Expectation::Sometimes {
        return None;
    }
    shortest_path(model, |s| {
        !pred(model, s) && (e == Expectation::Always || model.is_terminal(s))
    })
}

/// A shortest path to a state where the `sometimes` property `p` holds.
pub fn shortest_example(model: &RecoveryModel, p: PropertyId) -> Option<Vec<Action>> {
    if p.expectation() != Expectation::Sometimes {
        return None;
    }
    let pred = p.predicate();
    shortest_path(model, |s| pred(model, s))
}

/// [`shortest_example`] of several `sometimes` properties, in one search.
pub fn shortest_examples(model: &RecoveryModel, properties: &[PropertyId]) -> Vec<Option<Vec<Action>>> {
    let preds: Vec<_> = (properties.iter())
        .map(|p| (p.expectation() == Expectation::Sometimes).then(|| p.predicate()))
        .collect();
    let targets: Vec<_> = (preds.iter())
        .map(|p| move |s: &State| p.is_some_and(|pred| pred(model, s)))
        .collect();
    let refs: Vec<&dyn Fn(&State) -> bool> = targets.iter().map(|t| t as &dyn Fn(&State) -> bool).collect();
    shortest_paths_of(model, &refs)
        .into_iter()
        .map(|p| p.map(|(_, path)| path))
        .collect()
}

/// Breadth-first search, one thread, for the first state satisfying `target`.
pub fn shortest_path(model: &RecoveryModel, target: impl Fn(&State) -> bool) -> Option<Vec<Action>> {
    shortest_path_of(model, target).map(|(_, path)| path)
}

/// [`shortest_path`] for any model (the task level's too): the initial state the path starts
/// from, and its actions.
pub fn shortest_path_of<M: Model>(model: &M, target: impl Fn(&M::State) -> bool) -> Option<(M::State, Vec<M::Action>)>
where
    M::State: Hash,
    M::Action: Copy,
{
    shortest_paths_of(model, &[&target]).pop().flatten()
}

/// One breadth-first search for several targets: for each, the shortest path to the first
/// state satisfying it, the same path [`shortest_path_of`] finds for it alone (the search
/// visits states in the same order). Stops once every target is found.
#[allow(clippy::type_complexity)]
pub fn shortest_paths_of<M: Model>(
    model: &M,
    targets: &[&dyn Fn(&M::State) -> bool],
) -> Vec<Option<(M::State, Vec<M::Action>)>>
where
    M::State: Hash,
    M::Action: Copy,
{
    let mut parent: HashMap<u64, Option<(u64, M::Action)>, foldhash::fast::FixedState> = HashMap::default();
    let mut found: Vec<Option<(M::State, Vec<M::Action>)>> = targets.iter().map(|_| None).collect();
    let mut missing = targets.len();
    let mut queue = VecDeque::new();
    for s in model.init_states() {
        parent.insert(fingerprint(&s), None);
        queue.push_back(s);
    }
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        if missing == 0 {
            break;
        }
        let fp = fingerprint(&s);
        for (k, target) in targets.iter().enumerate() {
            if found[k].is_some() || !target(&s) {
                continue;
            }
            let mut path = Vec::new();
            let mut at = fp;
            while let Some(Some((prev, a))) = parent.get(&at) {
                path.push(*a);
                at = *prev;
            }
            path.reverse();
            let init = model.init_states().into_iter().find(|i| fingerprint(i) == at);
            found[k] = Some(init.map(|i| (i, path)).expect("a path starts at an initial state"));
            missing -= 1;
        }
        actions.clear();
        model.actions(&s, &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = model.next_state(&s, a) {
                let nfp = fingerprint(&next);
                if let std::collections::hash_map::Entry::Vacant(v) = parent.entry(nfp) {
                    v.insert(Some((fp, a)));
                    queue.push_back(next);
                }
            }
        }
    }
    found
}

/// Depth-first search over the whole reachable graph looking for a back edge. `eventually`
/// properties are checked by stateright only on terminal states, which is sound exactly when
/// every path ends in one: when the graph has no cycle.
pub fn graph_is_acyclic(model: &RecoveryModel) -> bool {
    graph_is_acyclic_of(model)
}

/// [`graph_is_acyclic`] for any model (the task level's too).
pub fn graph_is_acyclic_of<M: Model>(model: &M) -> bool
where
    M::State: Hash,
{
    // Sets of fingerprints need no second strong hash.
    let mut done: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    let mut on_stack: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    let mut stack: Vec<(u64, Vec<M::State>)> = Vec::new();
    for init in model.init_states() {
        let fp = fingerprint(&init);
        if done.contains(&fp) {
            continue;
        }
        on_stack.insert(fp);
        stack.push((fp, model.next_states(&init)));
        while let Some((fp, succ)) = stack.last_mut() {
            match succ.pop() {
                Some(next) => {
                    let nfp = fingerprint(&next);
                    if on_stack.contains(&nfp) {
                        return false;
                    }
                    if !done.contains(&nfp) {
                        on_stack.insert(nfp);
                        let s = model.next_states(&next);
                        stack.push((nfp, s));
                    }
                }
                None => {
                    let fp = *fp;
                    on_stack.remove(&fp);
                    done.insert(fp);
                    stack.pop();
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::graph_is_acyclic_of;
    use stateright::Model;

    /// A counter that steps by one up to `limit`, and back to 0 from `back_from` if set.
    struct Counter {
        limit: u8,
        back_from: Option<u8>,
    }

    impl Model for Counter {
        type State = u8;
        type Action = u8;
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, s: &u8, out: &mut Vec<u8>) {
            if *s < self.limit {
                out.push(s + 1);
            }
            if self.back_from == Some(*s) {
                out.push(0);
            }
        }
        fn next_state(&self, _: &u8, a: u8) -> Option<u8> {
            Some(a)
        }
    }

    #[test]
    fn a_back_edge_is_a_cycle_and_a_chain_is_not() {
        assert!(graph_is_acyclic_of(&Counter {
            limit: 5,
            back_from: None
        }));
        assert!(!graph_is_acyclic_of(&Counter {
            limit: 5,
            back_from: Some(3)
        }));
        // A self-loop is a cycle too.
        assert!(!graph_is_acyclic_of(&Counter {
            limit: 0,
            back_from: Some(0)
        }));
    }

    #[test]
    fn the_ranking_decides_only_after_an_exhaustive_search_with_no_edge_against_it() {
        use super::{AcyclicBy, RankCheck, acyclicity};
        use crate::{RecoveryModel, Variant, presets::find_preset};
        let m = RecoveryModel::new((find_preset("tiny").unwrap().config)(), Variant::Fixed);
        let s = m.init_states().remove(0);
        let next = m.next_states(&s).remove(0);
        let ranks = RankCheck::default();
        ranks.edge(&s, &next);
        assert_eq!(acyclicity(&m, true, &ranks), (true, AcyclicBy::Ranking));
        assert_eq!(acyclicity(&m, false, &ranks), (true, AcyclicBy::Search));
        // An edge back to its own state does not increase the rank: the search decides.
        ranks.edge(&next, &next);
        assert_eq!(ranks.non_increasing(), 1);
        assert_eq!(acyclicity(&m, true, &ranks), (true, AcyclicBy::Search));
    }

    /// JSON reports name the method as they did when it was a string.
    #[test]
    fn acyclic_by_is_ranking_or_search_in_json() {
        use super::AcyclicBy;
        let json = serde_json::to_string(&[Some(AcyclicBy::Ranking), Some(AcyclicBy::Search), None]).unwrap();
        assert_eq!(json, r#"["ranking","search",null]"#);
    }
}
