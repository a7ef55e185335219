//! Mirrors Flink's `LocalInputChannel` as changed by FLINK-38544 (PR #28652): created directly
//! in recovery state, recovered buffers pushed into `recoveredBuffers`, live data hidden while
//! `inRecovery`, the priority-event fast path, and recovery sequence numbers assigned when an
//! element is *consumed* (every polled recovered element, sentinels included, takes one).
//!
//! Locking contract:
//! - `recovered_buffers` (Flink's `recoveredBuffers` monitor) guards the recovered queue,
//!   `inRecovery`, `recoverySequenceNumber`, and here also the `ChannelStatePersister` (task
//!   thread only in Flink; keeping it under the lock costs nothing and makes snapshots exact).
//!   Taken by the IO thread (push, finish), the task thread (poll, checkpoint, consumed) and the
//!   canceler (release). Under it only the `ChannelStateWriter` lock is taken.
//! - `request_lock` (Flink's `requestLock`) serialises view creation and release. The view
//!   itself sits in `subpartition_view`, a leaf lock standing for Flink's volatile field: the
//!   task reads it under the gate's `inputChannelsWithData` lock, while view creation notifies
//!   the gate under `request_lock`, so reading it under `request_lock` would invert the order.
//! - `has_pending_priority_event` is an atomic written by the producer (true) and the task (false).
//! - `upstream_ready` is a latch opened by view creation or release, awaited outside any lock.
//!
//! Gate notifications happen after the channel lock is released.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_and_availability::BufferAndAvailability;
use crate::buffer_manager::{BufferManager, BufferManagerChannel, BufferManagerSnapshot};
use crate::channel_state_persister::{ChannelStatePersister, ChannelStatePersisterSnapshot};
use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::input_channels_with_data::InputChannelsWithData;
use crate::network_buffer::{BufferKind, BufferSnapshot, DataType, NetworkBuffer};
use crate::pause_point::{self, PausePoint};
use crate::recoverable_input_channel::{
    Cause, ChannelContext, FutureStatus, RecoverableInputChannel, StateConsumedFuture, collect_pre_recovery_barrier,
};
use crate::result_subpartition::{BufferAvailabilityListener, ResultSubpartition};
use crate::sync::{Arc, AtomicBool, Guard, Latch, Mutex, Ordering};

/// Snapshot of a [`LocalInputChannel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalInputChannelSnapshot {
    /// `getChannelInfo()`.
    pub channel_info: InputChannelInfo,
    /// `needsRecovery`.
    pub needs_recovery: bool,
    /// `inRecovery`.
    pub in_recovery: bool,
    /// `recoveredBuffers`, head first.
    pub recovered_buffers: Vec<BufferSnapshot>,
    /// `toBeConsumedBuffers`, head first: what a `RecoveredInputChannel` migrated (Flink 2.3.0,
    /// flag on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to_be_consumed_buffers: Vec<BufferSnapshot>,
    /// `recoverySequenceNumber`: the number the next consumed recovered element gets.
    pub recovery_sequence_number: i32,
    /// `hasPendingPriorityEvent`.
    pub has_pending_priority_event: bool,
    /// Whether the subpartition view exists.
    pub has_subpartition_view: bool,
    /// `upstreamReady.getCount() == 0`.
    pub upstream_ready: bool,
    /// `isReleased`.
    pub released: bool,
    /// `stateConsumedFuture`.
    pub state_consumed: FutureStatus,
    /// The checkpoint status machine.
    pub persister: ChannelStatePersisterSnapshot,
    /// The recovery-only `BufferManager`, if `needsRecovery`.
    pub buffer_manager: Option<BufferManagerSnapshot>,
}

/// State shared with the buffer manager and the subpartition (as its listener).
struct LocalChannelShared {
    channel_info: InputChannelInfo,
    gate: Arc<InputChannelsWithData>,
    released: AtomicBool,
    has_pending_priority_event: AtomicBool,
    error: Cause,
}

