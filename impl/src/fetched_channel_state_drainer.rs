//! Mirrors Flink's `FetchedChannelStateDrainer` (master, apache/flink#28661, #28662): the
//! drainer delivers each recovered buffer under its lock (`drainSegment`'s
//! `onRecoveredStateBuffer` with the reader's commit), and the checkpoint trigger holds the lock
//! across every channel's `insertRecoveryCheckpointBarrierIfInRecovery` and the snapshot of what
//! is not yet delivered (`snapshotAndInsertBarriers`). So no delivery falls between two
//! insertions, and the snapshot is the drain's committed position at the insertions: a buffer
//! taken and filled (`requestRecoveryBufferBlocking`, outside the lock) but not yet delivered
//! belongs to the snapshot. `finishRecoveredBufferDelivery` stays outside the lock too.
//!
//! The spill files themselves belong to the caller: the drainer knows how many recovered
//! buffers each channel's state holds and how many it has delivered, and a snapshot is the
//! range of a channel's buffers not yet delivered (what `addInputDataFromSpill` writes).

use crate::recoverable_input_channel::RecoverableInputChannel;
use crate::sync::{Arc, Condvar, Mutex};
use crate::{CheckpointId, NetworkBuffer, Result};
use std::ops::Range;

/// The drainer's `lock`, and under it the reader's committed position per channel. Held by a
/// [`DrainerLockGuard`], which a caller may keep across calls: a replay steps the trigger's
/// insertions one channel at a time, on one thread, and holds the lock between them as the
/// trigger's one `synchronized` block does.
#[derive(Debug)]
struct DrainerLock {
    state: Mutex<Reader>,
    released: Condvar,
}

/// The spill reader's positions, guarded by the drainer's lock.
#[derive(Debug, Default)]
struct Reader {
    held: bool,
    /// Per channel: recovered buffers fetched into the spill.
    fetched: Vec<usize>,
    /// Per channel: recovered buffers delivered (the position the last commit recorded).
    committed: Vec<usize>,
}

/// The recovery drainer's lock and the two critical sections that take it.
#[derive(Debug, Clone)]
pub struct FetchedChannelStateDrainer {
    lock: Arc<DrainerLock>,
}

/// The drainer's lock, held until dropped.
#[derive(Debug)]
#[must_use = "the drainer's lock is released when the guard is dropped"]
pub struct DrainerLockGuard {
    lock: Arc<DrainerLock>,
}

impl Drop for DrainerLockGuard {
    fn drop(&mut self) {
        self.lock.state.lock().held = false;
        self.lock.released.notify_all();
    }
}

impl DrainerLockGuard {
    /// The reader's snapshot for `channel`: its recovered buffers not yet delivered, by index
    /// into its fetched state. Taken under the lock, so no delivery can move it meanwhile.
    pub fn snapshot(&self, channel: usize) -> Range<usize> {
        let reader = self.lock.state.lock();
        let fetched = reader.fetched.get(channel).copied().unwrap_or(0);
        reader.committed.get(channel).copied().unwrap_or(0).min(fetched)..fetched
    }
}

impl Default for FetchedChannelStateDrainer {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl FetchedChannelStateDrainer {
    /// A drainer whose lock is free, for state that holds `fetched[c]` recovered buffers of
    /// channel `c`, none delivered yet.
    pub fn new(fetched: Vec<usize>) -> Self {
        let committed = vec![0; fetched.len()];
        Self {
            lock: Arc::new(DrainerLock {
                state: Mutex::new(Reader {
                    held: false,
                    fetched,
                    committed,
                }),
                released: Condvar::new(),
            }),
        }
    }

    /// `synchronized (lock)`: blocks until the lock is free (the wait is reported to the
    /// calling thread's wait hook), then holds it until the guard is dropped. Not reentrant.
    #[track_caller]
    pub fn lock(&self) -> DrainerLockGuard {
        let mut state = self.lock.state.lock();
        while state.held {
            state = self.lock.released.wait(state);
        }
        state.held = true;
        DrainerLockGuard {
            lock: Arc::clone(&self.lock),
        }
    }

    /// Whether some thread holds the lock (for snapshots and tests; it may change at once).
    pub fn is_locked(&self) -> bool {
        self.lock.state.lock().held
    }

    /// `drainSegment`'s delivery of channel `index`'s next recovered buffer:
    /// `onRecoveredStateBuffer(buffer)` and the reader's commit, under the lock. The buffer has
    /// left the reader whatever the channel does with it (a released channel recycles it).
    pub fn deliver(&self, index: usize, channel: &dyn RecoverableInputChannel, buffer: NetworkBuffer) -> Result<()> {
        let _lock = self.lock();
        let result = channel.on_recovered_state_buffer(buffer);
        if let Some(committed) = self.lock.state.lock().committed.get_mut(index) {
            *committed += 1;
        }
        result
    }

    /// `snapshotAndInsertBarriers(checkpointId)`: under the lock, a `RecoveryCheckpointBarrier`
    /// into every channel still in recovery, then the reader's snapshot: per channel, the
    /// recovered buffers not yet delivered (none for a released channel, whose checkpoint the
    /// task's cancellation ends). A channel's failure ends the insertions.
    pub fn snapshot_and_insert_barriers(
        &self,
        channels: &[&dyn RecoverableInputChannel],
        checkpoint_id: CheckpointId,
    ) -> Result<Vec<Range<usize>>> {
        let lock = self.lock();
        channels
            .iter()
            .try_for_each(|channel| channel.insert_recovery_checkpoint_barrier_if_in_recovery(checkpoint_id))?;
        let slice = |(c, channel): (usize, &&dyn RecoverableInputChannel)| {
            if channel.is_released() { 0..0 } else { lock.snapshot(c) }
        };
        Ok(channels.iter().enumerate().map(slice).collect())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_second_holder_waits_until_the_guard_is_dropped() {
        let drainer = FetchedChannelStateDrainer::new(vec![2]);
        let guard = drainer.lock();
        assert!(drainer.is_locked());
        let (tx, rx) = mpsc::channel();
        let other = {
            let drainer = drainer.clone();
            std::thread::spawn(move || {
                let _lock = drainer.lock();
                tx.send(()).unwrap();
            })
        };
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "taken while held");
        drop(guard);
        rx.recv_timeout(Duration::from_secs(10)).expect("taken once released");
        other.join().unwrap();
        assert!(!drainer.is_locked());
    }

    #[test]
    fn the_snapshot_is_what_is_not_yet_delivered() {
        let drainer = FetchedChannelStateDrainer::new(vec![3, 1]);
        assert_eq!(drainer.lock().snapshot(0), 0..3);
        drainer.lock.state.lock().committed[0] = 2;
        assert_eq!(drainer.lock().snapshot(0), 2..3);
        assert_eq!(drainer.lock().snapshot(1), 0..1);
        assert_eq!(drainer.lock().snapshot(2), 0..0, "a channel without fetched state");
    }
}
