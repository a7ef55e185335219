//! Mirrors Flink's `org.apache.flink.runtime.checkpoint.channel.InputChannelInfo`: the identity
//! of a channel, which every component names, so it depends on nothing.

use serde::{Deserialize, Serialize};

/// Flink's `InputChannelInfo`: (gate index, channel index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InputChannelInfo {
    /// `gateIdx`.
    pub gate_idx: u32,
    /// `inputChannelIdx`.
    pub input_channel_idx: u32,
}
