//! Configurations of the model: which channels exist, what they recover and receive, and
//! which switches are on. Presets are named configurations used by the CLI, tests and CI.

use crate::properties::PropertyId;
use serde::{Deserialize, Serialize};

/// Which physical input channel class a channel stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelKind {
    /// `LocalInputChannel`: the consumer polls the producer's subpartition view directly.
    Local,
    /// `RemoteInputChannel`: credit-based network shuffle through Netty.
    Remote,
}

/// One element the upstream producer writes into the subpartition, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Upstream {
    /// A data buffer: needs credit on a remote channel.
    Data,
    /// An ordinary (non-priority) event: flows without credit.
    Event,
    /// `EndOfOutputChannelStateEvent`, which `PipelinedResultPartition.finishReadRecoveredState`
    /// writes first into every subpartition when the upstream task starts. Its data type,
    /// `RECOVERY_COMPLETION`, blocks the subpartition once it is handed out: only priority
    /// elements pass, with a backlog of 0, until the consumer's `resumeConsumption`.
    EndOfOutputChannelState,
}

/// How recovered buffers reach the physical channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// The channel-state drainer on the IO thread pushes recovered buffers one by one with
    /// `onRecoveredStateBuffer`, then `finishRecoveredBufferDelivery` once upstream is ready.
    #[default]
    Drainer,
    /// The in-memory path of apache/flink#28652 to #28662 (never released; #28663 deleted it):
    /// the task thread converts `RecoveredInputChannel`s with `toInputChannel(true)`, pushing
    /// every queued buffer and then the sentinel directly.
    Conversion,
    /// Nothing to recover: the channels are created with `needsRecovery = false` (not in
    /// recovery, `stateConsumedFuture` complete, credit notification on, full initial credit
    /// in the `PartitionRequest`). Every `recovered` must be 0.
    NoRecovery,
    /// The flag off (no checkpointing during recovery; Flink's path before FLINK-38544): the IO
    /// thread reads the recovered buffers into each channel's `RecoveredInputChannel` and ends
    /// them with `EndOfInputChannelStateEvent`; the task polls the recovered channels; once every
    /// state-consumed future is complete, the `requestPartitions` mail converts them with
    /// `toInputChannel(false)` into channels created without recovery and requests the
    /// partitions.
    Legacy,
    /// The flag on in Flink 2.3.0 (`execution.checkpointing.during-recovery.enabled`), before
    /// FLINK-38544's push path: the IO thread fills each channel's `RecoveredInputChannel` and
    /// ends it with `EndOfInputChannelStateEvent`, as flag off; the task may poll them
    /// meanwhile; once every channel's `finishReadRecoveredState` ran (the gate's
    /// `getBufferFilteringCompleteFuture()`), the `requestPartitions` mail converts them with
    /// `toInputChannel()`, MIGRATING what is still queued (the legacy sentinel included) into
    /// the new physical channel, created without recovery, which hands it out first.
    Migration,
}

impl Delivery {
    /// `needsRecovery` of the physical channels.
    pub fn needs_recovery(self) -> bool {
        !matches!(self, Delivery::NoRecovery | Delivery::Legacy | Delivery::Migration)
    }
}

/// A change to Flink's code that a finding proposes (docs/findings.md), switched on in the
/// model and in impl/ alike. A configuration without any models Flink as it is; with every one,
/// no preset needs `violated_by_config`. Not to be confused with the bug-zoo variant `fixed`,
/// which is the protocol as Flink has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FlinkFix {
    /// The lost update of `hasPendingPriorityEvent`: `LocalInputChannel.getNextBuffer` sets the
    /// flag from the view's head (`peekNextDataType().hasPriority()`) before it reads it. A
    /// clear that overwrote a producer's set, and a producer's set that comes after its barrier
    /// was polled, are both corrected at the next poll: the view's head, not the flag alone,
    /// decides whether a priority event is there.
    PriorityFromViewHead,
    /// The drainer's missed wake-up: `BufferManager.notifyBufferAvailable(Buffer)` wakes the
    /// threads waiting in `requestBufferBlocking` when it turns the buffer down too, so that
    /// they look at the pool again.
    WakeOnRefusedBuffer,
    /// The floating credit announced after `resumeConsumption`: `notifyBufferAvailable(Buffer)`
    /// announces its credit while it still holds `bufferQueue`, so `releaseFloatingBuffers`
    /// (which takes the same lock) cannot give the buffer back between the two.
    AnnounceUnderQueueLock,
    /// FLINK-40016 in 2.3.0's migration path, as apache/flink#28605 (master) and #28607
    /// (release-2.3) fixed it after 2.3.0: `LocalInputChannel` persists only what it polls from
    /// the view (`maybePersist`), not the migrated recovered buffers `checkpointStarted`
    /// persisted already.
    PersistOnlyUpstreamData,
}

