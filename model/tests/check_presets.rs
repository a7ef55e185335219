//! The small presets checked exhaustively: every property's verdict is asserted, and the state
//! graph is acyclic so that the `eventually` verdicts are sound.

use recovery_model::check::{AcyclicBy, check};
use recovery_model::config::find_preset;
use recovery_model::properties::PropertyId;
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
        assert_eq!(r.status, r.expected(), "{name}: {}: {:#?}", r.name, r.trace);
    }
    report.unique_states
}

#[test]
fn tiny_preset_satisfies_every_property() {
    // A change detector: a model change that alters the reachable graph shows up here.
    assert_eq!(satisfies_every_property("tiny"), 44524);
}

#[test]
fn the_flag_off_path_satisfies_every_property() {
    assert_eq!(satisfies_every_property("legacy"), 48408);
}

#[test]
fn the_migration_path_of_flink_2_3_0_persists_a_migrated_buffer_twice() {
    // Flag on in 2.3.0: everything holds but the two halves of S9, which 2.3.0's
    // LocalInputChannel breaks (FLINK-40016: a migrated buffer is written by checkpointStarted
    // and again by maybePersist when polled).
    assert_eq!(satisfies_every_property("migration"), 163720);
    let p = find_preset("migration").unwrap();
    assert_eq!(
        (p.config)().violated_by_config(),
        [PropertyId::PersistedAtMostOnce, PropertyId::PersistedContentIsExact]
    );
}

#[test]
fn upstream_failures_satisfy_every_property_and_fail_the_task() {
    // The task fails (sometimes) on a connection error and on a subpartition released under
    // its reader; safety holds throughout.
    assert_eq!(satisfies_every_property("faults"), 174893);
}

#[test]
fn a_local_channel_lending_its_exclusive_buffer_to_recovery_satisfies_every_property() {
    assert_eq!(satisfies_every_property("local-buffers"), 1540);
}

#[test]
fn upstream_written_during_the_run_satisfies_every_property() {
    assert_eq!(satisfies_every_property("late"), 110993);
}

#[test]
fn two_checkpoints_without_recovery_satisfy_every_property() {
    assert_eq!(satisfies_every_property("subsume"), 19845);
}

#[test]
fn the_alignment_timer_fails_the_task_when_the_announced_barrier_is_in_the_recovery_event_stash() {
    use recovery_model::Action;
    use recovery_model::state::{Failure, Payload, TaskPc};
    use stateright::Model;
    // Every other verdict holds, the lookup's failure is found (violated by design), and an
    // announced barrier is converted once recovery ended (its sometimes twin).
    assert_eq!(satisfies_every_property("aligned-timeout"), 788);
    let p = find_preset("aligned-timeout").unwrap();
    assert_eq!((p.config)().violated_by_config(), [PropertyId::AnnouncedBarrierFound]);
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let path = recovery_model::check::shortest_counterexample(&m, PropertyId::AnnouncedBarrierFound).unwrap();
    assert_eq!(path.len(), 9, "{path:?}");
    assert_eq!(path.last(), Some(&Action::AlignedCheckpointTimeout { cp: 1 }));
    let mut s = m.init_states().remove(0);
    for a in &path[..path.len() - 1] {
        s = m.next_state(&s, *a).unwrap();
    }
    // Before the timer fires: in recovery, the barrier in the stash, its announcement polled.
    let ch = s.ch(0);
    assert!(ch.in_recovery);
    assert!(ch.stash.iter().any(|e| e.payload == Payload::AlignedBarrier(1)));
    assert_eq!(s.alignment.as_ref().map(|a| a.announced.len()), Some(1));
    let s = m.next_state(&s, *path.last().unwrap()).unwrap();
    assert!(matches!(
        s.task,
        TaskPc::Failed {
            cause: Failure::AnnouncedBarrierNotFound,
            ..
        }
    ));
}

