//! The task-level model: with every fix in place the `task` preset satisfies every property
//! on an acyclic graph; each task-level bug variant is found by the property its row names,
//! with a shortest counterexample that is snapshotted.

use recovery_model::task_level::bug_zoo::TASK_VARIANTS;
use recovery_model::task_level::config::TaskShape;
use recovery_model::task_level::presets::find_task_preset;
use recovery_model::task_level::properties::TaskPropertyId;
use recovery_model::task_level::state::{Mail, Phase};
use recovery_model::task_level::{TaskModel, TaskVariant};
use recovery_model::tooling::check::Status;
use recovery_model::tooling::task_level::check::{check, graph_is_acyclic, shortest_counterexample};
use recovery_model::tooling::task_level::format::counterexample;
use stateright::{Expectation, Model};

fn task_shapes() -> Vec<TaskShape> {
    (find_task_preset("task").expect("preset").shapes)()
}

fn shapes_where(flag: bool, gates: usize) -> Vec<TaskShape> {
    task_shapes()
        .into_iter()
        .filter(|s| s.checkpointing_during_recovery == flag && s.gates.len() == gates)
        .collect()
}

#[test]
fn task_preset_holds_with_every_fix_in_place() {
    let p = find_task_preset("task").unwrap();
    let model = TaskModel::new((p.shapes)(), TaskVariant::Fixed);
    let report = check(&model, "task", p.unreachable, p.violated, 1, true);
    assert_eq!(report.acyclic, Some(true));
    for r in &report.properties {
        assert!(!r.fails(), "{} is {:?}: {:#?}", r.name, r.status, r.trace);
        let by_design = r.status == Status::ExampleMissing && r.unreachable_by_design;
        assert!(
            matches!(r.status, Status::Holds | Status::ExampleFound) || by_design,
            "{}",
            r.name
        );
    }
    // A change detector: a model change that alters the reachable graph shows up here.
    assert_eq!(report.unique_states, 9_773);
}

/// Without failures and cancellation the preset is the happy path: every property holds, and
/// no failure action is anywhere in it.
#[test]
fn without_failures_the_task_preset_is_the_happy_path() {
    let shapes: Vec<TaskShape> = task_shapes()
        .into_iter()
        .map(|s| TaskShape { failures: false, ..s })
        .collect();
    let model = TaskModel::new(shapes, TaskVariant::Fixed);
    let report = check(&model, "task", &[], &[], 1, false);
    assert_eq!(report.unique_states, 1_583);
    for r in &report.properties {
        assert_ne!(r.status, Status::Violated, "{}", r.name);
    }
    let failure_paths = [
        TaskPropertyId::RecoveryFailureFailsTask,
        TaskPropertyId::FailedExternallyWhileRestoring,
        TaskPropertyId::SpillReleasedByCleanup,
        TaskPropertyId::CheckpointInsertsRecoveryBarriers,
    ];
    for r in report.properties.iter().filter(|r| r.status == Status::ExampleMissing) {
        assert!(failure_paths.iter().any(|p| p.name() == r.name), "{}", r.name);
    }
}

/// A failed state read fails the task with the read's cause, flag off (through
/// `handleAsyncException` and the canceler) and flag on (the recovery future's cause,
/// rethrown by `restoreInternal`): on every path from the failure, the task ends FAILED with it.
#[test]
fn a_failed_read_fails_the_task_with_its_cause_flag_off_and_on() {
    use recovery_model::task_level::TaskAction;
    use recovery_model::task_level::state::{Cause, ExecutionState, TaskState};
    for flag in [false, true] {
        let model = TaskModel::new(shapes_where(flag, 1), TaskVariant::Fixed);
        let init = model.init_states().remove(0);
        let failed = model
            .next_state(&init, TaskAction::ReadInputDataThrows { gate: 0 })
            .unwrap();
        // Every terminal state reachable without a cancel: FAILED with the read's cause.
        let mut stack: Vec<TaskState> = vec![failed];
        let mut ends = 0;
        while let Some(s) = stack.pop() {
            let mut actions = Vec::new();
            model.actions(&s, &mut actions);
            actions.retain(|a| *a != TaskAction::CancelExecution);
            if actions.is_empty() {
                assert!(s.released, "flag {flag}: stuck in {:?}", s.phase);
                assert_eq!(s.execution_state, ExecutionState::Failed(Cause::ReadInputData(0)));
                assert_ne!(s.phase, Phase::MainLoop);
                ends += 1;
            }
            stack.extend(actions.into_iter().map(|a| model.next_state(&s, a).unwrap()));
        }
        assert!(ends > 0);
    }
}

