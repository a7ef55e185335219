//! Mirrors Flink's `UpstreamRecoveryTracker` / `UpstreamRecoveryTrackerImpl`, which
//! `CheckpointedInputGate.handleEvent` calls for each `EndOfOutputChannelStateEvent`: every
//! upstream subpartition blocks after handing that event out, and once every channel of the gate
//! has delivered its event, the tracker resumes consumption of every channel, in channel order.
//!
//! Locking contract: the task thread is its only caller, as in Flink; its state sits under a
//! leaf lock for `Sync`, released before the gate is called.

use std::collections::BTreeSet;

use crate::error::{ChannelError, Result};
use crate::input_channel_info::InputChannelInfo;
use crate::sync::Mutex;

/// The calls `UpstreamRecoveryTrackerImpl` makes on its `InputGate`.
pub trait ResumableInputGate {
    /// `getChannelInfos()`: every channel of the gate, in channel order.
    fn get_channel_infos(&self) -> Vec<InputChannelInfo>;
    /// `resumeConsumption(channelInfo)`.
    fn resume_consumption(&self, channel_info: &InputChannelInfo) -> Result<()>;
}

#[derive(Debug)]
struct TrackerState {
    restored_channels: BTreeSet<InputChannelInfo>,
    num_unrestored_channels: usize,
}

/// Mirrors Flink's `UpstreamRecoveryTrackerImpl` of one gate.
#[derive(Debug)]
pub struct UpstreamRecoveryTracker {
    state: Mutex<TrackerState>,
}

impl UpstreamRecoveryTracker {
    /// `UpstreamRecoveryTracker.forInputGate(gate)`: every one of the gate's
    /// `number_of_input_channels` channels is unrestored.
    pub fn for_input_gate(number_of_input_channels: usize) -> Self {
        Self {
            state: Mutex::new(TrackerState {
                restored_channels: BTreeSet::new(),
                num_unrestored_channels: number_of_input_channels,
            }),
        }
    }

    /// `handleEndOfRecovery(channelInfo)`: once all channels are restored nothing happens;
    /// otherwise `checkState` that the channel was not restored before, and when it is the last
    /// one, `gate.resumeConsumption` of every channel in channel order (the first failure
    /// propagates), then the set is cleared. The count stays 0 from then on.
    pub fn handle_end_of_recovery(&self, channel_info: InputChannelInfo, gate: &dyn ResumableInputGate) -> Result<()> {
        {
            let mut state = self.state.lock();
            if state.num_unrestored_channels == 0 {
                return Ok(());
            }
            if !state.restored_channels.insert(channel_info) {
                return Err(ChannelError::illegal_state(&format!(
                    "already restored: {channel_info:?}"
                )));
            }
            state.num_unrestored_channels -= 1;
            if state.num_unrestored_channels > 0 {
                return Ok(());
            }
        }
        // Not under the tracker's lock: a local channel's resume notifies the gate.
        for info in gate.get_channel_infos() {
            gate.resume_consumption(&info)?;
        }
        self.state.lock().restored_channels.clear();
        Ok(())
    }

    /// `allChannelsRecovered()`.
    pub fn all_channels_recovered(&self) -> bool {
        self.state.lock().num_unrestored_channels == 0
    }

    /// `numUnrestoredChannels`: the channels whose event has not been handled.
    pub fn num_unrestored_channels(&self) -> usize {
        self.state.lock().num_unrestored_channels
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// A gate of `n` channels that records the resumes and fails at channel `fail_at`.
    struct Gate {
        n: u32,
        fail_at: Option<u32>,
        resumed: StdMutex<Vec<u32>>,
    }

    impl ResumableInputGate for Gate {
        fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
            (0..self.n)
                .map(|input_channel_idx| InputChannelInfo {
                    gate_idx: 0,
                    input_channel_idx,
                })
                .collect()
        }

        fn resume_consumption(&self, channel_info: &InputChannelInfo) -> Result<()> {
            if self.fail_at == Some(channel_info.input_channel_idx) {
                return Err(ChannelError::illegal_state("Channel released."));
            }
            self.resumed.lock().unwrap().push(channel_info.input_channel_idx);
            Ok(())
        }
    }

    fn info(input_channel_idx: u32) -> InputChannelInfo {
        InputChannelInfo {
            gate_idx: 0,
            input_channel_idx,
        }
    }

    fn gate(n: u32, fail_at: Option<u32>) -> Gate {
        Gate {
            n,
            fail_at,
            resumed: StdMutex::new(Vec::new()),
        }
    }

    #[test]
    fn every_channel_is_resumed_in_order_once_the_last_one_is_restored() {
        let (tracker, gate) = (UpstreamRecoveryTracker::for_input_gate(3), gate(3, None));
        tracker.handle_end_of_recovery(info(2), &gate).unwrap();
        tracker.handle_end_of_recovery(info(0), &gate).unwrap();
        assert!(gate.resumed.lock().unwrap().is_empty());
        assert_eq!(tracker.num_unrestored_channels(), 1);
        tracker.handle_end_of_recovery(info(1), &gate).unwrap();
        assert_eq!(*gate.resumed.lock().unwrap(), [0, 1, 2]);
        assert!(tracker.all_channels_recovered());
        // From then on an event changes nothing, not even a repeated one.
        tracker.handle_end_of_recovery(info(1), &gate).unwrap();
        assert_eq!(gate.resumed.lock().unwrap().len(), 3);
    }

    #[test]
    fn a_channel_restored_twice_is_illegal() {
        let (tracker, gate) = (UpstreamRecoveryTracker::for_input_gate(2), gate(2, None));
        tracker.handle_end_of_recovery(info(0), &gate).unwrap();
        assert!(matches!(
            tracker.handle_end_of_recovery(info(0), &gate),
            Err(ChannelError::IllegalState(_))
        ));
        assert_eq!(tracker.num_unrestored_channels(), 1);
    }

    #[test]
    fn the_first_failing_resume_stops_the_loop() {
        let (tracker, gate) = (UpstreamRecoveryTracker::for_input_gate(3), gate(3, Some(1)));
        for c in 0..2 {
            tracker.handle_end_of_recovery(info(c), &gate).unwrap();
        }
        assert!(tracker.handle_end_of_recovery(info(2), &gate).is_err());
        assert_eq!(*gate.resumed.lock().unwrap(), [0]);
    }
}
