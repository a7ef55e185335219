//! Validation, implementation to spec: real multi-threaded runs of `recovery-impl` record an
//! event log (the IO thread delivering recovered state, the producer writing checkpoint
//! barriers, the task thread requesting partitions, polling through the gate and triggering
//! the checkpoint), and the model must accept every log; corrupted logs are rejected at the
//! first step that cannot be placed.

mod common;

use common::runs::{handle_end_of_output, jitter, join_all_by, upstream_buffer};
use conformance::generate::SplitMix64;
use conformance::observation::{Item, Observation};
use conformance::projection::{item_of, payload_of};
use conformance::validate::{Step, steps, validate};
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::event_log::{Event, EventLog, Recorded, Recorder, set_thread_recorder};
use recovery_impl::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::recoverable_input_channel::FutureStatus;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::{BufferId, BufferKind, NetworkBuffer, RecoverableInputChannel};
use recovery_model::config::{Delivery, ModelConfig, Upstream, local};
use recovery_model::state::Payload;
use recovery_model::{Action, RecoveryModel, Variant};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Two local channels, the first with two recovered buffers and an event upstream, one
/// checkpoint: within the model's bounds, and every thread of a local recovery races.
fn config() -> ModelConfig {
    ModelConfig {
        channels: vec![
            local(2, &[Upstream::EndOfOutputChannelState, Upstream::Data, Upstream::Event]),
            local(1, &[Upstream::EndOfOutputChannelState, Upstream::Data]),
        ],
        checkpoints: 1,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: true,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    }
}

struct Run {
    log: Vec<Recorded>,
    subpartitions: Vec<usize>,
}

