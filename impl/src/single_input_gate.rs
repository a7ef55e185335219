//! Mirrors Flink's `SingleInputGate` (with the sentinel handling that Flink's
//! `CheckpointedInputGate` adds on top): polls the channels with data, consumes the
//! `EndOfFetchedChannelStateEvent` sentinel by calling `on_recovered_state_consumed` and never
//! hands it to the caller; converts recovered channels in `request_partitions(needs_recovery)`;
//! resumes a channel whose upstream blocked (`resumeConsumption`), and keeps the
//! `CheckpointedInputGate`'s `UpstreamRecoveryTracker` that decides when.
//!
//! Locking contract:
//! - `inputChannelsWithData` ([`InputChannelsWithData`]) has its own lock and condition
//!   variable; any thread notifies, the task thread polls. As in Flink's `waitAndGetNextData`,
//!   one turn of the poll holds it across `getChannel`, the channel's `getNextBuffer`, the
//!   requeue and the `lastPrioritySequenceNumber` update, so a notification lands either before
//!   the turn or after it. Under it the task takes channel locks (order `inputChannelsWithData`
//!   → channel lock); no channel calls into the gate while holding its own lock, which is what
//!   keeps this order free of cycles (Flink's channels notify after unlocking too).
//! - `request_lock` (Flink's `requestLock`) guards `requestedPartitionsFlag` and `closed`.
//!   Conversion and partition requests run under it, take channel locks and notify the gate
//!   (order `requestLock` → `inputChannelsWithData` → channel lock).
//! - `channels` (Flink's `channels` array) is a leaf lock: the poll reads a handle from it under
//!   `inputChannelsWithData`, the conversion writes a slot under `requestLock`.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::buffer_and_availability::BufferAndAvailability;
use crate::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use crate::channel_state_persister::ChannelStateWriter;
use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::flink_fixes::FlinkFixes;
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;
use crate::input_channels_with_data::{ChannelPoll, InputChannelsWithData, InputChannelsWithDataSnapshot};
use crate::local_input_channel::{LocalInputChannel, LocalInputChannelSnapshot};
use crate::network_buffer::{BufferKind, DataType, NetworkBuffer};
use crate::recoverable_input_channel::{ChannelContext, RecoverableInputChannel, StateConsumedFuture};
use crate::recovered_input_channel::{PhysicalInputChannel, RecoveredInputChannel, RecoveredInputChannelSnapshot};
use crate::remote_input_channel::{RemoteInputChannel, RemoteInputChannelSnapshot};
use crate::sync::{Arc, Mutex};
use crate::upstream_recovery_tracker::{ResumableInputGate, UpstreamRecoveryTracker};

/// How `requestPartitions` converts the recovered channels.
#[derive(Clone, Copy, Debug)]
enum Conversion {
    /// `toInputChannel(needsRecovery)` (flag off, or the push path).
    ToInputChannel { needs_recovery: bool },
    /// Flink 2.3.0 with the flag on: queued buffers migrated.
    Migrate,
}

/// One entry of the gate's channel array.
#[derive(Debug, Clone)]
pub enum InputChannelHandle {
    /// Not converted yet.
    Recovered(Arc<RecoveredInputChannel>),
    /// A physical local channel.
    Local(Arc<LocalInputChannel>),
    /// A physical remote channel.
    Remote(Arc<RemoteInputChannel>),
}

impl From<PhysicalInputChannel> for InputChannelHandle {
    fn from(channel: PhysicalInputChannel) -> Self {
        match channel {
            PhysicalInputChannel::Local(channel) => InputChannelHandle::Local(channel),
            PhysicalInputChannel::Remote(channel) => InputChannelHandle::Remote(channel),
        }
    }
}

impl InputChannelHandle {
    /// `channel instanceof RecoverableInputChannel`.
    pub fn as_recoverable(&self) -> Option<Arc<dyn RecoverableInputChannel>> {
        match self {
            InputChannelHandle::Recovered(_) => None,
            InputChannelHandle::Local(channel) => Some(Arc::clone(channel) as Arc<dyn RecoverableInputChannel>),
            InputChannelHandle::Remote(channel) => Some(Arc::clone(channel) as Arc<dyn RecoverableInputChannel>),
        }
    }

