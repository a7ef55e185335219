//! The small presets checked exhaustively: every property's verdict is asserted, and the state
//! graph is acyclic so that the `eventually` verdicts are sound.

use recovery_model::presets::find_preset;
use recovery_model::properties::PropertyId;
use recovery_model::tooling::check::{AcyclicBy, check};
use recovery_model::{RecoveryModel, Variant};

/// Checks preset `name` and asserts every verdict; returns the number of unique states.
fn satisfies_every_property(name: &str) -> usize {
    let p = find_preset(name).unwrap();
    let report = check(
        RecoveryModel::new((p.config)(), Variant::Fixed),
        name,
        p.unreachable,
        1,
        true,
    );
    assert_eq!(report.acyclic, Some(true), "{name}");
    // Decided by the ranking function, without the depth-first search.
    assert_eq!(report.acyclic_by, Some(AcyclicBy::Ranking), "{name}");
    for r in &report.properties {
        // A defect of the modelled Flink version (violated by design) must be found again.
        assert!(r.as_expected(), "{name}: {} is {:?}: {:#?}", r.name, r.status, r.trace);
    }
    report.unique_states
}

#[test]
fn tiny_preset_satisfies_every_property() {
    // A change detector: a model change that alters the reachable graph shows up here.
    assert_eq!(satisfies_every_property("tiny"), 71325);
}

#[test]
fn the_flag_off_path_satisfies_every_property() {
    assert_eq!(satisfies_every_property("legacy"), 62598);
}

#[test]
fn the_migration_path_of_flink_2_3_0_persists_a_migrated_buffer_twice() {
    // Flag on in 2.3.0: everything holds but S9, which 2.3.0's LocalInputChannel breaks
    // (FLINK-40016: a migrated buffer is written by checkpointStarted and again by maybePersist
    // when polled), so the channel's part of the checkpoint is not in recovery order either.
    assert_eq!(satisfies_every_property("migration"), 126778);
    let p = find_preset("migration").unwrap();
    assert_eq!(
        (p.config)().violated_by_config(),
        [
            PropertyId::PersistedAtMostOnce,
            PropertyId::PersistedContentIsExact,
            PropertyId::RecoveredStateFromItsSource
        ]
    );
}

#[test]
fn upstream_failures_satisfy_every_property_and_fail_the_task() {
    // The task fails (sometimes) on a connection error and on a subpartition released under
    // its reader; safety holds throughout.
    assert_eq!(satisfies_every_property("faults"), 328095);
}

#[test]
fn a_local_channel_lending_its_exclusive_buffer_to_recovery_satisfies_every_property() {
    assert_eq!(satisfies_every_property("local-buffers"), 3638);
}

#[test]
fn upstream_written_during_the_run_satisfies_every_property() {
    assert_eq!(satisfies_every_property("late"), 162452);
}

#[test]
fn two_checkpoints_without_recovery_satisfy_every_property() {
    assert_eq!(satisfies_every_property("subsume"), 109232);
}

#[test]
fn the_alignment_timer_finds_the_announced_barrier_behind_the_blocking_end_of_output_event() {
    use recovery_model::state::{Payload, State};
    use recovery_model::tooling::check::shortest_path;
    // The upstream's EndOfOutputChannelStateEvent blocks its subpartition: the aligned barrier
    // behind it (not a priority element) waits until every channel's recovery ended and the
    // task resumed consumption, so it never reaches the recovery stash, and the timer's
    // convertToPriorityEvent finds it (the sometimes twin shows the conversion).
    assert_eq!(satisfies_every_property("aligned-timeout"), 2053);
    let p = find_preset("aligned-timeout").unwrap();
    assert!((p.config)().violated_by_config().is_empty());
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let stashed = |s: &State| s.ch(0).stash.iter().any(|e| e.payload == Payload::AlignedBarrier(1));
    assert!(shortest_path(&m, stashed).is_none());
    // As an ordinary event it would not block, and the barrier follows it into the stash: the
    // modelling error behind the withdrawn finding (docs/findings.md).
    let unblocked = RecoveryModel::new((p.config)(), Variant::RecoveryCompletionNotBlocking);
    assert!(shortest_path(&unblocked, stashed).is_some());
    let path =
        recovery_model::tooling::check::shortest_counterexample(&unblocked, PropertyId::AnnouncedBarrierFound).unwrap();
    assert_eq!(path.len(), 9, "{path:?}");
}