/// One run on real threads named after the model's: `io`, `producer`, `task`.
fn run(cfg: &ModelConfig, seed: u64) -> Run {
    let log = EventLog::new();
    let writer = Arc::new(ChannelStateWriter::new());
    let gate = SingleInputGate::new(0, LocalBufferPool::new(NetworkBufferPool::new(0), 0).unwrap());
    let mut channels = Vec::new();
    let mut partitions = Vec::new();
    for (c, cc) in cfg.channels.iter().enumerate() {
        let partition = ResultSubpartition::new();
        for (i, u) in cc.upstream.iter().enumerate() {
            partition.add(upstream_buffer(c as u8, i as u8, *u)).unwrap();
        }
        let context = gate.channel_context(c as u32, NetworkBufferPool::new(0), Arc::clone(&writer), 0);
        let channel = LocalInputChannel::new(context, Arc::clone(&partition), true);
        channel.setup().unwrap();
        channels.push(channel);
        partitions.push(partition);
    }
    gate.set_input_channels(
        channels
            .iter()
            .map(|ch| InputChannelHandle::Local(Arc::clone(ch)))
            .collect(),
    );
    let recorder = || Some(Arc::clone(&log) as Arc<dyn Recorder>);

    // StreamTask's `allOf(getStateConsumedFuture())`: a thread blocks until every channel has
    // consumed its recovered state; each future completes normally (no channel is released).
    let futures = gate.state_consumed_futures();
    let recovered = thread::Builder::new().name("state-consumed".into()).spawn(move || {
        for future in futures {
            assert_eq!(
                future.wait(),
                FutureStatus::Completed,
                "a state-consumed future woke up undone"
            );
        }
    });

    // IO thread: the drainer's program, every channel's recovered buffers, then the sentinels.
    // Its deliveries and the recovery trigger's insertions take the drainer's lock, as the
    // model's do.
    let drainer = FetchedChannelStateDrainer::new(cfg.channels.iter().map(|cc| cc.recovered as usize).collect());
    let (io_channels, io_cfg, io_recorder, io_drainer) = (channels.clone(), cfg.clone(), recorder(), drainer.clone());
    let io_done = Arc::new(AtomicBool::new(false));
    let io_flag = Arc::clone(&io_done);
    let io = thread::Builder::new().name("io".into()).spawn(move || {
        set_thread_recorder(io_recorder);
        let mut rng = SplitMix64::new(seed ^ 0x10);
        for (c, ch) in io_channels.iter().enumerate() {
            for i in 0..io_cfg.channels[c].recovered {
                jitter(&mut rng);
                let payload = payload_of(c as u8, &Item::Known(Payload::Recovered(i)));
                let id = BufferId(60_000 + 100 * c as u32 + i as u32);
                io_drainer
                    .deliver(c, &**ch, NetworkBuffer::unpooled(id, BufferKind::Data, payload))
                    .unwrap();
            }
        }
        for ch in &io_channels {
            ch.finish_recovered_buffer_delivery().unwrap();
        }
        io_flag.store(true, Ordering::SeqCst);
    });

    // Producer: the upstream takes checkpoint 1 and writes its priority barrier everywhere.
    let (producer_partitions, producer_recorder) = (partitions.clone(), recorder());
    let producer = thread::Builder::new().name("producer".into()).spawn(move || {
        set_thread_recorder(producer_recorder);
        let mut rng = SplitMix64::new(seed ^ 0x20);
        for p in &producer_partitions {
            jitter(&mut rng);
            p.add(NetworkBuffer::event(BufferKind::CheckpointBarrier(1))).unwrap();
        }
    });

    // Task: requestPartitions at a random point, polls the gate, handles barriers as
    // SingleCheckpointBarrierHandler does, until everything upstream was delivered. Once the
    // partitions are requested and live elements are still due, it blocks in `getNext` (the
    // gate must wake it); before that nothing has to arrive, so it polls. Then it blocks once
    // more, unrecorded, until the gate's close wakes it with nothing.
    let (task_gate, task_channels, task_recorder) = (Arc::clone(&gate), channels.clone(), recorder());
    let expected_live: usize = cfg.channels.iter().map(|cc| cc.upstream.len() + 1).sum();
    let (finished, task_finished) = mpsc::channel();
    let task = thread::Builder::new().name("task".into()).spawn(move || {
        set_thread_recorder(task_recorder);
        let mut rng = SplitMix64::new(seed ^ 0x30);
        let request_after = rng.below(4);
        let (mut polls, mut requested, mut live) = (0, false, 0);
        let (mut triggered, mut ended) = (false, false);
        let mut seen = vec![false; task_channels.len()];
        let deadline = Instant::now() + Duration::from_secs(10);
        while live < expected_live || !io_done.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the run did not finish");
            if !requested && polls >= request_after {
                task_gate.request_partitions(true).unwrap();
                requested = true;
            }
            polls += 1;
            jitter(&mut rng);
            let next = if requested && live < expected_live {
                task_gate
                    .get_next()
                    .unwrap()
                    .expect("getNext returned nothing from an open gate")
            } else {
                let Some(next) = task_gate.poll_next().unwrap() else {
                    continue;
                };
                next
            };
            let c = next.channel_info.input_channel_idx as usize;
            let item = item_of(c as u8, &next.buffer.snapshot());
            next.buffer.recycle_buffer().unwrap();
            match item {
                Item::Known(Payload::Barrier(cp)) => {
                    live += 1;
                    seen[c] = true;
                    if !triggered {
                        triggered = true;
                        // The recovery trigger inserts on every channel, then the gate starts
                        // the checkpoint channel by channel until one throws.
                        let refs: Vec<&dyn RecoverableInputChannel> = task_channels
                            .iter()
                            .map(|ch| &**ch as &dyn RecoverableInputChannel)
                            .collect();
                        drainer.snapshot_and_insert_barriers(&refs, cp as i64).unwrap();
                        for ch in &task_channels {
                            if ch.checkpoint_started(cp as i64).is_err() {
                                ended = true;
                                task_channels.iter().for_each(|ch| ch.checkpoint_stopped(cp as i64));
                                break;
                            }
                        }
                    }
                    if !ended && seen.iter().all(|s| *s) {
                        ended = true;
                        task_channels.iter().for_each(|ch| ch.checkpoint_stopped(cp as i64));
                    }
                }
                Item::Known(Payload::Data(_)) | Item::Known(Payload::Event(_)) => live += 1,
                Item::Known(Payload::EndOfOutput(_)) => {
                    live += 1;
                    handle_end_of_output(&task_gate, next.channel_info);
                }
                _ => {}
            }
        }
        set_thread_recorder(None);
        finished.send(()).unwrap();
        let after_close = task_gate.get_next().unwrap();
        assert!(after_close.is_none(), "getNext after close returned {after_close:?}");
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    // The task is done or waits for more: SingleInputGate.close() (task cancellation) wakes it.
    task_finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the task did not take everything");
    gate.close().unwrap();
    join_all_by(
        vec![
            ("io", io.unwrap()),
            ("producer", producer.unwrap()),
            ("state-consumed", recovered.unwrap()),
            ("task", task.unwrap()),
        ],
        deadline,
    );
    Run {
        log: log.events(),
        subpartitions: partitions.iter().map(|p| p.event_id()).collect(),
    }
}

fn model() -> RecoveryModel {
    RecoveryModel::new(config(), Variant::Fixed)
}

#[test]
fn logs_of_real_multi_threaded_runs_are_accepted_by_the_model() {
    let m = model();
    // VALIDATE_ROUNDS=3000 for a longer run (docs/conformance.md reports one).
    let rounds = std::env::var("VALIDATE_ROUNDS").map_or(40, |r| r.parse().expect("a number"));
    let mut exact = 0;
    let mut interleavings = std::collections::HashSet::new();
    for seed in 0..rounds {
        let r = run(&m.cfg, seed);
        let steps = steps(&m, &r.log, &r.subpartitions).unwrap();
        interleavings.insert(steps.iter().map(|s| s.action).collect::<Vec<_>>());
        // Every push, poll, sentinel, trigger and barrier of the run is in the log.
        assert!(steps.len() >= 16, "{} steps", steps.len());
        let placed = validate(&m, &steps, 1)
            .or_else(|_| validate(&m, &steps, 4))
            .unwrap_or_else(|rejection| panic!("seed {seed}: {rejection}\nlog:\n{}", listing(&steps)));
        if placed == steps.iter().map(|s| s.action).collect::<Vec<_>>() {
            exact += 1;
        }
    }
    println!(
        "{exact} of {rounds} logs accepted in exactly the recorded order (the rest with a barrier deferred), {} distinct interleavings",
        interleavings.len()
    );
    // The runs race: they are not all the same interleaving.
    assert!(interleavings.len() > 1);
}

fn listing(steps: &[Step]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("  {:>3}. {s}\n", i + 1))
        .collect()
}

