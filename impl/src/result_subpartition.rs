//! Mirrors Flink's `PipelinedSubpartition` (the producer side of one channel) together with its
//! read view: a FIFO of buffers and events with priority events at the head, sequence numbers
//! assigned at poll time from 0, and a `BufferAvailabilityListener`. Handing out an
//! `EndOfOutputChannelStateEvent` (`RECOVERY_COMPLETION`) blocks the subpartition (`isBlocked`)
//! until the consumer's `resumeConsumption`: meanwhile only priority elements go out, the
//! backlog is 0 and `add` tells the listener nothing.
//!
//! Locking contract: one lock, Flink's `buffers` monitor, guards the queue, the sequence number,
//! `isBlocked` and the listener. The listener (`notifyDataAvailable`, `notifyPriorityEvent`) is called after
//! the lock is released, because a local consumer's listener takes the gate's lock.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::network_buffer::{BufferKind, BufferSnapshot, DataType, NetworkBuffer};
use crate::pause_point::{self, PausePoint};
use crate::prioritized_deque::PrioritizedDeque;
use crate::sync::{Arc, Mutex};

/// Flink's `BufferAvailabilityListener`, implemented by the consumer of a view.
pub trait BufferAvailabilityListener: Send + Sync {
    /// `notifyDataAvailable(view)`.
    fn notify_data_available(&self);
    /// `notifyPriorityEvent(prioritySequenceNumber)`.
    fn notify_priority_event(&self, priority_sequence_number: i32);
}

/// Flink's `ResultSubpartition.BufferAndBacklog`.
#[derive(Debug)]
pub struct BufferAndBacklog {
    /// The polled buffer.
    pub buffer: NetworkBuffer,
    /// `buffersInBacklog`: data buffers still queued.
    pub buffers_in_backlog: i32,
    /// `nextDataType`.
    pub next_data_type: DataType,
    /// `sequenceNumber`, from 0.
    pub sequence_number: i32,
}

/// Snapshot of a [`ResultSubpartition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultSubpartitionSnapshot {
    /// Queued buffers, head first.
    pub buffers: Vec<BufferSnapshot>,
    /// `getNumPriorityElements()`.
    pub num_priority_elements: usize,
    /// The sequence number the next polled buffer gets.
    pub sequence_number: i32,
    /// Whether a read view exists.
    pub has_read_view: bool,
    /// `isReleased`.
    pub released: bool,
    /// `isBlocked`: a `RECOVERY_COMPLETION` was handed out and the consumer has not resumed.
    pub is_blocked: bool,
}

struct SubpartitionBuffers {
    buffers: PrioritizedDeque<NetworkBuffer>,
    sequence_number: i32,
    has_read_view: bool,
    listener: Option<Arc<dyn BufferAvailabilityListener>>,
    released: bool,
    is_blocked: bool,
}

impl SubpartitionBuffers {
    /// The head if `pollBuffer` hands it out now: while blocked, a priority element only
    /// (FLINK-40519: an unaligned barrier overtakes the block).
    fn available_head(&self) -> Option<&NetworkBuffer> {
        self.buffers
            .peek()
            .filter(|head| !self.is_blocked || head.kind().has_priority())
    }

    /// `getBuffersInBacklogUnsafe()`: data buffers queued, 0 while blocked.
    fn backlog(&self) -> i32 {
        if self.is_blocked {
            return 0;
        }
        self.buffers.iter().filter(|b| b.is_buffer()).count() as i32
    }
}

/// Mirrors Flink's `PipelinedSubpartition` and its `PipelinedSubpartitionView`.
pub struct ResultSubpartition {
    buffers: Mutex<SubpartitionBuffers>,
}

impl fmt::Debug for ResultSubpartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResultSubpartition")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

enum Notification {
    None,
    DataAvailable(Arc<dyn BufferAvailabilityListener>),
    PriorityEvent(Arc<dyn BufferAvailabilityListener>, i32),
}

