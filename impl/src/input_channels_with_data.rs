//! Flink's `inputChannelsWithData` of `SingleInputGate`: the queue of channels with data that
//! the channels notify and the task polls. It is a module of its own because the channels hold
//! it (their `ChannelContext`) while the gate holds the channels: beside the gate, every channel
//! would import the gate that imports it.
//!
//! Locking contract: its own lock and condition variable, taken before any channel lock (see
//! `single_input_gate`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::panic::Location;

use serde::{Deserialize, Serialize};

use crate::buffer_and_availability::BufferAndAvailability;
use crate::completable_future::CompletableFuture;
use crate::error::Result;
use crate::sync::{Arc, Condvar, Mutex};

/// Snapshot of [`InputChannelsWithData`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputChannelsWithDataSnapshot {
    /// Queued channel indexes, head first.
    pub channels: Vec<usize>,
    /// How many of them (at the head) are prioritised.
    pub num_priority: usize,
}

#[derive(Debug, Default)]
struct ChannelQueue {
    channels: VecDeque<usize>,
    num_priority: usize,
    enqueued: BTreeSet<usize>,
    /// `lastPrioritySequenceNumber[channel]`: the sequence number of the last priority element
    /// polled from each channel (absent: `Integer.MIN_VALUE`).
    last_priority_sequence_number: BTreeMap<usize, i32>,
    closed: bool,
    /// `availabilityHelper`'s future, handed out while no channel was queued.
    availability: Option<CompletableFuture>,
}

impl ChannelQueue {
    fn snapshot(&self) -> InputChannelsWithDataSnapshot {
        InputChannelsWithDataSnapshot {
            channels: self.channels.iter().copied().collect(),
            num_priority: self.num_priority,
        }
    }

    /// `queueChannelUnsafe(channel, priority)`: false for a double notification (already queued,
    /// and with priority if that is asked for).
    fn queue_channel_unsafe(&mut self, channel_index: usize, priority: bool) -> bool {
        let already_enqueued = self.enqueued.contains(&channel_index);
        let already_prioritized = self
            .channels
            .iter()
            .take(self.num_priority)
            .any(|c| *c == channel_index);
        if already_enqueued && (!priority || already_prioritized) {
            return false;
        }
        if already_enqueued {
            self.channels.retain(|c| *c != channel_index);
        }
        if priority {
            self.channels.insert(self.num_priority, channel_index);
            self.num_priority += 1;
        } else {
            self.channels.push_back(channel_index);
        }
        self.enqueued.insert(channel_index);
        true
    }
}

/// `isOutdated(sequenceNumber, lastSequenceNumber)`: whether the priority element announced with
/// `sequence_number` was already polled. Sequence numbers wrap, so they are compared as serial
/// numbers (RFC 1982): the newer is the one the other reaches counting up by less than 2^31.
/// Flink writes this as an explicit check for the sign change; the two agree whenever the
/// numbers are less than 2^30 apart, as two priority events of one channel are.
fn is_outdated(sequence_number: i32, last_sequence_number: i32) -> bool {
    sequence_number.wrapping_sub(last_sequence_number) <= 0
}

/// Flink's `inputChannelsWithData` (a `PrioritizedDeque<InputChannel>` plus
/// `enqueuedInputChannelsWithData`), shared by the gate and its channels.
#[derive(Debug)]
pub struct InputChannelsWithData {
    queue: Mutex<ChannelQueue>,
    available: Condvar,
    /// While a turn of [`poll_with`](Self::poll_with) runs: the queue as that turn left it
    /// after its dequeue (a leaf, taken under `queue`). Only the polling thread changes the
    /// queue in a turn, so [`snapshot`](Self::snapshot) reads this instead of waiting for the
    /// turn: a thread stopped at a pause point inside the turn holds `queue`.
    in_turn: Mutex<Option<InputChannelsWithDataSnapshot>>,
}

impl Default for InputChannelsWithData {
    fn default() -> Self {
        Self {
            queue: Mutex::new(ChannelQueue::default()),
            available: Condvar::new(),
            in_turn: Mutex::new(None),
        }
    }
}

