//! Every action kind of the model is classified here: one step of its own for a Flink method
//! (or a whole mail), or the second (or later) part of a method the model splits (a step after a
//! lock, a re-read, the second half of a release, ...). For a split step, impl/ must be
//! stoppable in the window before it: the entry names the `PausePoint` that stands for that
//! window, where the conformance driver stops the thread until the model's split step runs.
//! The model has no machine-readable "split" marker: each entry says where the split is
//! documented (model/src/action.rs's doc of the action, docs/model.md's "Unlocked accesses"
//! row). A new action kind fails the test until it is classified here.

use recovery_impl::ids::BufferId;
use recovery_impl::pause_point::PausePoint;
use recovery_model::Action;

enum Split {
    /// One step: nothing of the method runs in another step.
    Whole,
    /// The later part of a split method; impl/ stops at this pause point before it.
    Window(PausePoint),
    /// The later part of a method only a bug variant splits: impl/ stops at this pause point
    /// for that variant's replay (`ImplDriver::for_model`), and no preset's conformance run
    /// reaches it (`Action::MODEL_ONLY_KINDS`).
    VariantWindow(PausePoint),
}

/// (kind, classification, where the split is documented).
fn table() -> Vec<(&'static str, Split, &'static str)> {
    use Split::*;
    vec![
        // The append of the buffer the drainer took and filled outside every lock (action.rs
        // `OnRecoveredStateBuffer`; B6, choice 10).
        (
            "onRecoveredStateBuffer",
            Window(PausePoint::OnRecoveredStateBuffer),
            "B6, choice 10",
        ),
        // The drainer woken in `requestBufferBlocking` takes its buffer in the model's next
        // `requestBufferBlocking` of the channel (action.rs `RequestBufferBlocking`; B6).
        ("requestBufferBlocking", Window(PausePoint::RequestBufferBlocking), "B6"),
        ("finishRecoveredBufferDelivery", Whole, "L14"),
        ("convertRecoveredInputChannels", Whole, "G5"),
        ("requestPartitions", Whole, "L10, G5"),
        ("getNextBuffer", Whole, "G1"),
        ("insertRecoveryCheckpointBarrierIfInRecovery", Whole, "L14"),
        ("checkpointStarted", Whole, "L16, R13"),
        ("onRecoveredStateConsumed", Whole, "L15, R11"),
        // `onRecoveredStateConsumed`'s `enableNotify` after the unstash (R11).
        ("enableNotify", Window(PausePoint::EnableNotify), "R11, B5"),
        // After `bufferQueue` is released (R6, B3).
        (
            "notifyBufferAvailable",
            Window(PausePoint::Announce { n: 1, channel: None }),
            "R6, B3",
        ),
        ("emitCheckpointBarrier", Whole, "P1"),
        ("processTimeoutableCheckpointBarrier", Whole, "P1"),
        ("alignedBarrierTimeout", Whole, "choice 24"),
        ("alignedCheckpointTimeout", Whole, "choice 24"),
        // After `PipelinedSubpartition.add` released its lock (`priority_notify_step`, L8/P1).
        ("notifyPriorityEvent", Window(PausePoint::NotifyPriorityEvent), "L8, P1"),
        // The second half of `pullPriorityFromSubpartitionView` (`priority_notify_step`, L7).
        (
            "pullPriorityFromSubpartitionView",
            Window(PausePoint::ClearPendingPriorityEvent),
            "L7",
        ),
        // The variant `recovered-buffer-dropped-for-priority-event`'s re-read after the poll
        // (action.rs `RereadPendingPriorityEvent`; L1, L2).
        (
            "rereadPendingPriorityEvent",
            VariantWindow(PausePoint::RereadPendingPriorityEvent),
            "L1, L2",
        ),
        ("sendBuffer", Whole, "P3, P4"),
        ("addCredit", Whole, "P3"),
        ("resumeConsumption", Whole, "choice 28"),
        ("announceBacklog", Whole, "P3"),
        ("onBuffer", Whole, "R2, R3"),
        // `onBuffer` → `onSenderBacklog` after `receivedBuffers` is released (R5).
        ("onSenderBacklog", Window(PausePoint::OnSenderBacklog), "R5"),
        ("sendAddCredit", Whole, "R7"),
        ("sendResumeConsumption", Whole, "choice 28"),
        ("recycle", Whole, "B1, B2"),
        // The floating buffer `recycle` released, back to the pool after `bufferQueue` (B3).
        (
            "recycleFloatingBuffer",
            Window(PausePoint::ReturnFloating { buffer: BufferId(0) }),
            "B3",
        ),
        ("add", Whole, "L9, P1"),
        ("releasePartition", Whole, "P2"),
        ("onError", Whole, "R10"),
        ("releaseAllResources", Whole, "L11, L12, R9"),
        // The rest of `releaseAllResources` after `isReleased` (`release_step`; L12, R9).
        (
            "releaseQueuedBuffers",
            Window(PausePoint::ReleaseQueuedBuffers),
            "L12, R9",
        ),
        ("close", Whole, "G4"),
        ("abortPendingCheckpoint", Whole, "choice 5"),
    ]
}

#[test]
fn every_action_kind_is_classified_split_or_not() {
    let table = table();
    let listed: Vec<&str> = table.iter().map(|(k, _, _)| *k).collect();
    let unclassified: Vec<_> = Action::KINDS.iter().filter(|k| !listed.contains(k)).collect();
    assert!(
        unclassified.is_empty(),
        "classify these action kinds in conformance/tests/split_steps.rs (split, with the pause \
         point of impl/ that stands for their window, or not split): {unclassified:?}"
    );
    let unknown: Vec<_> = listed.iter().filter(|k| !Action::KINDS.contains(k)).collect();
    assert!(unknown.is_empty(), "no such action kinds: {unknown:?}");
    let mut seen = std::collections::BTreeSet::new();
    for k in &listed {
        assert!(seen.insert(k), "{k} is listed twice");
    }
}

#[test]
fn the_model_only_kinds_are_the_windows_only_a_bug_variant_opens() {
    // Every split step has a pause point, so the driver replays each; the model-only kinds are
    // those no preset reaches because only a bug variant splits their method.
    for (kind, split, _) in table() {
        let variant_only = matches!(split, Split::VariantWindow(_));
        assert_eq!(
            Action::MODEL_ONLY_KINDS.contains(&kind),
            variant_only,
            "{kind}: model-only exactly when only a bug variant splits it off"
        );
    }
}

#[test]
fn each_split_window_has_its_own_pause_point() {
    use std::mem::discriminant;
    let windows: Vec<(&str, PausePoint)> = table()
        .into_iter()
        .filter_map(|(k, s, _)| match s {
            Split::Window(p) | Split::VariantWindow(p) => Some((k, p)),
            _ => None,
        })
        .collect();
    for (i, (a, p)) in windows.iter().enumerate() {
        for (b, q) in &windows[i + 1..] {
            assert_ne!(discriminant(p), discriminant(q), "{a} and {b} share a pause point");
        }
    }
}