#[test]
fn a_shared_pool_hands_a_recycled_floating_buffer_to_another_channel_and_satisfies_every_property() {
    // The sometimes property only a shared pool reaches is found (it is not in the preset's
    // unreachable list), and every other verdict holds.
    assert_eq!(satisfies_every_property("shared-pool"), 3403);
    let p = find_preset("shared-pool").unwrap();
    assert!(!p.unreachable.contains(&PropertyId::LentAcross));
    assert!((p.config)().violated_by_config().is_empty());
}

#[test]
fn a_channel_in_recovery_takes_no_floating_buffer_for_a_backlog_its_blocked_upstream_cannot_have() {
    use recovery_model::state::State;
    use recovery_model::tooling::check::shortest_path;
    // Two remote channels without exclusive buffers share the gate's one floating buffer.
    // Each upstream's first element, EndOfOutputChannelStateEvent, blocks its subpartition
    // with a backlog of 0, so no channel in recovery requests a floating buffer for a backlog,
    // and the drainer gets the pool's buffer: every property holds.
    assert_eq!(satisfies_every_property("pool-starvation"), 353);
    let p = find_preset("pool-starvation").unwrap();
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let hoards = |s: &State| s.channels.iter().any(|ch| ch.in_recovery && !ch.bm.floating.is_empty());
    assert!(shortest_path(&m, hoards).is_none());
    // Without the blocking, channel 1's backlog takes the buffer while in recovery.
    let unblocked = RecoveryModel::new((p.config)(), Variant::RecoveryCompletionNotBlocking);
    assert!(shortest_path(&unblocked, hoards).is_some());
}

#[test]
fn the_drainer_parked_for_a_channel_without_exclusive_buffers_misses_its_wake_up() {
    use recovery_model::Action;
    use recovery_model::expectations::DRAINER_MISSES_WAKEUP;
    use recovery_model::state::NetBuf;
    use stateright::Model;
    assert_eq!(satisfies_every_property("drain-wakeup"), 112);
    let p = find_preset("drain-wakeup").unwrap();
    assert_eq!((p.config)().violated_by_config(), DRAINER_MISSES_WAKEUP);
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let path = recovery_model::tooling::check::shortest_counterexample(&m, PropertyId::RecoveryCompletes).unwrap();
    assert_eq!(path.len(), 9, "{path:?}");
    assert!(path.contains(&Action::RequestBufferBlocking { channel: 0 }), "{path:?}");
    let mut s = m.init_states().remove(0);
    for a in &path {
        s = m.next_state(&s, *a).unwrap();
    }
    // Nothing can happen: the drainer waits in bufferQueue.wait(), its manager is no longer
    // the pool's listener and needs no buffer, and the pool holds the free buffer.
    assert!(m.is_terminal(&s));
    assert!(s.io_waiting);
    assert!(!s.ch(0).bm.waiting_for_floating && s.ch(0).bm.required == 0);
    assert_eq!(s.pools[0].available, [NetBuf::Floating(0)]);
    assert_eq!(s.ch(0).ghost_pushed, 1);
}

#[test]
fn a_floating_credit_announced_after_the_resume_exceeds_the_buffers_of_a_channel_without_exclusive_ones() {
    use recovery_model::Action;
    use recovery_model::expectations::LATE_FLOATING_CREDIT;
    use recovery_model::state::Violation;
    use stateright::Model;
    assert_eq!(satisfies_every_property("late-floating-credit"), 1455);
    let p = find_preset("late-floating-credit").unwrap();
    assert_eq!((p.config)().violated_by_config(), LATE_FLOATING_CREDIT);
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let path = recovery_model::tooling::check::shortest_counterexample(&m, PropertyId::NoProtocolViolation).unwrap();
    assert_eq!(path.len(), 27, "{path:?}");
    // The recycler's announcement comes after the server's resumeConsumption reset the credit.
    let resumed = path
        .iter()
        .position(|a| *a == Action::OnResumeConsumption { channel: 0 });
    let announced = path
        .iter()
        .position(|a| matches!(a, Action::NotifyBufferAvailable { channel: 0, .. }));
    assert!(resumed.is_some() && resumed < announced, "{path:?}");
    let mut s = m.init_states().remove(0);
    for a in &path {
        s = m.next_state(&s, *a).unwrap();
    }
    assert_eq!(s.violation, Some((0, Violation::NoBufferForData)));
}

