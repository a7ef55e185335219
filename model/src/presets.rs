//! The presets: named configurations, each with the `sometimes` properties it cannot reach by
//! design.

use crate::config::{ChannelConfig, Delivery, ModelConfig, Upstream, local, remote};
use crate::properties::PropertyId;

/// A named configuration.
pub struct Preset {
    /// Name used on the command line.
    pub name: &'static str,
    /// One line saying what it is for.
    pub summary: &'static str,
    /// Builds the configuration.
    pub config: fn() -> ModelConfig,
    /// `sometimes` properties this configuration cannot reach by design (each says why in
    /// docs/model.md); their missing examples do not fail the check.
    pub unreachable: &'static [PropertyId],
}

use Upstream::{Data as D, EndOfOutputChannelState as O, Event as E};

/// What no channel in recovery can reach: nothing recovered is persisted, stashed, announced by
/// enableNotify, declined for a missing barrier or queued behind a sentinel, and no checkpoint
/// runs during recovery (channels created without recovery, or the flag-off path, whose physical
/// channels are created without recovery).
const NO_RECOVERY_STATE: &[PropertyId] = &[
    PropertyId::CheckpointPersistsRecoveredData,
    PropertyId::EventStashedAndReplayed,
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::CheckpointCompletesDuringRecovery,
    PropertyId::RecoveryBarrierBehindSentinel,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// Without release no channel is drained under a checkpoint: none is declined for a missing
/// barrier, and no stale recovery barrier is left behind a decline.
const NO_DECLINE: &[PropertyId] = &[
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// [`NO_DECLINE`], and with one exclusive buffer and no floating one, `enableNotify` and a
/// recycle never both have a buffer to announce.
const TINY_UNREACHABLE: &[PropertyId] = &[
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// An aligned checkpoint with a timeout on one channel: the upstream's own timeout sends the
/// barrier unaligned during recovery, or it waits behind the blocking event; no data is
/// written behind it, and nothing declines.
const ALIGNED_TIMEOUT_UNREACHABLE: &[PropertyId] = &[
    PropertyId::CheckpointPersistsLiveData,
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// Two channels aligned with a timeout, nothing recovered: a timeout with one barrier in goes
/// unaligned and persists the other channel's data before its barrier.
const ALIGNED_TIMEOUT_TWO_CHANNELS_UNREACHABLE: &[PropertyId] = &[
    PropertyId::CheckpointPersistsRecoveredData,
    PropertyId::CheckpointSpillsUndrainedData,
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// With one channel's recovery only and no checkpoint: nothing persisted, spilled, declined
/// or inserted; the shared pool is what this preset is for. No floating buffer waits
/// unannounced for `enableNotify`: the blocked upstreams announce no backlog during recovery.
const SHARED_POOL_UNREACHABLE: &[PropertyId] = &[
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointPersistsRecoveredData,
    PropertyId::CheckpointSpillsUndrainedData,
    PropertyId::CheckpointPersistsLiveData,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::CheckpointCompletesDuringRecovery,
    PropertyId::RecoveryBarrierBehindSentinel,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// [`SHARED_POOL_UNREACHABLE`]: no exclusive buffer, and the pool's one buffer is lent to the
/// drainer, never queued unannounced.
const POOL_STARVATION_UNREACHABLE: &[PropertyId] = &[
    PropertyId::CheckpointPersistsRecoveredData,
    PropertyId::CheckpointSpillsUndrainedData,
    PropertyId::CheckpointPersistsLiveData,
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::CheckpointCompletesDuringRecovery,
    PropertyId::RecoveryBarrierBehindSentinel,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// [`NO_RECOVERY_STATE`], and without a checkpoint no live data is persisted either.
const SHARED_POOL_LIVE_UNREACHABLE: &[PropertyId] = &[
    PropertyId::CheckpointPersistsRecoveredData,
    PropertyId::CheckpointPersistsLiveData,
    PropertyId::EventStashedAndReplayed,
    PropertyId::RecycleRacesEnableNotify,
    PropertyId::CheckpointDeclinedForMissingBarrier,
    PropertyId::CheckpointCompletesDuringRecovery,
    PropertyId::RecoveryBarrierBehindSentinel,
    PropertyId::StaleRecoveryBarrierPolled,
];

/// All presets, smallest first.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "tiny",
        summary: "local + remote, one checkpoint, no release: every safety and liveness verdict in seconds (debug)",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "local-buffers",
        summary: "one local channel whose recovery BufferManager lends its exclusive buffer to the drainer; release at any point",
        config: || ModelConfig {
            // Two recovered buffers and one exclusive buffer: the drainer waits for the first to
            // be recycled, and a release can catch a buffer with the operator.
            channels: vec![ChannelConfig {
                exclusive: 1,
                ..local(2, &[O, D])
            }],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One local channel: no stash, no credit (nothing to race enableNotify), no second
        // channel to decline before, and no live data persisted on the consumer side (the
        // barrier overtakes it in the subpartition; the producer's snapshot holds it).
        unreachable: &[
            PropertyId::CheckpointPersistsLiveData,
            PropertyId::EventStashedAndReplayed,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "ci",
        summary: "local + remote with a floating buffer, one checkpoint, release at any point: every example",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 1)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: &[],
    },
    Preset {
        name: "floating",
        summary: "tiny with a floating buffer on the remote channel: the floating-credit path",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 1)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_DECLINE,
    },
    Preset {
        name: "borrow",
        summary: "remote + local; two recovered buffers, one exclusive buffer: the drainer borrows from the pool",
        config: || ModelConfig {
            // No live data on the remote channel: no backlog requests the floating buffer
            // first, so the second recovered buffer must come from the pool. The remote channel
            // comes first here, so that no channel kind always has the same index.
            channels: vec![remote(2, &[O], 1, 1), local(1, &[O, D])],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One exclusive buffer: enableNotify and a recycle never both have one to announce.
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "conversion",
        summary: "apache/flink#28652 to #28662 (never released; #28663 deleted it): toInputChannel(true) pushes everything on the task thread",
        config: || ModelConfig {
            // The local upstream has written nothing: after recovery the gate polls a local
            // channel with an empty subpartition (re-queued by onRecoveredStateConsumed).
            channels: vec![local(1, &[O]), remote(1, &[O, D], 1, 1)],
            checkpoints: 1,
            delivery: Delivery::Conversion,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // Recovered buffers live on the heap (the released RecoveredInputChannel's), so no
        // channel buffer is held at enableNotify; no release, so nothing declines.
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "no-trigger",
        summary: "apache/flink#28659 (before #28660's trigger): no RecoveryCheckpointBarrier is inserted, so checkpoints in recovery decline",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: false,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // Without recovery barriers nothing recovered is persisted, and no queue has one.
        unreachable: &[
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointPersistsRecoveredData,
            PropertyId::CheckpointCompletesDuringRecovery,
            PropertyId::RecoveryBarrierBehindSentinel,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "no-recovery",
        summary: "channels created without recovery (needsRecovery = false): full initial credit, release at any point",
        config: || ModelConfig {
            channels: vec![local(0, &[O, D, E]), remote(0, &[O, D], 2, 0)],
            checkpoints: 1,
            delivery: Delivery::NoRecovery,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_RECOVERY_STATE,
    },
    Preset {
        name: "subsume",
        summary: "two checkpoints on channels created without recovery: an obsolete barrier, a subsumed checkpoint (master's branch)",
        config: || ModelConfig {
            // The remote channel's barrier of one checkpoint can wait unpolled while the local
            // channel's barrier of the other triggers; its upstream data lies before both.
            channels: vec![local(0, &[O]), remote(0, &[O, D], 1, 0)],
            checkpoints: 2,
            delivery: Delivery::NoRecovery,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_RECOVERY_STATE,
    },
    Preset {
        name: "legacy",
        summary: "the flag off: the task polls RecoveredInputChannels, then converts them without recovery; release at any point",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Legacy,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_RECOVERY_STATE,
    },
    Preset {
        name: "migration",
        summary: "Flink 2.3.0's flag on: RecoveredInputChannels converted with their leftovers migrated into the physical channels; release at any point",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Migration,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // No channel is ever in recovery, but a checkpoint can start while migrated recovered
        // data is still queued (and persists it).
        unreachable: &[
            PropertyId::EventStashedAndReplayed,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::CheckpointCompletesDuringRecovery,
            PropertyId::RecoveryBarrierBehindSentinel,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "faults",
        summary: "tiny whose upstreams fail: a remote connection error, a local subpartition released under its reader",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: true,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "late",
        summary: "tiny whose local producer writes while the consumer runs: data arriving before, during and after recovery",
        config: || ModelConfig {
            channels: vec![
                ChannelConfig {
                    late: 1,
                    ..local(1, &[O, D, D])
                },
                remote(1, &[O, D], 1, 0),
            ],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "release-window-local",
        summary: "one local channel released at any point in Flink's two parts: isReleased, then the view, the queue and the buffers",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D])],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: true,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One local channel: no stash, no credit, no second channel to decline before, and no
        // live data persisted on the consumer side.
        unreachable: &[
            PropertyId::CheckpointPersistsLiveData,
            PropertyId::EventStashedAndReplayed,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "release-window-remote",
        summary: "one remote channel released at any point in Flink's two parts: isReleased, then the queue, the stash and the buffers",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: true,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One channel: no second channel to decline before; one exclusive buffer and no floating
        // one, as in tiny.
        unreachable: &[
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "release-floating",
        summary: "one remote channel with a floating buffer, released at any point in Flink's two parts: the floating buffer's way back to the pool from every state",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, D, D], 1, 1)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: true,
            faults: false,
            release_step: true,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One channel: no second channel to decline before.
        unreachable: &[PropertyId::StaleRecoveryBarrierPolled],
    },
    Preset {
        name: "stash-order",
        summary: "remote(1; eoo e d): the event behind EndOfOutputChannelStateEvent waits in the blocked subpartition until recovery ends, so the stash holds the recovery-completion event alone",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, E, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: TINY_UNREACHABLE,
    },
    Preset {
        name: "aligned-timeout",
        summary: "one remote channel, an aligned checkpoint with timeout: its barrier waits behind the blocking EndOfOutputChannelStateEvent until recovery ends, then the alignment timer's convertToPriorityEvent",
        config: || ModelConfig {
            channels: vec![remote(1, &[O], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: true,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: ALIGNED_TIMEOUT_UNREACHABLE,
    },
    Preset {
        name: "aligned-timeout-two-channels",
        summary: "two remote channels, an aligned checkpoint with timeout after recovery: each aligned barrier blocks its subpartition; the alignment completes and resumes both, or times out with one barrier in and goes unaligned",
        config: || ModelConfig {
            // The data is written while the consumer runs, so it may follow the barrier.
            channels: vec![
                remote(0, &[O], 1, 0),
                ChannelConfig {
                    late: 1,
                    ..remote(0, &[O, D], 1, 0)
                },
            ],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: true,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: ALIGNED_TIMEOUT_TWO_CHANNELS_UNREACHABLE,
    },
    Preset {
        name: "shared-pool",
        summary: "two remote channels borrowing from the gate's one LocalBufferPool: a recycled floating buffer goes to the other channel's waiting manager",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, D], 1, 1), remote(0, &[O, D], 1, 0)],
            checkpoints: 0,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: true,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: SHARED_POOL_UNREACHABLE,
    },
    Preset {
        name: "shared-pool-floating-only",
        summary: "two remote channels sharing the gate's LocalBufferPool, the second without exclusive buffers: its every buffer is a floating one the pool hands it, some recycled by the first",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, D], 1, 1), remote(0, &[O, D], 0, 0)],
            checkpoints: 0,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: true,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: SHARED_POOL_UNREACHABLE,
    },
    Preset {
        name: "shared-pool-live",
        summary: "two remote channels created without recovery borrowing from the gate's one LocalBufferPool: the floating-buffer paths Flink 2.3.0 has",
        config: || ModelConfig {
            channels: vec![remote(0, &[O, D], 1, 1), remote(0, &[O, D], 1, 0)],
            checkpoints: 0,
            delivery: Delivery::NoRecovery,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: true,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: SHARED_POOL_LIVE_UNREACHABLE,
    },
    Preset {
        name: "pool-starvation",
        summary: "two remote channels without exclusive buffers sharing the gate's pool: the blocked upstreams announce no backlog during recovery, so the drainer gets the pool's buffer",
        config: || ModelConfig {
            channels: vec![remote(1, &[O], 0, 1), remote(0, &[O, D], 0, 0)],
            checkpoints: 0,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: true,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: POOL_STARVATION_UNREACHABLE,
    },
    Preset {
        name: "priority-race",
        summary: "one local channel, two checkpoints, add's priority notification and the task's flag clear as steps of their own",
        config: || ModelConfig {
            channels: vec![ChannelConfig {
                priority_notify_step: true,
                ..local(1, &[O, D])
            }],
            checkpoints: 2,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // One local channel: no stash, no credit, no second channel to decline before, and no
        // live data persisted on the consumer side (the barrier overtakes it).
        unreachable: &[
            PropertyId::CheckpointPersistsLiveData,
            PropertyId::EventStashedAndReplayed,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "drain-wakeup",
        summary: "one remote channel without exclusive buffers (read-buffer.required-per-gate.max at most the channels), two recovered buffers, one floating buffer: the drainer parks for the second and misses its wake-up",
        config: || ModelConfig {
            channels: vec![remote(2, &[O, D], 0, 1)],
            checkpoints: 0,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // No checkpoint; the one floating buffer is lent to the drainer, never queued
        // unannounced; one channel.
        unreachable: &[
            PropertyId::CheckpointPersistsRecoveredData,
            PropertyId::CheckpointSpillsUndrainedData,
            PropertyId::CheckpointPersistsLiveData,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::CheckpointCompletesDuringRecovery,
            PropertyId::RecoveryBarrierBehindSentinel,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "recovery-buffer-wait",
        summary: "one remote channel with one exclusive buffer and no floating one, two recovered buffers, one checkpoint: the drainer parks for the second until the task recycles the first, and the recycle wakes it",
        config: || ModelConfig {
            channels: vec![remote(2, &[O, D], 1, 0)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        // No floating buffer to queue unannounced; one channel, never released: no checkpoint
        // is declined for a missing barrier, so no recovery barrier goes stale.
        unreachable: &[
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "late-floating-credit",
        summary: "one remote channel without exclusive buffers, one floating buffer, one checkpoint: a floating credit announced after resumeConsumption reset the credit",
        config: || ModelConfig {
            channels: vec![remote(1, &[O, D], 0, 1)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: &[
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    },
    Preset {
        name: "wide",
        summary: "two recovered buffers per channel, two exclusive buffers and a floating one (seconds)",
        config: || ModelConfig {
            channels: vec![local(2, &[O, D]), remote(2, &[O, D], 2, 1)],
            checkpoints: 1,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_DECLINE,
    },
    Preset {
        name: "deep",
        summary: "two checkpoints, a floating buffer: a newer checkpoint can subsume an older one (half a minute)",
        config: || ModelConfig {
            channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 1)],
            checkpoints: 2,
            delivery: Delivery::Drainer,
            insert_recovery_barriers: true,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        },
        unreachable: NO_DECLINE,
    },
];

/// Looks a preset up by name.
pub fn preset(name: &str) -> Option<ModelConfig> {
    find_preset(name).map(|p| (p.config)())
}

/// The preset called `name`.
pub fn find_preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The names of all presets, for error messages.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for p in PRESETS {
            (p.config)().validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
    }

    /// docs/performance.md argues that a symmetry reduction would merge no state of any
    /// preset, because no preset has two channels configured alike. A preset that does may
    /// make one worth having: revisit that section.
    #[test]
    fn no_preset_has_two_channels_configured_alike() {
        for p in PRESETS {
            let channels = (p.config)().channels;
            for (i, a) in channels.iter().enumerate() {
                for b in &channels[i + 1..] {
                    assert_ne!(
                        a, b,
                        "{}: two channels are interchangeable (docs/performance.md, Reductions)",
                        p.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_release_before_conversion_is_rejected() {
        let mut cfg = preset("conversion").unwrap();
        cfg.release = true;
        let err = cfg.validate().unwrap_err();
        assert!(err.contains("conversion"), "{err}");
    }

    #[test]
    fn faults_before_a_conversion_are_rejected() {
        let mut cfg = preset("legacy").unwrap();
        cfg.release = false;
        cfg.faults = true;
        let err = cfg.validate().unwrap_err();
        assert!(err.contains("faults"), "{err}");
    }

    #[test]
    fn aligned_checkpoint_timeout_is_refused_where_it_is_not_modelled() {
        let ok = preset("aligned-timeout").unwrap();
        ok.validate().unwrap();
        let local_and_remote = ModelConfig {
            channels: vec![remote(1, &[O], 1, 0), local(0, &[O])],
            ..ok.clone()
        };
        let local_channel = ModelConfig {
            channels: vec![local(1, &[O, D])],
            ..ok.clone()
        };
        let two_checkpoints = ModelConfig {
            checkpoints: 2,
            ..ok.clone()
        };
        let release = ModelConfig {
            release: true,
            ..ok.clone()
        };
        let legacy = ModelConfig {
            delivery: Delivery::Legacy,
            ..ok
        };
        for cfg in [local_and_remote, local_channel, two_checkpoints, release, legacy] {
            let err = cfg.validate().unwrap_err();
            assert!(err.contains("aligned_checkpoint_timeout"), "{err}");
        }
    }

    #[test]
    fn a_configuration_without_aligned_checkpoints_does_not_write_the_switch() {
        let json = serde_json::to_string(&preset("tiny").unwrap()).unwrap();
        assert!(!json.contains("aligned_checkpoint_timeout"), "{json}");
        let json = serde_json::to_string(&preset("aligned-timeout").unwrap()).unwrap();
        assert!(json.contains("\"aligned_checkpoint_timeout\":true"), "{json}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = serde_json::from_str::<ModelConfig>(r#"{"channels": [], "checkpoints": 1, "bogus": 1}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