impl ResultSubpartition {
    /// An empty subpartition.
    pub fn new() -> Arc<Self> {
        let buffers = SubpartitionBuffers {
            buffers: PrioritizedDeque::new(),
            sequence_number: 0,
            has_read_view: false,
            listener: None,
            released: false,
            is_blocked: false,
        };
        Arc::new(Self {
            buffers: Mutex::new(buffers),
        })
    }

    /// `add(bufferConsumer)` (producer thread): priority events go to the head, everything else,
    /// a timeoutable aligned barrier included (no priority), to the tail; the listener is told
    /// after unlocking, of data only when the subpartition was empty and is not blocked
    /// (`shouldNotifyDataAvailable`). A released subpartition recycles the buffer.
    pub fn add(&self, buffer: NetworkBuffer) -> Result<()> {
        let notification = {
            let mut state = self.buffers.lock();
            if state.released {
                drop(state);
                buffer.recycle_buffer()?;
                return Err(ChannelError::released("Subpartition has already been released."));
            }
            let was_empty = state.buffers.is_empty();
            event_log::record(|| Event::Add {
                subpartition: self.event_id(),
                buffer: buffer.snapshot(),
            });
            if buffer.kind().has_priority() {
                state.buffers.add_priority_element(buffer);
                let priority_sequence_number = state.sequence_number + state.buffers.num_priority_elements() as i32 - 1;
                // `needNotifyPriorityEvent()`: only the first priority element is announced; the
                // consumer pulls the ones behind it while the flag stays set.
                match &state.listener {
                    Some(listener) if state.buffers.num_priority_elements() == 1 => {
                        Notification::PriorityEvent(Arc::clone(listener), priority_sequence_number)
                    }
                    _ => Notification::None,
                }
            } else {
                state.buffers.add(buffer);
                match &state.listener {
                    Some(listener) if was_empty && !state.is_blocked => {
                        Notification::DataAvailable(Arc::clone(listener))
                    }
                    _ => Notification::None,
                }
            }
        };
        match notification {
            Notification::None => {}
            Notification::DataAvailable(listener) => listener.notify_data_available(),
            Notification::PriorityEvent(listener, sequence_number) => {
                // The lock is released: the consumer may poll, and clear its flag, before the
                // listener sets it.
                pause_point::reached(PausePoint::NotifyPriorityEvent);
                listener.notify_priority_event(sequence_number);
            }
        }
        Ok(())
    }

    /// `alignedBarrierTimeout(checkpointId)`: the upstream's alignment timer fired while the
    /// timeoutable barrier of `checkpoint_id` is still queued: it goes on as an unaligned
    /// barrier at the priority head, which a blocked subpartition hands out too. A barrier
    /// already sent is left alone. Only a local view's listener would be told, and the
    /// configurations with timeoutable barriers have remote consumers only.
    pub fn aligned_barrier_timeout(&self, checkpoint_id: i64) -> Result<()> {
        let mut state = self.buffers.lock();
        let queued = state
            .buffers
            .get_and_remove(|b| b.kind() == BufferKind::TimeoutableAlignedCheckpointBarrier(checkpoint_id));
        if let Ok(barrier) = queued {
            barrier.recycle_buffer()?;
            let unaligned = NetworkBuffer::event(BufferKind::CheckpointBarrier(checkpoint_id));
            state.buffers.add_priority_element(unaligned);
        }
        Ok(())
    }

    /// `createReadView(availabilityListener)`: one view per subpartition; the listener is told
    /// (after unlocking) if data is already queued.
    pub fn create_read_view(&self, listener: Option<Arc<dyn BufferAvailabilityListener>>) -> Result<()> {
        let notify = {
            let mut state = self.buffers.lock();
            if state.released {
                return Err(ChannelError::released("Subpartition has already been released."));
            }
            if state.has_read_view {
                return Err(ChannelError::illegal_state(
                    "Subpartition is being or already has been consumed.",
                ));
            }
            state.has_read_view = true;
            state.listener = listener.clone();
            !state.buffers.is_empty()
        };
        if let (true, Some(listener)) = (notify, listener) {
            listener.notify_data_available();
        }
        Ok(())
    }