impl FlinkFix {
    /// Every fix, in the order of docs/findings.md.
    pub const ALL: [FlinkFix; 4] = [
        FlinkFix::PriorityFromViewHead,
        FlinkFix::WakeOnRefusedBuffer,
        FlinkFix::AnnounceUnderQueueLock,
        FlinkFix::PersistOnlyUpstreamData,
    ];

    /// The kebab-case name used in configurations and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FlinkFix::PriorityFromViewHead => "priority-from-view-head",
            FlinkFix::WakeOnRefusedBuffer => "wake-on-refused-buffer",
            FlinkFix::AnnounceUnderQueueLock => "announce-under-queue-lock",
            FlinkFix::PersistOnlyUpstreamData => "persist-only-upstream-data",
        }
    }

    /// The fix of that name, or the list of names.
    pub fn parse(name: &str) -> Result<FlinkFix, String> {
        FlinkFix::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            let names: Vec<_> = FlinkFix::ALL.iter().map(|f| f.name()).collect();
            format!(
                "unknown Flink fix `{name}`; the fixes are: {}, or all",
                names.join(", ")
            )
        })
    }

    /// The findings' properties this fix makes hold again (`violated_by_config` without it).
    pub fn restores(self) -> &'static [PropertyId] {
        match self {
            FlinkFix::PriorityFromViewHead => &[PropertyId::PriorityHonoured],
            FlinkFix::WakeOnRefusedBuffer => DRAINER_MISSES_WAKEUP,
            FlinkFix::AnnounceUnderQueueLock => LATE_FLOATING_CREDIT,
            FlinkFix::PersistOnlyUpstreamData => MIGRATION_PERSISTS_TWICE,
        }
    }
}