/// A log of a real run that the model accepts in its recorded order and that satisfies `wanted`.
fn accepted_log(wanted: impl Fn(&[Step]) -> bool) -> Vec<Step> {
    let m = model();
    for seed in 100..300 {
        let r = run(&m.cfg, seed);
        let steps = steps(&m, &r.log, &r.subpartitions).unwrap();
        if wanted(&steps) && validate(&m, &steps, 1).is_ok() {
            return steps;
        }
    }
    panic!("no run's log was accepted in its recorded order");
}

/// Where channel 0 hands out recovered element `i`.
fn poll_of_recovered(steps: &[Step], i: u8) -> usize {
    steps
        .iter()
        .position(|s| {
            matches!(&s.observation, Observation::Polled { item: Item::Known(Payload::Recovered(k)), .. } if *k == i)
                && s.action == Action::GetNextBuffer { channel: 0 }
        })
        .expect("channel 0 hands out its recovered elements")
}

#[test]
fn a_log_with_a_dropped_poll_is_rejected_at_the_next_poll_of_that_channel() {
    let m = model();
    // A run where no checkpoint of channel 0 starts between its first two recovered polls (a
    // checkpoint there would persist what the model still holds and be rejected first).
    let mut log = accepted_log(|steps| {
        let (a, b) = (poll_of_recovered(steps, 0), poll_of_recovered(steps, 1));
        !steps[a..b]
            .iter()
            .any(|s| matches!(s.action, Action::CheckpointStarted { channel: 0, .. }))
    });
    let (dropped, next) = (poll_of_recovered(&log, 0), poll_of_recovered(&log, 1));
    log.remove(dropped);
    let rejection = validate(&m, &log, 4).expect_err("a poll is missing");
    // The next recovered poll of channel 0 shows r1 where the model still hands out r0.
    assert_eq!(rejection.index, next - 1, "{rejection}");
    assert_eq!(rejection.step.action, Action::GetNextBuffer { channel: 0 });
    assert!(rejection.reason.contains("the model predicts"), "{rejection}");
}

