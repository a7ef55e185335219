//! The input gates as the operator sees them: `SingleInputGate` with its channels, abstracted
//! to the order in which each channel hands out its elements. Before conversion the channels
//! are `RecoveredInputChannel`s; `requestPartitions` converts them and requests the partitions.

use super::config::TaskShape;
use super::state::{Gate, TaskState};

/// The next element a channel hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// A recovered buffer.
    Recovered,
    /// The end-of-state marker: `EndOfInputChannelStateEvent` (flag off) or the
    /// `EndOfFetchedChannelStateEvent` sentinel (flag on). Never reaches the operator.
    EndOfState,
    /// A live record.
    Live,
    /// `EndOfPartitionEvent`.
    EndOfPartition,
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Element::Recovered => "recovered buffer",
            Element::EndOfState => "end of recovered state",
            Element::Live => "live record",
            Element::EndOfPartition => "EndOfPartition",
        })
    }
}

/// What channel `c` of gate `g` hands out next, if anything.
///
/// Flag off, the operator polls the `RecoveredInputChannel`s while the IO thread fills them
/// (Flink's path before FLINK-38544). Flag on, it consumes recovered state only after the
/// fetch completed: nothing until the drain pushed it into the physical channel, created in
/// recovery by `requestPartitions(true)`. Live data shows once the partition is requested and
/// the channel left recovery.
pub fn next_element(shape: &TaskShape, gate: &Gate, c: u8) -> Option<Element> {
    let ch = &gate.channels[c as usize];
    let flag_off = !shape.is_checkpointing_during_recovery_enabled();
    if ch.recovered > 0 {
        return ((flag_off && gate.read) || gate.drained).then_some(Element::Recovered);
    }
    if !ch.state_consumed {
        return ((flag_off && gate.finished_read) || gate.drained).then_some(Element::EndOfState);
    }
    if !gate.partitions_requested || ch.end_of_partition {
        return None;
    }
    Some(if ch.live > 0 {
        Element::Live
    } else {
        Element::EndOfPartition
    })
}

/// Whether gate `g` has anything to hand out (`InputGate.getAvailableFuture()` is done).
pub fn is_available(shape: &TaskShape, s: &TaskState, g: u8) -> bool {
    let gate = &s.gates[g as usize];
    (0..gate.channels.len() as u8).any(|c| next_element(shape, gate, c).is_some())
}

/// Channel `c` of `gate` hands out its next element, which is consumed.
pub fn take_next(shape: &TaskShape, gate: &mut Gate, c: u8) -> Option<Element> {
    let e = next_element(shape, gate, c)?;
    let ch = &mut gate.channels[c as usize];
    match e {
        Element::Recovered => ch.recovered -= 1,
        // The channel's stateConsumedFuture completes here, on the mailbox thread; what
        // depends on it runs as completion steps.
        Element::EndOfState => ch.state_consumed = true,
        Element::Live => ch.live -= 1,
        Element::EndOfPartition => ch.end_of_partition = true,
    }
    Some(e)
}

/// `pollNext` of channel `c`: the element is consumed. Returns whether the gate has finished
/// (its last channel's `EndOfPartition`).
pub fn poll_next(shape: &TaskShape, s: &mut TaskState, g: u8, c: u8) -> (Element, bool) {
    let gate = &mut s.gates[g as usize];
    let e = take_next(shape, gate, c).expect("polled a channel with nothing to return");
    let finished = gate.channels.iter().all(|c| c.end_of_partition);
    (e, finished)
}

/// `SingleInputGate.requestPartitions(needsRecovery)`: converts the recovered channels and
/// requests the partitions. Flag off (`toInputChannel(false)`), every recovered buffer must
/// have been consumed; flag on, `toInputChannel(true)` creates the physical channels in
/// recovery, for the drain to push into.
pub fn request_partitions(shape: &TaskShape, s: &mut TaskState, g: u8) {
    let gate = &mut s.gates[g as usize];
    debug_assert!(
        shape.is_checkpointing_during_recovery_enabled() || gate.state_consumed(),
        "toInputChannel(false) of a channel with unconsumed recovered state"
    );
    gate.partitions_requested = true;
}