impl BufferManagerChannel for LocalChannelShared {
    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// A local channel has no credit: `InputChannel.notifyBufferAvailable` does nothing.
    fn notify_buffer_available(&self, _number_of_buffers: usize) {}

    /// `setError(cause)`.
    fn set_error(&self, error: ChannelError) {
        self.error
            .set(error, &self.gate, self.channel_info.input_channel_idx as usize);
    }
}

impl BufferAvailabilityListener for LocalChannelShared {
    /// `notifyDataAvailable(view)` (producer thread): `notifyChannelNonEmpty()`.
    fn notify_data_available(&self) {
        self.gate
            .notify_channel_non_empty(self.channel_info.input_channel_idx as usize);
    }

    /// `notifyPriorityEvent(seq)` (producer thread): flag, then `inputGate.notifyPriorityEvent`.
    fn notify_priority_event(&self, priority_sequence_number: i32) {
        event_log::record_atomic(
            || self.has_pending_priority_event.store(true, Ordering::SeqCst),
            |()| {
                Some(Event::NotifyPriorityEvent {
                    channel: self.channel_info,
                })
            },
        );
        self.gate
            .notify_priority_event(self.channel_info.input_channel_idx as usize, priority_sequence_number);
    }
}

/// What `recoveredBuffers` guards.
struct RecoveredBuffers {
    buffers: VecDeque<NetworkBuffer>,
    in_recovery: bool,
    recovery_sequence_number: i32,
    end_of_fetched_appended: bool,
    persister: ChannelStatePersister,
    /// Flink 2.3.0's `toBeConsumedBuffers` (task thread only there): migrated buffers with the
    /// sequence numbers the constructor gave them.
    to_be_consumed: VecDeque<(NetworkBuffer, i32)>,
}

impl RecoveredBuffers {
    /// `offerRecoveredBuffer(buffer)`: returns whether the queue was empty.
    fn offer_recovered_buffer(
        &mut self,
        buffer: NetworkBuffer,
    ) -> std::result::Result<bool, (NetworkBuffer, ChannelError)> {
        if !self.in_recovery {
            return Err((
                buffer,
                ChannelError::illegal_state("Push into recovered buffers after recovery finished."),
            ));
        }
        if buffer.kind() == BufferKind::EndOfFetchedChannelState {
            if self.end_of_fetched_appended {
                return Err((
                    buffer,
                    ChannelError::illegal_state("EndOfFetchedChannelStateEvent already appended."),
                ));
            }
            self.end_of_fetched_appended = true;
        }
        let was_empty = self.buffers.is_empty();
        self.buffers.push_back(buffer);
        Ok(was_empty)
    }

    /// `peekNextDataType(probe)`: the head's type, else NONE in recovery, else the probe.
    fn peek_next_data_type(&self, probe: DataType) -> DataType {
        match self.buffers.front() {
            Some(head) => head.data_type(),
            None if self.in_recovery => DataType::None,
            None => probe,
        }
    }

    fn next_recovery_sequence_number(&mut self) -> i32 {
        let sequence_number = self.recovery_sequence_number;
        self.recovery_sequence_number = sequence_number.wrapping_add(1);
        sequence_number
    }
}

/// Mirrors Flink's `LocalInputChannel` (consumer side of a local shuffle).
pub struct LocalInputChannel {
    context: ChannelContext,
    partition: Arc<ResultSubpartition>,
    needs_recovery: bool,
    shared: Arc<LocalChannelShared>,
    /// Flink's `recoveredBuffers` monitor.
    recovered_buffers: Mutex<RecoveredBuffers>,
    /// Flink's `requestLock`: view creation and release.
    request_lock: Mutex<()>,
    /// Flink's volatile `subpartitionView`; a leaf.
    subpartition_view: Mutex<Option<Arc<ResultSubpartition>>>,
    upstream_ready: Latch,
    state_consumed: StateConsumedFuture,
    buffer_manager: Option<Arc<BufferManager>>,
}