#[test]
fn every_task_variant_is_found_by_its_property_with_a_shortest_counterexample() {
    assert_eq!(TASK_VARIANTS.len(), 10);
    for info in TASK_VARIANTS {
        let p = find_task_preset(info.preset).expect("preset exists");
        let model = TaskModel::new((p.shapes)(), info.variant);
        let path = shortest_counterexample(&model, info.property)
            .unwrap_or_else(|| panic!("{}: {} not violated on {}", info.name, info.property, info.preset));
        let text = format!(
            "variant {} on preset {}\nbug: {}\nviolates: {}\n\n{}",
            info.name,
            info.preset,
            info.bug,
            info.property,
            counterexample(&model, &path)
        );
        insta::assert_snapshot!(info.name, text);
    }
}

/// The task-level bug zoo covers exactly the `always` properties: each has a variant that
/// breaks it, as the properties module says.
#[test]
fn every_task_level_safety_property_has_a_variant() {
    use std::collections::BTreeSet;
    let caught: BTreeSet<TaskPropertyId> = TASK_VARIANTS.iter().map(|v| v.property).collect();
    let always: BTreeSet<TaskPropertyId> = TaskPropertyId::with_expectation(Expectation::Always).collect();
    assert_eq!(caught, always);
    assert!(
        TaskPropertyId::ALL
            .iter()
            .any(|p| p.expectation() == Expectation::Eventually)
    );
}

#[test]
fn a_task_without_input_gates_completes_recovery_at_once() {
    for flag in [false, true] {
        let model = TaskModel::new(shapes_where(flag, 0), TaskVariant::Fixed);
        let init = model.init_states().remove(0);
        assert!(init.recovered);
        assert_eq!(init.mailbox, vec![Mail::Suspend]);
        // The restore loop takes the suspend mail before the default action ever runs (the
        // JobManager may cancel meanwhile).
        let mut actions = Vec::new();
        model.actions(&init, &mut actions);
        actions.retain(|a| *a != recovery_model::task_level::TaskAction::CancelExecution);
        assert_eq!(actions.len(), 1, "{actions:?}");
        let next = model.next_state(&init, actions[0]).unwrap();
        assert_eq!(next.phase, Phase::MainLoop);
    }
}

#[test]
fn end_of_input_during_recovery_is_an_existing_race_with_the_flag_off() {
    // defer-finish fixes a race master has too: the flag-off recovery future may complete
    // after the task read its last input.
    let model = TaskModel::new(shapes_where(false, 1), TaskVariant::SuspendOnEndOfInputDuringRecovery);
    assert!(shortest_counterexample(&model, TaskPropertyId::RestoreLoopNeverExitsEarly).is_some());
}

#[test]
fn the_busy_spin_needs_several_inputs() {
    // A one-input processor keeps returning END_OF_INPUT once finished.
    let mut shapes = shapes_where(false, 1);
    shapes.extend(shapes_where(true, 1));
    let model = TaskModel::new(shapes, TaskVariant::MultiInputNothingAvailableWhenFinished);
    assert!(shortest_counterexample(&model, TaskPropertyId::NoBusySpin).is_none());
}

#[test]
fn converting_all_gates_together_deadlocks_only_with_input_selection_and_the_flag_off() {
    let all_together = |shapes: Vec<TaskShape>| {
        let model = TaskModel::new(shapes, TaskVariant::ConvertAllGatesTogether);
        shortest_counterexample(&model, TaskPropertyId::NoDeadlock).is_some()
    };
    let (selective, not): (Vec<_>, Vec<_>) = shapes_where(false, 2)
        .into_iter()
        .partition(|s| s.selection == recovery_model::task_level::config::Selection::FirstUntilEnd);
    assert!(all_together(selective));
    assert!(!all_together(not));
    assert!(!all_together(shapes_where(true, 2)));
}

#[test]
fn the_task_level_graph_is_acyclic_for_every_variant() {
    for info in TASK_VARIANTS {
        let model = TaskModel::new(task_shapes(), info.variant);
        assert!(graph_is_acyclic(&model), "{}", info.name);
    }
}