/// Every state of preset `name`, breadth-first, with the actions that leave it.
fn reachable(name: &str) -> (RecoveryModel, Vec<recovery_model::state::State>) {
    use stateright::Model;
    let m = RecoveryModel::new((find_preset(name).unwrap().config)(), Variant::Fixed);
    let mut seen: std::collections::HashSet<_> = m.init_states().into_iter().collect();
    let mut queue: Vec<_> = seen.iter().cloned().collect();
    let mut i = 0;
    while i < queue.len() {
        let mut actions = Vec::new();
        m.actions(&queue[i], &mut actions);
        for a in actions {
            if let Some(next) = m.next_state(&queue[i], a)
                && seen.insert(next.clone())
            {
                queue.push(next);
            }
        }
        i += 1;
    }
    (m, queue)
}

/// A poll that hands an element to the operator from a channel whose `isReleased` is set and
/// whose queues are not drained yet: the window the split release opens is reached.
fn delivers_inside_the_release_window(name: &str) -> bool {
    use recovery_model::Action;
    use stateright::Model;
    let (m, states) = reachable(name);
    states.iter().any(|s| {
        let mut actions = Vec::new();
        m.actions(s, &mut actions);
        actions.into_iter().any(|a| match a {
            Action::GetNextBuffer { channel: c } if s.ch(c).releasing => m
                .next_state(s, a)
                .is_some_and(|n| n.ch(c).ghost_delivered.len() > s.ch(c).ghost_delivered.len()),
            _ => false,
        })
    })
}

#[test]
fn the_split_release_satisfies_every_property_and_its_window_delivers() {
    assert_eq!(satisfies_every_property("release-window-local"), 638);
    assert_eq!(satisfies_every_property("release-window-remote"), 18082);
    assert!(delivers_inside_the_release_window("release-window-local"));
    assert!(delivers_inside_the_release_window("release-window-remote"));
}

/// Between `isReleased` and the drain (`release_step`) a channel still hands out what it
/// queued: the gate that polls any channel with data (the log validation's) must see it too.
/// A real run's log polled a released local channel's sentinel in that window.
#[test]
fn a_channel_in_its_release_window_still_has_next_for_a_gate_that_polls_any_channel() {
    use recovery_model::Action;
    use recovery_model::model::GatePolling;
    use recovery_model::tooling::check::shortest_path;
    use stateright::Model;
    for name in ["release-window-local", "release-window-remote"] {
        let m = RecoveryModel::new((find_preset(name).unwrap().config)(), Variant::Fixed)
            .with_polling(GatePolling::AnyChannelWithData);
        let path = shortest_path(&m, |s| s.ch(0).releasing && !s.ch(0).queue.is_empty())
            .unwrap_or_else(|| panic!("{name}: a release window with something queued"));
        let mut s = m.init_states().remove(0);
        for a in &path {
            s = m.next_state(&s, *a).unwrap();
        }
        assert!(m.has_next(&s, 0), "{name}");
        let mut enabled = Vec::new();
        m.actions(&s, &mut enabled);
        assert!(
            enabled.contains(&Action::GetNextBuffer { channel: 0 }),
            "{name}: {enabled:?}"
        );
    }
}

#[test]
fn a_converted_local_channel_still_in_recovery_loses_the_priority_flag_as_the_drainer_s_does() {
    use recovery_model::Action;
    use recovery_model::config::{ChannelConfig, Delivery};
    // PR3's conversion pushes the recovered buffers into a LocalInputChannel that stays in
    // recovery until its sentinel is polled: its getNextBuffer reads hasPendingPriorityEvent
    // as the drainer's channel does, so the split notification loses the flag there too.
    let mut cfg = (find_preset("priority-race").unwrap().config)();
    cfg.delivery = Delivery::Conversion;
    assert!(cfg.channels.iter().all(|c: &ChannelConfig| c.priority_notify_step));
    cfg.validate().unwrap();
    assert_eq!(cfg.violated_by_config(), [PropertyId::PriorityHonoured]);
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    let path = recovery_model::tooling::check::shortest_counterexample(&m, PropertyId::PriorityHonoured).unwrap();
    // Barrier 2 follows barrier 1 only once the coordinator aborted checkpoint 1.
    assert_eq!(path.len(), 8, "{path:?}");
    assert!(path.contains(&Action::AbortPendingCheckpoint { cp: 1 }), "{path:?}");
    assert_eq!(path[0], Action::ConvertRecoveredInputChannels);
}

