//! Mirrors the lock of Flink's `FetchedChannelStateDrainer` (master, apache/flink#28662): the
//! drainer delivers each recovered buffer under it (`drainSegment`'s `onRecoveredStateBuffer`
//! with the reader's commit), and the checkpoint trigger holds it across every channel's
//! `insertRecoveryCheckpointBarrierIfInRecovery` and the snapshot of what is not yet delivered
//! (`snapshotAndInsertBarriers`). So no delivery falls between two insertions, and the snapshot
//! is the drain's position at the insertions. Taking and filling a buffer
//! (`requestRecoveryBufferBlocking`), and `finishRecoveredBufferDelivery`, stay outside it.
//!
//! The spill files, the reader and the snapshot itself belong to the caller: this crate's
//! channels receive buffers that are already filled.

use crate::recoverable_input_channel::RecoverableInputChannel;
use crate::sync::{Arc, Condvar, Mutex};
use crate::{CheckpointId, NetworkBuffer, Result};

/// The drainer's `lock`. Held by a [`DrainerLockGuard`], which a caller may keep across calls:
/// a replay steps the trigger's insertions one channel at a time, on one thread, and holds the
/// lock between them as the trigger's one `synchronized` block does.
#[derive(Debug)]
struct DrainerLock {
    held: Mutex<bool>,
    released: Condvar,
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
        *self.lock.held.lock() = false;
        self.lock.released.notify_all();
    }
}

impl Default for FetchedChannelStateDrainer {
    fn default() -> Self {
        Self::new()
    }
}

impl FetchedChannelStateDrainer {
    /// A drainer whose lock is free.
    pub fn new() -> Self {
        Self {
            lock: Arc::new(DrainerLock {
                held: Mutex::new(false),
                released: Condvar::new(),
            }),
        }
    }

    /// `synchronized (lock)`: blocks until the lock is free (the wait is reported to the
    /// calling thread's wait hook), then holds it until the guard is dropped. Not reentrant.
    #[track_caller]
    pub fn lock(&self) -> DrainerLockGuard {
        let mut held = self.lock.held.lock();
        while *held {
            held = self.lock.released.wait(held);
        }
        *held = true;
        DrainerLockGuard {
            lock: Arc::clone(&self.lock),
        }
    }

    /// Whether some thread holds the lock (for snapshots and tests; it may change at once).
    pub fn is_locked(&self) -> bool {
        *self.lock.held.lock()
    }

    /// `drainSegment`'s delivery: `onRecoveredStateBuffer(buffer)` under the lock, paired with
    /// the reader's commit (the caller's).
    pub fn deliver(&self, channel: &dyn RecoverableInputChannel, buffer: NetworkBuffer) -> Result<()> {
        let _lock = self.lock();
        channel.on_recovered_state_buffer(buffer)
    }

    /// `snapshotAndInsertBarriers(checkpointId)`: under the lock, a `RecoveryCheckpointBarrier`
    /// into every channel still in recovery (the snapshot of the reader is the caller's, which
    /// has none here). A channel's failure ends the insertions.
    pub fn snapshot_and_insert_barriers(
        &self,
        channels: &[&dyn RecoverableInputChannel],
        checkpoint_id: CheckpointId,
    ) -> Result<()> {
        let _lock = self.lock();
        channels
            .iter()
            .try_for_each(|channel| channel.insert_recovery_checkpoint_barrier_if_in_recovery(checkpoint_id))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_second_holder_waits_until_the_guard_is_dropped() {
        let drainer = FetchedChannelStateDrainer::new();
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
}