impl fmt::Debug for LocalInputChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalInputChannel")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl LocalInputChannel {
    /// `new LocalInputChannel(..., networkBuffersPerChannel, needsRecovery)`: in recovery iff
    /// `needs_recovery`; the recovery-only `BufferManager` exists only then.
    pub fn new(context: ChannelContext, partition: Arc<ResultSubpartition>, needs_recovery: bool) -> Arc<Self> {
        let shared = Arc::new(LocalChannelShared {
            channel_info: context.channel_info,
            gate: Arc::clone(&context.gate),
            released: AtomicBool::new(false),
            has_pending_priority_event: AtomicBool::new(false),
            error: Cause::new(),
        });
        let buffer_manager = needs_recovery.then(|| {
            let channel: Arc<dyn BufferManagerChannel> = Arc::clone(&shared) as Arc<dyn BufferManagerChannel>;
            BufferManager::with_flink_fixes(
                Arc::clone(&context.global_pool),
                Arc::clone(&context.buffer_pool),
                channel,
                0,
                true,
                context.flink_fixes,
            )
        });
        let recovered = RecoveredBuffers {
            buffers: VecDeque::new(),
            in_recovery: needs_recovery,
            recovery_sequence_number: i32::MIN,
            end_of_fetched_appended: false,
            persister: ChannelStatePersister::new(Arc::clone(&context.writer), context.channel_info),
            to_be_consumed: VecDeque::new(),
        };
        let state_consumed = if needs_recovery {
            StateConsumedFuture::new()
        } else {
            StateConsumedFuture::completed()
        };
        Arc::new(Self {
            context,
            partition,
            needs_recovery,
            shared,
            recovered_buffers: Mutex::new(recovered),
            request_lock: Mutex::new(()),
            subpartition_view: Mutex::new(None),
            upstream_ready: Latch::new(),
            state_consumed,
            buffer_manager,
        })
    }

    /// Flink 2.3.0's constructor with the `ArrayDeque<Buffer>` a `RecoveredInputChannel`
    /// migrates (flag on): created without recovery, the buffers in `toBeConsumedBuffers`,
    /// numbered from `i32::MIN`.
    pub fn with_migrated(
        context: ChannelContext,
        partition: Arc<ResultSubpartition>,
        migrated: Vec<NetworkBuffer>,
    ) -> Arc<Self> {
        let channel = Self::new(context, partition, false);
        {
            let mut state = channel.recovered_buffers.lock();
            for (k, buffer) in migrated.into_iter().enumerate() {
                state
                    .to_be_consumed
                    .push_back((buffer, i32::MIN.wrapping_add(k as i32)));
            }
        }
        channel
    }

    /// `getBuffersInUseCount()`: the migrated buffers and what the view has queued
    /// (`toBeConsumedBuffers.size() + subpartitionView.getNumberOfQueuedBuffers()`, 2.3.0).
    pub fn buffers_in_use_count(&self) -> usize {
        let queued = self.subpartition_view().map_or(0, |v| v.get_number_of_queued_buffers());
        self.recovered_buffers.lock().to_be_consumed.len() + queued
    }

    /// 2.3.0's `getNextRecoveredBuffer()`: a pending priority event is pulled from the view
    /// first; otherwise the next migrated buffer, whose next type is the following one, or for
    /// the last `DATA_BUFFER` if the view is available (`probe`). Both then go through
    /// `getBufferAndAvailability`: `checkForBarrier` and `maybePersist` (FLINK-40016 is not
    /// fixed there: a migrated buffer persisted by `checkpointStarted` is written again, unless
    /// `persist-only-upstream-data`).
    fn get_next_migrated_buffer(
        &self,
        view: Option<Arc<ResultSubpartition>>,
        probe: DataType,
    ) -> Result<Option<BufferAndAvailability>> {
        if self.shared.has_pending_priority_event.load(Ordering::SeqCst) {
            let view = view.ok_or_else(|| ChannelError::illegal_state("No subpartition view available"))?;
            let head = view.peek_next_data_type();
            if !head.has_priority() {
                // 2.3.0's `getNextRecoveredBuffer`: the same check and message as the pull.
                return Err(ChannelError::illegal_state(&format!(
                    "Expected priority event, but got {head:?}"
                )));
            }
            let next = view
                .poll_buffer()
                .expect("the priority head was just peeked by the only consumer");
            let mut state = self.recovered_buffers.lock();
            let mut next_data_type = next.next_data_type;
            if !next_data_type.has_priority() {
                self.shared.has_pending_priority_event.store(false, Ordering::SeqCst);
                if let Some((head, _)) = state.to_be_consumed.front() {
                    next_data_type = head.data_type();
                }
            }
            state.persister.check_for_barrier(&next.buffer);
            state.persister.maybe_persist(&next.buffer);
            return Ok(Some(BufferAndAvailability {
                buffer: next.buffer,
                next_data_type,
                buffers_in_backlog: next.buffers_in_backlog,
                sequence_number: next.sequence_number,
            }));
        }
        let mut state = self.recovered_buffers.lock();
        let Some((buffer, sequence_number)) = state.to_be_consumed.pop_front() else {
            return Ok(None);
        };
        let next_data_type = state.to_be_consumed.front().map_or(probe, |(head, _)| head.data_type());
        state.persister.check_for_barrier(&buffer);
        if !self.context.flink_fixes.persist_only_upstream_data {
            // FLINK-40016: a migrated buffer `checkpointStarted` persisted already is written
            // again; `persist-only-upstream-data` persists only what comes from the view.
            state.persister.maybe_persist(&buffer);
        }
        Ok(Some(BufferAndAvailability {
            buffer,
            next_data_type,
            buffers_in_backlog: 0,
            sequence_number,
        }))
    }

    fn notify_channel_non_empty(&self) {
        self.context
            .gate
            .notify_channel_non_empty(self.context.channel_info.input_channel_idx as usize);
    }

    fn check_error(&self) -> Result<()> {
        self.shared.error.check()
    }

    fn subpartition_view(&self) -> Option<Arc<ResultSubpartition>> {
        self.subpartition_view.lock().clone()
    }

    /// `completeUpstreamReadyForTest()`.
    pub fn complete_upstream_ready_for_test(&self) {
        self.upstream_ready.count_down();
    }

    // ------------------------------------------------------------------------
    // Consume
    // ------------------------------------------------------------------------

    /// `wrapRecoveredBufferAsAvailability(buffer)` under the lock: next type and recovery
    /// sequence number; never `checkForBarrier` / `maybePersist` (FLINK-40016).
    fn wrap_recovered_buffer(
        state: &mut RecoveredBuffers,
        buffer: NetworkBuffer,
        probe: DataType,
    ) -> BufferAndAvailability {
        BufferAndAvailability {
            buffer,
            next_data_type: state.peek_next_data_type(probe),
            buffers_in_backlog: 0,
            sequence_number: state.next_recovery_sequence_number(),
        }
    }

    /// `pullPriorityFromSubpartitionView()`: the pending priority event, ahead of recovered data.
    /// `view_field` is the poll's hold on `subpartitionView`; it is let go before the flag's
    /// clear, where Flink's thread may be preempted.
    fn pull_priority_from_subpartition_view(
        &self,
        view_field: Guard<'_, Option<Arc<ResultSubpartition>>>,
    ) -> Result<BufferAndAvailability> {
        let view = (view_field.clone())
            .ok_or_else(|| ChannelError::illegal_state("Priority event pending without a subpartition view."))?;
        let head = view.peek_next_data_type();
        if !head.has_priority() {
            // 2.3.0's `checkState(..., "Expected priority event, but got %s", next)`.
            return Err(ChannelError::illegal_state(&format!(
                "Expected priority event, but got {head:?}"
            )));
        }
        let next = view
            .poll_buffer()
            .expect("the priority head was just peeked by the only consumer");
        self.recovered_buffers.lock().persister.check_for_barrier(&next.buffer);
        let next_data_type = if next.next_data_type.has_priority() {
            next.next_data_type
        } else {
            // The clear below writes what the poll saw under the subpartition's lock: a barrier
            // the producer adds meanwhile, and its notification's flag, are lost to it
            // (docs/findings.md). Nothing of this channel is locked here.
            drop(view_field);
            pause_point::reached(PausePoint::ClearPendingPriorityEvent);
            event_log::record_atomic(
                || self.shared.has_pending_priority_event.store(false, Ordering::SeqCst),
                |()| {
                    Some(Event::ClearPendingPriorityEvent {
                        channel: self.context.channel_info,
                    })
                },
            );
            self.recovered_buffers.lock().peek_next_data_type(next.next_data_type)
        };
        Ok(BufferAndAvailability {
            buffer: next.buffer,
            next_data_type,
            buffers_in_backlog: next.buffers_in_backlog,
            sequence_number: next.sequence_number,
        })
    }

    /// The unchanged master path: poll the view; `checkForBarrier` and `maybePersist` each
    /// buffer.
    fn get_next_live_buffer(&self, view: Option<Arc<ResultSubpartition>>) -> Result<Option<BufferAndAvailability>> {
        let view = view
            .ok_or_else(|| ChannelError::illegal_state("Queried for a buffer before requesting the subpartition."))?;
        let Some(next) = view.poll_buffer() else {
            if view.is_released() {
                return Err(ChannelError::released("Local subpartition has already been released."));
            }
            return Ok(None);
        };
        let mut state = self.recovered_buffers.lock();
        state.persister.check_for_barrier(&next.buffer);
        state.persister.maybe_persist(&next.buffer);
        if next.buffer.kind().has_priority() && !next.next_data_type.has_priority() {
            self.shared.has_pending_priority_event.store(false, Ordering::SeqCst);
        }
        Ok(Some(BufferAndAvailability {
            buffer: next.buffer,
            next_data_type: next.next_data_type,
            buffers_in_backlog: next.buffers_in_backlog,
            sequence_number: next.sequence_number,
        }))
    }

    /// A snapshot taken under the `recoveredBuffers` lock (the view and flags are read just
    /// before it).
    pub fn snapshot(&self) -> LocalInputChannelSnapshot {
        let has_subpartition_view = self.subpartition_view().is_some();
        let state = self.recovered_buffers.lock();
        LocalInputChannelSnapshot {
            channel_info: self.context.channel_info,
            needs_recovery: self.needs_recovery,
            in_recovery: state.in_recovery,
            recovered_buffers: state.buffers.iter().map(NetworkBuffer::snapshot).collect(),
            to_be_consumed_buffers: state.to_be_consumed.iter().map(|(b, _)| b.snapshot()).collect(),
            recovery_sequence_number: state.recovery_sequence_number,
            has_pending_priority_event: self.shared.has_pending_priority_event.load(Ordering::SeqCst),
            has_subpartition_view,
            upstream_ready: self.upstream_ready.is_open(),
            released: self.shared.released.load(Ordering::SeqCst),
            state_consumed: self.state_consumed.status(),
            persister: state.persister.snapshot(),
            buffer_manager: self.buffer_manager.as_ref().map(|manager| manager.snapshot()),
        }
    }
}

