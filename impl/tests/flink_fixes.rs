//! The findings' changes to Flink's code ([`FlinkFixes`], docs/findings.md), each shown
//! against Flink as it is: the same calls, with the switch off and on.
#![cfg(not(loom))]

mod common;

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{CountingChannel, Fixture, data, event};
use recovery_impl::buffer_manager::BufferManager;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::pause_point::{PausePoint, set_thread_hook, set_thread_wait_hook};
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
use recovery_impl::{BufferId, BufferKind, ChannelError, FlinkFixes, NetworkBuffer, RecoverableInputChannel};

const OFF: FlinkFixes = FlinkFixes::NONE;

// ---------------------------------------------------------------------------------------------
// LocalInputChannel.getNextBuffer: priority-from-view-head
// ---------------------------------------------------------------------------------------------

/// A local channel in recovery with recovered buffer 1 queued and its view created.
fn local_in_recovery(fixes: FlinkFixes) -> (Fixture, Arc<ResultSubpartition>, Arc<LocalInputChannel>) {
    let fixture = Fixture::new(8, 0);
    let partition = ResultSubpartition::new();
    let context = fixture.context(0, 2).with_flink_fixes(fixes);
    let channel = LocalInputChannel::new(context, Arc::clone(&partition), true);
    fixture
        .gate
        .set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
    channel.on_recovered_state_buffer(data(1, 1)).unwrap();
    channel.request_subpartitions().unwrap();
    (fixture, partition, channel)
}

/// docs/findings.md, the lost update: the task pulls barrier 1 and, before it clears
/// `hasPendingPriorityEvent` (the next data type it read had no priority), the producer adds
/// barrier 2 and sets the flag; the clear overwrites that set. What does the next poll return?
fn poll_after_the_lost_update(fixes: FlinkFixes) -> (bool, BufferKind) {
    let (_fixture, partition, channel) = local_in_recovery(fixes);
    partition.add(event(20, BufferKind::CheckpointBarrier(1))).unwrap();
    let producer = Arc::clone(&partition);
    set_thread_hook(Some(Box::new(move |point| {
        if point == PausePoint::ClearPendingPriorityEvent {
            // The producer's `add` and its `notifyPriorityEvent`, between the poll and the clear.
            producer.add(event(21, BufferKind::CheckpointBarrier(2))).unwrap();
        }
    })));
    let first = channel.get_next_buffer().unwrap().unwrap();
    set_thread_hook(None);
    assert_eq!(first.buffer.kind(), BufferKind::CheckpointBarrier(1));
    let flag_after_the_clear = channel.snapshot().has_pending_priority_event;
    let next = channel.get_next_buffer().unwrap().unwrap();
    (flag_after_the_clear, next.buffer.kind())
}

#[test]
fn a_lost_update_of_the_priority_flag_hides_the_next_barrier_behind_recovered_data() {
    let (flag, next) = poll_after_the_lost_update(OFF);
    assert!(!flag, "the clear overwrote the producer's set");
    assert_eq!(next, BufferKind::Data, "recovered buffer 1 before barrier 2");
}

#[test]
fn with_priority_from_view_head_the_next_poll_takes_the_barrier_at_the_view_s_head() {
    let fixes = FlinkFixes {
        priority_from_view_head: true,
        ..OFF
    };
    let (flag, next) = poll_after_the_lost_update(fixes);
    assert!(!flag, "the clear still overwrites the set");
    assert_eq!(next, BufferKind::CheckpointBarrier(2), "the poll read the view's head");
}

/// The flag set by barrier 1's notification outlives the barrier: the producer released the
/// subpartition (a failure), which drops what it held.
fn poll_after_the_barrier_is_gone(fixes: FlinkFixes) -> recovery_impl::Result<BufferKind> {
    let (_fixture, partition, channel) = local_in_recovery(fixes);
    partition.add(event(20, BufferKind::CheckpointBarrier(1))).unwrap();
    partition.release().unwrap();
    assert!(channel.snapshot().has_pending_priority_event);
    channel
        .get_next_buffer()
        .map(|next| next.expect("something to poll").buffer.kind())
}

#[test]
fn a_stale_priority_flag_makes_the_poll_expect_a_priority_event_the_view_does_not_have() {
    assert!(matches!(
        poll_after_the_barrier_is_gone(OFF),
        Err(ChannelError::IllegalState(_))
    ));
}