    /// The remote channel, if it is one.
    pub fn as_remote(&self) -> Option<&Arc<RemoteInputChannel>> {
        match self {
            InputChannelHandle::Remote(channel) => Some(channel),
            _ => None,
        }
    }

    /// `InputChannel.getNextBuffer()`.
    pub fn get_next_buffer(&self) -> Result<Option<BufferAndAvailability>> {
        match self {
            InputChannelHandle::Recovered(channel) => channel.get_next_buffer(),
            InputChannelHandle::Local(channel) => channel.get_next_buffer(),
            InputChannelHandle::Remote(channel) => channel.get_next_buffer(),
        }
    }

    /// `InputChannel.getStateConsumedFuture()`.
    pub fn state_consumed_future(&self) -> StateConsumedFuture {
        match self {
            InputChannelHandle::Recovered(channel) => channel.state_consumed_future(),
            InputChannelHandle::Local(channel) => channel.state_consumed_future(),
            InputChannelHandle::Remote(channel) => channel.state_consumed_future(),
        }
    }

    /// `InputChannel.checkpointStarted(barrier)`.
    pub fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()> {
        match self {
            InputChannelHandle::Recovered(channel) => channel.checkpoint_started(checkpoint_id),
            InputChannelHandle::Local(channel) => channel.checkpoint_started(checkpoint_id),
            InputChannelHandle::Remote(channel) => channel.checkpoint_started(checkpoint_id),
        }
    }

    /// `InputChannel.checkpointStopped(checkpointId)`.
    pub fn checkpoint_stopped(&self, checkpoint_id: CheckpointId) {
        match self {
            InputChannelHandle::Recovered(channel) => channel.checkpoint_stopped(checkpoint_id),
            InputChannelHandle::Local(channel) => channel.checkpoint_stopped(checkpoint_id),
            InputChannelHandle::Remote(channel) => channel.checkpoint_stopped(checkpoint_id),
        }
    }

    /// `InputChannel.resumeConsumption()`.
    pub fn resume_consumption(&self) -> Result<()> {
        match self {
            InputChannelHandle::Recovered(channel) => channel.resume_consumption(),
            InputChannelHandle::Local(channel) => channel.resume_consumption(),
            InputChannelHandle::Remote(channel) => RecoverableInputChannel::resume_consumption(channel.as_ref()),
        }
    }

    /// `InputChannel.releaseAllResources()`.
    pub fn release_all_resources(&self) -> Result<()> {
        match self {
            InputChannelHandle::Recovered(channel) => channel.release_all_resources(),
            InputChannelHandle::Local(channel) => channel.release_all_resources(),
            InputChannelHandle::Remote(channel) => channel.release_all_resources(),
        }
    }

    /// A snapshot of the channel.
    pub fn snapshot(&self) -> ChannelSnapshot {
        match self {
            InputChannelHandle::Recovered(channel) => ChannelSnapshot::Recovered(channel.snapshot()),
            InputChannelHandle::Local(channel) => ChannelSnapshot::Local(channel.snapshot()),
            InputChannelHandle::Remote(channel) => ChannelSnapshot::Remote(channel.snapshot()),
        }
    }
}

/// The snapshot of any channel kind, for the gate's snapshot (of an [`InputChannelHandle`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChannelSnapshot {
    /// A `RecoveredInputChannel` not converted yet.
    Recovered(RecoveredInputChannelSnapshot),
    /// A `LocalInputChannel`.
    Local(LocalInputChannelSnapshot),
    /// A `RemoteInputChannel`.
    Remote(RemoteInputChannelSnapshot),
}

/// Flink's `BufferOrEvent`: what the gate hands to the task.
#[derive(Debug)]
pub struct BufferOrEvent {
    /// The channel it came from.
    pub channel_info: InputChannelInfo,
    /// The buffer; the task recycles it.
    pub buffer: NetworkBuffer,
    /// The element's sequence number.
    pub sequence_number: i32,
    /// `moreAvailable`: the channel's next data type.
    pub next_data_type: DataType,
}

/// Snapshot of a [`SingleInputGate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SingleInputGateSnapshot {
    /// `inputChannelsWithData`.
    pub channels_with_data: InputChannelsWithDataSnapshot,
    /// `requestedPartitionsFlag`.
    pub requested_partitions: bool,
    /// Whether the gate is closed.
    pub closed: bool,
    /// Every channel, by index.
    pub channels: Vec<ChannelSnapshot>,
}

