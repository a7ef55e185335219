//! The library behind `cdr conform` of a task-level preset: the task-level model's traces
//! replayed step by step against impl/'s `StreamTask` ([`crate::task_driver`]), edge-complete or
//! by random walks, stopping at the first divergence (which `cdr` saves as a trace file).

use std::path::Path;
use std::time::Instant;

use recovery_model::task_level::presets::find_task_preset;
use recovery_model::task_level::{TaskAction, TaskModel, TaskState, TaskVariant};
use serde::{Deserialize, Serialize};
use stateright::Model;

use crate::driver::DriverError;
use crate::generate::{Graph, SplitMix64};
use crate::task_driver::{
    TaskImplDriver, TaskObservation, TaskSnapshot, initial_states, model_observation, model_snapshot,
};

/// The model name a task-level trace file carries.
pub const TASK_MODEL_NAME: &str = "task-recovery";

/// One step of a task-level trace: the action and what the model predicts after it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStep {
    /// The model action.
    pub action: TaskAction,
    /// What a caller sees.
    pub observation: TaskObservation,
    /// The abstract state after the step.
    pub snapshot: TaskSnapshot,
}

/// A task-level trace file: the shape it starts from and its steps.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTrace {
    /// [`crate::trace::FORMAT_VERSION`].
    pub format_version: u32,
    /// [`TASK_MODEL_NAME`].
    pub model: String,
    /// The preset.
    pub preset: String,
    /// The variant (`fixed`).
    pub variant: String,
    /// Which of the preset's shapes (initial states) it starts from.
    pub shape: u32,
    /// That shape, readable.
    pub shape_label: String,
    /// Why it exists.
    pub reason: String,
    /// The steps.
    pub steps: Vec<TaskStep>,
}

/// Where a replay first differed from the model.
#[derive(Clone, Debug, Serialize)]
pub struct TaskDivergence {
    /// The trace, up to and including the diverging step.
    pub trace: TaskTrace,
    /// The diverging step, 1-based.
    pub step: usize,
    /// What the implementation showed: the observation, then the snapshot.
    pub actual_observation: TaskObservation,
    /// The implementation's snapshot after the step.
    pub actual_snapshot: TaskSnapshot,
    /// The first field that differs, with both values.
    pub first_difference: String,
}

/// What a task-level conformance run did.
#[derive(Clone, Debug, Serialize)]
pub struct TaskConformReport {
    /// The preset.
    pub preset: String,
    /// `edges` or `random`.
    pub mode: String,
    /// States of the reachable graph.
    pub states: usize,
    /// Edges of the reachable graph.
    pub edges: usize,
    /// Edges the replayed traces took.
    pub edges_replayed: usize,
    /// Traces replayed.
    pub traces: usize,
    /// Steps replayed.
    pub steps: usize,
    /// Action kinds of the graph.
    pub action_kinds: Vec<&'static str>,
    /// Action kinds replayed.
    pub action_kinds_replayed: Vec<&'static str>,
    /// The first divergence, if any.
    pub divergence: Option<TaskDivergence>,
    /// Seconds.
    pub elapsed_s: f64,
}

impl TaskConformReport {
    /// Every edge of the graph and every action kind was replayed (edge-complete runs only).
    pub fn is_complete(&self) -> bool {
        self.mode == "edges" && self.edges_replayed == self.edges && self.action_kinds_replayed == self.action_kinds
    }
}

/// An action's kind, for coverage.
pub fn kind(a: &TaskAction) -> &'static str {
    match a {
        TaskAction::ReadInputData { .. } => "readInputData",
        TaskAction::FinishReadRecoveredState { .. } => "finishReadRecoveredState",
        TaskAction::DrainGate { .. } => "drainGate",
        TaskAction::ProcessMail { .. } => "processMail",
        TaskAction::ProcessInput { .. } => "processInput",
        TaskAction::ProcessInputNothingToRead => "processInput (nothing to read)",
        TaskAction::OnGateStateConsumed { .. } => "onGateStateConsumed",
        TaskAction::OnAllGatesStateConsumed => "onAllGatesStateConsumed",
        TaskAction::CompleteRecovery => "completeRecovery",
        TaskAction::CompleteAllStateConsumed => "completeAllStateConsumed",
        TaskAction::TriggerCheckpoint => "triggerCheckpoint",
        TaskAction::RunSuspendCallback => "runSuspendCallback",
        TaskAction::RunResumeCallback => "runResumeCallback",
        TaskAction::OnInputAvailable => "onInputAvailable",
        TaskAction::ReadInputDataThrows { .. } => "readInputData throws",
        TaskAction::FinishReadRecoveredStateThrows { .. } => "finishReadRecoveredState throws",
        TaskAction::RequestPartitionsThrows { .. } => "requestPartitions throws",
        TaskAction::CancelExecution => "cancelExecution",
        TaskAction::CancelInvokable => "cancelInvokable",
        TaskAction::ReleaseResources => "releaseResources",
    }
}