/// docs/model.md's table of the `task` preset's shapes: each row's unique states without and
/// with failures, and its maximum depth with them, are what checking that shape alone gives.
#[test]
fn the_docs_table_of_task_shapes_matches_the_model() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
    let mut rows = 0;
    for shape in task_shapes() {
        let unique = |failures: bool| {
            let model = TaskModel::new(
                vec![TaskShape {
                    failures,
                    ..shape.clone()
                }],
                TaskVariant::Fixed,
            );
            check(&model, "task", &[], &[], 1, false)
        };
        let (before, after) = (unique(false), unique(true));
        let label = TaskShape {
            failures: false,
            ..shape.clone()
        }
        .label();
        let (flag, rest) = label.split_once(", gates ").unwrap();
        let end = rest.find(']').unwrap() + 1;
        let cell = match &rest[..end] {
            "[]" => format!("{flag}, no gates{}", &rest[end..]),
            gates => format!("{flag}, `{gates}`{}", &rest[end..]),
        }
        .replace('|', "\\|");
        let expected = format!(
            "| {} | {} | {} |",
            before.unique_states, after.unique_states, after.max_depth
        );
        let row = docs
            .lines()
            .find(|l| l.starts_with(&format!("| {cell} |")))
            .unwrap_or_else(|| panic!("no row for `{cell}` in docs/model.md"));
        assert!(
            row.ends_with(&expected),
            "docs/model.md row `{row}` should end `{expected}`"
        );
        rows += 1;
    }
    assert_eq!(rows, 9);
}

/// docs/bug-zoo.md's table of the task-level variants: each row's property and the length of
/// its shortest counterexample are what the model gives.
#[test]
fn the_bug_zoo_table_of_task_level_variants_matches_the_model() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bug-zoo.md")).unwrap();
    for info in TASK_VARIANTS {
        let p = find_task_preset(info.preset).unwrap();
        let model = TaskModel::new((p.shapes)(), info.variant);
        let steps = shortest_counterexample(&model, info.property).unwrap().actions.len();
        let prefix = format!("| [{}](#", info.name);
        let row = docs
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no row for {} in docs/bug-zoo.md", info.name));
        assert!(
            row.ends_with(&format!("| {} | {steps} |", info.property)),
            "docs/bug-zoo.md row `{row}` should end `| {} | {steps} |`",
            info.property
        );
    }
}

/// The two models' property names do not overlap, so a name says which model it belongs to.
#[test]
fn no_task_property_has_a_channel_property_s_name() {
    use recovery_model::properties::PropertyId;
    use recovery_model::task_level::properties::TaskPropertyId;
    for &p in TaskPropertyId::ALL {
        assert_eq!(PropertyId::from_name(p.name()), None, "{p}");
    }
}

/// Flag on, the restore loop returns only once every channel has consumed its recovered state:
/// in no reachable state of the `task` preset is the task RUNNING (its main loop) with a channel
/// in recovery, so no checkpoint can meet one; with the restore loop ending at the drain's end,
/// some state is.
#[test]
fn the_task_turns_running_only_after_every_channel_left_recovery() {
    use recovery_model::task_level::config::RestoreLoopEnds;
    let running_in_recovery = |ends: RestoreLoopEnds| {
        let shapes = shapes_where(true, 1)
            .into_iter()
            .chain(shapes_where(true, 2))
            .map(|s| TaskShape {
                restore_loop_ends: ends,
                ..s
            })
            .collect();
        let model = TaskModel::new(shapes, TaskVariant::Fixed);
        recovery_model::tooling::task_level::check::shortest_path(&model, |s| {
            s.phase == Phase::MainLoop && s.gates.iter().any(|g| g.in_recovery())
        })
        .is_some()
    };
    assert!(!running_in_recovery(RestoreLoopEnds::StateConsumed));
    assert!(running_in_recovery(RestoreLoopEnds::DrainEnd));
}