#[test]
fn two_channels_aligned_with_timeout_complete_aligned_or_go_unaligned_when_the_timer_fires() {
    use recovery_model::state::{CheckpointStatus, Payload, State, TaskPc};
    use recovery_model::tooling::check::shortest_path;
    assert_eq!(satisfies_every_property("aligned-timeout-two-channels"), 334565);
    let p = find_preset("aligned-timeout-two-channels").unwrap();
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let timed_out = |s: &State| s.alignment.as_ref().is_some_and(|a| a.timed_out);
    let aligned_in = |s: &State, c: u8| {
        s.ch(c)
            .ghost_delivered
            .iter()
            .any(|d| d.payload == Payload::AlignedBarrier(1))
    };
    // Both aligned barriers in: the checkpoint completes aligned, nothing converted.
    let aligned = |s: &State| s.checkpoints[0] == CheckpointStatus::Completed && !timed_out(s);
    assert!(shortest_path(&m, aligned).is_some());
    // AlternatingCollectingBarriers' timeout: one aligned barrier in, the timer itself
    // triggers the checkpoint (checkpointStarted on every channel).
    let collecting = |s: &State| timed_out(s) && aligned_in(s, 0) && matches!(s.task, TaskPc::Trigger { .. });
    assert!(shortest_path(&m, collecting).is_some());
    // While a channel's aligned barrier is in and the checkpoint waits, its subpartition stays
    // blocked, and data written behind the barrier waits there.
    for c in 0..2 {
        let resumed_early = |s: &State| {
            aligned_in(s, c) && s.checkpoints[0] != CheckpointStatus::Completed && !s.ch(c).producer.blocked
        };
        assert!(shortest_path(&m, resumed_early).is_none(), "channel {c}");
    }
    // Once it completes, the data behind channel 1's aligned barrier goes out.
    let sent_after_completion = |s: &State| {
        let ch = s.ch(1);
        aligned_in(s, 1) && ch.ghost_barrier_after[0].is_some_and(|before| ch.producer.dequeued() > before)
    };
    assert!(shortest_path(&m, sent_after_completion).is_some());
    // The upstream's own timeout sends a barrier unaligned, which blocks nothing: the data
    // behind it may go out before the checkpoint ends.
    let unaligned_then_data = |s: &State| {
        let ch = s.ch(1);
        s.checkpoints[0] != CheckpointStatus::Completed
            && ch.ghost_delivered.iter().any(|d| d.payload == Payload::Barrier(1))
            && ch.ghost_barrier_after[0].is_some_and(|before| ch.producer.dequeued() > before)
    };
    assert!(shortest_path(&m, unaligned_then_data).is_some());
}

/// A remote channel with floating buffers only gets credit because the server announces its
/// backlog (`BacklogAnnouncement`): the data is delivered, by way of that announcement. With
/// no floating buffer either, it could never receive data: rejected.
#[test]
fn a_remote_channel_without_exclusive_buffers_receives_data_after_the_backlog_announcement() {
    use recovery_model::Action;
    use recovery_model::config::{
        ChannelConfig, Delivery, ModelConfig, Upstream::Data as D, Upstream::EndOfOutputChannelState as O, remote,
    };
    use stateright::Model;
    let cfg = ModelConfig {
        channels: vec![remote(0, &[O, D], 0, 1)],
        checkpoints: 0,
        delivery: Delivery::NoRecovery,
        insert_recovery_barriers: false,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    };
    cfg.validate().unwrap();
    let model = RecoveryModel::new(cfg.clone(), Variant::Fixed);
    assert!(
        recovery_model::tooling::check::shortest_counterexample(&model, PropertyId::AllLiveDataDelivered).is_none()
    );
    let path = recovery_model::tooling::check::shortest_example(&model, PropertyId::EverythingDelivered).unwrap();
    assert!(path.contains(&Action::AnnounceBacklog { channel: 0 }), "{path:?}");
    // Without the announcement the channel would wait for credit forever.
    let mut s = model.init_states().remove(0);
    s = model.next_state(&s, Action::RequestPartitions).unwrap();
    assert_eq!(
        model.next_states(&s).len(),
        1,
        "only the announcement is enabled after the request"
    );
    let late = ModelConfig {
        channels: vec![ChannelConfig {
            late: 1,
            ..remote(0, &[O, D], 0, 1)
        }],
        ..cfg.clone()
    };
    assert!(late.validate().unwrap_err().contains("late"));
    let no_floating = ModelConfig {
        channels: vec![remote(0, &[O, D], 0, 0)],
        ..cfg
    };
    let err = no_floating.validate().unwrap_err();
    assert!(err.contains("backlog"), "{err}");
}
