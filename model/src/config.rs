//! Configurations of the model: which channels exist, what they recover and receive, and
//! which switches are on. Presets are named configurations used by the CLI, tests and CI.

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
