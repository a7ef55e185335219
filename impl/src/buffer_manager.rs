//! Mirrors Flink's `BufferManager`: a channel's exclusive and floating buffers, and the credit
//! notification gate added by FLINK-38544 (`notifyInitiallyEnabled`, `enableNotify`).
//!
//! Locking contract: one lock, Flink's `bufferQueue` monitor, guards both queues,
//! `numRequiredBuffers`, `isWaitingForFloatingBuffers` and `notifyAvailable`; its condition
//! variable wakes `request_buffer_blocking`. Under it the manager may call into the gate's
//! [`LocalBufferPool`] (order `bufferQueue` → pool), never into the channel's own locks: the
//! channel is told about available buffers ([`BufferManagerChannel::notify_buffer_available`])
//! only after the lock is released (with `announce-under-queue-lock`, [`FlinkFixes`], a floating
//! buffer's announcement is made under it: the channel's side is an atomic, a leaf), and buffers
//! are recycled to other owners only after it is released. `enable_notify` flips the flag and
//! counts the available buffers in one critical section, so that every buffer is announced
//! exactly once whatever `recycle` or the floating callback do concurrently (bug B6,
//! docs/bug-zoo.md).

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_pool::{BufferListener, LocalBufferPool, NetworkBufferPool};
use crate::buffer_recycler::BufferRecycler;
use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::flink_fixes::FlinkFixes;
use crate::ids::BufferId;
use crate::input_channel_info::InputChannelInfo;
use crate::network_buffer::{NetworkBuffer, Recycler};
use crate::pause_point::{self, PausePoint};
use std::sync::Weak;

use crate::sync::{Arc, Condvar, Mutex};

/// The part of Flink's `InputChannel` that `BufferManager` calls back.
pub trait BufferManagerChannel: Send + Sync {
    /// `InputChannel.isReleased()`.
    fn is_released(&self) -> bool;
    /// `InputChannel.notifyBufferAvailable(numAvailableBuffers)`: new credit for the producer.
    fn notify_buffer_available(&self, number_of_buffers: usize);
    /// `InputChannel.setError(cause)`: an error raised in a callback thread.
    fn set_error(&self, error: ChannelError);
    /// The channel the manager's [`event_log`] events are recorded for; `None` (the default)
    /// records none (a `RecoveredInputChannel`'s or a local channel's recovery manager).
    fn channel_info(&self) -> Option<InputChannelInfo> {
        None
    }
}

/// Snapshot of a [`BufferManager`], taken under its `bufferQueue` lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferManagerSnapshot {
    /// `bufferQueue.exclusiveBuffers`, head first.
    pub exclusive: Vec<BufferId>,
    /// `bufferQueue.floatingBuffers`, head first.
    pub floating: Vec<BufferId>,
    /// `numRequiredBuffers`.
    pub num_required_buffers: i32,
    /// `isWaitingForFloatingBuffers`.
    pub waiting_for_floating_buffers: bool,
    /// `notifyAvailable`: whether freed buffers are announced as credit.
    pub notify_available: bool,
    /// Exclusive segments this manager requested from the global pool and still owns, sorted.
    pub exclusive_owned: Vec<BufferId>,
}

#[derive(Debug)]
struct AvailableBufferQueue {
    exclusive: VecDeque<BufferId>,
    floating: VecDeque<NetworkBuffer>,
    num_required_buffers: i32,
    waiting_for_floating_buffers: bool,
    notify_available: bool,
    exclusive_owned: BTreeSet<BufferId>,
    /// `wake-on-refused-buffer`: a refusing `notifyBufferAvailable(Buffer)` woke the waiters
    /// of `requestBufferBlocking`, which look at the pool again.
    look_at_pool_again: bool,
}

impl AvailableBufferQueue {
    fn available_buffer_size(&self) -> usize {
        self.exclusive.len() + self.floating.len()
    }

