//! The drainer's program: `SequentialChannelStateReaderImpl`'s order of pushes and finishes,
//! fixed by the configuration. Its steps are in `sequential_channel_state_reader.rs`.

use crate::config::{Delivery, ModelConfig};

/// One step of the drainer's program on the IO thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoStep {
    /// Push the next recovered buffer of a channel.
    Push(u8),
    /// `finishRecoveredBufferDelivery` of a channel.
    Finish(u8),
}

/// The drainer's program for `cfg`; empty where PR3's conversion delivers the state instead.
pub fn program(cfg: &ModelConfig) -> Vec<IoStep> {
    let mut io_program = Vec::new();
    if matches!(cfg.delivery, Delivery::Drainer | Delivery::Legacy | Delivery::Migration) {
        for (c, ch) in cfg.channels.iter().enumerate() {
            io_program.extend((0..ch.recovered).map(|_| IoStep::Push(c as u8)));
        }
        io_program.extend((0..cfg.channels.len()).map(|c| IoStep::Finish(c as u8)));
    }
    io_program
}