/// One input channel of the gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Local or remote.
    pub kind: ChannelKind,
    /// Number of recovered data buffers read from the checkpoint for this channel.
    pub recovered: u8,
    /// What the upstream producer emits after recovery starts, in order. The first element is
    /// `end-of-output-channel-state` (`EndOfOutputChannelStateEvent`), and only the first.
    pub upstream: Vec<Upstream>,
    /// Exclusive buffers (`networkBuffersPerChannel`): a remote channel's initial credit; a local
    /// channel's recovery `BufferManager` lends them to the drainer (0: the drainer fills a local
    /// channel with heap buffers, as every channel is without the drainer).
    #[serde(default)]
    pub exclusive: u8,
    /// Floating buffers the gate's `LocalBufferPool` can lend this remote channel.
    #[serde(default)]
    pub floating: u8,
    /// How many of the last `upstream` elements the producer writes while the consumer runs
    /// (`ResultSubpartition.add`, one step each); the others are queued from the start.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u8,
    /// Local: `PipelinedSubpartition.add` notifies a priority event in a producer step of its
    /// own after its lock (`NotifyPriorityEvent`), and the task clears `hasPendingPriorityEvent`
    /// in a step of its own after polling the view (`ClearPendingPriorityEvent`), as the code
    /// does. Off: each is part of the step before (no state between them). With the drainer or
    /// the conversion: both leave a local channel in recovery reading the flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priority_notify_step: bool,
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// A complete configuration of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The channels of the one input gate, in channel-index order.
    pub channels: Vec<ChannelConfig>,
    /// Number of unaligned checkpoints (ids 1..=n) whose barriers every upstream emits.
    pub checkpoints: u8,
    /// How recovered buffers are delivered to the physical channels.
    #[serde(default)]
    pub delivery: Delivery,
    /// Whether the recovery-checkpoint trigger inserts `RecoveryCheckpointBarrier`s (PR4). Off
    /// is PR3, where every checkpoint during recovery is declined.
    #[serde(default = "yes")]
    pub insert_recovery_barriers: bool,
    /// Whether `releaseAllResources` (cancellation) may happen at any point, per channel.
    #[serde(default)]
    pub release: bool,
    /// Whether the upstreams may fail, each at most once and after the partition request: a
    /// remote channel's connection reports an error (`onError`), a local channel's producer
    /// releases its subpartition under the reader (`ResultSubpartition.release()`). Not written
    /// when off, so traces of configurations without faults do not mention it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub faults: bool,
    /// Whether `releaseAllResources` is two steps, as in Flink's code: `isReleased` first, then,
    /// after a window in which other threads read the flag but the queues are intact, the view,
    /// the queue, the stash and the buffers (`ReleaseQueuedBuffers`). Off, one step
    /// (docs/model.md, choice 26). Not written when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub release_step: bool,
    /// Whether checkpoints are aligned with an alignment timeout (`execution.checkpointing.
    /// aligned-checkpoint-timeout`): the upstream writes a timeoutable aligned barrier at the
    /// subpartition's tail, the remote channel queues it (stashes it in recovery) and puts an
    /// `EventAnnouncement` at its priority head, and the task's alignment timer converts the
    /// announced barrier with `convertToPriorityEvent` (docs/model.md, choice 24). Not written
    /// when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aligned_checkpoint_timeout: bool,
    /// Whether the gate has one `LocalBufferPool` for all its channels, as Flink's does: the
    /// drainers' requests, `onSenderBacklog`'s floating requests and every channel's recycles
    /// meet in it, and a recycled buffer goes to whichever manager registered first. Its size is
    /// the sum of the channels' `floating`. Off, each channel has a pool of its own (docs/model.md,
    /// choice 18). Not written when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_pool: bool,
    /// Whether an upstream may emit the barrier of checkpoint `n + 1` while checkpoint `n` is
    /// still pending. Flink never runs unaligned checkpoints concurrently (the coordinator
    /// triggers `n + 1` only after `n` completed or was aborted), so off by default: an upstream
    /// emits barrier `n + 1` once this task completed or declined `n`, or the coordinator
    /// aborted it (`abortPendingCheckpoint`, docs/model.md, choice 5). Not written when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overlapping_checkpoints: bool,
    /// Changes to Flink's code that the findings propose (docs/findings.md), each on in the
    /// model and in impl/. Empty: Flink as it is. Not written when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flink_fixes: Vec<FlinkFix>,
}

fn yes() -> bool {
    true
}

impl ModelConfig {
    /// Whether Flink's code is changed by `fix` here.
    pub fn has_fix(&self, fix: FlinkFix) -> bool {
        self.flink_fixes.contains(&fix)
    }

    /// This configuration with every fix of docs/findings.md on.
    pub fn with_every_fix(mut self) -> Self {
        self.flink_fixes = FlinkFix::ALL.to_vec();
        self
    }