    /// `addExclusiveBuffer`: returns a floating buffer to give back if there are now more
    /// buffers than required.
    fn add_exclusive_buffer(&mut self, id: BufferId) -> Option<NetworkBuffer> {
        self.exclusive.push_back(id);
        if self.available_buffer_size() as i64 > i64::from(self.num_required_buffers) {
            return self.floating.pop_front();
        }
        None
    }

    /// Decides, under the lock, how many of `n` freed buffers are announced.
    fn announce(&mut self, n: usize) -> usize {
        if !self.notify_available {
            return 0;
        }
        n
    }
}

/// Mirrors Flink's `BufferManager` (one per input channel).
pub struct BufferManager {
    global_pool: Arc<NetworkBufferPool>,
    buffer_pool: Arc<LocalBufferPool>,
    channel: Arc<dyn BufferManagerChannel>,
    /// `this`, for the recycler of exclusive buffers and for listener registration.
    me: Weak<BufferManager>,
    /// Flink's `bufferQueue` monitor.
    buffer_queue: Mutex<AvailableBufferQueue>,
    buffers_available: Condvar,
    /// The findings' changes to Flink's code made here (`wake-on-refused-buffer`,
    /// `announce-under-queue-lock`).
    fixes: FlinkFixes,
}

impl fmt::Debug for BufferManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferManager")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl BufferManager {
    /// `new BufferManager(globalPool, inputChannel, numRequiredBuffers, notifyInitiallyEnabled)`;
    /// `buffer_pool` is `inputChannel.inputGate.getBufferPool()`.
    pub fn new(
        global_pool: Arc<NetworkBufferPool>,
        buffer_pool: Arc<LocalBufferPool>,
        channel: Arc<dyn BufferManagerChannel>,
        num_required_buffers: i32,
        notify_initially_enabled: bool,
    ) -> Arc<Self> {
        Self::with_flink_fixes(
            global_pool,
            buffer_pool,
            channel,
            num_required_buffers,
            notify_initially_enabled,
            FlinkFixes::NONE,
        )
    }

    /// [`BufferManager::new`] with the findings' changes `fixes` made (the channel's
    /// [`ChannelContext::flink_fixes`](crate::recoverable_input_channel::ChannelContext)).
    pub fn with_flink_fixes(
        global_pool: Arc<NetworkBufferPool>,
        buffer_pool: Arc<LocalBufferPool>,
        channel: Arc<dyn BufferManagerChannel>,
        num_required_buffers: i32,
        notify_initially_enabled: bool,
        fixes: FlinkFixes,
    ) -> Arc<Self> {
        let queue = AvailableBufferQueue {
            exclusive: VecDeque::new(),
            floating: VecDeque::new(),
            num_required_buffers,
            waiting_for_floating_buffers: false,
            notify_available: notify_initially_enabled,
            exclusive_owned: BTreeSet::new(),
            look_at_pool_again: false,
        };
        Arc::new_cyclic(|me| Self {
            global_pool,
            buffer_pool,
            channel,
            me: me.clone(),
            buffer_queue: Mutex::new(queue),
            buffers_available: Condvar::new(),
            fixes,
        })
    }

    /// Records the event `make` builds for the channel, if the channel's events are recorded.
    fn record(&self, make: impl FnOnce(InputChannelInfo) -> Event) {
        if let Some(channel) = self.channel.channel_info() {
            event_log::record(|| make(channel));
        }
    }

    /// The pause point before announcing `n` credits for this manager's channel.
    pub(crate) fn announce_point(&self, n: usize) -> PausePoint {
        PausePoint::Announce {
            n,
            channel: self.channel.channel_info().map(|i| i.input_channel_idx),
        }
    }

    fn this(&self) -> Arc<Self> {
        self.me
            .upgrade()
            .expect("a BufferManager is alive while one of its methods runs")
    }

    // ------------------------------------------------------------------------
    // Buffer request
    // ------------------------------------------------------------------------

    /// `requestBuffer()` (netty client thread, one per arriving data buffer): floating first,
    /// then exclusive; `None` if no buffer is queued.
    pub fn request_buffer(&self) -> Option<NetworkBuffer> {
        let mut queue = self.buffer_queue.lock();
        queue.num_required_buffers -= 1;
        let buffer = self.take_buffer(&mut queue);
        self.record(|channel| Event::RequestBuffer {
            channel,
            buffer: buffer.as_ref().map(NetworkBuffer::id),
        });
        buffer
    }

    /// `requestBufferBlocking()`: waits on the `bufferQueue` monitor until a buffer is queued,
    /// registering as floating-buffer listener meanwhile; `Released` once the channel or the
    /// local pool is released. Woken with a buffer queued (or released), it releases the lock at
    /// [`PausePoint::RequestBufferBlocking`] before taking it: the model's wake-up is the next
    /// step of the drainer, and until then the buffer stays the manager's. With
    /// `wake-on-refused-buffer`, woken by a listener callback that turned a buffer down, it
    /// stops there too, then looks at the pool again.
    pub fn request_buffer_blocking(&self) -> Result<NetworkBuffer> {
        let mut queue = self.buffer_queue.lock();
        let record = |outcome: std::result::Result<&NetworkBuffer, &ChannelError>| {
            self.record(|channel| Event::RequestBufferBlocking {
                channel,
                outcome: outcome.map(NetworkBuffer::id).map_err(Clone::clone),
            })
        };
        let mut waited = false;
        loop {
            if let Some(buffer) = self.take_buffer(&mut queue) {
                record(Ok(&buffer));
                return Ok(buffer);
            }
            if self.channel.is_released() {
                let error = ChannelError::released("Input channel has already been released.");
                record(Err(&error));
                return Err(error);
            }
            if !queue.waiting_for_floating_buffers {
                if let Some(buffer) = self.buffer_pool.request_buffer() {
                    record(Ok(&buffer));
                    return Ok(buffer);
                }
                let listener: Arc<dyn BufferListener> = self.this() as Arc<dyn BufferListener>;
                if self.buffer_pool.add_buffer_listener(listener) {
                    queue.waiting_for_floating_buffers = true;
                    queue.num_required_buffers = 1;
                } else if self.buffer_pool.is_destroyed() {
                    let error = ChannelError::released("Local buffer pool has already been released.");
                    record(Err(&error));
                    return Err(error);
                } else {
                    continue;
                }
            }
            if !waited {
                self.record(|channel| Event::RequestBufferBlockingWait { channel });
                waited = true;
            }
            queue.look_at_pool_again = false;
            queue = self.buffers_available.wait(queue);
            let refused = std::mem::take(&mut queue.look_at_pool_again);
            if queue.available_buffer_size() > 0 || self.channel.is_released() || refused {
                drop(queue);
                pause_point::reached(PausePoint::RequestBufferBlocking);
                queue = self.buffer_queue.lock();
            }
        }
    }

    fn take_buffer(&self, queue: &mut AvailableBufferQueue) -> Option<NetworkBuffer> {
        if let Some(floating) = queue.floating.pop_front() {
            return Some(floating);
        }
        let id = queue.exclusive.pop_front()?;
        Some(NetworkBuffer::pooled(id, Recycler::Exclusive(self.this())))
    }

    /// `requestExclusiveBuffers(n)`: takes `n` segments from the global pool (outside the lock)
    /// and queues them; they are never announced here (initial credit or `enable_notify` does).
    pub fn request_exclusive_buffers(&self, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let segments = self.global_pool.request_memory_segments(n)?;
        let mut queue = self.buffer_queue.lock();
        // There should be no floating buffers allocated before the exclusive buffers are
        // initialised, otherwise `addExclusiveBuffer` would hand floating buffers back here.
        assert!(
            queue.floating.is_empty(),
            "Bug in buffer allocation logic: floating buffer is allocated before exclusive buffers are initialized."
        );
        for id in segments {
            queue.exclusive_owned.insert(id);
            let released = queue.add_exclusive_buffer(id);
            debug_assert!(released.is_none());
        }
        Ok(())
    }

    /// `requestFloatingBuffers(numRequired)` (from `onSenderBacklog`): sets the requirement and
    /// requests floating buffers; returns how many to announce, 0 while notification is off.
    pub fn request_floating_buffers(&self, num_required: i32) -> usize {
        let mut queue = self.buffer_queue.lock();
        // Similar to notify_buffer_available(): never add a buffer after the channel released
        // all buffers via releaseAllResources().
        let announce = if self.channel.is_released() {
            0
        } else {
            queue.num_required_buffers = num_required;
            let requested = self.try_request_buffers(&mut queue);
            queue.announce(requested)
        };
        self.record(|channel| Event::RequestFloatingBuffers {
            channel,
            num_required,
            announce,
        });
        announce
    }

    /// `tryRequestBuffers()`: under the lock, requests pool buffers until the requirement is met
    /// or registers as listener when the pool is empty.
    fn try_request_buffers(&self, queue: &mut AvailableBufferQueue) -> usize {
        let mut requested = 0;
        while (queue.available_buffer_size() as i64) < i64::from(queue.num_required_buffers)
            && !queue.waiting_for_floating_buffers
        {
            if let Some(buffer) = self.buffer_pool.request_buffer() {
                queue.floating.push_back(buffer);
                requested += 1;
            } else if self
                .buffer_pool
                .add_buffer_listener(self.this() as Arc<dyn BufferListener>)
            {
                queue.waiting_for_floating_buffers = true;
                break;
            } else if self.buffer_pool.is_destroyed() {
                // Destroyed pool: nothing more to get.
                break;
            }
            // Otherwise a buffer was recycled to the pool between the two calls: request again,
            // as Flink's loop does (giving up here would leave the channel short of its
            // requirement without being a listener).
        }
        requested
    }

    // ------------------------------------------------------------------------
    // Buffer recycle
    // ------------------------------------------------------------------------

    /// `recycle(segment)` (any thread, as the exclusive buffer's `BufferRecycler`): requeues the
    /// segment, or returns it to the global pool if the channel is released; announces it after
    /// unlocking if notification is on and no floating buffer was given back instead.
    pub fn recycle(&self, id: BufferId) -> Result<()> {
        let released_floating;
        let announce;
        {
            let mut queue = self.buffer_queue.lock();
            if !queue.exclusive_owned.contains(&id) || queue.exclusive.contains(&id) {
                return Err(ChannelError::DoubleRecycle(id));
            }
            if self.channel.is_released() {
                queue.exclusive_owned.remove(&id);
                self.record(|channel| Event::Recycle {
                    channel,
                    buffer: id,
                    then: None,
                });
                drop(queue);
                return self.global_pool.recycle_memory_segments(vec![id]);
            }
            released_floating = queue.add_exclusive_buffer(id);
            self.buffers_available.notify_all();
            announce = released_floating.is_none() && queue.announce(1) == 1;
            self.record(|channel| Event::Recycle {
                channel,
                buffer: id,
                then: match &released_floating {
                    Some(floating) => Some(PausePoint::ReturnFloating { buffer: floating.id() }),
                    None => announce.then_some(self.announce_point(1)),
                },
            });
        }
        if let Some(floating) = released_floating {
            pause_point::reached(PausePoint::ReturnFloating { buffer: floating.id() });
            floating.recycle_buffer()?;
        } else if announce {
            pause_point::reached(self.announce_point(1));
            self.channel.notify_buffer_available(1);
        }
        Ok(())
    }

    // ------------------------------------------------------------------------
    // Notification gate (FLINK-38544)
    // ------------------------------------------------------------------------

    /// `enableNotify()`: opens the notification gate and counts the queued buffers in ONE
    /// critical section, then announces them after unlocking. Returns the announced count.
    pub fn enable_notify(&self) -> Result<usize> {
        let available = {
            let mut queue = self.buffer_queue.lock();
            if queue.notify_available {
                let error = ChannelError::illegal_state("Buffer notification is already enabled.");
                self.record(|channel| Event::EnableNotify {
                    channel,
                    outcome: Err(error.clone()),
                });
                return Err(error);
            }
            // Flag and count together: a buffer recycled before this point is counted here, a
            // buffer recycled after it sees the flag and announces itself (never both).
            queue.notify_available = true;
            let available = queue.available_buffer_size();
            let available = queue.announce(available);
            self.record(|channel| Event::EnableNotify {
                channel,
                outcome: Ok(available),
            });
            available
        };
        if available > 0 {
            pause_point::reached(self.announce_point(available));
            self.channel.notify_buffer_available(available);
        }
        Ok(available)
    }

    // ------------------------------------------------------------------------
    // Buffer release
    // ------------------------------------------------------------------------

    /// `releaseFloatingBuffers()` (`onBlockingUpstream` of a channel without exclusive buffers):
    /// drops the requirement and recycles the queued floating buffers outside the lock.
    pub fn release_floating_buffers(&self) -> Result<()> {
        let floating: Vec<NetworkBuffer> = {
            let mut queue = self.buffer_queue.lock();
            queue.num_required_buffers = 0;
            let floating: Vec<NetworkBuffer> = queue.floating.drain(..).collect();
            self.record(|channel| Event::ReleaseFloatingBuffers {
                channel,
                floating: floating.iter().map(NetworkBuffer::id).collect(),
            });
            floating
        };
        // Recycle outside the lock to avoid a dead lock with the pool's listener callback.
        floating.into_iter().try_for_each(NetworkBuffer::recycle_buffer)
    }

    /// Runs `op` under `bufferQueue`'s lock. The owner's release swaps its `isReleased` flag
    /// here: every step of this manager reads the flag under the lock and records its event
    /// before unlocking, so the swap's place in the event log is the place the steps saw.
    pub(crate) fn with_queue_locked<R>(&self, op: impl FnOnce() -> R) -> R {
        let _queue = self.buffer_queue.lock();
        op()
    }

    /// `releaseAllBuffers(buffers)` (after the channel set `isReleased`): exclusive segments,
    /// of `buffers` and of the queue, go back to the global pool in one batch; the rest is
    /// recycled to its owner. Wakes blocked `request_buffer_blocking` callers.
    pub fn release_all_buffers(&self, buffers: Vec<NetworkBuffer>) -> Result<()> {
        let mut first_error = None;
        let mut exclusive = Vec::new();
        for buffer in buffers {
            match buffer.recycler_is(self) {
                true => exclusive.push(buffer.id()),
                false => {
                    if let Err(error) = buffer.recycle_buffer() {
                        first_error.get_or_insert(error);
                    }
                }
            }
        }
        let floating: Vec<NetworkBuffer> = {
            let mut queue = self.buffer_queue.lock();
            exclusive.extend(queue.exclusive.drain(..));
            for id in &exclusive {
                queue.exclusive_owned.remove(id);
            }
            self.buffers_available.notify_all();
            let floating: Vec<NetworkBuffer> = queue.floating.drain(..).collect();
            self.record(|channel| Event::ReleaseAllBuffers {
                channel,
                exclusive: exclusive.clone(),
                floating: floating.iter().map(NetworkBuffer::id).collect(),
            });
            floating
        };
        for buffer in floating {
            if let Err(error) = buffer.recycle_buffer() {
                first_error.get_or_insert(error);
            }
        }
        if !exclusive.is_empty()
            && let Err(error) = self.global_pool.recycle_memory_segments(exclusive)
        {
            first_error.get_or_insert(error);
        }
        first_error.map_or(Ok(()), Err)
    }

    // ------------------------------------------------------------------------
    // Snapshots
    // ------------------------------------------------------------------------

    /// A snapshot taken under the `bufferQueue` lock.
    pub fn snapshot(&self) -> BufferManagerSnapshot {
        let queue = self.buffer_queue.lock();
        BufferManagerSnapshot {
            exclusive: queue.exclusive.iter().copied().collect(),
            floating: queue.floating.iter().map(NetworkBuffer::id).collect(),
            num_required_buffers: queue.num_required_buffers,
            waiting_for_floating_buffers: queue.waiting_for_floating_buffers,
            notify_available: queue.notify_available,
            exclusive_owned: queue.exclusive_owned.iter().copied().collect(),
        }
    }
}

