//! Unit tests of `NetworkBufferPool`, `LocalBufferPool` and `BufferManager`.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use recovery_impl::buffer_manager::{BufferManager, BufferManagerSnapshot};
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::{BufferId, ChannelError};

mod common;
use common::CountingChannel;

/// `getNumberOfAvailableBuffers()`, read from a snapshot.
fn available(s: &BufferManagerSnapshot) -> usize {
    s.exclusive.len() + s.floating.len()
}

struct Setup {
    global: Arc<NetworkBufferPool>,
    local: Arc<LocalBufferPool>,
    channel: Arc<CountingChannel>,
    manager: Arc<BufferManager>,
}

fn setup(segments: u32, floating: usize, notify: bool) -> Setup {
    let global = NetworkBufferPool::new(segments);
    let local = LocalBufferPool::new(Arc::clone(&global), floating).unwrap();
    let channel = Arc::new(CountingChannel::default());
    let manager = BufferManager::new(Arc::clone(&global), Arc::clone(&local), channel.clone(), 0, notify);
    Setup {
        global,
        local,
        channel,
        manager,
    }
}

#[test]
fn exclusive_buffers_are_queued_but_not_announced() {
    let s = setup(4, 0, true);
    s.manager.request_exclusive_buffers(2).unwrap();
    let snapshot = s.manager.snapshot();
    assert_eq!(snapshot.exclusive, vec![BufferId(0), BufferId(1)]);
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 0);
    assert_eq!(s.global.snapshot().lent, vec![BufferId(0), BufferId(1)]);
}

#[test]
fn recycled_exclusive_buffer_is_announced_when_notification_is_enabled() {
    let s = setup(2, 0, true);
    s.manager.request_exclusive_buffers(2).unwrap();
    let buffer = s.manager.request_buffer().unwrap();
    buffer.recycle_buffer().unwrap();
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 1);
    assert_eq!(available(&s.manager.snapshot()), 2);
}

#[test]
fn recycled_exclusive_buffer_is_not_announced_while_notification_is_disabled() {
    let s = setup(2, 0, false);
    s.manager.request_exclusive_buffers(2).unwrap();
    s.manager.request_buffer().unwrap().recycle_buffer().unwrap();
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 0);
}

#[test]
fn enable_notify_announces_every_queued_buffer_once() {
    let s = setup(3, 0, false);
    s.manager.request_exclusive_buffers(3).unwrap();
    let held = s.manager.request_buffer().unwrap();
    assert_eq!(s.manager.enable_notify().unwrap(), 2);
    held.recycle_buffer().unwrap();
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 3);
}

#[test]
fn enable_notify_twice_is_an_illegal_state() {
    let s = setup(1, 0, false);
    s.manager.enable_notify().unwrap();
    assert!(matches!(s.manager.enable_notify(), Err(ChannelError::IllegalState(_))));
}

#[test]
fn second_recycle_of_an_exclusive_segment_is_a_double_recycle() {
    let s = setup(1, 0, true);
    s.manager.request_exclusive_buffers(1).unwrap();
    let buffer = s.manager.request_buffer().unwrap();
    let id = buffer.id();
    buffer.recycle_buffer().unwrap();
    assert_eq!(s.manager.recycle(id), Err(ChannelError::DoubleRecycle(id)));
}

#[test]
fn second_recycle_into_a_pool_is_a_double_recycle() {
    let global = NetworkBufferPool::new(2);
    let ids = global.request_memory_segments(1).unwrap();
    global.recycle_memory_segments(ids.clone()).unwrap();
    assert_eq!(
        global.recycle_memory_segments(ids.clone()),
        Err(ChannelError::DoubleRecycle(ids[0]))
    );

    let local = LocalBufferPool::new(Arc::clone(&global), 1).unwrap();
    let buffer = local.request_buffer().unwrap();
    let id = buffer.id();
    buffer.recycle_buffer().unwrap();
    assert_eq!(local.recycle(id), Err(ChannelError::DoubleRecycle(id)));
}

#[test]
fn request_floating_buffers_announces_nothing_while_notification_is_disabled() {
    let s = setup(3, 2, false);
    assert_eq!(s.manager.request_floating_buffers(2), 0);
    assert_eq!(s.manager.snapshot().floating.len(), 2);
    assert_eq!(s.manager.enable_notify().unwrap(), 2);
}

#[test]
fn request_floating_buffers_announces_what_it_got_when_enabled() {
    let s = setup(3, 2, true);
    assert_eq!(s.manager.request_floating_buffers(3), 2);
    assert!(s.manager.snapshot().waiting_for_floating_buffers);
    assert_eq!(s.local.snapshot().num_listeners, 1);
}

#[test]
fn floating_buffer_callback_takes_and_announces_a_recycled_buffer() {
    let s = setup(2, 1, true);
    let other = s.local.request_buffer().unwrap();
    assert_eq!(s.manager.request_floating_buffers(1), 0);
    assert!(s.manager.snapshot().waiting_for_floating_buffers);
    other.recycle_buffer().unwrap();
    assert_eq!(s.manager.snapshot().floating, vec![BufferId(0)]);
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 1);
}

#[test]
fn floating_buffer_callback_while_disabled_queues_without_announcing() {
    let s = setup(2, 1, false);
    let other = s.local.request_buffer().unwrap();
    s.manager.request_floating_buffers(1);
    other.recycle_buffer().unwrap();
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 0);
    assert_eq!(s.manager.enable_notify().unwrap(), 1);
}