impl InputChannelsWithData {
    /// An empty queue.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Where a thread that waits for this queue's lock to notify it parks, as its wait hook is
    /// told ([`set_thread_wait_hook`](crate::pause_point::set_thread_wait_hook)): a driver that
    /// stopped the polling thread inside a turn of [`poll_with`](Self::poll_with) tells a
    /// notification waiting for the turn from a call that blocked by itself.
    pub fn lock_site() -> &'static Location<'static> {
        Location::caller()
    }

    /// `notifyChannelNonEmpty(channel)` → `queueChannel(channel, null, false)`.
    pub fn notify_channel_non_empty(&self, channel_index: usize) {
        self.queue_channel(channel_index, false);
    }

    /// `notifyPriorityEvent(channel, prioritySequenceNumber)` → `queueChannel(channel, seq, false)`
    /// with priority: the channel moves to the priority head. The notification comes after the
    /// channel's lock is released, so the task may already have polled the element it announces:
    /// such an outdated notification is dropped.
    pub fn notify_priority_event(&self, channel_index: usize, priority_sequence_number: i32) {
        let (queued, availability) = {
            let mut queue = self.queue.lock_reporting(Self::lock_site());
            let last = queue.last_priority_sequence_number.get(&channel_index);
            let queued = !last.is_some_and(|&last| is_outdated(priority_sequence_number, last))
                && queue.queue_channel_unsafe(channel_index, true);
            (queued, queued.then(|| queue.availability.take()).flatten())
        };
        if queued {
            self.available.notify_all();
        }
        if let Some(future) = availability {
            future.complete();
        }
    }

    /// `queueChannel(channel, priority)`: ignores double notifications.
    pub fn queue_channel(&self, channel_index: usize, priority: bool) {
        let availability = {
            let mut queue = self.queue.lock_reporting(Self::lock_site());
            let queued = queue.queue_channel_unsafe(channel_index, priority);
            queued.then(|| queue.availability.take())
        };
        let Some(availability) = availability else { return };
        self.available.notify_all();
        // The gate's availability future completes outside the lock: its dependents may poll.
        if let Some(future) = availability {
            future.complete();
        }
    }

    /// `getAvailableFuture()`: done while a channel is queued (or the gate is closed).
    pub fn get_available_future(&self) -> CompletableFuture {
        let mut queue = self.queue.lock();
        if !queue.channels.is_empty() || queue.closed {
            return CompletableFuture::completed();
        }
        queue.availability.get_or_insert_with(CompletableFuture::new).clone()
    }

    /// The conversion replacing channel `channel_index` (Flink 2.3.0): `getAndRemove` of the
    /// recovered channel, then the new one `add`ed at the tail if it has buffers in use.
    pub fn replace_channel(&self, channel_index: usize, in_use: bool) {
        let mut queue = self.queue.lock();
        if let Some(at) = queue.channels.iter().position(|c| *c == channel_index) {
            queue.channels.remove(at);
            if at < queue.num_priority {
                queue.num_priority -= 1;
            }
        }
        queue.enqueued.remove(&channel_index);
        if in_use {
            queue.channels.push_back(channel_index);
            queue.enqueued.insert(channel_index);
        }
        let availability = if in_use { queue.availability.take() } else { None };
        drop(queue);
        if let Some(future) = availability {
            future.complete();
        }
    }

