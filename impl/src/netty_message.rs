//! Flink's `NettyMessage` framing, its `PartitionRequest` with the `needsRecovery` byte
//! FLINK-38544 adds, its `ResumeConsumption` (the consumer's answer to a blocking
//! `EndOfOutputChannelStateEvent`), and `EventSerializer`'s refusal to serialise the two
//! recovery sentinels.
//!
//! The frame is Flink's: a 4-byte big-endian frame length (header included), the magic number
//! `0xBADC0FFE`, a 1-byte message id (`PartitionRequest` is 2), then the body. The body keeps
//! `PartitionRequest`'s field order (partition, subpartition index set, receiver, credit,
//! `needsRecovery` as one last byte), but the ids are this crate's: a partition number and an
//! [`InputChannelInfo`] stand for Flink's `ResultPartitionID` and `InputChannelID`.
//!
//! Decoding never panics: a short, malformed or foreign frame is a typed [`WireError`].

use crate::credit_based_sequence_numbering_view_reader::PartitionRequest;
use crate::ids::CheckpointId;
use crate::input_channel_info::InputChannelInfo;

/// `NettyMessage.MAGIC_NUMBER`.
pub const MAGIC_NUMBER: u32 = 0xBADC_0FFE;
/// `NettyMessage.FRAME_HEADER_LENGTH`: length, magic number, message id.
pub const FRAME_HEADER_LENGTH: usize = 4 + 4 + 1;
/// `PartitionRequest.ID`.
pub const PARTITION_REQUEST_ID: u8 = 2;
/// `ResumeConsumption.ID`.
pub const RESUME_CONSUMPTION_ID: u8 = 7;
/// The `ResumeConsumption` body: the receiver (4 + 4), standing for its `InputChannelID`.
pub const RESUME_CONSUMPTION_BODY_LENGTH: usize = 8;
/// The `PartitionRequest` body: partition (8), index set (4 + 4), receiver (4 + 4), credit (4),
/// `needsRecovery` (1).
pub const PARTITION_REQUEST_BODY_LENGTH: usize = 8 + 8 + 8 + 4 + 1;

/// A frame that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the frame needs.
    #[error("truncated frame: {needed} bytes needed, {available} available")]
    Truncated {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes there are.
        available: usize,
    },
    /// Bytes after the declared end of the frame.
    #[error("frame length {declared} but {actual} bytes")]
    LengthMismatch {
        /// The frame length field.
        declared: usize,
        /// The bytes given.
        actual: usize,
    },
    /// Not a Flink frame.
    #[error("bad magic number {0:#010x}")]
    BadMagic(u32),
    /// A message this decoder does not know.
    #[error("unknown message id {0}")]
    UnknownMessageId(u8),
    /// A field with a value the protocol forbids.
    #[error("malformed {field}: {reason}")]
    Malformed {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

/// `PartitionRequest` as sent: the request the view reader is created from, plus the partition
/// and the subpartitions it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRequestMessage {
    /// `partitionId`.
    pub partition: u64,
    /// `queueIndexSet`: first and last subpartition index, inclusive.
    pub subpartitions: (i32, i32),
    /// Receiver, credit and `needsRecovery`.
    pub request: PartitionRequest,
}

impl PartitionRequestMessage {
    /// `PartitionRequest.write`: the whole frame.
    pub fn encode(&self) -> Vec<u8> {
        let len = FRAME_HEADER_LENGTH + PARTITION_REQUEST_BODY_LENGTH;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.extend_from_slice(&MAGIC_NUMBER.to_be_bytes());
        out.push(PARTITION_REQUEST_ID);
        out.extend_from_slice(&self.partition.to_be_bytes());
        out.extend_from_slice(&self.subpartitions.0.to_be_bytes());
        out.extend_from_slice(&self.subpartitions.1.to_be_bytes());
        out.extend_from_slice(&self.request.receiver.gate_idx.to_be_bytes());
        out.extend_from_slice(&self.request.receiver.input_channel_idx.to_be_bytes());
        out.extend_from_slice(&self.request.credit.to_be_bytes());
        // `writeBoolean(needsRecovery)`: one byte.
        out.push(u8::from(self.request.needs_recovery));
        out
    }

    /// `NettyMessageDecoder` then `PartitionRequest.readFrom`: one whole frame.
    pub fn decode(frame: &[u8]) -> Result<Self, WireError> {
        let mut r = read_header(
            frame,
            PARTITION_REQUEST_ID,
            PARTITION_REQUEST_BODY_LENGTH,
            "PartitionRequest",
        )?;
        let partition = r.u64()?;
        let subpartitions = (r.i32()?, r.i32()?);
        if subpartitions.0 < 0 || subpartitions.0 > subpartitions.1 {
            return Err(WireError::Malformed {
                field: "queueIndexSet",
                reason: format!("[{}, {}] is not a range of indexes", subpartitions.0, subpartitions.1),
            });
        }
        let receiver = InputChannelInfo {
            gate_idx: r.u32()?,
            input_channel_idx: r.u32()?,
        };
        let credit = r.i32()?;
        if credit < 0 {
            return Err(WireError::Malformed {
                field: "credit",
                reason: format!("{credit} is negative"),
            });
        }
        // `readBoolean()`: any non-zero byte is true, as in Netty.
        let needs_recovery = r.u8()? != 0;
        Ok(PartitionRequestMessage {
            partition,
            subpartitions,
            request: PartitionRequest {
                receiver,
                credit,
                needs_recovery,
            },
        })
    }
}

