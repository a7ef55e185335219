//! Bug variants: each switches one fix of the recovery series off, in one step function.

use serde::{Deserialize, Serialize};

/// Which fix is switched off. `Fixed` is the protocol as merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Every fix in place.
    #[default]
    Fixed,
    /// B5: `toInputChannel(true)` ends with `finishRecoveredBufferDelivery()`, which waits on a
    /// latch only the task thread itself can open.
    FinishDeliveryDuringConversion,
    /// B6, toggle A: `enableNotify` counts under the lock and flips the flag after releasing it.
    EnableNotifyFlagAfterCount,
    /// B6, toggle B: `enableNotify` flips the flag, then counts in a separate critical section.
    EnableNotifyFlagBeforeCount,
    /// B6, floating path: `requestFloatingBuffers` and the floating-buffer callback announce
    /// credit while notification is disabled.
    FloatingCreditDuringRecovery,
    /// B2 (FLINK-40016): recovered buffers go through `maybePersist` when consumed.
    RecoveredBuffersThroughMaybePersist,
    /// B10: the view reader starts with full credit although the consumer needs recovery.
    ProducerIgnoresNeedsRecovery,
    /// Ordinary upstream events during recovery are enqueued in place instead of stashed.
    NoEventStash,
    /// The stash is replayed in front of the queued elements instead of at the tail.
    StashReplayedAtHead,
    /// Recovery sequence numbers start at 0 and collide with live ones.
    RecoverySequenceFromZero,
    /// A checkpoint without its `RecoveryCheckpointBarrier` persists what it found.
    NoDeclineOnMissingBarrier,
}
