//! Flink's `InputGate` / `IndexedInputGate` as the task level uses them, `UnionInputGate`, and
//! `InputGate.getChannel(InputChannelInfo)` (FLINK-38544): the gate a channel belongs to is
//! named by the info's gate index, and its channel by the member gate's own index.
//!
//! [`IndexedInputGate`] is what `StreamTask`, its recovery chain and its input processors call:
//! `finishReadRecoveredState` on the channel-IO thread, `requestPartitions(needsRecovery)` and
//! `pollNext` on the mailbox thread, and the state-consumed and availability futures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::completable_future::CompletableFuture;
use crate::error::{ChannelError, Result};
use crate::input_channel_info::InputChannelInfo;
use crate::network_buffer::BufferKind;
use crate::single_input_gate::{InputChannelHandle, SingleInputGate};
use crate::sync::Arc;

/// What a gate hands to the task's network input, as the task level tells elements apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputElementKind {
    /// A buffer of recovered in-flight data.
    RecoveredBuffer,
    /// The end of a channel's recovered state: `EndOfInputChannelStateEvent` (flag off) or the
    /// `EndOfFetchedChannelStateEvent` sentinel (flag on). It completes the channel's
    /// state-consumed future and reaches no operator.
    EndOfRecoveredState,
    /// A live record from the upstream.
    Record,
    /// `EndOfPartitionEvent`.
    EndOfPartition,
}

/// One element polled from a gate: Flink's `BufferOrEvent`, reduced to what the task level needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputElement {
    /// The channel it came from.
    pub channel_info: InputChannelInfo,
    /// What it is.
    pub kind: InputElementKind,
}

/// Flink's `IndexedInputGate`, the calls the task level makes.
pub trait IndexedInputGate: Send + Sync {
    /// `getGateIndex()`.
    fn get_gate_index(&self) -> u32;
    /// `finishReadRecoveredState()` (channel-IO thread): every recovered channel has been given
    /// its state; each appends its end-of-state event.
    fn finish_read_recovered_state(&self) -> Result<()>;
    /// `requestPartitions(needsRecovery)` (mailbox thread): converts the recovered channels and
    /// requests the partitions; at most once.
    fn request_partitions(&self, needs_recovery: bool) -> Result<()>;
    /// `getStateConsumedFuture()`: `allOf` of every channel's.
    fn get_state_consumed_future(&self) -> CompletableFuture;
    /// `pollNext()` (mailbox thread): the next element, if one is available now.
    fn poll_next(&self) -> Result<Option<InputElement>>;
    /// `getAvailableFuture()`: done while `poll_next` has something to return.
    fn get_available_future(&self) -> CompletableFuture;
    /// `isFinished()`: every channel handed out its `EndOfPartitionEvent`.
    fn is_finished(&self) -> bool;
    /// `close()` (`Task.releaseResources`): releases every channel, recycling the buffers they
    /// hold; a later read into a channel fails with `CancelTaskException`.
    fn close(&self) -> Result<()>;
}

/// The channel-state reader of the channel-IO thread (`SequentialChannelStateReader`):
/// `readInputData` for one gate puts its recovered buffers into its `RecoveredInputChannel`s.
pub trait SequentialChannelStateReader: Send + Sync {
    /// `readInputData`, the part that belongs to `gate`.
    fn read_input_data(&self, gate: &dyn IndexedInputGate) -> Result<()>;
}

impl IndexedInputGate for SingleInputGate {
    fn get_gate_index(&self) -> u32 {
        self.gate_index()
    }

    fn finish_read_recovered_state(&self) -> Result<()> {
        for index in 0.. {
            match self.channel(index) {
                Some(InputChannelHandle::Recovered(channel)) => channel.finish_read_recovered_state()?,
                Some(_) => {}
                None => break,
            }
        }
        Ok(())
    }

    fn request_partitions(&self, needs_recovery: bool) -> Result<()> {
        SingleInputGate::request_partitions(self, needs_recovery)
    }

    fn get_state_consumed_future(&self) -> CompletableFuture {
        CompletableFuture::all_of(&self.state_consumed_futures())
    }