#[test]
fn with_priority_from_view_head_a_stale_flag_is_cleared_and_recovered_data_is_polled() {
    let fixes = FlinkFixes {
        priority_from_view_head: true,
        ..OFF
    };
    assert_eq!(poll_after_the_barrier_is_gone(fixes), Ok(BufferKind::Data));
}

// ---------------------------------------------------------------------------------------------
// BufferManager.notifyBufferAvailable(Buffer): wake-on-refused-buffer, announce-under-queue-lock
// ---------------------------------------------------------------------------------------------

struct Manager {
    local: Arc<LocalBufferPool>,
    channel: Arc<CountingChannel>,
    manager: Arc<BufferManager>,
    /// The pool's only floating buffer, taken by someone else.
    held: NetworkBuffer,
}

/// A manager without exclusive buffers over a pool of one floating buffer, which another
/// channel holds.
fn manager(fixes: FlinkFixes) -> Manager {
    let global = NetworkBufferPool::new(1);
    let local = LocalBufferPool::new(Arc::clone(&global), 1).unwrap();
    let channel = Arc::new(CountingChannel::default());
    let manager = BufferManager::with_flink_fixes(global, Arc::clone(&local), channel.clone(), 0, true, fixes);
    let held = local.request_buffer().unwrap();
    Manager {
        local,
        channel,
        manager,
        held,
    }
}

/// docs/findings.md, the drainer's missed wake-up: the drainer parks in
/// `requestBufferBlocking` (the pool is empty: the manager registers as its listener); a zero
/// backlog drops the requirement (`releaseFloatingBuffers`, `numRequiredBuffers = 0`); the held
/// buffer is recycled, and the manager turns it down, no listener any more. Returns what the
/// drainer got within `patience`, or `None` if it still waits (then it is released).
fn drainer_after_a_refused_buffer(fixes: FlinkFixes, patience: Duration) -> Option<recovery_impl::Result<BufferId>> {
    let m = manager(fixes);
    let (parked_tx, parked) = mpsc::channel();
    let (result_tx, result) = mpsc::channel();
    let drainer = {
        let manager = Arc::clone(&m.manager);
        thread::spawn(move || {
            set_thread_wait_hook(Some(Box::new(move |_| {
                let _ = parked_tx.send(());
            })));
            let _ = result_tx.send(manager.request_buffer_blocking().map(|b| {
                let id = b.id();
                b.recycle_buffer().unwrap();
                id
            }));
        })
    };
    parked.recv_timeout(Duration::from_secs(10)).expect("the drainer parks");
    assert!(m.manager.snapshot().waiting_for_floating_buffers);
    m.manager.release_floating_buffers().unwrap();
    m.held.recycle_buffer().unwrap();
    let snapshot = m.manager.snapshot();
    assert!(
        !snapshot.waiting_for_floating_buffers,
        "the manager is no listener any more"
    );
    let got = result.recv_timeout(patience).ok();
    if got.is_none() {
        assert_eq!(
            m.local.snapshot().available,
            vec![BufferId(0)],
            "the buffer is in the pool"
        );
        // Let the parked drainer go: the release wakes it, and it throws.
        m.channel.released.store(true, Ordering::SeqCst);
        m.manager.release_all_buffers(Vec::new()).unwrap();
        let released = result
            .recv_timeout(Duration::from_secs(10))
            .expect("the release wakes it");
        assert!(matches!(released, Err(ChannelError::Released(_))), "{released:?}");
    }
    drainer.join().unwrap();
    got
}

#[test]
fn a_refused_floating_buffer_leaves_the_drainer_parked_in_request_buffer_blocking() {
    assert_eq!(drainer_after_a_refused_buffer(OFF, Duration::from_millis(300)), None);
}

#[test]
fn with_wake_on_refused_buffer_the_drainer_is_woken_and_takes_the_buffer_from_the_pool() {
    let fixes = FlinkFixes {
        wake_on_refused_buffer: true,
        ..OFF
    };
    let got = drainer_after_a_refused_buffer(fixes, Duration::from_secs(10));
    assert_eq!(got, Some(Ok(BufferId(0))));
}