    /// One turn of `waitAndGetNextData` under this lock: `getChannel(false)`, then
    /// `get_next_buffer(channel)` (the channel's `getNextBuffer()`), then `queueChannelUnsafe`
    /// again if it reported more (at the priority head for a priority event), and remember a
    /// polled priority element's sequence number for `is_outdated`. `get_next_buffer` must not
    /// notify this queue: the lock is not reentrant, and no channel notifies from its poll.
    pub fn poll_with(
        &self,
        get_next_buffer: impl FnOnce(usize) -> Result<Option<BufferAndAvailability>>,
    ) -> Result<ChannelPoll> {
        let mut queue = self.queue.lock();
        let Some(channel) = queue.channels.pop_front() else {
            return Ok(ChannelPoll::NoChannel);
        };
        queue.num_priority = queue.num_priority.saturating_sub(1);
        queue.enqueued.remove(&channel);
        *self.in_turn.lock() = Some(queue.snapshot());
        let polled = get_next_buffer(channel);
        *self.in_turn.lock() = None;
        let Some(next) = polled? else {
            return Ok(ChannelPoll::Empty { channel });
        };
        if next.next_data_type.is_available() {
            queue.queue_channel_unsafe(channel, next.next_data_type.has_priority());
        }
        if next.buffer.kind().has_priority() {
            queue
                .last_priority_sequence_number
                .insert(channel, next.sequence_number);
        }
        Ok(ChannelPoll::Buffer { channel, next })
    }

    /// Blocks until a channel is queued or the gate is closed; false if closed.
    pub fn wait_for_channel(&self) -> bool {
        let mut queue = self.queue.lock();
        while queue.channels.is_empty() && !queue.closed {
            queue = self.available.wait(queue);
        }
        !queue.closed
    }

    /// Wakes blocked pollers for good (gate close).
    pub fn close(&self) {
        let availability = {
            let mut queue = self.queue.lock();
            queue.closed = true;
            queue.availability.take()
        };
        self.available.notify_all();
        if let Some(future) = availability {
            future.complete();
        }
    }

    /// A snapshot taken under the queue lock; inside a turn of [`poll_with`](Self::poll_with),
    /// the queue as the turn's dequeue left it (the turn holds the lock).
    pub fn snapshot(&self) -> InputChannelsWithDataSnapshot {
        if let Some(in_turn) = self.in_turn.lock().clone() {
            return in_turn;
        }
        self.queue.lock().snapshot()
    }
}

/// What one turn of the gate's polling loop found ([`SingleInputGate::poll_channel`](crate::single_input_gate::SingleInputGate::poll_channel)).
#[derive(Debug)]
pub enum ChannelPoll {
    /// No channel is queued.
    NoChannel,
    /// The head channel returned nothing; it leaves the queue.
    Empty {
        /// Its index.
        channel: usize,
    },
    /// The head channel returned `next`.
    Buffer {
        /// Its index.
        channel: usize,
        /// What `getNextBuffer()` returned.
        next: BufferAndAvailability,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network_buffer::{BufferKind, DataType, NetworkBuffer};

    #[test]
    fn is_outdated_compares_across_the_wrap_of_recovery_sequence_numbers() {
        assert!(is_outdated(3, 3));
        assert!(is_outdated(2, 3));
        assert!(!is_outdated(4, 3));
        // Recovery numbers (from i32::MIN) are older than live ones near zero...
        assert!(!is_outdated(0, i32::MIN + 5));
        assert!(is_outdated(i32::MIN + 5, 0));
        // ...but one counting up past i32::MAX wraps to the negative numbers: those are newer.
        assert!(!is_outdated(i32::MIN, i32::MAX));
        assert!(is_outdated(i32::MAX, i32::MIN));
    }

    #[test]
    fn a_priority_notification_for_an_element_already_polled_is_dropped() {
        let queue = InputChannelsWithData::new();
        queue.queue_channel(0, false);
        let polled = queue
            .poll_with(|_| {
                Ok(Some(BufferAndAvailability {
                    buffer: NetworkBuffer::event(BufferKind::CheckpointBarrier(1)),
                    next_data_type: DataType::None,
                    buffers_in_backlog: 0,
                    sequence_number: 7,
                }))
            })
            .unwrap();
        assert!(matches!(polled, ChannelPoll::Buffer { channel: 0, .. }));
        queue.notify_priority_event(0, 7);
        assert_eq!(
            queue.snapshot().channels,
            Vec::<usize>::new(),
            "the barrier at 7 was polled: its late notification is outdated"
        );
        queue.notify_priority_event(0, 8);
        assert_eq!(queue.snapshot().channels, vec![0]);
        assert_eq!(queue.snapshot().num_priority, 1);
    }
}