#[test]
fn an_element_polled_and_not_handed_on_by_the_gate_is_rejected() {
    let m = model();
    let r = run(&m.cfg, 100);
    steps(&m, &r.log, &r.subpartitions).expect("the run's log maps to steps");
    // The gate loses the first element it polled: the channel's poll is in the log, the
    // hand-off to the operator is not.
    let mut log = r.log.clone();
    let handed = log
        .iter()
        .position(|e| matches!(e.event, Event::PollNext { .. }))
        .expect("the task got something");
    log.remove(handed);
    let error = steps(&m, &log, &r.subpartitions).expect_err("an element is lost after its poll");
    assert!(error.contains("never handed on"), "{error}");
}

#[test]
fn a_log_with_two_polls_of_a_channel_swapped_is_rejected_at_the_first_of_them() {
    let m = model();
    let mut log = accepted_log(|_| true);
    let (a, b) = (poll_of_recovered(&log, 0), poll_of_recovered(&log, 1));
    log.swap(a, b);
    let rejection = validate(&m, &log, 4).expect_err("two polls are reordered");
    assert_eq!(rejection.index, a, "{rejection}");
    assert_eq!(rejection.step.action, Action::GetNextBuffer { channel: 0 });
}

#[test]
fn a_log_with_a_dropped_recovered_push_is_rejected_at_the_push_that_follows() {
    let m = model();
    let pushes_of = |log: &[Step]| -> Vec<usize> {
        (0..log.len())
            .filter(|i| log[*i].action == Action::OnRecoveredStateBuffer { channel: 0 })
            .collect()
    };
    // A run where the task does not look at channel 0 between its first two pushes: a poll
    // there would find the dropped element missing and be rejected first.
    let mut log = accepted_log(|steps| {
        let p = pushes_of(steps);
        !steps[p[0]..p[1]]
            .iter()
            .any(|s| s.thread == "task" && s.action.channel() == Some(0))
    });
    let pushes = pushes_of(&log);
    log.remove(pushes[0]);
    let rejection = validate(&m, &log, 4).expect_err("a push is missing");
    assert_eq!(rejection.index, pushes[1] - 1, "{rejection}");
    assert!(
        rejection.reason.contains("the model pushes r0, the log pushed r1"),
        "{rejection}"
    );
}

#[test]
fn the_window_places_an_event_logged_too_early_after_the_events_of_other_threads_it_needs() {
    let m = model();
    let push_of_r0 = |steps: &[Step]| {
        steps
            .iter()
            .position(|s| {
                s.pushed == [(0, Item::Known(Payload::Recovered(0)))]
                    && s.action == Action::OnRecoveredStateBuffer { channel: 0 }
            })
            .unwrap()
    };
    // A run where the task does nothing but poll between the push of r0 and its poll (moving the
    // poll over a checkpoint's steps would change what that checkpoint persists), and whose
    // partition request is not the task's last step before the push: that step may end as late
    // as the task's next one begins, which the moved poll would be, and so take the push with it.
    let mut log = accepted_log(|steps| {
        let push = push_of_r0(steps);
        steps[push..poll_of_recovered(steps, 0)]
            .iter()
            .all(|s| s.thread != "task" || matches!(s.action, Action::GetNextBuffer { .. }))
            && steps[..push].iter().rfind(|s| s.thread == "task").map(|s| &s.action) != Some(&Action::RequestPartitions)
    });
    let push = push_of_r0(&log);
    let poll = poll_of_recovered(&log, 0);
    // The task's poll of r0 logged before the IO thread's push of r0.
    let moved = log.remove(poll);
    log.insert(push, moved);
    let rejection = validate(&m, &log, 1).expect_err("the recorded order polls before the push");
    assert_eq!(rejection.index, push, "{rejection}");
    // The push is now one step later: a window of two places it first.
    let placed = validate(&m, &log, 2).expect("the window places the push first");
    assert_eq!(placed.len(), log.len());
    assert_eq!(placed[push], Action::OnRecoveredStateBuffer { channel: 0 });
}

