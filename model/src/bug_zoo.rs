//! The bug zoo: each variant's bug, the property that catches it and the smallest preset that
//! exposes it, and the variants' names.

use crate::properties::PropertyId;
use crate::variant::Variant;
use serde::Serialize;

/// One row of the bug zoo: the variant, the bug it reintroduces, the property that catches it
/// and the smallest preset that exposes it. Tests, the CLI and docs/bug-zoo.md read this table.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct VariantInfo {
    /// The variant.
    #[serde(skip)]
    pub variant: Variant,
    /// Kebab-case name, as on the command line.
    pub name: &'static str,
    /// The bug, in a few words.
    pub bug: &'static str,
    /// The property whose counterexample shows it.
    pub property: PropertyId,
    /// The smallest preset that exposes it.
    pub preset: &'static str,
}

/// The bug zoo.
pub const VARIANTS: &[VariantInfo] = &[
    VariantInfo {
        variant: Variant::FinishDeliveryDuringConversion,
        name: "finish-delivery-during-conversion",
        bug: "B5: toInputChannel(true) awaits upstreamReady on the task thread that must open it",
        property: PropertyId::RecoveryCompletes,
        preset: "conversion",
    },
    VariantInfo {
        variant: Variant::EnableNotifyFlagAfterCount,
        name: "enable-notify-flag-after-count",
        bug: "B6: enableNotify counts, unlocks, then opens the gate: a recycle in between is never announced",
        property: PropertyId::AllLiveDataDelivered,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::EnableNotifyFlagBeforeCount,
        name: "enable-notify-flag-before-count",
        bug: "B6: enableNotify opens the gate, then counts separately: a recycle in between is announced twice",
        property: PropertyId::CreditConservation,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::FloatingCreditDuringRecovery,
        name: "floating-credit-during-recovery",
        bug: "B6 (floating path): requestFloatingBuffers announces credit while notification is disabled",
        property: PropertyId::NoCreditDuringRecovery,
        preset: "floating",
    },
    VariantInfo {
        variant: Variant::RecoveredBuffersThroughMaybePersist,
        name: "recovered-buffers-through-maybe-persist",
        bug: "B2 (FLINK-40016): consumed recovered buffers pass maybePersist and are persisted twice",
        property: PropertyId::PersistedAtMostOnce,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::ProducerIgnoresNeedsRecovery,
        name: "producer-ignores-needs-recovery",
        bug: "B10: the view reader starts with full credit, so live data reaches a channel in recovery",
        property: PropertyId::NoCreditDuringRecovery,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::NoEventStash,
        name: "no-event-stash",
        bug: "upstream events during recovery are queued in place, ahead of recovered data still to come",
        property: PropertyId::RecoveredDataPrecedesLiveData,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::StashReplayedAtHead,
        name: "stash-replayed-at-head",
        bug: "the stash is replayed at the head of receivedBuffers, in front of queued priority events",
        property: PropertyId::PriorityEventsFirst,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::RecoverySequenceFromZero,
        name: "recovery-sequence-from-zero",
        bug: "recovery sequence numbers start at 0 and collide with live upstream sequence numbers",
        property: PropertyId::RecoverySequenceNumbers,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::NoDeclineOnMissingBarrier,
        name: "no-decline-on-missing-barrier",
        bug: "a checkpoint without its RecoveryCheckpointBarrier persists whatever is queued",
        property: PropertyId::PersistedContentIsExact,
        preset: "no-trigger",
    },
    VariantInfo {
        variant: Variant::NoRequeueAfterRecovery,
        name: "no-requeue-after-recovery",
        bug: "LocalInputChannel.onRecoveredStateConsumed does not notify the gate: live data is never polled",
        property: PropertyId::NoLostNotification,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::SpillSnapshotAfterInsertion,
        name: "spill-snapshot-after-insertion",
        bug: "the drainer's remaining state is snapshotted after the recovery barrier is inserted: a buffer drained in between is in neither",
        property: PropertyId::PersistedContentIsExact,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::SpillSnapshotAtReadPosition,
        name: "spill-snapshot-at-read-position",
        bug: "the drainer's remaining state is snapshotted at the reader's read position, past the buffer taken and not yet delivered: that buffer is in neither the spill nor the channel's state",
        property: PropertyId::RecoveredStateFromItsSource,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::FloatingBufferNotAnnounced,
        name: "floating-buffer-not-announced",
        bug: "the floating-buffer callback queues the buffer it is handed without announcing it: its credit is lost",
        property: PropertyId::NoLostCredit,
        preset: "floating",
    },
    VariantInfo {
        variant: Variant::RecoveredBufferDroppedForPriorityEvent,
        name: "recovered-buffer-dropped-for-priority-event",
        bug: "LocalInputChannel.getNextBuffer re-reads hasPendingPriorityEvent after polling a recovered buffer and returns the priority event instead: the buffer is lost",
        property: PropertyId::BufferOwnership,
        preset: "local-buffers",
    },
    VariantInfo {
        variant: Variant::TriggerSwappedWhenDrainFinishes,
        name: "trigger-swapped-when-drain-finishes",
        bug: "B9: the recovery-checkpoint trigger turns NO_OP once the drain appended every sentinel; a checkpoint before the sentinels are consumed finds no RecoveryCheckpointBarrier and is declined",
        property: PropertyId::NoDeclineOnLiveChannelInRecovery,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::NoResumeConsumption,
        name: "no-resume-consumption",
        bug: "the task handles every channel's EndOfOutputChannelStateEvent but never resumes consumption: each upstream stays blocked and its data never comes",
        property: PropertyId::AllLiveDataDelivered,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::AlignmentLeavesChannelsBlocked,
        name: "alignment-leaves-channels-blocked",
        bug: "the checkpoint whose aligned barriers blocked the subpartitions ends without resuming them: data written behind a barrier never comes",
        property: PropertyId::AllLiveDataDelivered,
        preset: "aligned-timeout-two-channels",
    },
    VariantInfo {
        variant: Variant::RecoveryCompletionNotBlocking,
        name: "recovery-completion-not-blocking",
        bug: "EndOfOutputChannelStateEvent taken as an ordinary event: an aligned barrier follows it while the channel is in recovery, is stashed, and the alignment timer's convertToPriorityEvent does not find it",
        property: PropertyId::AnnouncedBarrierFound,
        preset: "aligned-timeout",
    },
    VariantInfo {
        variant: Variant::DrainerAbandonsStateOnRelease,
        name: "drainer-abandons-state-on-release",
        bug: "FLINK-40520: the drainer stops at a released channel and nothing releases the recovered state it has not pushed",
        property: PropertyId::EveryBufferReturnsHome,
        preset: "local-buffers",
    },
    VariantInfo {
        variant: Variant::ReleaseKeepsFloatingBuffers,
        name: "release-keeps-floating-buffers",
        bug: "releaseAllBuffers returns the exclusive segments but leaves the floating buffers in the released channel's manager",
        property: PropertyId::ReleasedManagerHoldsNothing,
        preset: "release-floating",
    },
    VariantInfo {
        variant: Variant::PriorityIgnoredForQueuedChannel,
        name: "priority-ignored-for-queued-channel",
        bug: "the gate leaves a channel already in its queue where it is when a priority event arrives for it",
        property: PropertyId::PriorityElementsArePrioritised,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::SentinelKeepsRecoverySequence,
        name: "sentinel-keeps-recovery-sequence",
        bug: "the end-of-recovery sentinel does not advance a remote channel's recovery sequence number: the recovery barrier behind it reuses it",
        property: PropertyId::QueuedRecoveryNumbersIncrease,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::PoolRecycleSkipsListeners,
        name: "pool-recycle-skips-listeners",
        bug: "LocalBufferPool.recycle never hands a buffer to a waiting listener: a channel with only floating buffers waits for ever",
        property: PropertyId::AllLiveDataDelivered,
        preset: "shared-pool-floating-only",
    },
    VariantInfo {
        variant: Variant::OnSenderBacklogWithoutInitialCredit,
        name: "backlog-without-initial-credit",
        bug: "onSenderBacklog asks for backlog buffers instead of backlog + initialCredit",
        property: PropertyId::RequiredIsBacklogPlusInitialCredit,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::RecoveryBufferNotLent,
        name: "recovery-buffer-not-lent",
        bug: "the drainer queues a recovered buffer into a lending channel without a buffer from its manager",
        property: PropertyId::RecoveredDataInLentBuffers,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::DeclineKeepsPersisting,
        name: "decline-keeps-persisting",
        bug: "a declined checkpoint does not stop persisting on the channels that started it",
        property: PropertyId::DeclinedCheckpointPersistsNothing,
        preset: "no-trigger",
    },
    VariantInfo {
        variant: Variant::SubsumedByOlderBarrier,
        name: "subsumed-by-older-barrier",
        bug: "startPersisting declines a checkpoint as subsumed when the barrier its channel last saw is older",
        property: PropertyId::SubsumedOnlyByNewer,
        preset: "subsume",
    },
    VariantInfo {
        variant: Variant::LocalPollMisnumbersLive,
        name: "local-poll-misnumbers-live",
        bug: "a local channel's poll returns the view's next sequence number instead of the polled element's",
        property: PropertyId::LiveNumbersFromTheProducer,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::IsReleasedSetLast,
        name: "is-released-set-last",
        bug: "releaseAllResources drains the queue and releases the buffers before it sets isReleased: a buffer recycled in between goes back into the manager and stays there",
        property: PropertyId::ReleasedManagerHoldsNothing,
        preset: "release-window-remote",
    },
    VariantInfo {
        variant: Variant::ConcurrentUnalignedCheckpoints,
        name: "concurrent-unaligned-checkpoints",
        bug: "the coordinator triggers checkpoint n + 1 while n is pending: max-concurrent-checkpoints 2 with unaligned checkpoints, which CheckpointCoordinatorConfiguration rejects",
        property: PropertyId::CheckpointsDoNotOverlap,
        preset: "priority-race",
    },
    VariantInfo {
        variant: Variant::OnBufferSkipsNonEmptyNotification,
        name: "on-buffer-skips-non-empty-notification",
        bug: "RemoteInputChannel.onBuffer queues into an empty receivedBuffers without notifyChannelNonEmpty: the gate does not learn the channel has data",
        property: PropertyId::NoLostNotification,
        preset: "tiny",
    },
    VariantInfo {
        variant: Variant::RecoveredPushSkipsNonEmptyNotification,
        name: "recovered-push-skips-non-empty-notification",
        bug: "RecoveredInputChannel.onRecoveredStateBuffer queues into an empty queue without notifyChannelNonEmpty (flag off)",
        property: PropertyId::NoLostNotification,
        preset: "legacy",
    },
    VariantInfo {
        variant: Variant::LocalRecoveredPushSkipsNonEmptyNotification,
        name: "local-recovered-push-skips-non-empty-notification",
        bug: "LocalInputChannel.onRecoveredStateBuffer queues into an empty queue without notifyChannelNonEmpty",
        property: PropertyId::NoLostNotification,
        preset: "local-buffers",
    },
    VariantInfo {
        variant: Variant::MigratedChannelNotQueued,
        name: "migrated-channel-not-queued",
        bug: "Flink 2.3.0's convertRecoveredInputChannels leaves a converted channel with migrated buffers out of the gate's queue",
        property: PropertyId::NoLostNotification,
        preset: "migration",
    },
    VariantInfo {
        variant: Variant::TimeoutTriggersBeforeFirstBarrier,
        name: "timeout-triggers-before-first-barrier",
        bug: "the alignment timeout triggers the checkpoint in AlternatingWaitingForFirstBarrier too, before any of its barriers is in",
        property: PropertyId::TriggeredByItsBarriers,
        preset: "aligned-timeout",
    },
    VariantInfo {
        variant: Variant::AnnouncementConvertedBeforeTimeout,
        name: "announcement-converted-before-timeout",
        bug: "announcementReceived converts the announced barrier to a priority event in the aligned states too, before the alignment timed out",
        property: PropertyId::ConvertedOnlyOnceUnaligned,
        preset: "aligned-timeout",
    },
];

impl Variant {
    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        if self == Variant::Fixed {
            return "fixed";
        }
        VARIANTS.iter().find(|v| v.variant == self).map_or("fixed", |v| v.name)
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Variant> {
        if name == "fixed" {
            return Some(Variant::Fixed);
        }
        VARIANTS.iter().find(|v| v.name == name).map(|v| v.variant)
    }

    /// This variant's bug-zoo row (None for `Fixed`).
    pub fn info(self) -> Option<&'static VariantInfo> {
        VARIANTS.iter().find(|v| v.variant == self)
    }
}
