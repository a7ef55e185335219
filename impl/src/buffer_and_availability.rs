//! Mirrors Flink's `InputChannel.BufferAndAvailability`, what a channel's `getNextBuffer()`
//! returns. Its own module because both the channels and the gate's `inputChannelsWithData`,
//! which the channels hold, name it.

use crate::network_buffer::{DataType, NetworkBuffer};

/// Flink's `InputChannel.BufferAndAvailability`: a polled buffer and what follows it.
#[derive(Debug)]
pub struct BufferAndAvailability {
    /// The polled buffer; the caller recycles it.
    pub buffer: NetworkBuffer,
    /// `nextDataType`: `None` means nothing visible follows.
    pub next_data_type: DataType,
    /// `buffersInBacklog`.
    pub buffers_in_backlog: i32,
    /// `sequenceNumber`: from `i32::MIN` for recovered elements, from 0 for live upstream ones.
    pub sequence_number: i32,
}
