//! Shared by the validation tests: what real multi-threaded runs are built from.

use conformance::generate::SplitMix64;
use conformance::observation::Item;
use conformance::projection::payload_of;
use recovery_impl::single_input_gate::SingleInputGate;
use recovery_impl::upstream_recovery_tracker::ResumableInputGate;
use recovery_impl::{BufferId, BufferKind, ChannelError, InputChannelInfo, NetworkBuffer};
use recovery_model::config::Upstream;
use recovery_model::state::Payload;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A random pause: none, a yield, or a sleep of up to 200 µs, so that the threads race.
pub fn jitter(rng: &mut SplitMix64) {
    match rng.below(4) {
        0 => {}
        1 => thread::yield_now(),
        _ => thread::sleep(Duration::from_micros(rng.below(200) as u64)),
    }
}

/// Upstream element `i` of channel `c` as the producer writes it (heap memory, as events and
/// the subpartition's data are).
pub fn upstream_buffer(c: u8, i: u8, u: Upstream) -> NetworkBuffer {
    let (kind, item) = match u {
        Upstream::Data => (BufferKind::Data, Item::Known(Payload::Data(i))),
        Upstream::Event => (BufferKind::Event, Item::Known(Payload::Event(i))),
        Upstream::EndOfOutputChannelState => (
            BufferKind::EndOfOutputChannelState,
            Item::Known(Payload::EndOfOutput(i)),
        ),
    };
    NetworkBuffer::unpooled(BufferId(50_000 + 100 * c as u32 + i as u32), kind, payload_of(c, &item))
}

/// Joins every thread of a run, failing the test if one is still running at `deadline` (a
/// thread blocked for good is a lost wake-up, not a slow machine) or panicked.
pub fn join_all_by(threads: Vec<(&str, JoinHandle<()>)>, deadline: Instant) {
    for (name, handle) in threads {
        while !handle.is_finished() {
            assert!(
                Instant::now() < deadline,
                "thread {name} is still blocked at the deadline"
            );
            thread::sleep(Duration::from_millis(1));
        }
        handle
            .join()
            .unwrap_or_else(|_| panic!("thread {name} of the run panicked"));
    }
}

/// The gate as the task's `UpstreamRecoveryTracker` resumes it: a released channel is skipped,
/// as the model skips it (its `checkState(!isReleased)` would fail the task being cancelled).
struct SkipReleased<'a>(&'a SingleInputGate);

impl ResumableInputGate for SkipReleased<'_> {
    fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
        self.0.get_channel_infos()
    }

    fn resume_consumption(&self, channel_info: &InputChannelInfo) -> recovery_impl::Result<()> {
        let released = || {
            (self.0.channel(channel_info.input_channel_idx as usize))
                .and_then(|h| h.as_recoverable())
                .is_some_and(|r| r.is_released())
        };
        if released() {
            return Ok(());
        }
        match self.0.resume_consumption(channel_info) {
            // Released meanwhile.
            Err(ChannelError::IllegalState(_)) if released() => Ok(()),
            outcome => outcome,
        }
    }
}

/// `CheckpointedInputGate.handleEvent` of an `EndOfOutputChannelStateEvent` polled from
/// `channel`: the gate's `UpstreamRecoveryTracker`, which resumes every channel after the last
/// one's.
pub fn handle_end_of_output(gate: &SingleInputGate, channel: InputChannelInfo) {
    gate.upstream_recovery_tracker()
        .handle_end_of_recovery(channel, &SkipReleased(gate))
        .unwrap();
}
