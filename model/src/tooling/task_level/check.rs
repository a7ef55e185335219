//! Checking the task level: every property's verdict, the shortest counterexample of each
//! violated one, and the acyclicity check that makes `eventually` sound. The report has the
//! channel model's shape ([`crate::tooling::check::CheckReport`]), so the CLI and JUnit treat both alike.

use super::format;
pub use super::format::TaskPath;
use crate::task_level::model::TaskModel;
use crate::task_level::properties::TaskPropertyId;
use crate::task_level::state::TaskState;
use crate::tooling::check::{AcyclicBy, CheckReport, PropertyResult, Status, expectation_name};
use stateright::{Checker, Expectation, Model};
use std::time::Instant;

/// Runs stateright's BFS with `threads`, then a single-threaded BFS per violated property for
/// its shortest counterexample (and per example, its shortest path).
pub fn check(
    model: &TaskModel,
    preset: &str,
    unreachable: &[TaskPropertyId],
    violated: &[TaskPropertyId],
    threads: usize,
    acyclic: bool,
) -> CheckReport {
    let start = Instant::now();
    let checker = model.clone().checker().threads(threads.max(1)).spawn_bfs().join();
    let mut properties = Vec::new();
    for &p in TaskPropertyId::ALL {
        let e = p.expectation();
        let found = checker.discovery(p.name()).is_some();
        let status = match (&e, found) {
            (Expectation::Sometimes, true) => Status::ExampleFound,
            (Expectation::Sometimes, false) => Status::ExampleMissing,
            (_, true) => Status::Violated,
            (_, false) => Status::Holds,
        };
        let actions = match status {
            Status::Violated => shortest_counterexample(model, p),
            Status::ExampleFound => shortest_example(model, p),
            _ => None,
        };
        properties.push(PropertyResult {
            name: p.name(),
            expectation: expectation_name(&e),
            status,
            trace: actions.map(|p| format::path_lines(model, &p)),
            unreachable_by_design: unreachable.contains(&p),
            violated_by_design: violated.contains(&p),
            actions: None,
        });
    }
    let acyclic = acyclic.then(|| graph_is_acyclic(model));
    CheckReport {
        model: "task-level",
        preset: preset.to_string(),
        variant: model.variant.name().to_string(),
        flink_fixes: Vec::new(),
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds: start.elapsed().as_secs_f64(),
        acyclic_by: acyclic.map(|_| AcyclicBy::Search),
        acyclic,
        properties,
        encoded_bytes_per_state: None,
        partial_order_reduction: false,
    }
}

/// The shortest path to a state refuting the `always` or `eventually` property `p` (for
/// `eventually`, a terminal state where it is false: the predicates are stable and the graph
/// acyclic, so that is exactly a path that never satisfies it). `sometimes` properties have none.
pub fn shortest_counterexample(model: &TaskModel, p: TaskPropertyId) -> Option<TaskPath> {
    let (e, pred) = (p.expectation(), p.predicate());
    if e == Expectation::Sometimes {
        return None;
    }
    shortest_path(model, |s| {
        !pred(model, s) && (e == Expectation::Always || model.is_terminal(s))
    })
}

/// The shortest path to a state where the `sometimes` property `p` holds.
pub fn shortest_example(model: &TaskModel, p: TaskPropertyId) -> Option<TaskPath> {
    if p.expectation() != Expectation::Sometimes {
        return None;
    }
    let pred = p.predicate();
    shortest_path(model, |s| pred(model, s))
}

/// Breadth-first search, one thread, for the first state satisfying `target`.
pub fn shortest_path(model: &TaskModel, target: impl Fn(&TaskState) -> bool) -> Option<TaskPath> {
    crate::tooling::check::shortest_path_of(model, target).map(|(init, actions)| TaskPath {
        shape: init.shape,
        actions,
    })
}

/// Depth-first search over the reachable graph for a back edge: `eventually` verdicts are
/// sound exactly when every path ends in a terminal state.
pub fn graph_is_acyclic(model: &TaskModel) -> bool {
    crate::tooling::check::graph_is_acyclic_of(model)
}