/// What a thread that recycles the held buffer sees: the manager is a listener (a backlog of
/// one), takes the buffer and announces its credit. At every pause point of the recycling
/// thread another thread (the Netty client's `onBlockingUpstream`) releases the floating
/// buffers. Returns the pause points reached with the credit announced at each, and the credit
/// and floating buffers after the recycle.
fn recycle_to_a_listener(fixes: FlinkFixes) -> (Vec<(PausePoint, usize)>, usize, usize) {
    let m = manager(fixes);
    assert_eq!(m.manager.request_floating_buffers(1), 0);
    assert!(m.manager.snapshot().waiting_for_floating_buffers);
    let points = Arc::new(Mutex::new(Vec::new()));
    {
        let (points, channel, manager) = (Arc::clone(&points), Arc::clone(&m.channel), Arc::clone(&m.manager));
        set_thread_hook(Some(Box::new(move |point| {
            let announced = channel.announced.load(Ordering::SeqCst);
            points.lock().unwrap().push((point, announced));
            if matches!(point, PausePoint::Announce { .. }) {
                manager.release_floating_buffers().unwrap();
            }
        })));
    }
    m.held.recycle_buffer().unwrap();
    set_thread_hook(None);
    let points = points.lock().unwrap().clone();
    let floating = m.manager.snapshot().floating.len();
    (points, m.channel.announced.load(Ordering::SeqCst), floating)
}

#[test]
fn a_floating_buffer_s_credit_is_announced_after_the_lock_and_its_buffer_can_go_first() {
    let (points, announced, floating) = recycle_to_a_listener(OFF);
    let announce = PausePoint::Announce { n: 1, channel: None };
    assert_eq!(points, vec![(announce, 0)], "the credit is not out at the pause");
    assert_eq!((announced, floating), (1, 0), "a credit without its buffer");
}

#[test]
fn with_announce_under_queue_lock_the_credit_is_out_before_the_buffer_can_be_released() {
    let fixes = FlinkFixes {
        announce_under_queue_lock: true,
        ..OFF
    };
    let (points, announced, floating) = recycle_to_a_listener(fixes);
    assert_eq!(points, vec![], "no announcement step after the lock");
    assert_eq!((announced, floating), (1, 1));
}

// ---------------------------------------------------------------------------------------------
// LocalInputChannel, 2.3.0's migrated buffers: persist-only-upstream-data
// ---------------------------------------------------------------------------------------------

/// FLINK-40016 in 2.3.0's migration path: a checkpoint starts while migrated data buffer 1 is
/// queued (`checkpointStarted` persists it), then the task polls it. What was persisted?
fn persisted_after_polling_a_migrated_buffer(fixes: FlinkFixes) -> Vec<BufferId> {
    let fixture = Fixture::new(8, 0);
    let context = fixture.context(0, 0).with_flink_fixes(fixes);
    let channel = LocalInputChannel::with_migrated(context, ResultSubpartition::new(), vec![data(1, 1)]);
    channel.checkpoint_started(5).unwrap();
    let polled = channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(polled.buffer.id(), BufferId(1));
    polled.buffer.recycle_buffer().unwrap();
    let persisted = fixture.writer.persisted(5, channel.channel_info());
    persisted.iter().map(|b| b.id).collect()
}

#[test]
fn a_migrated_buffer_persisted_by_checkpoint_started_is_persisted_again_when_polled() {
    assert_eq!(
        persisted_after_polling_a_migrated_buffer(OFF),
        vec![BufferId(1), BufferId(1)]
    );
}

#[test]
fn with_persist_only_upstream_data_a_migrated_buffer_is_persisted_once() {
    let fixes = FlinkFixes {
        persist_only_upstream_data: true,
        ..OFF
    };
    assert_eq!(persisted_after_polling_a_migrated_buffer(fixes), vec![BufferId(1)]);
}

#[test]
fn with_persist_only_upstream_data_what_the_view_hands_out_is_still_persisted() {
    let fixes = FlinkFixes {
        persist_only_upstream_data: true,
        ..OFF
    };
    let fixture = Fixture::new(8, 0);
    let partition = ResultSubpartition::new();
    let context = fixture.context(0, 0).with_flink_fixes(fixes);
    let channel = LocalInputChannel::with_migrated(context, Arc::clone(&partition), vec![data(1, 1)]);
    channel.request_subpartitions().unwrap();
    partition.add(data(10, 10)).unwrap();
    channel.checkpoint_started(5).unwrap();
    while let Some(next) = channel.get_next_buffer().unwrap() {
        next.buffer.recycle_buffer().unwrap();
    }
    let persisted: Vec<BufferId> = (fixture.writer.persisted(5, channel.channel_info()).iter())
        .map(|b| b.id)
        .collect();
    assert_eq!(persisted, vec![BufferId(1), BufferId(10)]);
}