impl BufferListener for BufferManager {
    /// `notifyBufferAvailable(Buffer)` (the `LocalBufferPool` callback, any recycler thread):
    /// takes the floating buffer if still needed and announces it after unlocking (with
    /// `announce-under-queue-lock`, before; with `wake-on-refused-buffer`, a refusal wakes
    /// `requestBufferBlocking`).
    fn notify_buffer_available(&self, buffer: NetworkBuffer) -> std::result::Result<(), NetworkBuffer> {
        // Checked outside the lock too: taking our lock while a canceler releases another
        // channel's manager could otherwise dead lock two managers.
        if self.channel.is_released() {
            return Err(buffer);
        }
        let announce = {
            let mut queue = self.buffer_queue.lock();
            let id = buffer.id();
            let record = |taken: bool, announce: usize| {
                self.record(|channel| Event::BufferListenerNotifyBufferAvailable {
                    channel,
                    buffer: id,
                    taken,
                    announce,
                })
            };
            if !queue.waiting_for_floating_buffers {
                record(false, 0);
                drop(queue);
                self.channel.set_error(ChannelError::illegal_state(
                    "This channel should be waiting for floating buffers.",
                ));
                return Err(buffer);
            }
            queue.waiting_for_floating_buffers = false;
            // Never add a buffer after releaseAllBuffers() emptied the queue.
            let released = self.channel.is_released();
            if released || queue.available_buffer_size() as i64 >= i64::from(queue.num_required_buffers) {
                record(false, 0);
                if self.fixes.wake_on_refused_buffer && !released {
                    // `wake-on-refused-buffer`: this manager is no listener any more, so a
                    // thread in `requestBufferBlocking` that waits for the pool's callback
                    // would wait forever; woken, it looks at the pool again.
                    queue.look_at_pool_again = true;
                    self.buffers_available.notify_all();
                }
                return Err(buffer);
            }
            queue.floating.push_back(buffer);
            let requested = 1 + self.try_request_buffers(&mut queue);
            self.buffers_available.notify_all();
            let announce = queue.announce(requested);
            record(true, announce);
            if self.fixes.announce_under_queue_lock {
                // `announce-under-queue-lock`: the credit is announced while `bufferQueue` is
                // held, so `releaseFloatingBuffers` cannot give the buffer back before its
                // credit is out. `notifyBufferAvailable(n)` takes no lock (an atomic and the
                // client's queue), so no lock order changes.
                self.channel.notify_buffer_available(announce);
                return Ok(());
            }
            announce
        };
        if announce > 0 {
            pause_point::reached(self.announce_point(announce));
            self.channel.notify_buffer_available(announce);
        }
        Ok(())
    }

    /// `notifyBufferDestroyed()`: nothing to do; waiters see the destroyed pool.
    fn notify_buffer_destroyed(&self) {
        self.buffers_available.notify_all();
    }
}

impl BufferRecycler for BufferManager {
    fn recycle(self: Arc<Self>, id: BufferId) -> Result<()> {
        BufferManager::recycle(&self, id)
    }
}

impl NetworkBuffer {
    /// `buffer.getRecycler() == BufferManager.this`.
    pub(crate) fn recycler_is(&self, manager: &BufferManager) -> bool {
        matches!(self.recycler_ref(), Recycler::Exclusive(m) if std::ptr::addr_eq(Arc::as_ptr(m), manager))
    }
}
