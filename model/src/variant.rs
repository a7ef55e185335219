//! Bug variants: each switches one fix of the recovery series off, in one step function. Their
//! names, bugs and the properties that catch them are in `bug_zoo.rs`.

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
    /// `LocalInputChannel.onRecoveredStateConsumed` does not re-queue the channel at the gate:
    /// the live data recovery hid waits in the subpartition, never polled.
    NoRequeueAfterRecovery,
    /// The trigger snapshots the drainer's remaining state when it starts the checkpoint on a
    /// channel, after inserting the barriers and outside the drainer lock.
    SpillSnapshotAfterInsertion,
    /// The trigger's snapshot of the drainer's remaining state is the reader's read position,
    /// not the position its last commit recorded: the buffer `requestBufferBlocking` took and
    /// the drainer has not delivered yet is in neither the spill nor the channel's state.
    SpillSnapshotAtReadPosition,
    /// `LocalInputChannel.getNextBuffer` polls a recovered element under the lock, then re-reads
    /// `hasPendingPriorityEvent` outside it and, finding it set, pulls the priority event
    /// instead: the polled element is lost (the window Flink's code comment guards against).
    RecoveredBufferDroppedForPriorityEvent,
    /// `notifyBufferAvailable(Buffer)`, the `LocalBufferPool`'s callback, queues the floating
    /// buffer it is handed but announces only those `tryRequestBuffers` adds: the `1 +` of
    /// `numBuffers += 1 + tryRequestBuffers()` is off.
    FloatingBufferNotAnnounced,
    /// B9: the recovery-checkpoint trigger turns NO_OP when the drain has appended every
    /// channel's sentinel, not when every channel has consumed it: a checkpoint in between
    /// finds no `RecoveryCheckpointBarrier` and is declined.
    TriggerSwappedWhenDrainFinishes,
    /// The gate's `UpstreamRecoveryTracker` never calls `resumeConsumption`: every subpartition
    /// stays blocked behind its `EndOfOutputChannelStateEvent`.
    NoResumeConsumption,
    /// The alternating barrier handler's `finishCheckpoint` forgets `unblockAllChannels`: the
    /// subpartitions its aligned barriers blocked stay blocked.
    AlignmentLeavesChannelsBlocked,
    /// `EndOfOutputChannelStateEvent` as an ordinary event: the subpartition that hands it out
    /// does not block (and so is not resumed). The model's error behind two withdrawn findings
    /// (docs/findings.md).
    RecoveryCompletionNotBlocking,
    /// The drainer stops at a released channel (its `requestBufferBlocking` threw
    /// `CancelTaskException`) and releases nothing of what it has not pushed: the state fetched
    /// for every later push stays (FLINK-40520's leak, before the task's cleanup released it).
    DrainerAbandonsStateOnRelease,
    /// `BufferManager.releaseAllBuffers` gives back the exclusive segments but leaves the
    /// floating buffers queued in the released channel's manager.
    ReleaseKeepsFloatingBuffers,
    /// `releaseAllResources` drains the queue and releases the buffers before it sets
    /// `isReleased` (`release_step`): a buffer recycled or received in between goes back into
    /// the manager of a channel that is not released yet, and stays there. Flink's
    /// `RemoteInputChannel` sets the flag first, "to ensure that buffers received concurrently
    /// with closing are properly recycled".
    IsReleasedSetLast,
    /// The checkpoint coordinator triggers checkpoint `n + 1` while `n` is pending, as
    /// `execution.checkpointing.max-concurrent-checkpoints: 2` would with unaligned
    /// checkpoints, were `CheckpointCoordinatorConfiguration`'s check gone.
    ConcurrentUnalignedCheckpoints,
    /// `RemoteInputChannel.onBuffer` queues into an empty `receivedBuffers` without
    /// `notifyChannelNonEmpty()`: the gate is not told the channel has data.
    OnBufferSkipsNonEmptyNotification,
    /// `RecoveredInputChannel.onRecoveredStateBuffer` queues into an empty queue without
    /// `notifyChannelNonEmpty()` (the flag-off path).
    RecoveredPushSkipsNonEmptyNotification,
    /// `LocalInputChannel.onRecoveredStateBuffer` queues into an empty queue without
    /// `notifyChannelNonEmpty()`.
    LocalRecoveredPushSkipsNonEmptyNotification,
    /// Flink 2.3.0's `convertRecoveredInputChannels` does not queue a converted channel that
    /// has migrated buffers in use.
    MigratedChannelNotQueued,
    /// `queueChannel(channel, priority)` leaves a channel already queued where it is, even when
    /// its new element is a priority event.
    PriorityIgnoredForQueuedChannel,
    /// The end-of-recovery sentinel takes the remote channel's recovery sequence number without
    /// advancing the counter: the recovery barrier queued behind it reuses the number.
    SentinelKeepsRecoverySequence,
    /// `LocalBufferPool.recycle` puts every buffer back in the pool and never hands one to a
    /// registered listener: a manager waiting for a floating buffer waits on.
    PoolRecycleSkipsListeners,
    /// `RemoteInputChannel.onSenderBacklog(backlog)` asks the manager for `backlog` buffers
    /// instead of `backlog + initialCredit`.
    OnSenderBacklogWithoutInitialCredit,
    /// The drainer queues a recovered buffer into a lending channel without taking a buffer from
    /// its manager (`requestRecoveryBufferBlocking` skipped).
    RecoveryBufferNotLent,
    /// `abortInternal` does not stop persisting: the channels that started a declined checkpoint
    /// keep its window open.
    DeclineKeepsPersisting,
    /// `startPersisting` throws `CHECKPOINT_SUBSUMED` when the barrier the persister last saw is
    /// older than the checkpoint starting (the comparison turned round).
    SubsumedByOlderBarrier,
    /// A local channel's poll of its view returns the view's next sequence number instead of
    /// the one of the element it polled.
    LocalPollMisnumbersLive,
    /// `AlternatingWaitingForFirstBarrier.alignmentTimeout` triggers the checkpoint, as
    /// `AlternatingCollectingBarriers` does, although none of its barriers is in.
    TimeoutTriggersBeforeFirstBarrier,
    /// `announcementReceived` converts the announced barrier to a priority event in the aligned
    /// states as well, before the alignment timed out.
    AnnouncementConvertedBeforeTimeout,
}