/// What `requestLock` guards.
#[derive(Debug, Default)]
struct GateRequestState {
    requested_partitions: bool,
    closed: bool,
}

/// Mirrors Flink's `SingleInputGate`.
pub struct SingleInputGate {
    gate_index: u32,
    channels_with_data: Arc<InputChannelsWithData>,
    buffer_pool: Arc<LocalBufferPool>,
    /// Flink's `requestLock`.
    request_lock: Mutex<GateRequestState>,
    /// Flink's `channels` array; a leaf lock.
    channels: Mutex<Vec<InputChannelHandle>>,
    /// Channels whose `EndOfPartitionEvent` was polled (`channelsWithEndOfPartitionEvents`); a
    /// leaf lock, taken by the task thread only.
    channels_with_end_of_partition: Mutex<BTreeSet<usize>>,
    /// The `UpstreamRecoveryTracker` of the `CheckpointedInputGate` over this gate, made for its
    /// channels by `set_input_channels`; a leaf lock.
    upstream_recovery_tracker: Mutex<Arc<UpstreamRecoveryTracker>>,
}

impl fmt::Debug for SingleInputGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleInputGate")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl SingleInputGate {
    /// `new SingleInputGate(..)` with its `LocalBufferPool`; channels are set afterwards.
    pub fn new(gate_index: u32, buffer_pool: Arc<LocalBufferPool>) -> Arc<Self> {
        Arc::new(Self {
            gate_index,
            channels_with_data: InputChannelsWithData::new(),
            buffer_pool,
            request_lock: Mutex::new(GateRequestState::default()),
            channels: Mutex::new(Vec::new()),
            channels_with_end_of_partition: Mutex::new(BTreeSet::new()),
            upstream_recovery_tracker: Mutex::new(Arc::new(UpstreamRecoveryTracker::for_input_gate(0))),
        })
    }

    /// The construction context of channel `input_channel_idx` of this gate.
    pub fn channel_context(
        &self,
        input_channel_idx: u32,
        global_pool: Arc<NetworkBufferPool>,
        writer: Arc<ChannelStateWriter>,
        network_buffers_per_channel: usize,
    ) -> ChannelContext {
        ChannelContext {
            channel_info: InputChannelInfo {
                gate_idx: self.gate_index,
                input_channel_idx,
            },
            gate: Arc::clone(&self.channels_with_data),
            global_pool,
            buffer_pool: Arc::clone(&self.buffer_pool),
            writer,
            network_buffers_per_channel,
            flink_fixes: FlinkFixes::NONE,
        }
    }

    /// `setInputChannels(channels)`: index `i` must be channel `i`. The gate's
    /// `UpstreamRecoveryTracker` starts with every channel unrestored.
    pub fn set_input_channels(&self, channels: Vec<InputChannelHandle>) {
        let tracker = UpstreamRecoveryTracker::for_input_gate(channels.len());
        *self.channels.lock() = channels;
        *self.upstream_recovery_tracker.lock() = Arc::new(tracker);
    }

    /// The `UpstreamRecoveryTracker` of the `CheckpointedInputGate` over this gate
    /// (`UpstreamRecoveryTracker.forInputGate`): the task hands it each
    /// `EndOfOutputChannelStateEvent` it polls.
    pub fn upstream_recovery_tracker(&self) -> Arc<UpstreamRecoveryTracker> {
        Arc::clone(&self.upstream_recovery_tracker.lock())
    }

    /// `getGateIndex()`.
    pub fn gate_index(&self) -> u32 {
        self.gate_index
    }

    /// The channel at `index` (`getChannel(channelIndex)`).
    pub fn channel(&self, index: usize) -> Option<InputChannelHandle> {
        self.channels.lock().get(index).cloned()
    }

    /// The gate's `inputChannelsWithData`.
    pub fn channels_with_data(&self) -> &Arc<InputChannelsWithData> {
        &self.channels_with_data
    }

    /// `requestPartitions(needsRecovery)` (task thread, as a mail): converts the recovered
    /// channels, then requests every subpartition, under `requestLock`, once.
    pub fn request_partitions(&self, needs_recovery: bool) -> Result<()> {
        self.request_partitions_converting(Conversion::ToInputChannel { needs_recovery })
    }

    /// Flink 2.3.0's `requestPartitions()` with checkpointing during recovery enabled: the
    /// recovered channels are converted with their queued buffers migrated
    /// ([`RecoveredInputChannel::to_input_channel_migrating`]), then the partitions requested.
    pub fn request_partitions_migrating(&self) -> Result<()> {
        self.request_partitions_converting(Conversion::Migrate)
    }

    fn request_partitions_converting(&self, conversion: Conversion) -> Result<()> {
        let mut gate = self.request_lock.lock();
        if gate.requested_partitions {
            return Ok(());
        }
        if gate.closed {
            return Err(ChannelError::released("Input gate is already closed."));
        }
        let converting = self
            .channels
            .lock()
            .iter()
            .any(|channel| matches!(channel, InputChannelHandle::Recovered(_)));
        event_log::record(|| match converting {
            true => Event::ConvertRecoveredInputChannels { gate: self.gate_index },
            false => Event::RequestPartitions { gate: self.gate_index },
        });
        match conversion {
            Conversion::ToInputChannel { needs_recovery } => self.convert_recovered_input_channels(needs_recovery)?,
            Conversion::Migrate => self.migrate_recovered_input_channels()?,
        }
        let channels = self.channels.lock().clone();
        for channel in &channels {
            match channel {
                InputChannelHandle::Recovered(_) => {
                    return Err(ChannelError::illegal_state("Recovered channel left after conversion."));
                }
                InputChannelHandle::Local(channel) => channel.request_subpartitions()?,
                InputChannelHandle::Remote(channel) => channel.request_subpartitions()?,
            }
        }
        gate.requested_partitions = true;
        Ok(())
    }

    /// The recovered channels, by index (under `requestLock`, so no other conversion runs).
    fn recovered_channels(&self) -> Vec<(usize, Arc<RecoveredInputChannel>)> {
        let channels = self.channels.lock();
        let recovered = channels
            .iter()
            .enumerate()
            .filter_map(|(index, channel)| match channel {
                InputChannelHandle::Recovered(recovered) => Some((index, Arc::clone(recovered))),
                _ => None,
            });
        recovered.collect()
    }

    /// `convertRecoveredInputChannels(needsRecovery)`: `toInputChannel`, release the recovered
    /// channel, replace it; the first failure stops the conversion.
    fn convert_recovered_input_channels(&self, needs_recovery: bool) -> Result<()> {
        for (index, recovered) in self.recovered_channels() {
            let physical = recovered.to_input_channel(needs_recovery)?;
            recovered.release_all_resources()?;
            self.channels.lock()[index] = physical.into();
        }
        Ok(())
    }

    /// 2.3.0's `convertRecoveredInputChannels()` with the flag on: `toInputChannel()` migrating
    /// the queue, release the recovered channel, replace it, and replace it in the gate's queue.
    fn migrate_recovered_input_channels(&self) -> Result<()> {
        for (index, recovered) in self.recovered_channels() {
            let (physical, in_use) = recovered.to_input_channel_migrating()?;
            recovered.release_all_resources()?;
            self.channels.lock()[index] = physical.into();
            self.channels_with_data.replace_channel(index, in_use);
        }
        Ok(())
    }

    /// `getStateConsumedFuture()`: all channels' futures.
    pub fn state_consumed_futures(&self) -> Vec<StateConsumedFuture> {
        self.channels
            .lock()
            .iter()
            .map(InputChannelHandle::state_consumed_future)
            .collect()
    }

    /// Whether every channel's state-consumed future is done.
    pub fn all_state_consumed(&self) -> bool {
        self.state_consumed_futures().iter().all(StateConsumedFuture::is_done)
    }

    /// One turn of the loop in Flink's `waitAndGetNextData`, under `inputChannelsWithData`
    /// throughout: `getChannel(false)`, then the channel's `getNextBuffer()`, then
    /// `queueChannel` again if it reported more (`moreAvailable`; at the priority head when that
    /// is a priority event). A channel that returns nothing is left out of the queue until it
    /// notifies again.
    pub fn poll_channel(&self) -> Result<ChannelPoll> {
        self.channels_with_data.poll_with(|index| {
            self.channel(index)
                .map_or(Ok(None), |channel| channel.get_next_buffer())
        })
    }

    /// `pollNext()` (task thread): the next buffer or event of any channel, or `None` if none
    /// is available now. The `EndOfFetchedChannelStateEvent` sentinel is consumed here.
    pub fn poll_next(&self) -> Result<Option<BufferOrEvent>> {
        loop {
            let (index, next) = match self.poll_channel()? {
                ChannelPoll::NoChannel => return Ok(None),
                ChannelPoll::Empty { .. } => continue,
                ChannelPoll::Buffer { channel, next } => (channel, next),
            };
            if next.buffer.kind() == BufferKind::EndOfFetchedChannelState {
                let recoverable = self.channel(index).and_then(|c| c.as_recoverable()).ok_or_else(|| {
                    ChannelError::illegal_state("EndOfFetchedChannelStateEvent from a channel that is not recoverable.")
                })?;
                next.buffer.recycle_buffer()?;
                recoverable.on_recovered_state_consumed()?;
                continue;
            }
            if next.buffer.kind() == BufferKind::EndOfPartition {
                self.channels_with_end_of_partition.lock().insert(index);
            }
            let channel_info = InputChannelInfo {
                gate_idx: self.gate_index,
                input_channel_idx: index as u32,
            };
            event_log::record(|| Event::PollNext {
                channel: channel_info,
                buffer: next.buffer.snapshot(),
            });
            return Ok(Some(BufferOrEvent {
                channel_info,
                buffer: next.buffer,
                sequence_number: next.sequence_number,
                next_data_type: next.next_data_type,
            }));
        }
    }

    /// `isFinished()`: every channel's `EndOfPartitionEvent` was polled.
    pub fn is_finished(&self) -> bool {
        let channels = self.channels.lock().len();
        self.channels_with_end_of_partition.lock().len() == channels
    }

    /// `resumeConsumption(channelInfo)` (task thread): `checkState(!isFinished())`, then the
    /// channel's `resumeConsumption()`.
    pub fn resume_consumption(&self, channel_info: &InputChannelInfo) -> Result<()> {
        if self.is_finished() {
            return Err(ChannelError::illegal_state("InputGate already finished."));
        }
        let channel = self
            .channel(channel_info.input_channel_idx as usize)
            .ok_or_else(|| ChannelError::illegal_state("No such channel."))?;
        channel.resume_consumption()
    }

    /// `getChannelInfos()`: every channel's, by index.
    pub fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
        (0..self.channels.lock().len() as u32)
            .map(|input_channel_idx| InputChannelInfo {
                gate_idx: self.gate_index,
                input_channel_idx,
            })
            .collect()
    }

    /// `getNext()` (task thread): blocks until an element is available; `None` once closed.
    pub fn get_next(&self) -> Result<Option<BufferOrEvent>> {
        loop {
            if let Some(next) = self.poll_next()? {
                return Ok(Some(next));
            }
            if !self.channels_with_data.wait_for_channel() {
                return Ok(None);
            }
        }
    }

    /// `close()`: releases every channel, wakes blocked pollers and destroys the buffer pool.
    pub fn close(&self) -> Result<()> {
        let channels = {
            let mut gate = self.request_lock.lock();
            gate.closed = true;
            self.channels.lock().clone()
        };
        self.channels_with_data.close();
        let mut outcome = Ok(());
        for channel in channels {
            outcome = outcome.and(channel.release_all_resources());
        }
        // The pool can go as soon as the channels are released (`bufferPool.lazyDestroy()`).
        outcome.and(self.buffer_pool.lazy_destroy())
    }

    /// A snapshot: the channel queue, then each channel under `requestLock`.
    pub fn snapshot(&self) -> SingleInputGateSnapshot {
        let channels_with_data = self.channels_with_data.snapshot();
        let gate = self.request_lock.lock();
        let channels = self.channels.lock().clone();
        SingleInputGateSnapshot {
            channels_with_data,
            requested_partitions: gate.requested_partitions,
            closed: gate.closed,
            channels: channels.iter().map(InputChannelHandle::snapshot).collect(),
        }
    }
}

impl ResumableInputGate for SingleInputGate {
    fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
        SingleInputGate::get_channel_infos(self)
    }

    fn resume_consumption(&self, channel_info: &InputChannelInfo) -> Result<()> {
        SingleInputGate::resume_consumption(self, channel_info)
    }
}