    /// `pollBuffer()` / `view.getNextBuffer()`: the head, with the backlog and the next type.
    /// A blocked subpartition hands out priority elements only; handing out a
    /// `RECOVERY_COMPLETION` blocks it, in the same critical section.
    pub fn poll_buffer(&self) -> Option<BufferAndBacklog> {
        let mut state = self.buffers.lock();
        state.available_head()?;
        let buffer = state.buffers.poll()?;
        if buffer.kind().is_blocking_upstream() {
            state.is_blocked = true;
        }
        let sequence_number = state.sequence_number;
        state.sequence_number += 1;
        let polled = BufferAndBacklog {
            buffer,
            buffers_in_backlog: state.backlog(),
            next_data_type: state.available_head().map_or(DataType::None, NetworkBuffer::data_type),
            sequence_number,
        };
        event_log::record(|| Event::PollBuffer {
            subpartition: self.event_id(),
            buffer: polled.buffer.snapshot(),
            sequence_number,
            backlog: polled.buffers_in_backlog,
        });
        Some(polled)
    }

    /// `resumeConsumption()` (the view's, from a local consumer or the Netty server's reader):
    /// `checkState(isBlocked, "Should be blocked by checkpoint.")`, then unblocked. It tells
    /// nobody: the caller looks for what became available.
    pub fn resume_consumption(&self) -> Result<()> {
        let mut state = self.buffers.lock();
        let outcome = match state.is_blocked {
            true => Ok(()),
            false => Err(ChannelError::illegal_state("Should be blocked by checkpoint.")),
        };
        event_log::record(|| Event::SubpartitionResumeConsumption {
            subpartition: self.event_id(),
            outcome: outcome.clone(),
        });
        state.is_blocked = false;
        outcome
    }

    /// `isBlocked`.
    pub fn is_blocked(&self) -> bool {
        self.buffers.lock().is_blocked
    }

    /// This subpartition's name in an [`event_log`]: its address, stable while it lives.
    pub fn event_id(&self) -> usize {
        self as *const Self as usize
    }

    /// `view.getAvailabilityAndBacklog(isCreditAvailable)`: without credit only a next event
    /// makes the view available; while blocked only a priority one.
    pub fn get_availability_and_backlog(&self, is_credit_available: bool) -> (bool, i32) {
        let state = self.buffers.lock();
        let available = match state.available_head() {
            None => false,
            Some(head) => is_credit_available || !head.is_buffer(),
        };
        (available, state.backlog())
    }

    /// `getNumberOfQueuedBuffers()`: everything queued, blocked or not.
    pub fn get_number_of_queued_buffers(&self) -> usize {
        self.buffers.lock().buffers.len()
    }

    /// The data type of the head, without polling (blocked or not).
    pub fn peek_next_data_type(&self) -> DataType {
        self.buffers
            .lock()
            .buffers
            .peek()
            .map_or(DataType::None, NetworkBuffer::data_type)
    }

    /// `release()`: recycles the queued buffers (after unlocking).
    pub fn release(&self) -> Result<()> {
        let drained: Vec<NetworkBuffer> = {
            let mut state = self.buffers.lock();
            state.released = true;
            state.listener = None;
            state.buffers.drain().collect()
        };
        drained.into_iter().try_for_each(NetworkBuffer::recycle_buffer)
    }

    /// `isReleased()`.
    pub fn is_released(&self) -> bool {
        self.buffers.lock().released
    }