fn fingerprint(s: &TaskState) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(s)
}

fn first_difference(expected: &impl Serialize, actual: &impl Serialize) -> Option<String> {
    let (e, a) = (serde_json::to_value(expected).ok()?, serde_json::to_value(actual).ok()?);
    if e == a {
        return None;
    }
    if let (Some(e), Some(a)) = (e.as_object(), a.as_object()) {
        for (key, ev) in e {
            let av = a.get(key).unwrap_or(&serde_json::Value::Null);
            if ev != av {
                return Some(format!("{key}: expected {ev}, got {av}"));
            }
        }
        for (key, av) in a {
            if !e.contains_key(key) {
                return Some(format!("{key}: expected nothing, got {av}"));
            }
        }
    }
    Some(format!("expected {e}, got {a}"))
}

/// The trace of `actions` from initial state `init` of `model`, with the model's predictions;
/// an error if `init` is out of range or an action is not enabled where it is taken.
pub fn record_trace(
    model: &TaskModel,
    preset: &str,
    init: u32,
    actions: &[TaskAction],
    reason: &str,
) -> Result<TaskTrace, String> {
    let mut state = initial_states(model)
        .remove(&init)
        .ok_or_else(|| format!("no initial state {init}"))?;
    let mut trace = TaskTrace {
        format_version: crate::trace::FORMAT_VERSION,
        model: TASK_MODEL_NAME.into(),
        preset: preset.into(),
        variant: model.variant.name().into(),
        shape: init,
        shape_label: model.shape(&state).label(),
        reason: reason.into(),
        steps: Vec::new(),
    };
    for (i, action) in actions.iter().enumerate() {
        let mut enabled = Vec::new();
        model.actions(&state, &mut enabled);
        if !enabled.contains(action) {
            return Err(format!(
                "step {}: {action:?} is not enabled; enabled are {enabled:?}",
                i + 1
            ));
        }
        let observation = model_observation(model, &state, action);
        state = model.next_state(&state, *action).expect("enabled");
        trace.steps.push(TaskStep {
            action: *action,
            observation,
            snapshot: model_snapshot(model, &state),
        });
    }
    Ok(trace)
}

/// Replays `trace` (recorded by [`record_trace`]) on `driver`, comparing every step with its
/// predictions. Returns the divergence, if any, with the trace cut after the diverging step.
pub fn replay(
    model: &TaskModel,
    trace: &TaskTrace,
    driver: &mut TaskImplDriver,
) -> Result<Option<TaskDivergence>, DriverError> {
    driver.reset(&initial_states(model)[&trace.shape])?;
    for (i, step) in trace.steps.iter().enumerate() {
        let actual_observation = driver.apply(&step.action)?;
        let actual_snapshot = driver.snapshot()?;
        let difference = first_difference(&step.observation, &actual_observation)
            .map(|d| format!("observation {d}"))
            .or_else(|| first_difference(&step.snapshot, &actual_snapshot).map(|d| format!("snapshot {d}")));
        if let Some(first_difference) = difference {
            let mut trace = trace.clone();
            trace.steps.truncate(i + 1);
            return Ok(Some(TaskDivergence {
                trace,
                step: i + 1,
                actual_observation,
                actual_snapshot,
                first_difference,
            }));
        }
    }
    Ok(None)
}

/// The walks of a run: every edge of `graph` (with how many edges each takes first), or
/// `random` walks from `seed`, each from a random shape to where nothing is enabled (the graph is
/// acyclic). Each is (initial state, actions, new edges, reason).
fn walks(
    model: &TaskModel,
    graph: &Graph<TaskAction>,
    random: Option<usize>,
    seed: u64,
) -> Vec<(u32, Vec<TaskAction>, usize, String)> {
    let Some(n) = random else {
        return graph
            .edge_cover()
            .enumerate()
            .map(|(i, t)| (t.init, t.actions, t.new_edges, format!("edge cover, trace {i}")))
            .collect();
    };
    let mut rng = SplitMix64::new(seed);
    let inits = initial_states(model);
    (0..n)
        .map(|i| {
            let init = rng.below(inits.len()) as u32;
            let mut s = inits[&init].clone();
            let (mut walk, mut enabled) = (Vec::new(), Vec::new());
            loop {
                enabled.clear();
                model.actions(&s, &mut enabled);
                if enabled.is_empty() {
                    break;
                }
                let a = enabled[rng.below(enabled.len())];
                s = model.next_state(&s, a).expect("enabled");
                walk.push(a);
            }
            (init, walk, 0, format!("random walk {i} of seed {seed}"))
        })
        .collect()
}