/// A real run's log where channel 0 hands out r0 after partitions were requested and before
/// its barrier is added (so the listener is told), and the listener is told right after.
fn run_polling_r0_before_the_barrier() -> Run {
    let m = model();
    for seed in 100..300 {
        let r = run(&m.cfg, seed);
        let at = |e: fn(&Event) -> bool| r.log.iter().position(|x| e(&x.event));
        let requested = at(|e| matches!(e, Event::RequestPartitions { .. }));
        let polled = at(|e| {
            matches!(e, Event::GetNextBuffer { channel, buffer, .. }
                if channel.input_channel_idx == 0 && item_of(0, buffer) == Item::Known(Payload::Recovered(0)))
        });
        let added = r
            .log
            .iter()
            .position(|x| matches!(&x.event, Event::Add { subpartition, .. } if *subpartition == r.subpartitions[0]));
        // The listener told right after the add: nothing of another thread between the add's
        // two critical sections (how often depends on the schedule, hence the search).
        if let (Some(q), Some(p), Some(a)) = (requested, polled, added)
            && q < p
            && p < a
            && matches!(
                r.log.get(a + 1).map(|x| &x.event),
                Some(Event::NotifyPriorityEvent { .. })
            )
        {
            return r;
        }
    }
    panic!("no run polled r0 between the partition request and the barrier, notified right after its add");
}