    /// A snapshot taken under the `buffers` lock.
    pub fn snapshot(&self) -> ResultSubpartitionSnapshot {
        let state = self.buffers.lock();
        ResultSubpartitionSnapshot {
            buffers: state.buffers.iter().map(NetworkBuffer::snapshot).collect(),
            num_priority_elements: state.buffers.num_priority_elements(),
            sequence_number: state.sequence_number,
            has_read_view: state.has_read_view,
            released: state.released,
            is_blocked: state.is_blocked,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::network_buffer::BufferKind;
    use std::sync::Mutex as StdMutex;

    #[derive(Default)]
    struct Told(StdMutex<Vec<Option<i32>>>);

    impl BufferAvailabilityListener for Told {
        fn notify_data_available(&self) {
            self.0.lock().unwrap().push(None);
        }
        fn notify_priority_event(&self, priority_sequence_number: i32) {
            self.0.lock().unwrap().push(Some(priority_sequence_number));
        }
    }

    /// `needNotifyPriorityEvent()`: a barrier behind a queued priority element is not
    /// announced; once the head was polled, the next one is.
    #[test]
    fn only_the_first_queued_priority_element_is_announced() {
        let told = Arc::new(Told::default());
        let subpartition = ResultSubpartition::new();
        subpartition
            .create_read_view(Some(Arc::clone(&told) as Arc<dyn BufferAvailabilityListener>))
            .unwrap();
        let barrier = |cp| NetworkBuffer::event(BufferKind::CheckpointBarrier(cp));
        subpartition.add(barrier(1)).unwrap();
        subpartition.add(barrier(2)).unwrap();
        assert_eq!(*told.0.lock().unwrap(), [Some(0)]);
        subpartition.poll_buffer().unwrap();
        subpartition.poll_buffer().unwrap();
        subpartition.add(barrier(3)).unwrap();
        assert_eq!(*told.0.lock().unwrap(), [Some(0), Some(2)]);
    }

    /// Handing out `EndOfOutputChannelStateEvent` blocks the subpartition in the same critical
    /// section: the event carries a backlog of 0 and no next type, data stays queued and
    /// unannounced, a barrier still passes; `resumeConsumption` unblocks it and tells nobody.
    #[test]
    fn a_recovery_completion_blocks_until_resume_consumption() {
        let told = Arc::new(Told::default());
        let subpartition = ResultSubpartition::new();
        subpartition
            .create_read_view(Some(Arc::clone(&told) as Arc<dyn BufferAvailabilityListener>))
            .unwrap();
        let data = |id| NetworkBuffer::unpooled(crate::BufferId(id), BufferKind::Data, 0);
        subpartition
            .add(NetworkBuffer::event(BufferKind::EndOfOutputChannelState))
            .unwrap();
        subpartition.add(data(1)).unwrap();
        assert_eq!(*told.0.lock().unwrap(), [None], "the first element is announced");
        let eoo = subpartition.poll_buffer().unwrap();
        assert_eq!(eoo.buffer.kind(), BufferKind::EndOfOutputChannelState);
        assert_eq!((eoo.buffers_in_backlog, eoo.next_data_type), (0, DataType::None));
        assert!(subpartition.is_blocked());
        assert!(subpartition.poll_buffer().is_none(), "data waits for the resume");
        assert_eq!(subpartition.get_availability_and_backlog(true), (false, 0));
        // Emptied but blocked: the next data is not announced either.
        let drained = ResultSubpartition::new();
        drained
            .create_read_view(Some(Arc::clone(&told) as Arc<dyn BufferAvailabilityListener>))
            .unwrap();
        drained
            .add(NetworkBuffer::event(BufferKind::EndOfOutputChannelState))
            .unwrap();
        drained.poll_buffer().unwrap();
        drained.add(data(2)).unwrap();
        assert_eq!(told.0.lock().unwrap().len(), 2, "only the event was announced");
        // A barrier overtakes the block.
        subpartition
            .add(NetworkBuffer::event(BufferKind::CheckpointBarrier(1)))
            .unwrap();
        assert_eq!(subpartition.get_availability_and_backlog(false), (true, 0));
        let barrier = subpartition.poll_buffer().unwrap();
        assert_eq!(barrier.buffer.kind(), BufferKind::CheckpointBarrier(1));
        assert_eq!(barrier.next_data_type, DataType::None);
        let before = told.0.lock().unwrap().len();
        subpartition.resume_consumption().unwrap();
        assert_eq!(told.0.lock().unwrap().len(), before, "resumeConsumption tells nobody");
        assert_eq!(subpartition.get_availability_and_backlog(true), (true, 1));
        assert_eq!(subpartition.poll_buffer().unwrap().buffer.id(), crate::BufferId(1));
        assert!(matches!(
            subpartition.resume_consumption(),
            Err(ChannelError::IllegalState(message)) if message == "Should be blocked by checkpoint."
        ));
    }
}