    /// Checks that the configuration is inside the bounds the model supports.
    pub fn validate(&self) -> Result<(), String> {
        if self.channels.is_empty() {
            return Err("a configuration needs at least one channel".into());
        }
        if self.channels.len() > 4 {
            return Err(format!("at most 4 channels are supported, got {}", self.channels.len()));
        }
        if self.checkpoints > 4 {
            return Err(format!("at most 4 checkpoints are supported, got {}", self.checkpoints));
        }
        if self.delivery == Delivery::Conversion && self.release {
            // The RecoveredInputChannels before conversion hold their buffers implicitly, so
            // a release or close there would strand them (docs/model.md, presets).
            return Err(
                "delivery conversion does not model a release before the conversion; set release to false".into(),
            );
        }
        if self.faults
            && matches!(
                self.delivery,
                Delivery::Conversion | Delivery::Legacy | Delivery::Migration
            )
        {
            // A failure before the conversion would hit a RecoveredInputChannel, whose errors
            // the model does not describe.
            return Err("faults are modelled on physical channels; use delivery drainer or no-recovery".into());
        }
        if self.release_step && !(self.release && matches!(self.delivery, Delivery::Drainer | Delivery::NoRecovery)) {
            return Err("release_step splits the release of a physical channel: it needs release true and delivery drainer or no-recovery".into());
        }
        if self.shared_pool
            && (self.release || self.faults || !matches!(self.delivery, Delivery::Drainer | Delivery::NoRecovery))
        {
            // A closed gate's destroyed pool returns its segments to the global pool, which the
            // model keeps per channel; and the flag-off paths' channels borrow nothing.
            return Err(
                "shared_pool is modelled with delivery drainer or no-recovery, without release or faults".into(),
            );
        }
        if self.release_step && self.faults {
            return Err("release_step is not modelled together with faults".into());
        }
        if self.aligned_checkpoint_timeout {
            // Remote channels: a local one announces nothing. One checkpoint: the handler's
            // state after a completed or timed-out alignment is not modelled for the next.
            let remote = self.channels.iter().all(|c| c.kind == ChannelKind::Remote);
            if !remote || self.checkpoints != 1 {
                return Err("aligned_checkpoint_timeout is modelled for remote channels and one checkpoint".into());
            }
            if self.delivery != Delivery::Drainer || self.release || self.faults {
                return Err(
                    "aligned_checkpoint_timeout is modelled with delivery drainer, without release or faults".into(),
                );
            }
        }
        for (i, c) in self.channels.iter().enumerate() {
            // finishReadRecoveredState writes the event first into every subpartition of a
            // task that starts (restored or not, in a job graph without loops).
            if c.upstream.first() != Some(&Upstream::EndOfOutputChannelState) {
                return Err(format!(
                    "channel {i}: the upstream begins with end-of-output-channel-state (EndOfOutputChannelStateEvent, which every upstream task writes first when it starts)"
                ));
            }
            if c.upstream[1..].contains(&Upstream::EndOfOutputChannelState) {
                return Err(format!("channel {i}: end-of-output-channel-state comes once, first"));
            }
            if c.late as usize >= c.upstream.len() {
                return Err(format!(
                    "channel {i}: late ({}) counts upstream elements after end-of-output-channel-state; there are only {}",
                    c.late,
                    c.upstream.len() - 1
                ));
            }
            if c.recovered > 8 || c.upstream.len() > 8 {
                return Err(format!("channel {i}: at most 8 recovered and 8 upstream elements"));
            }
            if self.delivery == Delivery::NoRecovery && c.recovered > 0 {
                return Err(format!(
                    "channel {i}: delivery no-recovery has nothing to recover; recovered must be 0"
                ));
            }
            if c.exclusive > 4 || c.floating > 4 {
                return Err(format!("channel {i}: at most 4 exclusive and 4 floating buffers"));
            }
            if c.kind == ChannelKind::Remote && c.priority_notify_step {
                return Err(format!(
                    "channel {i}: priority_notify_step is about a local channel's listener; a remote channel's priority events arrive through onBuffer"
                ));
            }
            if c.priority_notify_step && !matches!(self.delivery, Delivery::Drainer | Delivery::Conversion) {
                return Err(format!(
                    "channel {i}: priority_notify_step is modelled with delivery drainer or conversion, where a local channel in recovery reads hasPendingPriorityEvent"
                ));
            }
            if c.kind == ChannelKind::Local && c.floating > 0 {
                return Err(format!(
                    "channel {i}: a local channel has no credit; floating must be 0"
                ));
            }
            if c.kind == ChannelKind::Local && c.exclusive > 0 && self.delivery != Delivery::Drainer {
                return Err(format!(
                    "channel {i}: a local channel lends exclusive buffers only to the drainer (its recovery BufferManager); exclusive must be 0 with delivery {:?}",
                    self.delivery
                ));
            }
            let data = c.upstream.iter().filter(|u| **u == Upstream::Data).count();
            // With initial credit 0 the server announces the backlog (`BacklogAnnouncement`) and
            // the client asks the pool for floating buffers: there must be one to ask for.
            let pool_has_floating = if self.shared_pool {
                self.channels.iter().any(|c| c.floating > 0)
            } else {
                c.floating > 0
            };
            if c.kind == ChannelKind::Remote && data > 0 && c.exclusive == 0 && !pool_has_floating {
                return Err(format!(
                    "channel {i}: a remote channel that receives data needs an exclusive buffer, or a floating one in its pool to ask for when the server announces its backlog"
                ));
            }
            // The model's server announces only a backlog larger than any it announced before;
            // a write after the reader spent its credit can bring a smaller one that Flink would
            // announce (docs/model.md, choice 27).
            if c.kind == ChannelKind::Remote && c.exclusive == 0 && c.late > 0 {
                return Err(format!(
                    "channel {i}: late writes on a remote channel without exclusive buffers are not modelled: its server announces only a backlog larger than any before"
                ));
            }
        }
        Ok(())
    }
}

