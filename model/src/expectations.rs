//! What the check expects of a configuration, whatever its preset says: the `sometimes`
//! properties it cannot reach, the findings about Flink it violates by design
//! (docs/findings.md), and the properties each Flink fix makes hold again.

use crate::config::{ChannelConfig, ChannelKind, Delivery, FlinkFix, ModelConfig, Upstream};
use crate::properties::PropertyId;

impl FlinkFix {
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
