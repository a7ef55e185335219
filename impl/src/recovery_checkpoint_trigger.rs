//! Mirrors master's `RecoveryCheckpointTrigger` (apache/flink#28660, #28663): what the task's
//! barrier handler runs when an unaligned checkpoint starts, by the phase of the task's
//! recovery. `StreamTask.recoverChannelsWithCheckpointing` sets it by mail: `NOT_READY` while
//! the state is fetched, the `FetchedChannelStateDrainer` once it is installed, `NO_OP` once
//! the drain has returned and every gate's recovered state was consumed.
//!
//! `NOT_READY` can act only between the `requestPartitions` mail and the drainer's install
//! mail, before the task is RUNNING; the coordinator triggers a checkpoint only when every task
//! is RUNNING, so in a job the phase is defensive (docs/model.md). `NO_OP` inserts nothing: every
//! channel has left recovery, where an insertion is a no-op anyway.
//!
//! [`crate::stream_task::StreamTask`] holds the task's trigger (`recoveryCheckpointTrigger`, read
//! and written on the mailbox thread only) and asks it through
//! [`RecoveryCheckpointTrigger::insert_barriers_into_inputs`] when an unaligned checkpoint starts.

use crate::checkpointable_input::CheckpointableInput;
use crate::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use crate::recoverable_input_channel::RecoverableInputChannel;
use crate::sync::Arc;
use crate::{ChannelError, CheckpointId, DeclineReason, Result};
use std::fmt;
use std::ops::Range;

/// The task's recovery checkpoint trigger, one phase at a time.
#[derive(Debug, Clone, Default)]
pub enum RecoveryCheckpointTrigger {
    /// `NOT_READY`: the recovered state is not fetched yet, so there is nothing to snapshot.
    #[default]
    NotReady,
    /// The installed drainer: its lock, the barriers and the snapshot of what it has not
    /// delivered.
    Drainer(FetchedChannelStateDrainer),
    /// `NO_OP`: recovery is over.
    NoOp,
}

impl RecoveryCheckpointTrigger {
    /// `snapshotAndInsertBarriers(checkpointId)`: `NOT_READY` declines the checkpoint
    /// (`CheckpointException(CHECKPOINT_DECLINED_TASK_NOT_READY)`, which the barrier handler's
    /// `abortInternal` turns into a decline; the task does not fail); the drainer inserts a
    /// `RecoveryCheckpointBarrier` into every channel still in recovery and returns, per
    /// channel, the recovered buffers it has not delivered; `NO_OP` does nothing and returns
    /// nothing to spill.
    pub fn snapshot_and_insert_barriers(
        &self,
        channels: &[&dyn RecoverableInputChannel],
        checkpoint_id: CheckpointId,
    ) -> Result<Vec<Range<usize>>> {
        match self {
            RecoveryCheckpointTrigger::NotReady => Err(ChannelError::CheckpointDeclined {
                checkpoint_id,
                reason: DeclineReason::TaskNotReady,
            }),
            RecoveryCheckpointTrigger::Drainer(drainer) => {
                drainer.snapshot_and_insert_barriers(channels, checkpoint_id)
            }
            RecoveryCheckpointTrigger::NoOp => Ok(vec![0..0; channels.len()]),
        }
    }

    /// The same at the task level, where the trigger reaches channels through their gates
    /// ([`CheckpointableInput`]): `NOT_READY` declines; the drainer, under its lock, inserts a
    /// `RecoveryCheckpointBarrier` into every channel still in recovery and returns whether one
    /// was; `NO_OP` inserts nothing.
    pub fn insert_barriers_into_inputs(
        &self,
        inputs: &[Arc<dyn CheckpointableInput>],
        checkpoint_id: CheckpointId,
    ) -> Result<bool> {
        match self {
            RecoveryCheckpointTrigger::NotReady => Err(ChannelError::CheckpointDeclined {
                checkpoint_id,
                reason: DeclineReason::TaskNotReady,
            }),
            RecoveryCheckpointTrigger::Drainer(drainer) => {
                let _lock = drainer.lock();
                inputs.iter().try_fold(false, |any, input| {
                    Ok(input.insert_recovery_checkpoint_barriers_if_in_recovery(checkpoint_id)? || any)
                })
            }
            RecoveryCheckpointTrigger::NoOp => Ok(false),
        }
    }
}

/// Flink's names for the three phases.
impl fmt::Display for RecoveryCheckpointTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecoveryCheckpointTrigger::NotReady => "NOT_READY",
            RecoveryCheckpointTrigger::Drainer(_) => "drainer",
            RecoveryCheckpointTrigger::NoOp => "NO_OP",
        })
    }
}
