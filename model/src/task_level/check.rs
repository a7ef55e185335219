//! Checking the task level: every property's verdict, the shortest counterexample of each
//! violated one, and the acyclicity check that makes `eventually` sound. The report has the
//! channel model's shape ([`crate::check::CheckReport`]), so the CLI and JUnit treat both alike.

use super::action::TaskAction;
use super::format;
use super::model::TaskModel;
use super::properties::TASK_PROPERTIES;
use super::state::TaskState;
use crate::check::{CheckReport, PropertyResult, Status};
use stateright::{Checker, Expectation, Model};
use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Instant;

fn expectation_name(e: &Expectation) -> &'static str {
    match e {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
}

/// Runs stateright's BFS with `threads`, then a single-threaded BFS per violated property for
/// its shortest counterexample (and per example, its shortest path).
pub fn check(model: &TaskModel, preset: &str, unreachable: &[&str], threads: usize, acyclic: bool) -> CheckReport {
    let start = Instant::now();
    let checker = model.clone().checker().threads(threads.max(1)).spawn_bfs().join();
    let mut properties = Vec::new();
    for (e, name, _) in TASK_PROPERTIES {
        let found = checker.discovery(name).is_some();
        let status = match (e, found) {
            (Expectation::Sometimes, true) => Status::ExampleFound,
            (Expectation::Sometimes, false) => Status::ExampleMissing,
            (_, true) => Status::Violated,
            (_, false) => Status::Holds,
        };
        let actions = match status {
            Status::Violated => shortest_counterexample(model, name),
            Status::ExampleFound => shortest_example(model, name),
            _ => None,
        };
        properties.push(PropertyResult {
            name,
            expectation: expectation_name(e),
            status,
            trace: actions.map(|p| format::path_lines(model, &p)),
            unreachable_by_design: unreachable.contains(name),
            violated_by_design: false,
            actions: None,
        });
    }
    let acyclic = acyclic.then(|| graph_is_acyclic(model));
    CheckReport {
        model: "task-level",
        preset: preset.to_string(),
        variant: model.variant.name().to_string(),
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds: start.elapsed().as_secs_f64(),
        acyclic,
        properties,
    }
}

fn fingerprint(s: &TaskState) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The shortest path to a state refuting the `always` or `eventually` property `name` (for
/// `eventually`, a terminal state where it is false: the predicates are stable and the graph
/// acyclic, so that is exactly a path that never satisfies it).
pub fn shortest_counterexample(model: &TaskModel, name: &str) -> Option<TaskPath> {
    let (e, _, pred) = TASK_PROPERTIES
        .iter()
        .find(|(e, n, _)| *n == name && *e != Expectation::Sometimes)?;
    shortest_path(model, |s| {
        !pred(model, s) && (*e == Expectation::Always || model.is_terminal(s))
    })
}

/// The shortest path to a state where the `sometimes` property `name` holds.
pub fn shortest_example(model: &TaskModel, name: &str) -> Option<TaskPath> {
    let (_, _, pred) = TASK_PROPERTIES
        .iter()
        .find(|(e, n, _)| *n == name && *e == Expectation::Sometimes)?;
    shortest_path(model, |s| pred(model, s))
}

/// A path: the shape whose initial state it starts from, and its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskPath {
    /// Index of the shape (the initial state).
    pub shape: u8,
    /// The actions.
    pub actions: Vec<TaskAction>,
}

/// Breadth-first search, one thread, for the first state satisfying `target`.
pub fn shortest_path(model: &TaskModel, target: impl Fn(&TaskState) -> bool) -> Option<TaskPath> {
    let mut parent: HashMap<u64, Option<(u64, TaskAction)>> = HashMap::new();
    let mut queue = VecDeque::new();
    for s in model.init_states() {
        parent.insert(fingerprint(&s), None);
        queue.push_back(s);
    }
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        let fp = fingerprint(&s);
        if target(&s) {
            let mut path = Vec::new();
            let mut at = fp;
            while let Some(Some((prev, a))) = parent.get(&at) {
                path.push(*a);
                at = *prev;
            }
            path.reverse();
            let shape = model
                .init_states()
                .iter()
                .find(|i| fingerprint(i) == at)
                .map_or(0, |i| i.shape);
            return Some(TaskPath { shape, actions: path });
        }
        actions.clear();
        model.actions(&s, &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = model.next_state(&s, a)
                && let Entry::Vacant(v) = parent.entry(fingerprint(&next))
            {
                v.insert(Some((fp, a)));
                queue.push_back(next);
            }
        }
    }
    None
}

/// Depth-first search over the reachable graph for a back edge: `eventually` verdicts are
/// sound exactly when every path ends in a terminal state.
pub fn graph_is_acyclic(model: &TaskModel) -> bool {
    let mut done: HashSet<u64> = HashSet::new();
    let mut on_stack: HashSet<u64> = HashSet::new();
    let mut stack: Vec<(u64, Vec<TaskState>)> = Vec::new();
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
