//! Shared by the integration tests: a deliberately broken driver.
#![allow(dead_code)]

pub mod runs;

use conformance::driver::{Driver, DriverError};
use conformance::impl_driver::ImplDriver;
use conformance::observation::{Observation, Snapshot};
use recovery_model::Action;

/// The implementation as seen through a bug: the stash replayed at the head of
/// `receivedBuffers` instead of its tail (what the `stash-replayed-at-head` variant does).
pub struct StashAtHead {
    pub inner: ImplDriver,
    replayed: Vec<(u8, usize)>,
}

impl StashAtHead {
    pub fn new(inner: ImplDriver) -> Self {
        StashAtHead {
            inner,
            replayed: Vec::new(),
        }
    }
}

impl Driver for StashAtHead {
    fn name(&self) -> &str {
        "stash-at-head"
    }
    fn reset(&mut self) -> Result<(), DriverError> {
        self.replayed.clear();
        self.inner.reset()
    }
    fn apply(&mut self, action: &Action) -> Result<Observation, DriverError> {
        if let Action::OnRecoveredStateConsumed { channel } = *action {
            let stashed = self.inner.snapshot()?.channels[channel as usize].stash.len();
            self.replayed.push((channel, stashed));
        }
        self.inner.apply(action)
    }
    fn snapshot(&mut self) -> Result<Snapshot, DriverError> {
        let mut s = self.inner.snapshot()?;
        for (c, k) in &self.replayed {
            let queue = &mut s.channels[*c as usize].queue;
            let k = (*k).min(queue.len());
            queue.rotate_right(k);
        }
        Ok(s)
    }
}
