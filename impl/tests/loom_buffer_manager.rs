//! loom: the `BufferManager` notification gate announces every buffer exactly once, whatever
//! `recycle` or the floating-buffer callback do concurrently with `enable_notify` (bug B6).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p recovery-impl --test loom_buffer_manager`
#![cfg(loom)]

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use recovery_impl::ChannelError;
use recovery_impl::buffer_manager::{BufferManager, BufferManagerChannel, BufferManagerSnapshot};
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};

/// `getNumberOfAvailableBuffers()`, read from a snapshot.
fn available(s: &BufferManagerSnapshot) -> usize {
    s.exclusive.len() + s.floating.len()
}

#[derive(Default)]
struct CountingChannel {
    released: AtomicBool,
    announced: AtomicUsize,
}

impl BufferManagerChannel for CountingChannel {
    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }
    fn notify_buffer_available(&self, n: usize) {
        self.announced.fetch_add(n, Ordering::SeqCst);
    }
    fn set_error(&self, _error: ChannelError) {}
}

fn disabled_manager(
    global_segments: u32,
    floating: usize,
) -> (Arc<LocalBufferPool>, Arc<CountingChannel>, Arc<BufferManager>) {
    let global = NetworkBufferPool::new(global_segments);
    let local = LocalBufferPool::new(Arc::clone(&global), floating).unwrap();
    let channel = Arc::new(CountingChannel::default());
    let manager = BufferManager::new(global, Arc::clone(&local), channel.clone(), 0, false);
    (local, channel, manager)
}

/// An exclusive buffer recycled while `enable_notify` runs is announced exactly once.
#[test]
fn enable_notify_concurrent_with_recycle() {
    loom::model(|| {
        let (_local, channel, manager) = disabled_manager(2, 0);
        manager.request_exclusive_buffers(2).unwrap();
        let held = manager.request_buffer().unwrap();
        let recycler = thread::spawn(move || held.recycle_buffer().unwrap());
        manager.enable_notify().unwrap();
        recycler.join().unwrap();
        assert_eq!(channel.announced.load(Ordering::SeqCst), 2);
    });
}

/// A floating buffer handed over by the pool callback while `enable_notify` runs is announced
/// exactly once.
#[test]
fn notify_buffer_available_concurrent_with_enable_notify() {
    loom::model(|| {
        let (local, channel, manager) = disabled_manager(2, 1);
        manager.request_exclusive_buffers(1).unwrap();
        let elsewhere = local.request_buffer().unwrap();
        assert_eq!(manager.request_floating_buffers(2), 0);
        let recycler = thread::spawn(move || elsewhere.recycle_buffer().unwrap());
        manager.enable_notify().unwrap();
        recycler.join().unwrap();
        assert_eq!(available(&manager.snapshot()), 2);
        assert_eq!(channel.announced.load(Ordering::SeqCst), 2);
    });
}