impl RecoverableInputChannel for LocalInputChannel {
    fn channel_info(&self) -> InputChannelInfo {
        self.context.channel_info
    }

    /// `onRecoveredStateBuffer(buffer)` (IO or task thread).
    fn on_recovered_state_buffer(&self, buffer: NetworkBuffer) -> Result<()> {
        let offered = {
            let mut state = self.recovered_buffers.lock();
            event_log::on_recovered_state_buffer(self.context.channel_info, &self.shared.released, buffer, |buffer| {
                state.offer_recovered_buffer(buffer)
            })
        };
        match offered {
            Ok(was_empty) => {
                if was_empty {
                    self.notify_channel_non_empty();
                }
                Ok(())
            }
            Err((buffer, error)) => {
                buffer.recycle_buffer()?;
                error.map_or(Ok(()), Err)
            }
        }
    }

    /// `finishRecoveredBufferDelivery()` (IO thread): waits for the view outside any lock.
    fn finish_recovered_buffer_delivery(&self) -> Result<()> {
        self.upstream_ready.wait();
        let was_empty = {
            let mut state = self.recovered_buffers.lock();
            let in_recovery = state.in_recovery;
            event_log::finish_recovered_buffer_delivery(
                self.context.channel_info,
                &self.shared.released,
                in_recovery,
                |sentinel| state.offer_recovered_buffer(sentinel),
            )?
        };
        if was_empty {
            self.notify_channel_non_empty();
        }
        Ok(())
    }