/// Aligned checkpoints only, with the flag on: the verdict of "a checkpoint never meets a
/// channel in recovery without its recovery barrier" for each gate of the flag and each end of
/// the restore loop. Only the gate as merged, with the restore loop ending at the drain's end,
/// violates it (FLINK-40518's hang); FLINK-40518's gate recovers as with the flag off.
#[test]
fn aligned_checkpoints_during_recovery_by_gate_and_restore_loop_end() {
    use recovery_model::task_level::config::{CdrGate, Checkpoints, RestoreLoopEnds};
    for gate in [CdrGate::AsMerged, CdrGate::RequiresUnaligned] {
        for ends in [RestoreLoopEnds::StateConsumed, RestoreLoopEnds::DrainEnd] {
            let shapes = shapes_where(true, 1)
                .into_iter()
                .chain(shapes_where(true, 2))
                .map(|s| TaskShape {
                    checkpoints: Checkpoints::AlignedOnly,
                    cdr_gate: gate,
                    restore_loop_ends: ends,
                    ..s
                })
                .collect();
            let model = TaskModel::new(shapes, TaskVariant::Fixed);
            let violated = shortest_counterexample(&model, TaskPropertyId::CheckpointFindsRecoveryBarriers).is_some();
            let expected = gate == CdrGate::AsMerged && ends == RestoreLoopEnds::DrainEnd;
            assert_eq!(violated, expected, "{gate:?}, {ends:?}");
        }
    }
}

/// The presets beside `task`: each gives its declared verdicts, on an acyclic graph.
#[test]
fn the_other_task_presets_give_their_declared_verdicts() {
    for name in ["task-running-early", "task-aligned-during-recovery"] {
        let p = find_task_preset(name).unwrap();
        let model = TaskModel::new((p.shapes)(), TaskVariant::Fixed);
        let report = check(&model, name, p.unreachable, p.violated, 1, true);
        assert!(report.passed(), "{name}");
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
        let flat = docs.split_whitespace().collect::<Vec<_>>().join(" ");
        let n = report.unique_states.to_string();
        let n = if n.len() > 3 {
            format!("{},{}", &n[..n.len() - 3], &n[n.len() - 3..])
        } else {
            n
        };
        let quoted = format!("`{name}` ({n} unique states");
        assert!(flat.contains(&quoted), "docs/model.md should say {quoted}");
        for r in &report.properties {
            let id = TaskPropertyId::from_name(r.name).unwrap();
            let expected = if p.violated.contains(&id) {
                Status::Violated
            } else if p.unreachable.contains(&id) {
                Status::ExampleMissing
            } else if id.expectation() == Expectation::Sometimes {
                Status::ExampleFound
            } else {
                Status::Holds
            };
            assert_eq!(r.status, expected, "{name}: {}", r.name);
        }
    }
}

/// The step counts docs/findings.md and docs/model.md give for FLINK-40518's preset and for the
/// #28554 variant are the shortest counterexamples' lengths.
#[test]
fn the_docs_step_counts_of_the_checkpoint_counterexamples_are_current() {
    let flat = |path: &str| {
        let text = std::fs::read_to_string(format!("{}/../docs/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let steps = |preset: &str, variant: TaskVariant| {
        let p = find_task_preset(preset).unwrap();
        let model = TaskModel::new((p.shapes)(), variant);
        shortest_counterexample(&model, TaskPropertyId::CheckpointFindsRecoveryBarriers)
            .unwrap()
            .actions
            .len()
    };
    let aligned = steps("task-aligned-during-recovery", TaskVariant::Fixed);
    let quoted = format!("`cdr check --preset task-aligned-during-recovery`, {aligned} steps");
    assert!(
        flat("findings.md").contains(&quoted),
        "docs/findings.md should say {quoted}"
    );
    let no_op = steps("task", TaskVariant::NoOpAtDrainEnd);
    let quoted = format!("is found on the `task` preset in {no_op} steps");
    assert!(flat("model.md").contains(&quoted), "docs/model.md should say {quoted}");
}

/// Installing the drainer before the conversion loses its channels, which only a checkpoint
/// that meets a channel in recovery notices: found where the restore loop ends at the drain's
/// end, harmless where it waits for `completeAll`.
#[test]
fn the_drainer_installed_early_matters_only_where_the_task_runs_early() {
    let found = |preset: &str| {
        let p = find_task_preset(preset).unwrap();
        let model = TaskModel::new((p.shapes)(), TaskVariant::DrainerInstalledBeforeRequestPartitions);
        shortest_counterexample(&model, TaskPropertyId::CheckpointFindsRecoveryBarriers).is_some()
    };
    assert!(found("task-running-early"));
    assert!(!found("task"));
}