#[test]
fn recycled_exclusive_buffer_gives_back_a_surplus_floating_buffer() {
    let s = setup(3, 1, true);
    s.manager.request_exclusive_buffers(1).unwrap();
    let exclusive = s.manager.request_buffer().unwrap();
    assert_eq!(s.manager.request_floating_buffers(1), 1);
    exclusive.recycle_buffer().unwrap();
    assert_eq!(s.manager.snapshot().floating, Vec::<BufferId>::new());
    assert_eq!(s.local.snapshot().available.len(), 1);
}

#[test]
fn request_buffer_blocking_waits_for_a_recycle() {
    let s = setup(1, 0, true);
    s.manager.request_exclusive_buffers(1).unwrap();
    let held = s.manager.request_buffer().unwrap();
    let manager = Arc::clone(&s.manager);
    let waiter = thread::spawn(move || manager.request_buffer_blocking().map(|b| b.id()));
    thread::sleep(Duration::from_millis(20));
    held.recycle_buffer().unwrap();
    assert_eq!(waiter.join().unwrap(), Ok(BufferId(0)));
}

#[test]
fn request_buffer_blocking_fails_once_the_channel_is_released() {
    let s = setup(1, 0, true);
    let manager = Arc::clone(&s.manager);
    let waiter = thread::spawn(move || manager.request_buffer_blocking().map(|b| b.id()));
    thread::sleep(Duration::from_millis(20));
    s.channel.released.store(true, Ordering::SeqCst);
    s.manager.release_all_buffers(Vec::new()).unwrap();
    assert!(matches!(waiter.join().unwrap(), Err(ChannelError::Released(_))));
}

#[test]
fn release_all_buffers_returns_exclusive_segments_to_the_global_pool() {
    let s = setup(2, 0, true);
    s.manager.request_exclusive_buffers(2).unwrap();
    let held = s.manager.request_buffer().unwrap();
    s.channel.released.store(true, Ordering::SeqCst);
    s.manager.release_all_buffers(vec![held]).unwrap();
    assert_eq!(s.global.snapshot().lent, Vec::<BufferId>::new());
}

#[test]
fn recycle_after_release_returns_the_segment_to_the_global_pool() {
    let s = setup(2, 0, true);
    s.manager.request_exclusive_buffers(2).unwrap();
    let held = s.manager.request_buffer().unwrap();
    s.channel.released.store(true, Ordering::SeqCst);
    s.manager.release_all_buffers(Vec::new()).unwrap();
    assert_eq!(s.global.snapshot().lent, vec![held.id()]);
    held.recycle_buffer().unwrap();
    assert_eq!(s.global.snapshot().lent, Vec::<BufferId>::new());
    assert_eq!(s.channel.announced.load(Ordering::SeqCst), 0);
}

#[test]
fn release_floating_buffers_returns_them_to_the_local_pool() {
    let s = setup(2, 2, true);
    s.manager.request_floating_buffers(2);
    s.manager.release_floating_buffers().unwrap();
    let snapshot = s.manager.snapshot();
    assert_eq!((snapshot.floating.len(), snapshot.num_required_buffers), (0, 0));
    assert_eq!(s.local.snapshot().available.len(), 2);
}

#[test]
fn destroyed_local_pool_returns_segments_to_the_global_pool() {
    let global = NetworkBufferPool::new(2);
    let local = LocalBufferPool::new(Arc::clone(&global), 2).unwrap();
    let lent = local.request_buffer().unwrap();
    local.lazy_destroy().unwrap();
    assert_eq!(global.snapshot().lent, vec![lent.id()]);
    lent.recycle_buffer().unwrap();
    assert!(global.snapshot().lent.is_empty());
}

/// `requestBufferBlocking()` that finds nothing registers as the pool's listener and parks
/// (its wait hook says so, no clock); woken by a recycled buffer, it stops at
/// `PausePoint::RequestBufferBlocking` with the buffer still queued, and takes it when let go.
#[test]
fn a_woken_request_buffer_blocking_pauses_before_it_takes_the_buffer() {
    use recovery_impl::pause_point::{PausePoint, set_thread_hook, set_thread_wait_hook};
    use std::sync::mpsc;
    let s = setup(1, 0, true);
    s.manager.request_exclusive_buffers(1).unwrap();
    let held = s.manager.request_buffer().unwrap();
    let (report, reports) = mpsc::channel();
    let (go, let_go) = mpsc::channel::<()>();
    let manager = Arc::clone(&s.manager);
    let waiter = thread::spawn(move || {
        let parked = report.clone();
        set_thread_wait_hook(Some(Box::new(move |_| {
            let _ = parked.send("parked");
        })));
        set_thread_hook(Some(Box::new(move |point| {
            if point == PausePoint::RequestBufferBlocking {
                let _ = report.send("woken");
                let _ = let_go.recv();
            }
        })));
        manager.request_buffer_blocking().map(|b| b.id())
    });
    assert_eq!(reports.recv().unwrap(), "parked");
    let parked = s.manager.snapshot();
    assert!(parked.waiting_for_floating_buffers);
    assert_eq!(parked.num_required_buffers, 1);
    held.recycle_buffer().unwrap();
    assert_eq!(reports.recv().unwrap(), "woken");
    assert_eq!(s.manager.snapshot().exclusive, vec![BufferId(0)], "still the manager's");
    go.send(()).unwrap();
    assert_eq!(waiter.join().unwrap(), Ok(BufferId(0)));
    assert!(reports.try_recv().is_err(), "it parked once");
}