    fn insert_recovery_checkpoint_barrier_if_in_recovery(&self, checkpoint_id: CheckpointId) -> Result<()> {
        let was_empty = {
            let mut state = self.recovered_buffers.lock();
            let in_recovery = state.in_recovery;
            event_log::insert_recovery_checkpoint_barrier_if_in_recovery(
                self.context.channel_info,
                &self.shared.released,
                in_recovery,
                checkpoint_id,
                |barrier| state.offer_recovered_buffer(barrier),
            )?
        };
        if was_empty {
            self.notify_channel_non_empty();
        }
        Ok(())
    }

    fn request_recovery_buffer_blocking(&self) -> Result<NetworkBuffer> {
        let manager = self.buffer_manager.as_ref().ok_or_else(|| {
            ChannelError::illegal_state("Recovery buffers requested from a channel without recovery.")
        })?;
        self.upstream_ready.wait();
        manager.request_buffer_blocking()
    }

    /// `onRecoveredStateConsumed()` (task thread, after the gate polled the sentinel).
    fn on_recovered_state_consumed(&self) -> Result<()> {
        {
            let mut state = self.recovered_buffers.lock();
            let outcome = if state.in_recovery {
                Ok(())
            } else {
                Err(ChannelError::illegal_state("Recovery already finished."))
            };
            event_log::record(|| Event::OnRecoveredStateConsumed {
                channel: self.context.channel_info,
                outcome: outcome.clone(),
            });
            outcome?;
            state.in_recovery = false;
        }
        // Re-queue the channel so that live data is polled.
        self.notify_channel_non_empty();
        self.state_consumed.complete();
        Ok(())
    }