impl ModelConfig {
    /// `sometimes` properties this configuration cannot reach whatever its preset says: without
    /// faults no task fails; only the drainer leaves recovered data undrained while a recovery
    /// barrier is inserted (the other deliveries push everything before any checkpoint); only
    /// aligned checkpoints have announcements to convert; only a shared pool hands one
    /// channel's buffer to another.
    pub fn unreachable_by_config(&self) -> Vec<PropertyId> {
        let spills = self.delivery == Delivery::Drainer && self.insert_recovery_barriers;
        [
            (self.faults, PropertyId::TaskFails),
            (spills, PropertyId::CheckpointSpillsUndrainedData),
            (self.aligned_checkpoint_timeout, PropertyId::AnnouncedBarrierConverted),
            (self.shared_pool, PropertyId::LentAcross),
        ]
        .into_iter()
        .filter(|(reachable, _)| !reachable)
        .map(|(_, p)| p)
        .collect()
    }
}

/// The safety properties Flink 2.3.0's migration path violates (FLINK-40016 is not fixed
/// there): a migrated buffer still queued in a `LocalInputChannel` when a checkpoint starts is
/// written by `checkpointStarted` and again by `maybePersist` when it is polled.
pub const MIGRATION_PERSISTS_TWICE: &[PropertyId] = &[
    PropertyId::PersistedAtMostOnce,
    PropertyId::PersistedContentIsExact,
    PropertyId::RecoveredStateFromItsSource,
];

/// The liveness properties the drainer's missed wake-up breaks (docs/findings.md): parked in
/// `requestBufferBlocking` for a remote channel without exclusive buffers, it is not woken by
/// the buffer its manager turns down once a zero backlog reset `numRequiredBuffers`.
pub const DRAINER_MISSES_WAKEUP: &[PropertyId] = &[
    PropertyId::RecoveryCompletes,
    PropertyId::AllLiveDataDelivered,
    PropertyId::EveryBufferReturnsHome,
    PropertyId::EveryCheckpointEnds,
];

/// What a floating credit announced after `resumeConsumption` breaks (docs/findings.md): the
/// server holds a credit the consumer has no buffer for, and the next data buffer fails the
/// channel.
pub const LATE_FLOATING_CREDIT: &[PropertyId] = &[
    PropertyId::CreditConservation,
    PropertyId::NoLostCredit,
    PropertyId::NoProtocolViolation,
    PropertyId::AllLiveDataDelivered,
    PropertyId::EveryCheckpointEnds,
];

