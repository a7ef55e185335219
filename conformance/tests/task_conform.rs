//! Task-level conformance: impl/'s `StreamTask` follows the task-level model on every edge of
//! the `task`, `task-running-early` and `task-aligned-during-recovery` presets, and the
//! comparison has teeth: the model with a task-level bug switched on diverges from the fixed
//! implementation, each at the point where the bug shows.

use conformance::task_conform::{conform_task, conform_task_variant};
use recovery_model::task_level::TaskVariant;
use recovery_model::task_level::bug_zoo::TASK_VARIANTS;

#[test]
fn every_edge_of_the_task_preset_replays_without_divergence() {
    let report = conform_task("task", None, 0).unwrap();
    assert!(report.divergence.is_none(), "{:#?}", report.divergence);
    assert_eq!(report.edges_replayed, report.edges);
    assert_eq!(report.action_kinds_replayed, report.action_kinds);
    assert_eq!(report.action_kinds.len(), 18, "{:?}", report.action_kinds);
    assert_eq!(report.states, 9_773);
    // docs/conformance.md quotes these.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md")).unwrap();
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let edges = report.edges.to_string();
    let edges = format!("{},{}", &edges[..edges.len() - 3], &edges[edges.len() - 3..]);
    let quoted = format!("{edges} edges and {} action kinds", report.action_kinds.len());
    assert!(flat.contains(&quoted), "docs/conformance.md should say `{quoted}`");
}

/// The restore loop ending at the drain's end: checkpoints meet channels in recovery, with the
/// drainer as the trigger (unaligned) or NO_OP (aligned, which FLINK-40518's gate turns off in
/// `task-running-early`; which violates its property by design in
/// `task-aligned-during-recovery`). Either way impl/ takes what the model takes.
#[test]
fn every_edge_of_the_presets_with_checkpoints_during_recovery_replays_without_divergence() {
    for (preset, kinds) in [("task-running-early", 19), ("task-aligned-during-recovery", 11)] {
        let report = conform_task(preset, None, 0).unwrap();
        assert!(report.divergence.is_none(), "{preset}: {:#?}", report.divergence);
        assert!(report.is_complete(), "{preset}: {report:?}");
        assert_eq!(report.action_kinds.len(), kinds, "{preset}: {:?}", report.action_kinds);
        for kind in ["drainGate", "triggerCheckpoint"] {
            assert!(report.action_kinds.contains(&kind), "{preset}: {kind}");
        }
        // docs/conformance.md quotes these.
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md")).unwrap();
        let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        let edges = report.edges.to_string();
        let edges = match edges.len() {
            n if n > 3 => format!("{},{}", &edges[..n - 3], &edges[n - 3..]),
            _ => edges,
        };
        let quoted = format!("`{preset}` ({edges} edges, {kinds} action kinds");
        assert!(flat.contains(&quoted), "docs/conformance.md should say `{quoted}`");
    }
}

#[test]
fn random_walks_replay_without_divergence() {
    let report = conform_task("task", Some(50), 9).unwrap();
    assert!(report.divergence.is_none(), "{:#?}", report.divergence);
    assert_eq!(report.traces, 50);
}

/// Each variant's model and the fixed implementation part where the bug acts: the field the
/// first difference names is the one the bug changes.
#[test]
fn each_task_variant_diverges_from_the_fixed_implementation() {
    let cases = [
        // B1: the model's processor returns NOTHING_AVAILABLE, impl's END_OF_INPUT.
        (
            TaskVariant::MultiInputNothingAvailableWhenFinished,
            r#"observation status: expected "nothing-available", got "end-of-input""#,
        ),
        // B4: the model suspends the mailbox at END_OF_INPUT during recovery; impl defers.
        (
            TaskVariant::SuspendOnEndOfInputDuringRecovery,
            "snapshot deferred_end_of_input: expected false, got true",
        ),
        // B7: the model holds back a gate's request until every gate's state is consumed;
        // impl's gate requests as soon as its own is.
        (
            TaskVariant::ConvertAllGatesTogether,
            "snapshot pending: expected [\"complete the recovery future\"], got [\"complete the recovery future\",\"thenRun(requestPartitions mail of gate 0)\"]",
        ),
        // The model enters the main loop on a failed recovery; impl's get() rethrows the cause.
        (
            TaskVariant::ExceptionalRecoveryTakenAsDone,
            r#"observation error: expected nothing, got "finishReadRecoveredState(gate 0) threw""#,
        ),
        // Flag off, the model drops the read's exception; impl fails the Task, whose canceler
        // is started.
        (
            TaskVariant::ReadFailureNotHandled,
            "snapshot canceler_pending: expected false, got true",
        ),
        // The model's Task takes invoke's CancelTaskException; impl keeps the read's failure.
        (
            TaskVariant::InvokeExceptionOverridesFailureCause,
            r#"snapshot execution_state: expected "CANCELED", got "FAILED""#,
        ),
        // The model's cleanup leaves the fetched state; impl's gate releases it.
        (TaskVariant::SpillReleasedOnlyByDrain, "snapshot gates: "),
        // The model queues a read into a released channel; impl's read throws
        // CancelTaskException and the gate stays unread.
        (TaskVariant::PushIntoReleasedChannelQueued, "snapshot gates: "),
        // #28554: the model's chain ends, NO_OP queued and the recovery future complete, when
        // the drain ends; impl's waits for completeAll of the gates' state-consumed futures.
        (
            TaskVariant::NoOpAtDrainEnd,
            r#"snapshot chain: expected "done", got "state-consumed""#,
        ),
        // The model installs the drainer before the conversion's mail; impl's chain converts
        // first, then builds the drainer over the converted channels.
        (
            TaskVariant::DrainerInstalledBeforeRequestPartitions,
            r#"snapshot chain: expected "install-drainer", got "request-partitions""#,
        ),
    ];
    assert_eq!(
        cases.len(),
        TASK_VARIANTS.len(),
        "every task-level variant has its case"
    );
    for (variant, field) in cases {
        let preset = variant.info().expect("a variant").preset;
        let report = conform_task_variant(preset, variant, None, 0).unwrap();
        let d = report
            .divergence
            .unwrap_or_else(|| panic!("{}: no divergence", variant.name()));
        assert!(
            d.first_difference.starts_with(field),
            "{}: {}",
            variant.name(),
            d.first_difference
        );
    }
}