    fn state_consumed_future(&self) -> StateConsumedFuture {
        self.state_consumed.clone()
    }

    /// `getNextBuffer()` (task thread): recovered buffer first, then a pending priority event,
    /// otherwise nothing while in recovery; the master path afterwards. With
    /// `priority-from-view-head` the pending priority event is the view's head.
    fn get_next_buffer(&self) -> Result<Option<BufferAndAvailability>> {
        self.check_error()?;
        // Flink reads `subpartitionView` once without a lock, so its poll can follow the view's
        // release. Here the field's lock is held to the end of the poll, so that the release's
        // drain is one point between polls (docs/model.md, unlocked accesses); a pull of a
        // priority event lets it go after the view's poll, before the flag's clear, which the
        // model makes a step of its own.
        let view_field = self.subpartition_view.lock();
        let view = view_field.clone();
        // Released (the view went with it): nothing more from upstream, as Flink's
        // `getNextBuffer`. The recovered queue is polled first, without this check.
        let released = view.is_none() && self.shared.released.load(Ordering::SeqCst);
        // Probe upstream outside the channel lock (Flink's `getAvailabilityAndBacklog(true)`).
        let probe = match &view {
            Some(view) if view.get_availability_and_backlog(true).0 => DataType::DataBuffer,
            _ => DataType::None,
        };
        if self.context.flink_fixes.priority_from_view_head {
            // `priority-from-view-head`: the flag is set from what the view holds before it is
            // read, so neither the task's clear over a producer's set (a lost update) nor a set
            // that came after its barrier was polled outlives this poll. The view's head is read
            // under the subpartition's lock, before any lock of this channel.
            let head_has_priority = view
                .as_ref()
                .is_some_and(|view| view.peek_next_data_type().has_priority());
            self.shared
                .has_pending_priority_event
                .store(head_has_priority, Ordering::SeqCst);
        }
        let in_recovery = {
            let mut state = self.recovered_buffers.lock();
            let in_recovery = state.in_recovery;
            if !in_recovery && released {
                return Ok(None);
            }
            if !in_recovery && !state.to_be_consumed.is_empty() {
                drop(state);
                return self.get_next_migrated_buffer(view, probe);
            }
            // The producer sets the flag outside this lock: its read and the poll are one step of
            // the event log's order, as the producer's store is, so that a log never shows the
            // flag set before a poll that read it clear.
            let polled = event_log::record_atomic(
                || {
                    let priority_pending = self.shared.has_pending_priority_event.load(Ordering::SeqCst);
                    if !in_recovery || priority_pending {
                        return None;
                    }
                    let buffer = state.buffers.pop_front()?;
                    Some(Self::wrap_recovered_buffer(&mut state, buffer, probe))
                },
                |polled| {
                    polled.as_ref().map(|next| Event::GetNextBuffer {
                        channel: self.context.channel_info,
                        buffer: next.buffer.snapshot(),
                        sequence_number: next.sequence_number,
                    })
                },
            );
            if let Some(next) = polled {
                drop(state);
                drop(view_field);
                // `recoveredBuffers` is released; Flink's second read of
                // `hasPendingPriorityEvent` comes next, which the fixed code makes only when
                // nothing was polled: this one returns what it polled. The model's variant
                // `recovered-buffer-dropped-for-priority-event` re-reads the flag here in a step
                // of its own (`rereadPendingPriorityEvent`), so a replay may stop here. Nothing
                // of this channel is locked (the view's field is let go: nothing below reads it).
                pause_point::reached(PausePoint::RereadPendingPriorityEvent);
                return Ok(Some(next));
            }
            in_recovery
        };
        if in_recovery {
            if self.shared.has_pending_priority_event.load(Ordering::SeqCst) {
                if released {
                    // Flink's `checkState(subpartitionView != null)` throws here; the task is
                    // being cancelled either way (docs/model.md, choice 26).
                    return Ok(None);
                }
                return self.pull_priority_from_subpartition_view(view_field).map(Some);
            }
            // Live upstream data stays hidden during recovery.
            return Ok(None);
        }
        self.get_next_live_buffer(view)
    }