impl ModelConfig {
    /// Properties this configuration violates by design: findings about the Flink version it
    /// models, not bugs of the model (docs/findings.md). `check` reports them violated
    /// without failing. Each is keyed on what the finding needs, which may be more than a
    /// configuration reaches; the model tests assert the verdict of every preset.
    pub fn violated_by_config(&self) -> Vec<PropertyId> {
        let mut found = Vec::new();
        // A finding whose fix is on violates nothing.
        let flink_has = |fix| !self.has_fix(fix);
        if self.delivery == Delivery::Migration && flink_has(FlinkFix::PersistOnlyUpstreamData) {
            found.extend(MIGRATION_PERSISTS_TWICE);
        }
        if self.channels.iter().any(|c| c.priority_notify_step) && flink_has(FlinkFix::PriorityFromViewHead) {
            // A lost update of hasPendingPriorityEvent.
            found.push(PropertyId::PriorityHonoured);
        }
        // Both need a remote channel without exclusive buffers that the drainer fills from the
        // pool: the wake-up is missed once the pool ran dry; the late credit is for a drained
        // buffer recycled to a manager that a barrier's backlog made wait for one.
        let drained = |c: &ChannelConfig| {
            c.kind == ChannelKind::Remote && c.exclusive == 0 && c.recovered > 0 && self.delivery == Delivery::Drainer
        };
        let pool = |c: &ChannelConfig| {
            if self.shared_pool {
                self.channels.iter().map(|o| o.floating).sum()
            } else {
                c.floating
            }
        };
        if self.channels.iter().any(|c| drained(c) && c.recovered > pool(c)) && flink_has(FlinkFix::WakeOnRefusedBuffer)
        {
            found.extend(DRAINER_MISSES_WAKEUP);
        }
        let data = |c: &ChannelConfig| c.upstream.contains(&Upstream::Data);
        if self.checkpoints > 0
            && self.channels.iter().any(|c| drained(c) && pool(c) > 0 && data(c))
            && flink_has(FlinkFix::AnnounceUnderQueueLock)
        {
            for p in LATE_FLOATING_CREDIT {
                if !found.contains(p) {
                    found.push(*p);
                }
            }
        }
        found
    }
}

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

/// A local channel with `recovered` buffers of recovered state and `upstream` to come.
pub fn local(recovered: u8, upstream: &[Upstream]) -> ChannelConfig {
    ChannelConfig {
        kind: ChannelKind::Local,
        recovered,
        upstream: upstream.to_vec(),
        exclusive: 0,
        floating: 0,
        late: 0,
        priority_notify_step: false,
    }
}

/// A remote channel, also with `exclusive` buffers of its own and `floating` ones in the pool.
pub fn remote(recovered: u8, upstream: &[Upstream], exclusive: u8, floating: u8) -> ChannelConfig {
    ChannelConfig {
        kind: ChannelKind::Remote,
        recovered,
        upstream: upstream.to_vec(),
        exclusive,
        floating,
        late: 0,
        priority_notify_step: false,
    }
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

    /// A remote channel with floating buffers only gets credit because the server announces its
    /// backlog (`BacklogAnnouncement`): the data is delivered, by way of that announcement. With
    /// no floating buffer either, it could never receive data: rejected.
    #[test]
    fn a_remote_channel_without_exclusive_buffers_receives_data_after_the_backlog_announcement() {
        use crate::Action;
        use stateright::Model;
        let cfg = ModelConfig {
            channels: vec![remote(0, &[O, D], 0, 1)],
            checkpoints: 0,
            delivery: Delivery::NoRecovery,
            insert_recovery_barriers: false,
            release: false,
            faults: false,
            release_step: false,
            aligned_checkpoint_timeout: false,
            shared_pool: false,
            overlapping_checkpoints: false,
            flink_fixes: vec![],
        };
        cfg.validate().unwrap();
        let model = crate::RecoveryModel::new(cfg.clone(), crate::Variant::Fixed);
        assert!(crate::tooling::check::shortest_counterexample(&model, PropertyId::AllLiveDataDelivered).is_none());
        let path = crate::tooling::check::shortest_example(&model, PropertyId::EverythingDelivered).unwrap();
        assert!(path.contains(&Action::AnnounceBacklog { channel: 0 }), "{path:?}");
        // Without the announcement the channel would wait for credit forever.
        let mut s = model.init_states().remove(0);
        s = model.next_state(&s, Action::RequestPartitions).unwrap();
        assert_eq!(
            model.next_states(&s).len(),
            1,
            "only the announcement is enabled after the request"
        );
        let late = ModelConfig {
            channels: vec![ChannelConfig {
                late: 1,
                ..remote(0, &[O, D], 0, 1)
            }],
            ..cfg.clone()
        };
        assert!(late.validate().unwrap_err().contains("late"));
        let no_floating = ModelConfig {
            channels: vec![remote(0, &[O, D], 0, 0)],
            ..cfg
        };
        let err = no_floating.validate().unwrap_err();
        assert!(err.contains("backlog"), "{err}");
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