/// The trace files of the task-level preset `preset`: every edge, or `random` walks from `seed`
/// (`cdr traces --preset task`).
pub fn task_traces(preset: &str, random: Option<usize>, seed: u64) -> Result<Vec<TaskTrace>, String> {
    let p = find_task_preset(preset).ok_or_else(|| format!("unknown task-level preset `{preset}`"))?;
    let model = TaskModel::new((p.shapes)(), TaskVariant::Fixed);
    let graph = Graph::explore_model(&model, fingerprint, kind);
    walks(&model, &graph, random, seed)
        .into_iter()
        .map(|(init, actions, _, reason)| record_trace(&model, preset, init, &actions, &reason))
        .collect()
}

/// Replays the traces of the task-level preset `preset` against impl/: every edge, or `random`
/// walks from `seed`.
pub fn conform_task(preset: &str, random: Option<usize>, seed: u64) -> Result<TaskConformReport, String> {
    conform_task_variant(preset, TaskVariant::Fixed, random, seed)
}

/// [`conform_task`] with the model's `variant`: the implementation is the fixed protocol, so a
/// variant whose bug is reachable diverges.
pub fn conform_task_variant(
    preset: &str,
    variant: TaskVariant,
    random: Option<usize>,
    seed: u64,
) -> Result<TaskConformReport, String> {
    let p = find_task_preset(preset).ok_or_else(|| format!("unknown task-level preset `{preset}`"))?;
    let model = TaskModel::new((p.shapes)(), variant);
    let start = Instant::now();
    let graph = Graph::explore_model(&model, fingerprint, kind);
    let mut driver = TaskImplDriver::new(model.clone());
    let mut report = TaskConformReport {
        preset: preset.into(),
        mode: if random.is_some() { "random" } else { "edges" }.into(),
        states: graph.states(),
        edges: graph.edges(),
        edges_replayed: 0,
        traces: 0,
        steps: 0,
        action_kinds: graph.kinds.clone(),
        action_kinds_replayed: Vec::new(),
        divergence: None,
        elapsed_s: 0.0,
    };
    let mut kinds = std::collections::BTreeSet::new();
    let traces = walks(&model, &graph, random, seed);
    for (init, actions, new_edges, reason) in traces {
        let trace = record_trace(&model, preset, init, &actions, &reason)?;
        let divergence = replay(&model, &trace, &mut driver).map_err(|e| e.to_string())?;
        report.traces += 1;
        match divergence {
            Some(d) => {
                report.steps += d.step;
                report.divergence = Some(d);
                break;
            }
            None => {
                report.steps += actions.len();
                report.edges_replayed += new_edges;
                kinds.extend(actions.iter().map(kind));
            }
        }
    }
    report.action_kinds_replayed = kinds.into_iter().collect();
    report.elapsed_s = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Why a task-level trace file cannot be replayed.
fn unusable(path: &Path, why: impl std::fmt::Display) -> String {
    format!("{}: {why}", path.display())
}

/// Reads a task-level trace file and checks it against the model: its preset, variant and shape
/// exist, every action is enabled where it is taken, and every recorded observation and snapshot
/// is the model's own. Returns the model, the shape and the actions.
pub fn read_trace(path: &Path) -> Result<(TaskModel, TaskTrace), String> {
    let text = crate::trace::read_trace_text(path).map_err(|e| e.to_string())?;
    let trace: TaskTrace =
        serde_json::from_str(&text).map_err(|e| unusable(path, format!("not a valid task-level trace: {e}")))?;
    if trace.format_version != crate::trace::FORMAT_VERSION || trace.model != TASK_MODEL_NAME {
        return Err(unusable(
            path,
            format!(
                "not a version {} `{TASK_MODEL_NAME}` trace",
                crate::trace::FORMAT_VERSION
            ),
        ));
    }
    let preset = find_task_preset(&trace.preset)
        .ok_or_else(|| unusable(path, format!("unknown task-level preset `{}`", trace.preset)))?;
    let variant = TaskVariant::from_name(&trace.variant)
        .ok_or_else(|| unusable(path, format!("unknown task-level variant `{}`", trace.variant)))?;
    let model = TaskModel::new((preset.shapes)(), variant);
    let actions: Vec<TaskAction> = trace.steps.iter().map(|s| s.action).collect();
    let expected =
        record_trace(&model, &trace.preset, trace.shape, &actions, &trace.reason).map_err(|e| unusable(path, e))?;
    if let Some(i) = (0..actions.len()).find(|&i| {
        expected.steps[i].observation != trace.steps[i].observation
            || expected.steps[i].snapshot != trace.steps[i].snapshot
    }) {
        return Err(unusable(
            path,
            format!("step {}: the recorded prediction is not the model's", i + 1),
        ));
    }
    Ok((model, trace))
}