#[test]
fn a_shared_pool_hands_a_recycled_floating_buffer_to_another_channel_and_satisfies_every_property() {
    // The sometimes property only a shared pool reaches is found (it is not in the preset's
    // unreachable list), and every other verdict holds.
    assert_eq!(satisfies_every_property("shared-pool"), 8813);
    let p = find_preset("shared-pool").unwrap();
    assert!(!p.unreachable.contains(&PropertyId::LentAcross));
    assert!((p.config)().violated_by_config().is_empty());
}

#[test]
fn a_channel_in_recovery_holds_the_shared_pool_s_buffer_while_the_drainer_waits_for_it() {
    use recovery_model::Action;
    use recovery_model::config::POOL_STARVATION;
    use recovery_model::state::NetBuf;
    use stateright::Model;
    assert_eq!(satisfies_every_property("pool-starvation"), 928);
    let p = find_preset("pool-starvation").unwrap();
    assert_eq!((p.config)().violated_by_config(), POOL_STARVATION);
    let m = RecoveryModel::new((p.config)(), Variant::Fixed);
    let path = recovery_model::check::shortest_counterexample(&m, POOL_STARVATION[0]).unwrap();
    // Channel 1's server also announces its backlog (its initial credit is 0): the path ends
    // once that announcement is handled too.
    assert_eq!(path.len(), 10, "{path:?}");
    assert!(path.contains(&Action::AnnounceBacklog { channel: 1 }), "{path:?}");
    assert_eq!(path.last(), Some(&Action::OnSenderBacklog { channel: 1 }));
    let mut s = m.init_states().remove(0);
    for a in &path {
        s = m.next_state(&s, *a).unwrap();
    }
    // The drainer waits on channel 0, which has nothing to lend; channel 1, still in recovery,
    // holds the pool's one buffer unannounced; nothing else can happen.
    assert!(m.is_terminal(&s));
    assert_eq!(s.ch(1).bm.floating, [NetBuf::Floating(0)]);
    assert!(s.ch(1).in_recovery && !s.ch(1).bm.notify_available);
    assert_eq!(s.ch(0).bm.available(), 0);
    assert!(s.pools[0].available.is_empty());
    assert_eq!(s.ch(0).ghost_pushed, 0);
    // With a pool per channel the same channels recover and deliver everything.
    let own_pools = recovery_model::ModelConfig {
        shared_pool: false,
        overlapping_checkpoints: false,
        channels: vec![
            recovery_model::config::remote(1, &[recovery_model::Upstream::Event], 0, 1),
            recovery_model::config::remote(
                0,
                &[recovery_model::Upstream::Event, recovery_model::Upstream::Data],
                0,
                1,
            ),
        ],
        ..(p.config)()
    };
    own_pools.validate().unwrap();
    assert!(own_pools.violated_by_config().is_empty());
    let report = check(RecoveryModel::new(own_pools, Variant::Fixed), "own pools", &[], 1, true);
    for r in report.properties.iter().filter(|r| r.expectation != "sometimes") {
        assert_eq!(r.status, r.expected(), "own pools: {}", r.name);
    }
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
    assert_eq!(satisfies_every_property("release-window-local"), 588);
    assert_eq!(satisfies_every_property("release-window-remote"), 9823);
    assert!(delivers_inside_the_release_window("release-window-local"));
    assert!(delivers_inside_the_release_window("release-window-remote"));
}

/// Between `isReleased` and the drain (`release_step`) a channel still hands out what it
/// queued: the gate that polls any channel with data (the log validation's) must see it too.
/// A real run's log polled a released local channel's sentinel in that window.
#[test]
fn a_channel_in_its_release_window_still_has_next_for_a_gate_that_polls_any_channel() {
    use recovery_model::Action;
    use recovery_model::check::shortest_path;
    use recovery_model::model::GatePolling;
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
    let path = recovery_model::check::shortest_counterexample(&m, PropertyId::PriorityHonoured).unwrap();
    assert_eq!(path.len(), 7, "{path:?}");
    assert_eq!(path[0], Action::ConvertRecoveredInputChannels);
}
