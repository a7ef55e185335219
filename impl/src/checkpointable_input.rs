//! Mirrors Flink's `CheckpointableInput`: what `SingleCheckpointBarrierHandler` calls on each of
//! the task's input gates when a checkpoint starts (`checkpointStarted`) and ends
//! (`checkpointStopped`), with the call the flag-on recovery adds for the gate's channels: the
//! recovery trigger's `insertRecoveryCheckpointBarrierIfInRecovery` of each of them.
//!
//! Flink's `IndexedInputGate` is a `CheckpointableInput`; here the task is handed each gate's
//! checkpoint side next to the gate ([`crate::stream_task::CheckpointingConfig`]), so that the
//! task level can run checkpoints over gates that have one.

use crate::error::Result;
use crate::ids::CheckpointId;

/// Flink's `CheckpointableInput`, the calls a checkpoint's start makes on one input gate.
pub trait CheckpointableInput: Send + Sync {
    /// `insertRecoveryCheckpointBarrierIfInRecovery(checkpointId)` of every channel of the gate
    /// (the drainer's `snapshotAndInsertBarriers`, under its lock): a `RecoveryCheckpointBarrier`
    /// into each channel still in recovery. Returns whether one was.
    fn insert_recovery_checkpoint_barriers_if_in_recovery(&self, checkpoint_id: CheckpointId) -> Result<bool>;

    /// `checkpointStarted(barrier)`: every channel starts persisting what is before the barrier.
    /// A channel in recovery without its `RecoveryCheckpointBarrier` declines the checkpoint
    /// (`collectPreRecoveryBarrier`: "Missing RecoveryCheckpointBarrier").
    fn checkpoint_started(&self, checkpoint_id: CheckpointId) -> Result<()>;

    /// `checkpointStopped(checkpointId)`: the checkpoint completed or was aborted.
    fn checkpoint_stopped(&self, checkpoint_id: CheckpointId);
}
