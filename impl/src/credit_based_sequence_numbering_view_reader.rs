//! Mirrors Flink's `CreditBasedSequenceNumberingViewReader` (producer side of a remote channel,
//! netty server thread) and the `PartitionRequest` / `BufferResponse` messages.
//!
//! FLINK-38544: a reader created for a `PartitionRequest` with `needsRecovery` starts with zero
//! credit, so it sends events only, until the consumer's `AddCredit` arrives.
//!
//! Locking contract: like Flink's, the reader is confined to the netty server thread and has
//! no lock (`&mut self`); it polls the subpartition, whose own lock it takes briefly. Its
//! `addCredit` is recorded in the [`crate::event_log`] where it happens (the thread
//! owns the reader); what it sends is the subpartition's `pollBuffer` event.

use serde::{Deserialize, Serialize};

use crate::error::{ChannelError, Result};
use crate::event_log::{self, Event};
use crate::input_channel_info::InputChannelInfo;
use crate::network_buffer::{DataType, NetworkBuffer};
use crate::result_subpartition::ResultSubpartition;
use crate::sync::Arc;

/// Flink's `NettyMessage.PartitionRequest` (with the new `needsRecovery` byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRequest {
    /// `receiverId`: the requesting channel.
    pub receiver: InputChannelInfo,
    /// `credit`: the consumer's `getInitialCredit()`.
    pub credit: i32,
    /// `needsRecovery`: the consumer is in recovery and withholds its credit.
    pub needs_recovery: bool,
}

/// Flink's `NettyMessage.BufferResponse`.
#[derive(Debug)]
pub struct BufferResponse {
    /// The producer's buffer; the netty client copies it into a consumer buffer.
    pub buffer: NetworkBuffer,
    /// `sequenceNumber`, from 0.
    pub sequence_number: i32,
    /// `backlog`.
    pub backlog: i32,
    /// The next data type the consumer may expect (data hidden without credit).
    pub next_data_type: DataType,
}

/// Snapshot of a [`CreditBasedSequenceNumberingViewReader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewReaderSnapshot {
    /// `initialCredit`.
    pub initial_credit: i32,
    /// `numCreditsAvailable`.
    pub num_credits_available: i32,
}

/// Mirrors Flink's `CreditBasedSequenceNumberingViewReader`.
#[derive(Debug)]
pub struct CreditBasedSequenceNumberingViewReader {
    receiver: InputChannelInfo,
    subpartition: Arc<ResultSubpartition>,
    initial_credit: i32,
    num_credits_available: i32,
}

impl CreditBasedSequenceNumberingViewReader {
    /// `new CreditBasedSequenceNumberingViewReader(receiverId, initialCredit, needsRecovery,
    /// requestQueue)` + `requestSubpartitionViewOrRegisterListener`:
    /// `numCreditsAvailable = needsRecovery ? 0 : initialCredit`.
    pub fn new(request: &PartitionRequest, subpartition: Arc<ResultSubpartition>) -> Result<Self> {
        subpartition.create_read_view(None)?;
        let num_credits_available = if request.needs_recovery { 0 } else { request.credit };
        Ok(Self {
            receiver: request.receiver,
            subpartition,
            initial_credit: request.credit,
            num_credits_available,
        })
    }

    /// `getReceiverId()`.
    pub fn receiver(&self) -> InputChannelInfo {
        self.receiver
    }

    /// `addCredit(creditDeltas)`: an `AddCredit` message arrived.
    pub fn add_credit(&mut self, credit_deltas: i32) {
        self.num_credits_available += credit_deltas;
        event_log::record(|| Event::AddCredit {
            receiver: self.receiver,
            credit: credit_deltas,
        });
    }

    /// `resumeConsumption()` (`PartitionRequestQueue.resumeConsumption` of a `ResumeConsumption`
    /// message): a reader whose initial credit is 0 drops its credit (the consumer released its
    /// floating buffers when the subpartition blocked), then the subpartition unblocks. The
    /// queue's `enqueueAvailableReader` that follows is the caller's next `get_next_buffer`.
    pub fn resume_consumption(&mut self) -> Result<()> {
        if self.initial_credit == 0 {
            self.num_credits_available = 0;
        }
        self.subpartition.resume_consumption()
    }

    /// `getNumCreditsAvailable()`.
    pub fn num_credits_available(&self) -> i32 {
        self.num_credits_available
    }

    /// `getAvailabilityAndBacklog()`: with zero credit only an event makes the reader available;
    /// a blocked subpartition only a priority one.
    pub fn get_availability_and_backlog(&self) -> (bool, i32) {
        self.subpartition
            .get_availability_and_backlog(self.num_credits_available > 0)
    }

    /// `needAnnounceBacklog()`: with an initial credit of 0 the consumer has no buffer to
    /// receive data unless it learns the backlog and asks for floating buffers.
    pub fn need_announce_backlog(&self) -> bool {
        self.initial_credit == 0 && self.num_credits_available == 0
    }

    /// `getNextBuffer()`: the next element if available; a data buffer consumes one credit. A
    /// priority element goes out of a blocked subpartition whatever the credit (FLINK-40519).
    pub fn get_next_buffer(&mut self) -> Result<Option<BufferResponse>> {
        if !self.get_availability_and_backlog().0 {
            return Ok(None);
        }
        let Some(next) = self.subpartition.poll_buffer() else {
            return Ok(None);
        };
        if next.buffer.is_buffer() {
            self.num_credits_available -= 1;
            if self.num_credits_available < 0 {
                return Err(ChannelError::illegal_state("no credit available"));
            }
        }
        let next_data_type = match next.next_data_type {
            DataType::DataBuffer if self.num_credits_available == 0 => DataType::None,
            other => other,
        };
        Ok(Some(BufferResponse {
            buffer: next.buffer,
            sequence_number: next.sequence_number,
            backlog: next.buffers_in_backlog,
            next_data_type,
        }))
    }

    /// A snapshot.
    pub fn snapshot(&self) -> ViewReaderSnapshot {
        ViewReaderSnapshot {
            initial_credit: self.initial_credit,
            num_credits_available: self.num_credits_available,
        }
    }
}