    /// `checkpointStarted(barrier)`: in recovery, persist the recovered data before the matching
    /// `RecoveryCheckpointBarrier`; only `startPersisting`, the window stays open.
    fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()> {
        let (removed, outcome) = {
            let mut state = self.recovered_buffers.lock();
            let (removed, collected) = if state.in_recovery {
                collect_pre_recovery_barrier(&mut state.buffers, 0, checkpoint_id)
            } else {
                // 2.3.0: the data buffers still in `toBeConsumedBuffers`, retained.
                let migrated = state.to_be_consumed.iter().filter(|(b, _)| b.is_buffer());
                (Vec::new(), Ok(migrated.map(|(b, _)| b.snapshot()).collect()))
            };
            let outcome = collected.and_then(|to_persist| {
                let persisted = to_persist.clone();
                state
                    .persister
                    .start_persisting(checkpoint_id, to_persist)
                    .map(|()| persisted)
            });
            event_log::record(|| Event::CheckpointStarted {
                channel: self.context.channel_info,
                checkpoint_id,
                outcome: outcome.clone(),
            });
            (removed, outcome.map(drop))
        };
        removed.into_iter().for_each(NetworkBuffer::recycle_quietly);
        outcome
    }

    fn checkpoint_stopped(&self, checkpoint_id: CheckpointId) {
        self.recovered_buffers.lock().persister.stop_persisting(checkpoint_id);
    }