/// Reads a frame's header: the declared length (checked against the bytes), the magic number
/// and the message id (checked against `id`).
fn read_header<'a>(frame: &'a [u8], id: u8, body_length: usize, name: &str) -> Result<Reader<'a>, WireError> {
    let mut r = Reader { bytes: frame, at: 0 };
    let declared = r.u32()? as usize;
    let magic = r.u32()?;
    if magic != MAGIC_NUMBER {
        return Err(WireError::BadMagic(magic));
    }
    let actual = r.u8()?;
    if actual != id {
        return Err(WireError::UnknownMessageId(actual));
    }
    if frame.len() < declared {
        return Err(WireError::Truncated {
            needed: declared,
            available: frame.len(),
        });
    }
    if frame.len() > declared {
        return Err(WireError::LengthMismatch {
            declared,
            actual: frame.len(),
        });
    }
    if declared != FRAME_HEADER_LENGTH + body_length {
        return Err(WireError::Malformed {
            field: "frame length",
            reason: format!("{declared} is not a {name}'s"),
        });
    }
    Ok(r)
}

/// `NettyMessage.ResumeConsumption`: the consumer's `RemoteInputChannel.resumeConsumption()`,
/// written by the Netty client; the server's `PartitionRequestQueue` unblocks the receiver's
/// view reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeConsumption {
    /// `receiverId`.
    pub receiver: InputChannelInfo,
}

impl ResumeConsumption {
    /// `ResumeConsumption.write`: the whole frame.
    pub fn encode(&self) -> Vec<u8> {
        let len = FRAME_HEADER_LENGTH + RESUME_CONSUMPTION_BODY_LENGTH;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.extend_from_slice(&MAGIC_NUMBER.to_be_bytes());
        out.push(RESUME_CONSUMPTION_ID);
        out.extend_from_slice(&self.receiver.gate_idx.to_be_bytes());
        out.extend_from_slice(&self.receiver.input_channel_idx.to_be_bytes());
        out
    }

    /// `NettyMessageDecoder` then `ResumeConsumption.readFrom`: one whole frame.
    pub fn decode(frame: &[u8]) -> Result<Self, WireError> {
        let mut r = read_header(
            frame,
            RESUME_CONSUMPTION_ID,
            RESUME_CONSUMPTION_BODY_LENGTH,
            "ResumeConsumption",
        )?;
        let receiver = InputChannelInfo {
            gate_idx: r.u32()?,
            input_channel_idx: r.u32()?,
        };
        Ok(ResumeConsumption { receiver })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let end = self.at + N;
        let slice = self.bytes.get(self.at..end).ok_or(WireError::Truncated {
            needed: end,
            available: self.bytes.len(),
        })?;
        self.at = end;
        Ok(slice.try_into().expect("N bytes"))
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
    fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_be_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
}

/// The runtime events of the recovery protocol, as `EventSerializer` sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeEvent {
    /// `EndOfPartitionEvent` (tag 0, no body).
    EndOfPartition,
    /// `RecoveryCheckpointBarrier` (tag 13): a sentinel in a recovery queue, never on the wire.
    RecoveryCheckpointBarrier(CheckpointId),
    /// `EndOfFetchedChannelStateEvent` (tag 14): a sentinel, never on the wire.
    EndOfFetchedChannelState,
}

/// `EventSerializer`'s tag of `EndOfPartitionEvent`.
pub const END_OF_PARTITION_EVENT: i32 = 0;
/// `EventSerializer`'s tag of `RecoveryCheckpointBarrier`.
pub const RECOVERY_CHECKPOINT_BARRIER_EVENT: i32 = 13;
/// `EventSerializer`'s tag of `EndOfFetchedChannelStateEvent`.
pub const END_OF_FETCHED_CHANNEL_STATE_EVENT: i32 = 14;

/// An event that cannot be (de)serialised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The recovery sentinels live only inside a channel's recovery queue; their `write` and
    /// `read` throw `UnsupportedOperationException`.
    #[error("{0} is a recovery sentinel and cannot be serialized")]
    SentinelNotSerializable(&'static str),
    /// A malformed event buffer.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A tag this serializer does not know.
    #[error("unknown event tag {0}")]
    UnknownTag(i32),
}

/// `EventSerializer.toSerializedEvent`.
pub fn to_serialized_event(event: &RuntimeEvent) -> Result<Vec<u8>, EventError> {
    match event {
        RuntimeEvent::EndOfPartition => Ok(END_OF_PARTITION_EVENT.to_be_bytes().to_vec()),
        RuntimeEvent::RecoveryCheckpointBarrier(_) => {
            Err(EventError::SentinelNotSerializable("RecoveryCheckpointBarrier"))
        }
        RuntimeEvent::EndOfFetchedChannelState => {
            Err(EventError::SentinelNotSerializable("EndOfFetchedChannelStateEvent"))
        }
    }
}

/// `EventSerializer.fromSerializedEvent`.
pub fn from_serialized_event(bytes: &[u8]) -> Result<RuntimeEvent, EventError> {
    let mut r = Reader { bytes, at: 0 };
    let tag = r.i32()?;
    let event = match tag {
        END_OF_PARTITION_EVENT => RuntimeEvent::EndOfPartition,
        RECOVERY_CHECKPOINT_BARRIER_EVENT => {
            return Err(EventError::SentinelNotSerializable("RecoveryCheckpointBarrier"));
        }
        END_OF_FETCHED_CHANNEL_STATE_EVENT => {
            return Err(EventError::SentinelNotSerializable("EndOfFetchedChannelStateEvent"));
        }
        other => return Err(EventError::UnknownTag(other)),
    };
    if bytes.len() != r.at {
        return Err(WireError::LengthMismatch {
            declared: r.at,
            actual: bytes.len(),
        }
        .into());
    }
    Ok(event)
}