/// The producer's `add` and its `notifyPriorityEvent` are two critical sections: a barrier
/// added before a recovered poll but notified after it did not overtake that poll. The model's
/// atomic step spans both parts and is placed at the notification.
#[test]
fn a_barrier_added_before_a_poll_and_notified_after_it_is_placed_at_its_notification() {
    let m = model();
    let mut r = run_polling_r0_before_the_barrier();
    let find = |log: &[Recorded], e: &dyn Fn(&Event) -> bool| log.iter().position(|x| e(&x.event)).unwrap();
    let ours = r.subpartitions[0];
    let add = find(
        &r.log,
        &|e| matches!(e, Event::Add { subpartition, .. } if *subpartition == ours),
    );
    // The add logged right after the request, its notification where it was.
    let moved = r.log.remove(add);
    let requested = find(&r.log, &|e| matches!(e, Event::RequestPartitions { .. }));
    r.log.insert(requested + 1, moved);
    let log = steps(&m, &r.log, &r.subpartitions).unwrap();
    let emit = Action::EmitCheckpointBarrier { channel: 0, cp: 1 };
    let step = log.iter().find(|s| s.action == emit).unwrap();
    assert!(step.span > 0 && !step.deferrable(), "{step:?}");
    let placed = validate(&m, &log, 1).unwrap_or_else(|r| panic!("{r}\nlog:\n{}", listing(&log)));
    let placed_poll = placed
        .iter()
        .position(|a| *a == Action::GetNextBuffer { channel: 0 })
        .unwrap();
    let placed_emit = placed.iter().position(|a| *a == emit).unwrap();
    assert!(
        placed_emit > placed_poll,
        "barrier at {placed_emit}, poll of r0 at {placed_poll}"
    );
    // Notified before the poll too, the barrier was pending when r0 was handed out: rejected.
    let notify = find(&r.log, &|e| matches!(e, Event::NotifyPriorityEvent { .. }));
    let moved = r.log.remove(notify);
    r.log.insert(requested + 2, moved);
    let log = steps(&m, &r.log, &r.subpartitions).unwrap();
    let rejection = validate(&m, &log, 1).expect_err("a pending priority event goes first in recovery");
    assert_eq!(
        rejection.step.action,
        Action::GetNextBuffer { channel: 0 },
        "{rejection}"
    );
    assert!(rejection.reason.contains(r#""item":"barrier1""#), "{rejection}");
}

#[test]
fn a_thread_playing_two_model_threads_is_rejected() {
    let m = model();
    let mut log = accepted_log(|_| true);
    let push = log
        .iter()
        .position(|s| matches!(s.action, Action::OnRecoveredStateBuffer { .. }))
        .unwrap();
    log[push].thread = "task".into();
    let rejection = validate(&m, &log, 4).expect_err("the task does not push recovered state");
    assert!(rejection.reason.contains("played the model's"), "{rejection}");
}

/// The lost update of `hasPendingPriorityEvent` (docs/findings.md) as a soak run logged it:
/// the task pulls barrier 1 from the view and reads no priority behind it; the producer adds
/// barrier 2 and sets the flag; the task clears it. Barrier 2 is queued but not pending, so the
/// channel hands out its sentinel first. A model that splits the flag off
/// (`priority_notify_step`) accepts the log; one that makes each write part of its call does
/// not: there the flag stays set and the poll yields barrier 2.
#[test]
fn the_lost_update_of_the_pending_priority_flag_is_accepted_only_where_the_model_splits_it_off() {
    use recovery_impl::{ChannelError, DeclineReason};
    let cfg = |split| split_config(1, split);
    let channel = channel_info(0);
    let subpartition = 3;
    let barrier = |cp| NetworkBuffer::event(BufferKind::CheckpointBarrier(cp)).snapshot();
    let sentinel = NetworkBuffer::event(BufferKind::EndOfFetchedChannelState).snapshot();
    let event = |thread: &str, event| Recorded {
        thread: thread.into(),
        event,
    };
    let log = vec![
        event("task", Event::RequestPartitions { gate: 0 }),
        event(
            "producer",
            Event::Add {
                subpartition,
                buffer: barrier(1),
            },
        ),
        event("producer", Event::NotifyPriorityEvent { channel }),
        event(
            "task",
            Event::PollBuffer {
                subpartition,
                buffer: barrier(1),
                sequence_number: 0,
                backlog: 0,
            },
        ),
        event(
            "producer",
            Event::Add {
                subpartition,
                buffer: barrier(2),
            },
        ),
        event("producer", Event::NotifyPriorityEvent { channel }),
        event("task", Event::ClearPendingPriorityEvent { channel }),
        event(
            "task",
            Event::PollNext {
                channel,
                buffer: barrier(1),
            },
        ),
        event(
            "task",
            Event::CheckpointStarted {
                channel,
                checkpoint_id: 1,
                // Without recovery barriers a checkpoint during recovery is declined.
                outcome: Err(ChannelError::CheckpointDeclined {
                    checkpoint_id: 1,
                    reason: DeclineReason::MissingRecoveryCheckpointBarrier,
                }),
            },
        ),
        event(
            "io",
            Event::FinishRecoveredBufferDelivery {
                channel,
                outcome: Ok(()),
            },
        ),
        event(
            "task",
            Event::GetNextBuffer {
                channel,
                buffer: sentinel,
                sequence_number: i32::MIN,
            },
        ),
    ];
    let split = RecoveryModel::new(cfg(true), Variant::Fixed);
    let split_steps = steps(&split, &log, &[subpartition]).unwrap();
    assert_eq!(split_steps.len(), 10, "{}", listing(&split_steps));
    validate(&split, &split_steps, 1).unwrap_or_else(|r| panic!("{r}\nlog:\n{}", listing(&split_steps)));
    // The same log where each write is part of its call: the flag events are not steps.
    let atomic = RecoveryModel::new(cfg(false), Variant::Fixed);
    let atomic_steps = steps(&atomic, &log, &[subpartition]).unwrap();
    assert_eq!(atomic_steps.len(), 7, "{}", listing(&atomic_steps));
    let rejection = validate(&atomic, &atomic_steps, 1).expect_err("barrier 2 is pending in that model");
    assert_eq!(
        rejection.step.action,
        Action::GetNextBuffer { channel: 0 },
        "{rejection}"
    );
    assert!(rejection.reason.contains(r#""item":"barrier2""#), "{rejection}");
    // Only an add or a poll of the channel writes its flag: a clear after the IO thread's
    // sentinel is no step of the model.
    let mut stray = log.clone();
    stray.push(event("io", Event::ClearPendingPriorityEvent { channel }));
    let error = steps(&atomic, &stray, &[subpartition]).expect_err("no poll to be part of");
    assert!(
        error.contains("priority flag after finishRecoveredBufferDelivery"),
        "{error}"
    );
}

/// Local channels whose flag is a step of its own (`split`), and checkpoints that may overlap
/// (barrier 2 follows barrier 1 with no checkpoint ended between, in Flink after the coordinator
/// aborted checkpoint 1, a JobManager step no task's log has).
fn split_config(channels: usize, split: bool) -> ModelConfig {
    use recovery_model::config::ChannelConfig;
    let channel = ChannelConfig {
        priority_notify_step: split,
        ..local(0, &[Upstream::EndOfOutputChannelState])
    };
    ModelConfig {
        channels: vec![channel; channels],
        checkpoints: 2,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: false,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: true,
        flink_fixes: vec![],
    }
}

/// What a log names: channel `c`'s info, a barrier, a recorded event.
fn channel_info(c: u32) -> recovery_impl::InputChannelInfo {
    recovery_impl::InputChannelInfo {
        gate_idx: 0,
        input_channel_idx: c,
    }
}

fn barrier(cp: i64) -> recovery_impl::BufferSnapshot {
    NetworkBuffer::event(BufferKind::CheckpointBarrier(cp)).snapshot()
}

fn recorded(thread: &str, event: Event) -> Recorded {
    Recorded {
        thread: thread.into(),
        event,
    }
}

/// `requestPartitions` creates each local channel's view after its logged start, and one
/// producer thread writes both channels (as the soak's does): the barrier of channel 0, whose
/// view is there, is announced; the one of channel 1, added before the task created that view,
/// is not (nor is barrier 2 behind it). The model's step covers all channels at once: it is
/// placed after channel 1's add, which goes before channel 0's, as the model's upstream of each
/// channel is a program of its own. Placed at its logged start instead, the step gives channel
/// 1's add a listener that the log shows it did not have.
#[test]
fn an_add_before_its_channels_view_and_after_another_channels_is_placed_before_the_partition_request() {
    let m = RecoveryModel::new(split_config(2, true), Variant::Fixed);
    let subpartitions = [3, 4];
    let add = |c: usize, cp| {
        recorded(
            "producer",
            Event::Add {
                subpartition: subpartitions[c],
                buffer: barrier(cp),
            },
        )
    };
    let log = vec![
        recorded("task", Event::RequestPartitions { gate: 0 }),
        add(0, 1),
        recorded(
            "producer",
            Event::NotifyPriorityEvent {
                channel: channel_info(0),
            },
        ),
        add(1, 1),
        add(1, 2),
    ];
    let steps = steps(&m, &log, &subpartitions).unwrap();
    assert_eq!(steps[0].span, 4, "{}", listing(&steps));
    let placed = validate(&m, &steps, 1).unwrap_or_else(|r| panic!("{r}\nlog:\n{}", listing(&steps)));
    assert_eq!(
        placed[..2],
        [
            Action::EmitCheckpointBarrier { channel: 1, cp: 1 },
            Action::RequestPartitions
        ]
    );
}

/// A barrier added as the only priority element of a subpartition whose view has a listener
/// is announced: a log without the announcement is rejected, at the add, whatever the window.
/// With it, the log is accepted.
#[test]
fn an_add_that_should_have_told_the_listener_and_did_not_is_rejected() {
    let m = RecoveryModel::new(split_config(1, true), Variant::Fixed);
    let (subpartition, channel) = (3, channel_info(0));
    let add = |cp| {
        recorded(
            "producer",
            Event::Add {
                subpartition,
                buffer: barrier(cp),
            },
        )
    };
    let mut log = vec![
        recorded("task", Event::RequestPartitions { gate: 0 }),
        add(1),
        recorded("producer", Event::NotifyPriorityEvent { channel }),
        recorded(
            "task",
            Event::PollBuffer {
                subpartition,
                buffer: barrier(1),
                sequence_number: 0,
                backlog: 0,
            },
        ),
        recorded("task", Event::ClearPendingPriorityEvent { channel }),
        recorded(
            "task",
            Event::PollNext {
                channel,
                buffer: barrier(1),
            },
        ),
        // Barrier 2 is the only priority element now: its add tells the listener.
        add(2),
    ];
    let lost = steps(&m, &log, &[subpartition]).unwrap();
    let rejection = validate(&m, &lost, 4).expect_err("barrier 2 is announced");
    assert_eq!(
        rejection.step.action,
        Action::EmitCheckpointBarrier { channel: 0, cp: 2 },
        "{rejection}"
    );
    assert!(rejection.reason.contains("told nobody"), "{rejection}");
    log.push(recorded("producer", Event::NotifyPriorityEvent { channel }));
    let told = steps(&m, &log, &[subpartition]).unwrap();
    validate(&m, &told, 1).unwrap_or_else(|r| panic!("{r}\nlog:\n{}", listing(&told)));
}
