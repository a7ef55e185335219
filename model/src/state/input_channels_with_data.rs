//! `SingleInputGate.inputChannelsWithData`: the queue of channels the task polls, and its
//! methods. The gate's steps are in `single_input_gate.rs`.

use crate::state::elements::PerChannel;
use serde::{Deserialize, Serialize};

/// The gate's `PrioritizedDeque<InputChannel>` plus `enqueuedInputChannelsWithData`: no channel
/// twice, priority channels at the head.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InputChannelsWithData {
    /// Queued channel indices, head first.
    pub channels: PerChannel<u8>,
    /// How many of the head entries were queued with priority.
    pub num_priority: u8,
}

impl InputChannelsWithData {
    /// `notifyChannelNonEmpty(channel)`.
    pub fn notify_channel_non_empty(&mut self, c: u8) {
        self.queue_channel(c, false);
    }

    /// `notifyPriorityEvent(channel, seq)`: the channel moves to the priority head.
    pub fn notify_priority_event(&mut self, c: u8) {
        self.queue_channel(c, true);
    }

    /// `queueChannel(channel, priority)`: a channel already queued stays where it is unless it
    /// is now prioritised and was not before.
    pub fn queue_channel(&mut self, c: u8, priority: bool) {
        let at = self.channels.iter().position(|q| *q == c);
        let prioritized = at.is_some_and(|i| i < self.num_priority as usize);
        match at {
            Some(_) if !priority || prioritized => return,
            Some(i) => {
                self.channels.remove(i);
            }
            None => {}
        }
        if priority {
            self.channels.insert(self.num_priority as usize, c);
            self.num_priority += 1;
        } else {
            self.channels.push(c);
        }
    }

    /// `inputChannelsWithData.getAndRemove(channel)` (the conversion replacing a channel).
    pub fn remove(&mut self, c: u8) {
        if let Some(i) = self.channels.iter().position(|q| *q == c) {
            self.channels.remove(i);
            if i < self.num_priority as usize {
                self.num_priority -= 1;
            }
        }
    }

    /// `getChannel(false)`: the head, dequeued.
    pub fn poll(&mut self) -> Option<u8> {
        if self.channels.is_empty() {
            return None;
        }
        self.num_priority = self.num_priority.saturating_sub(1);
        Some(self.channels.remove(0))
    }

    /// The channel the task would poll next.
    pub fn head(&self) -> Option<u8> {
        self.channels.first().copied()
    }

    /// Whether channel `c` is queued.
    pub fn contains(&self, c: u8) -> bool {
        self.channels.contains(&c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_is_queued_once_and_priority_moves_it_to_the_head() {
        let mut g = InputChannelsWithData::default();
        g.notify_channel_non_empty(0);
        g.notify_channel_non_empty(1);
        g.notify_channel_non_empty(0);
        assert_eq!(g.channels[..], [0, 1]);
        g.notify_priority_event(1);
        assert_eq!((&g.channels[..], g.num_priority), (&[1, 0][..], 1));
        g.notify_priority_event(1);
        assert_eq!((&g.channels[..], g.num_priority), (&[1, 0][..], 1));
        assert_eq!(g.poll(), Some(1));
        assert_eq!((&g.channels[..], g.num_priority), (&[0][..], 0));
        assert_eq!(g.poll(), Some(0));
        assert_eq!(g.poll(), None);
    }
}