    /// `setup()`: lends `networkBuffersPerChannel` exclusive buffers to recovery, if any.
    fn setup(&self) -> Result<()> {
        match &self.buffer_manager {
            Some(manager) => manager.request_exclusive_buffers(self.context.network_buffers_per_channel),
            None => Ok(()),
        }
    }

    /// `requestSubpartitions()`: creates the view under `requestLock`, opens `upstreamReady`,
    /// and notifies (after unlocking) if data is queued.
    fn request_subpartitions(&self) -> Result<()> {
        {
            let _request = self.request_lock.lock();
            if self.shared.released.load(Ordering::SeqCst) {
                return Err(ChannelError::released("LocalInputChannel has already been released."));
            }
            if self.subpartition_view().is_none() {
                let listener: Arc<dyn BufferAvailabilityListener> =
                    Arc::clone(&self.shared) as Arc<dyn BufferAvailabilityListener>;
                self.partition.create_read_view(Some(listener))?;
                *self.subpartition_view.lock() = Some(Arc::clone(&self.partition));
            }
            self.upstream_ready.count_down();
        }
        Ok(())
    }

    /// `releaseAllResources()`: opens the latch, fails the future, recycles the queue.
    fn release_all_resources(&self) -> Result<()> {
        let channel = self.context.channel_info;
        let was_released = event_log::record_atomic(
            || self.shared.released.swap(true, Ordering::SeqCst),
            |was_released| (!was_released).then_some(Event::ReleaseAllResources { channel }),
        );
        if was_released {
            return Ok(());
        }
        self.upstream_ready.count_down();
        self.state_consumed
            .complete_exceptionally(ChannelError::released("Input channel has already been released."));
        pause_point::reached(PausePoint::ReleaseQueuedBuffers);
        // The view and the queue go in one critical section, and a poll holds the view's lock
        // throughout: it sees the channel before this part of the release or after it.
        let drained: Vec<NetworkBuffer> = {
            let _request = self.request_lock.lock();
            let mut view = self.subpartition_view.lock();
            let mut state = self.recovered_buffers.lock();
            view.take();
            event_log::record(|| Event::ReleaseQueuedBuffers { channel });
            let migrated: Vec<NetworkBuffer> = state.to_be_consumed.drain(..).map(|(b, _)| b).collect();
            state.buffers.drain(..).chain(migrated).collect()
        };
        let mut outcome = drained.into_iter().try_for_each(NetworkBuffer::recycle_buffer);
        if let Some(manager) = &self.buffer_manager {
            outcome = outcome.and(manager.release_all_buffers(Vec::new()));
        }
        outcome
    }

    /// `resumeConsumption()` (task thread): `checkState(!isReleased)`, the view's
    /// `resumeConsumption()` (`checkState(isBlocked)`), then `notifyChannelNonEmpty()` if the
    /// view has something to hand out now (`getAvailabilityAndBacklog(true)`): while it was
    /// blocked, `add` told nobody.
    fn resume_consumption(&self) -> Result<()> {
        if self.shared.released.load(Ordering::SeqCst) {
            return Err(ChannelError::illegal_state("Channel released."));
        }
        let view = self
            .subpartition_view()
            .ok_or_else(|| ChannelError::illegal_state("No subpartition view to resume."))?;
        view.resume_consumption()?;
        if view.get_availability_and_backlog(true).0 {
            self.notify_channel_non_empty();
        }
        Ok(())
    }

    fn is_released(&self) -> bool {
        self.shared.released.load(Ordering::SeqCst)
    }
}