    /// `CheckpointedInputGate.pollNext()`: an `EndOfOutputChannelStateEvent` goes to the
    /// gate's `UpstreamRecoveryTracker` (`handleEvent`), and the network input ignores it.
    fn poll_next(&self) -> Result<Option<InputElement>> {
        let next = loop {
            let Some(next) = SingleInputGate::poll_next(self)? else {
                return Ok(None);
            };
            if next.buffer.kind() != BufferKind::EndOfOutputChannelState {
                break next;
            }
            next.buffer.recycle_buffer()?;
            self.upstream_recovery_tracker()
                .handle_end_of_recovery(next.channel_info, self)?;
        };
        let kind = match next.buffer.kind() {
            // Recovered buffers keep their recovery sequence numbers, from `Integer.MIN_VALUE`.
            BufferKind::Data if next.sequence_number < 0 => InputElementKind::RecoveredBuffer,
            BufferKind::Data => InputElementKind::Record,
            BufferKind::EndOfInputChannelState | BufferKind::EndOfFetchedChannelState => {
                InputElementKind::EndOfRecoveredState
            }
            BufferKind::EndOfPartition => InputElementKind::EndOfPartition,
            other => {
                next.buffer.recycle_buffer()?;
                return Err(ChannelError::illegal_state(&format!(
                    "the task level reads no {other:?}"
                )));
            }
        };
        next.buffer.recycle_buffer()?;
        Ok(Some(InputElement {
            channel_info: next.channel_info,
            kind,
        }))
    }

    fn get_available_future(&self) -> CompletableFuture {
        self.channels_with_data().get_available_future()
    }

    fn is_finished(&self) -> bool {
        SingleInputGate::is_finished(self)
    }

    fn close(&self) -> Result<()> {
        SingleInputGate::close(self)
    }
}

impl SingleInputGate {
    /// `getChannel(InputChannelInfo)`: `channels[channelInfo.getInputChannelIdx()]`, of this gate
    /// only.
    pub fn get_channel(&self, channel_info: &InputChannelInfo) -> Result<InputChannelHandle> {
        if channel_info.gate_idx != self.gate_index() {
            return Err(ChannelError::illegal_state(&format!(
                "channel {channel_info:?} is not of gate {}",
                self.gate_index()
            )));
        }
        self.channel(channel_info.input_channel_idx as usize)
            .ok_or_else(|| ChannelError::illegal_state(&format!("gate has no channel {channel_info:?}")))
    }
}

/// Flink's `UnionInputGate`: several member gates read as one. Its own channel numbering is
/// global (member gates one after the other); an `InputChannelInfo` keeps the member gate's.
#[derive(Debug)]
pub struct UnionInputGate {
    /// `inputGatesByGateIndex`.
    gates_by_gate_index: BTreeMap<u32, Arc<SingleInputGate>>,
    /// `inputGateChannelIndexOffsets`, in member order.
    offsets: Vec<(usize, Arc<SingleInputGate>)>,
}

impl UnionInputGate {
    /// A union of `gates`, in that order; each is `(gate, number of channels)`.
    pub fn new(gates: Vec<(Arc<SingleInputGate>, usize)>) -> Self {
        let mut offsets = Vec::new();
        let mut offset = 0;
        for (gate, channels) in &gates {
            offsets.push((offset, Arc::clone(gate)));
            offset += channels;
        }
        UnionInputGate {
            gates_by_gate_index: gates.into_iter().map(|(g, _)| (g.gate_index(), g)).collect(),
            offsets,
        }
    }

    /// `getChannel(InputChannelInfo)`: the member gate named by the info's gate index resolves
    /// the channel by its own index.
    pub fn get_channel(&self, channel_info: &InputChannelInfo) -> Result<InputChannelHandle> {
        self.gates_by_gate_index
            .get(&channel_info.gate_idx)
            .ok_or_else(|| ChannelError::illegal_state(&format!("no member gate {}", channel_info.gate_idx)))?
            .get_channel(channel_info)
    }

    /// `getChannel(int channelIndex)`: by the union's global index. Code that passed a member
    /// index here (`channelInfo.getInputChannelIdx()`) read another gate's channel; hence the
    /// `InputChannelInfo` overload.
    pub fn get_channel_by_global_index(&self, channel_index: usize) -> Option<InputChannelHandle> {
        let (offset, gate) = self.offsets.iter().rev().find(|(offset, _)| *offset <= channel_index)?;
        gate.channel(channel_index - offset)
    }
}
