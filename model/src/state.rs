//! The model's state: one [`Channel`] per input channel (consumer, buffer manager, producer and
//! network link of that channel) plus the threads' program counters and the checkpoints.
//!
//! Buffers carry ids so that ownership, order, loss and duplication are checkable. Fields named
//! `ghost_*` are not in Flink: they record history the properties need.
//!
//! With the files of this folder, the state is the model's kernel: the data of each Flink class
//! (its fields, and the methods that touch them alone) sits here, below the class's steps, so
//! that the state imports nothing above it.

pub mod buffer_manager;
pub mod channel_state_persister;
pub mod elements;
pub mod input_channels_with_data;
pub mod local_buffer_pool;
pub mod producer;
pub mod sequential_channel_state_reader;

pub use buffer_manager::BufferManager;
pub use channel_state_persister::ChannelStatePersister;
pub use elements::*;
pub use input_channels_with_data::InputChannelsWithData;
pub use local_buffer_pool::LocalBufferPool;
pub use producer::Producer;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;
use std::hash::BuildHasher;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a protocol assertion fired; any of these is a safety violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Violation {
    /// `onBuffer` got a live data buffer while the channel is in recovery (bug B10's assertion).
    DataDuringRecovery,
    /// `requestBuffer()` returned null for an arriving data buffer: credit was over-announced.
    NoBufferForData,
    /// `offerRecoveredBuffer`: push into recovered buffers after recovery finished.
    PushAfterRecovery,
    /// `onRecoveredStateConsumed`: recovery already finished.
    RecoveryAlreadyFinished,
    /// The producer sent a data buffer without credit (`no credit available`).
    SendWithoutCredit,
    /// `pullPriorityFromSubpartitionView`: expected a priority event at the head of the view.
    ExpectedPriorityEvent,
    /// `PipelinedSubpartition.resumeConsumption`: "Should be blocked by checkpoint."
    NotBlocked,
    /// Not an assertion of Flink's: after `onSenderBacklog(backlog)` the manager's
    /// `numRequiredBuffers` is not `backlog + initialCredit` (an action property, checked on the
    /// step because the backlog is gone from the state after it).
    RequiredNotBacklogPlusInitialCredit,
}

/// One input channel: its consumer side, buffer manager, persister, producer and wire.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    // --- consumer channel, guarded by the queue monitor ---
    /// `recoveredBuffers` (local) or `receivedBuffers` (remote); priority elements at the head.
    pub queue: Queue,
    /// Number of priority elements at the head of `queue` (remote `PrioritizedDeque`).
    pub priority_len: u8,
    /// `recoveryEventStash` (remote): ordinary upstream events held back during recovery.
    pub stash: Stash,
    /// `inRecovery`.
    pub in_recovery: bool,
    /// `recoverySequenceNumber`: the next number to hand out.
    pub recovery_seq: i32,
    /// `upstreamReady` latch is open.
    pub upstream_ready: bool,
    /// `isReleased`.
    pub released: bool,
    /// `isReleased` is set and the rest of `releaseAllResources` (the view, the queue, the
    /// buffers) has not run yet (`release_step`): the canceler's next step.
    pub releasing: bool,
    /// `stateConsumedFuture` is complete (normally or, on release, exceptionally).
    pub state_consumed: bool,
    /// Local: `hasPendingPriorityEvent`.
    pub pending_priority: bool,
    /// Local: the subpartition view was created with this channel as its availability
    /// listener (`requestSubpartitions` on a live channel); it stays after a release.
    pub listener: bool,
    /// Remote: `cause`, set by `onError` (the connection failed); `getNextBuffer` throws it.
    pub error: bool,
    /// Remote: `lastBarrierId` / `lastBarrierSequenceNumber` (-1 = NONE).
    pub last_barrier: (i8, i32),
    /// `channelStatePersister`.
    pub persister: ChannelStatePersister,
    // --- remote only ---
    /// `bufferManager`.
    pub bm: BufferManager,
    /// `unannouncedCredit`.
    pub unannounced_credit: u8,
    /// `notifyCreditAvailable` queued an `AddCredit` write on the Netty client.
    pub add_credit_queued: bool,
    /// `resumeConsumption` queued a `ResumeConsumption` write on the Netty client.
    pub resume_queued: bool,
    /// `AddCredit(k)` and `ResumeConsumption` messages on the wire, client to server, in order.
    pub add_credit_in_flight: Credits,
    /// Network buffers the consumer holds after `getNextBuffer` until it recycles them.
    pub held: Buffers,
    /// Exclusive segments handed back to the global pool by a released manager.
    pub global_pool: Buffers,
    /// Producer side: subpartition, view reader and the wire server to client.
    pub producer: Producer,
    // --- ghosts ---
    /// Recovered buffers pushed so far (the drainer's or conversion's cursor).
    pub ghost_pushed: u8,
    /// What the gate handed to the operator, in order.
    pub ghost_delivered: Deliveries,
    /// Recovered buffers recycled without being delivered (pushed into or drained from a
    /// released channel).
    pub ghost_freed: RecoveredIds,
    /// What the `ChannelStateWriter` received: (checkpoint, payload), in order.
    pub ghost_persisted: Written,
    /// Stashed events moved back into the queue by `onRecoveredStateConsumed`.
    pub ghost_replayed: u8,
    /// Per checkpoint (index cp-1): recovered buffers pushed when its RCB was inserted.
    pub ghost_rcb_at: PerCheckpoint<Option<u8>>,
    /// What the trigger wrote for the drainer's remaining state (`addInputDataFromSpill`):
    /// (checkpoint, recovered buffer) for each buffer not yet pushed when the RCB was inserted.
    pub ghost_spilled: Written,
    /// Per checkpoint: length of `ghost_delivered` when the operator snapshot was taken.
    pub ghost_started_at: PerCheckpoint<Option<u8>>,
    /// Per checkpoint: upstream elements that had left the subpartition when its barrier did.
    pub ghost_barrier_after: PerCheckpoint<Option<u8>>,
}

// The channel hashes as one string of bytes (`Packer`): its flags as bits of one number, its small
// numbers a byte each, each vector its length and its elements. Every field is hashed (the
// destructuring names them all, so a new field does not compile until it is).
impl Hash for Channel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Channel {
            queue,
            priority_len,
            stash,
            in_recovery,
            recovery_seq,
            upstream_ready,
            released,
            releasing,
            state_consumed,
            pending_priority,
            listener,
            error,
            last_barrier,
            persister,
            bm,
            unannounced_credit,
            add_credit_queued,
            resume_queued,
            add_credit_in_flight,
            held,
            global_pool,
            producer,
            ghost_pushed,
            ghost_delivered,
            ghost_freed,
            ghost_persisted,
            ghost_replayed,
            ghost_rcb_at,
            ghost_spilled,
            ghost_started_at,
            ghost_barrier_after,
        } = self;
        let flags = [
            in_recovery,
            upstream_ready,
            released,
            releasing,
            state_consumed,
            pending_priority,
            listener,
            error,
            add_credit_queued,
            resume_queued,
        ];
        let flags = flags
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &&f)| acc | (f as u64) << i);
        let small = [
            *priority_len,
            *unannounced_credit,
            *ghost_pushed,
            *ghost_replayed,
            last_barrier.0 as u8,
        ];
        let small = small
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &n)| acc | (n as u64) << (16 + 8 * i));
        let BufferManager {
            exclusive,
            floating,
            required,
            waiting_for_floating,
            notify_available,
        } = bm;
        let Producer {
            emitted,
            barriers,
            subpartition,
            released: producer_released,
            reader_credit,
            next_seq,
            wire,
            notify_pending,
            notify_blocked,
            backlog_announced,
            blocked,
        } = producer;
        let ChannelStatePersister {
            status,
            last_seen_barrier,
        } = persister;
        let more_flags = [
            waiting_for_floating,
            notify_available,
            producer_released,
            notify_blocked,
            blocked,
        ];
        let more_flags = more_flags
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &&f)| acc | (f as u64) << (10 + i));
        let mut p = Packer::new(state);
        p.u64(flags | more_flags | small);
        p.u64(*recovery_seq as u32 as u64 | (last_barrier.1 as u32 as u64) << 32);
        p.u32(*next_seq as u32);
        p.put([
            *status as u8,
            *last_seen_barrier as u8,
            *required as u8,
            *emitted,
            *barriers,
            *backlog_announced,
        ]);
        reader_credit.pack(&mut p);
        notify_pending.pack(&mut p);
        p.seq(queue);
        p.seq(stash);
        p.seq(exclusive);
        p.seq(floating);
        p.seq(add_credit_in_flight);
        p.seq(held);
        p.seq(global_pool);
        p.seq(subpartition);
        p.seq(wire);
        p.seq(ghost_delivered);
        p.seq(ghost_freed);
        p.seq(ghost_persisted);
        p.seq(ghost_rcb_at);
        p.seq(ghost_spilled);
        p.seq(ghost_started_at);
        p.seq(ghost_barrier_after);
        p.finish();
    }
}

// A step that changes a shared channel copies it first (`SharedChannel::make_mut`). Its fields
// are inline vectors of `Copy` elements and `Copy` values, so while no vector has moved to the
// heap, the channel is copied as one block of bytes rather than field by field (seventeen
// vectors, each its own length check and copy).
impl Clone for Channel {
    fn clone(&self) -> Self {
        if self.all_inline() {
            // SAFETY: every field is `Copy` or an `InlineVec` of `Copy` elements (the
            // destructuring in `all_inline` and `clone_fields` names each field, so a new one
            // does not compile until it is looked at), and no vector has spilled to the heap: a
            // vector stored inline owns nothing outside its bytes, so a copy of the bytes is a
            // vector equal to it that shares nothing with it.
            unsafe { std::ptr::read(self) }
        } else {
            self.clone_fields()
        }
    }
}

/// Compiles only for `Copy` values (the fields [`Channel`]'s clone copies as bytes).
fn copy<T: Copy>(_: T) {}

/// Whether a vector of `Copy` elements moved to the heap.
fn spilled<A: smallvec::Array>(v: &InlineVec<A>) -> bool
where
    A::Item: Copy,
{
    v.spilled()
}

impl Channel {
    /// Whether every vector of the channel is stored inline.
    fn all_inline(&self) -> bool {
        let Channel {
            queue,
            priority_len,
            stash,
            in_recovery,
            recovery_seq,
            upstream_ready,
            released,
            releasing,
            state_consumed,
            pending_priority,
            listener,
            error,
            last_barrier,
            persister,
            bm,
            unannounced_credit,
            add_credit_queued,
            resume_queued,
            add_credit_in_flight,
            held,
            global_pool,
            producer,
            ghost_pushed,
            ghost_delivered,
            ghost_freed,
            ghost_persisted,
            ghost_replayed,
            ghost_rcb_at,
            ghost_spilled,
            ghost_started_at,
            ghost_barrier_after,
        } = self;
        let BufferManager {
            exclusive,
            floating,
            required,
            waiting_for_floating,
            notify_available,
        } = bm;
        let Producer {
            emitted,
            barriers,
            subpartition,
            released: producer_released,
            reader_credit,
            next_seq,
            wire,
            notify_pending,
            notify_blocked,
            backlog_announced,
            blocked,
        } = producer;
        copy((
            *priority_len,
            *in_recovery,
            *recovery_seq,
            *upstream_ready,
            *released,
            *releasing,
            *state_consumed,
            *pending_priority,
            *listener,
            *error,
            *last_barrier,
            *persister,
            *unannounced_credit,
            *add_credit_queued,
            *resume_queued,
            *ghost_pushed,
            *ghost_replayed,
            *required,
            *waiting_for_floating,
            *notify_available,
            *emitted,
            *barriers,
            *producer_released,
            *reader_credit,
            *next_seq,
            *notify_pending,
            *notify_blocked,
            *backlog_announced,
            *blocked,
        ));
        !(spilled(queue)
            | spilled(stash)
            | spilled(add_credit_in_flight)
            | spilled(held)
            | spilled(global_pool)
            | spilled(ghost_delivered)
            | spilled(ghost_freed)
            | spilled(ghost_persisted)
            | spilled(ghost_rcb_at)
            | spilled(ghost_spilled)
            | spilled(ghost_started_at)
            | spilled(ghost_barrier_after)
            | spilled(exclusive)
            | spilled(floating)
            | spilled(subpartition)
            | spilled(wire))
    }

    /// The channel copied field by field.
    fn clone_fields(&self) -> Self {
        let Channel {
            queue,
            priority_len,
            stash,
            in_recovery,
            recovery_seq,
            upstream_ready,
            released,
            releasing,
            state_consumed,
            pending_priority,
            listener,
            error,
            last_barrier,
            persister,
            bm,
            unannounced_credit,
            add_credit_queued,
            resume_queued,
            add_credit_in_flight,
            held,
            global_pool,
            producer,
            ghost_pushed,
            ghost_delivered,
            ghost_freed,
            ghost_persisted,
            ghost_replayed,
            ghost_rcb_at,
            ghost_spilled,
            ghost_started_at,
            ghost_barrier_after,
        } = self;
        Channel {
            queue: queue.clone(),
            priority_len: *priority_len,
            stash: stash.clone(),
            in_recovery: *in_recovery,
            recovery_seq: *recovery_seq,
            upstream_ready: *upstream_ready,
            released: *released,
            releasing: *releasing,
            state_consumed: *state_consumed,
            pending_priority: *pending_priority,
            listener: *listener,
            error: *error,
            last_barrier: *last_barrier,
            persister: *persister,
            bm: bm.clone(),
            unannounced_credit: *unannounced_credit,
            add_credit_queued: *add_credit_queued,
            resume_queued: *resume_queued,
            add_credit_in_flight: add_credit_in_flight.clone(),
            held: held.clone(),
            global_pool: global_pool.clone(),
            producer: producer.clone(),
            ghost_pushed: *ghost_pushed,
            ghost_delivered: ghost_delivered.clone(),
            ghost_freed: ghost_freed.clone(),
            ghost_persisted: ghost_persisted.clone(),
            ghost_replayed: *ghost_replayed,
            ghost_rcb_at: ghost_rcb_at.clone(),
            ghost_spilled: ghost_spilled.clone(),
            ghost_started_at: ghost_started_at.clone(),
            ghost_barrier_after: ghost_barrier_after.clone(),
        }
    }
}

impl Channel {
    /// Everything written for checkpoint `cp`: what the persister wrote and the drainer's spill.
    pub fn persisted(&self, cp: CheckpointId) -> Vec<Payload> {
        let spilled = self.ghost_spilled.iter();
        let written = self.ghost_persisted.iter().chain(spilled);
        written.filter(|(k, _)| *k == cp).map(|(_, p)| *p).collect()
    }
}

/// How a checkpoint ended, if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointStatus {
    /// No barrier of it has reached the task yet.
    NotTriggered,
    /// Triggered by its first barrier; waiting for barriers from the other channels.
    Triggered,
    /// Barriers from every live channel processed.
    Completed,
    /// `CHECKPOINT_DECLINED`: a channel in recovery had no `RecoveryCheckpointBarrier` for it.
    DeclinedMissingBarrier,
    /// `CHECKPOINT_DECLINED`: a later `RecoveryCheckpointBarrier` came first.
    DeclinedLaterBarrier,
    /// `CHECKPOINT_SUBSUMED` from the persister.
    Subsumed,
}

/// What the task (mailbox) thread is in the middle of; it runs one thing at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskPc {
    /// Free to run the default action (poll the gate) or a mail.
    Idle,
    /// Triggering a checkpoint: `insertRecoveryCheckpointBarrierIfInRecovery` on every channel,
    /// then `checkpointStarted` on each; next is `channel` of the current phase.
    Trigger {
        /// The checkpoint being triggered.
        cp: CheckpointId,
        /// The channel whose turn it is.
        channel: u8,
        /// Whether the insertion phase is over (every channel has its barrier).
        inserted: bool,
    },
    /// Polled the sentinel of `channel`: next `onRecoveredStateConsumed`.
    Consume {
        /// The channel whose sentinel was polled.
        channel: u8,
    },
    /// Remote `onRecoveredStateConsumed` unstashed: next `bufferManager.enableNotify()`.
    EnableNotify {
        /// The channel.
        channel: u8,
    },
    /// Second half of a non-atomic `enableNotify` (bug B6 variants only): flip the flag after
    /// counting `avail`, or count after the flag was flipped.
    EnableNotifyRest {
        /// The channel.
        channel: u8,
        /// What the first half counted (flag-after-count only).
        avail: u8,
    },
    /// Blocked in `finishRecoveredBufferDelivery` during conversion (bug B5 only).
    AwaitUpstreamReady {
        /// The channel whose latch it waits on.
        channel: u8,
    },
    /// `pullPriorityFromSubpartitionView` polled barrier `cp` (sequence number `seq`) from the
    /// view of `channel`, whose next data type then had no priority; next it clears
    /// `hasPendingPriorityEvent` (`priority_notify_step`). The gate's turn is still on.
    ClearPendingPriority {
        /// The channel.
        channel: u8,
        /// The barrier polled.
        cp: CheckpointId,
        /// Its sequence number.
        seq: i32,
    },
    /// `getNextBuffer` of `channel` polled `payload` from its recovered queue and has yet to
    /// re-read `hasPendingPriorityEvent` outside the lock (variant
    /// `recovered-buffer-dropped-for-priority-event` only). The gate's turn is still on.
    RereadPendingPriority {
        /// The channel.
        channel: u8,
        /// What the poll returned.
        payload: Payload,
        /// Its sequence number.
        seq: i32,
        /// The network buffer holding it, if any.
        buffer: Option<NetBuf>,
    },
    /// `getNextBuffer` of `channel` threw: the task fails (nothing runs after this).
    Failed {
        /// The channel whose upstream failed.
        channel: u8,
        /// What it threw.
        cause: Failure,
    },
}

/// What `getNextBuffer` throws once an upstream failed (`faults`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// Remote: `checkError()` rethrows the cause `onError` set (a `RemoteTransportException`).
    Transport,
    /// Local, after recovery: the view returned nothing and is released (`CancelTaskException`).
    PartitionReleased,
    /// Local, in recovery with a priority event pending: `pullPriorityFromSubpartitionView`'s
    /// `checkState` finds no event in the released view (`IllegalStateException`).
    NoPriorityEvent,
    /// The alignment timer's `convertToPriorityEvent`: `receivedBuffers.getAndRemove` finds no
    /// element with the announced sequence number (`NoSuchElementException`).
    AnnouncedBarrierNotFound,
}

impl Failure {
    /// Whether the failure comes from a failed upstream (`faults`).
    pub fn is_upstream(self) -> bool {
        !matches!(self, Failure::AnnouncedBarrierNotFound)
    }
}

/// `SingleCheckpointBarrierHandler` with alternating aligned/unaligned states
/// (`aligned_checkpoint_timeout`), between the first announcement or barrier of a checkpoint
/// and its end.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Alignment {
    /// `currentCheckpointId`.
    pub cp: CheckpointId,
    /// `ChannelState.sequenceNumberInAnnouncedChannels`: (channel, announced sequence number).
    pub announced: Vec<(u8, i32)>,
    /// The alignment timer is registered and has not fired (`currentAlignmentTimer`).
    pub timer: bool,
    /// The timer fired (`AlternatingWaitingForFirstBarrierUnaligned`): the checkpoint goes on
    /// unaligned.
    pub timed_out: bool,
    /// `ChannelState.blockedChannels`: bitmask of the channels whose aligned barrier (as it
    /// came, or converted to priority by the handler) the handler took; their subpartitions
    /// blocked themselves when they sent it. An upstream's own timeout sends an unaligned
    /// barrier, which blocks nothing.
    pub blocked: u8,
}

impl Alignment {
    /// `checkNewCheckpoint` of `cp`: a timeoutable barrier registers the alignment timer; an
    /// unaligned first barrier (`timed_out`) sets the handler on unaligned at once.
    pub fn new(cp: CheckpointId, timed_out: bool) -> Self {
        Alignment {
            cp,
            announced: Vec::new(),
            timer: !timed_out,
            timed_out,
            blocked: 0,
        }
    }
}

/// A credit announcement computed under the `bufferQueue` lock and made after releasing it:
/// `inputChannel.notifyBufferAvailable(n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Announce {
    /// The channel.
    pub channel: u8,
    /// The number of buffers to announce.
    pub n: u8,
}

/// `onBuffer` released `receivedBuffers` and is about to call `onSenderBacklog(backlog)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SenderBacklog {
    /// The channel.
    pub channel: u8,
    /// The backlog the `BufferResponse` carried.
    pub backlog: u8,
}

/// The recycler's post-lock work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RecyclerPc {
    /// Nothing pending.
    Idle,
    /// `notifyBufferAvailable(n)` after `recycle` or the floating-buffer callback.
    Announce(Announce),
    /// A floating buffer that `recycle` released to be handed back to the `LocalBufferPool`.
    ReturnFloating {
        /// The channel.
        channel: u8,
        /// The floating buffer.
        buffer: NetBuf,
    },
}

/// A [`Channel`] shared between a state and its successors until a step changes it, with its
/// hash kept beside it: a successor copies and hashes only the channels its step changed. Its
/// `Hash` writes the channel's own 64-bit hash, so two states whose channels differ share a
/// fingerprint only if two channels' hashes collide.
#[derive(Clone)]
pub struct SharedChannel(Arc<(Channel, KeptHash)>);

/// A channel's hash once computed, [`KeptHash::NONE`] before. A plain atomic rather than a
/// `OnceLock`: two threads that both compute it store the same number, so no lock is needed.
/// A channel whose hash is `NONE` itself is hashed again each time it is asked for.
struct KeptHash(AtomicU64);

impl KeptHash {
    const NONE: u64 = 0;
}

impl Clone for KeptHash {
    /// A copy is about to be changed: it keeps no hash.
    fn clone(&self) -> Self {
        KeptHash(AtomicU64::new(Self::NONE))
    }
}

impl SharedChannel {
    /// `ch`, not shared yet.
    pub fn new(ch: Channel) -> Self {
        SharedChannel(Arc::new((ch, KeptHash(AtomicU64::new(KeptHash::NONE)))))
    }

    /// The channel, copied first if a state other than this one shares it; its kept hash is
    /// dropped, since the caller may change it.
    pub fn make_mut(&mut self) -> &mut Channel {
        let (ch, hash) = Arc::make_mut(&mut self.0);
        *hash.0.get_mut() = KeptHash::NONE;
        ch
    }

    /// The channel's hash, computed once.
    fn hash_code(&self) -> u64 {
        let kept = self.0.1.0.load(Ordering::Relaxed);
        if kept != KeptHash::NONE {
            return kept;
        }
        let hash = foldhash::quality::FixedState::with_seed(0xc4a2).hash_one(&self.0.0);
        self.0.1.0.store(hash, Ordering::Relaxed);
        hash
    }
}

impl Deref for SharedChannel {
    type Target = Channel;
    fn deref(&self) -> &Channel {
        &self.0.0
    }
}

impl Hash for SharedChannel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_code());
    }
}

impl PartialEq for SharedChannel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.0 == other.0.0
    }
}

impl Eq for SharedChannel {}

impl fmt::Debug for SharedChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.0.fmt(f)
    }
}

impl Serialize for SharedChannel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SharedChannel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Channel::deserialize(d).map(SharedChannel::new)
    }
}

/// The whole model state.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// One entry per configured channel: one heap block, sized to the configuration (kept
    /// inline, two channels' worth would make every state larger for no measurable gain).
    /// Shared between a state and its successors until a step changes the channel
    /// (`ch_mut`): a step touches one channel or two, so a successor copies those alone.
    pub channels: Vec<SharedChannel>,
    /// The gate's `inputChannelsWithData`.
    pub gate: InputChannelsWithData,
    /// The `LocalBufferPool`s: one per channel, or with `shared_pool` the gate's one (inline for
    /// up to two).
    pub pools: SmallVec<[LocalBufferPool; 2]>,
    /// Task thread.
    pub task: TaskPc,
    /// `requestPartitions` ran (mail on the task thread).
    pub partitions_requested: bool,
    /// The recovered channels were converted (`Delivery::Conversion` and `Delivery::Legacy`).
    pub converted: bool,
    /// `SingleInputGate.close()` ran: the task is being cancelled and runs no more mails.
    pub closed: bool,
    /// Per checkpoint (index cp-1).
    pub checkpoints: PerCheckpoint<CheckpointStatus>,
    /// Per checkpoint: bitmask of channels whose barrier the task processed.
    pub barriers_seen: PerCheckpoint<u8>,
    /// Drainer (IO thread) program counter: index into its program.
    pub io_pc: u8,
    /// The drainer is parked in `requestBufferBlocking`'s `bufferQueue.wait()` for the channel
    /// of its next push.
    pub io_waiting: bool,
    /// The network buffer the drainer took with `requestBufferBlocking()` and fills, outside
    /// every lock, for the recovered buffer it appends next: (channel, buffer).
    pub io_buffer: Option<(u8, NetBuf)>,
    /// Task thread's pending credit announcement (after `enableNotify`).
    pub task_announce: Option<Announce>,
    /// Netty client thread between `onBuffer`'s critical section and `onSenderBacklog`.
    pub client_backlog: Option<SenderBacklog>,
    /// Netty client thread's pending credit announcement (after `onSenderBacklog`).
    pub client_announce: Option<Announce>,
    /// Recycler thread.
    pub recycler: RecyclerPc,
    /// The first protocol violation seen, with its channel.
    pub violation: Option<(u8, Violation)>,
    /// The barrier handler's aligned checkpoint (`aligned_checkpoint_timeout`).
    pub alignment: Option<Alignment>,
    /// Ghost: `convertToPriorityEvent` moved an announced barrier to the priority head.
    pub ghost_converted: bool,
    /// Ghost (`shared_pool`): a floating buffer one channel recycled went to another
    /// channel's manager, a listener of the shared pool.
    pub ghost_lent_across: bool,
    /// The gate's `UpstreamRecoveryTracker`: bitmask of the channels whose
    /// `EndOfOutputChannelStateEvent` the task handled (`restoredChannels`); once every channel's
    /// has been, it resumes consumption of every channel.
    pub upstream_recovered: u8,
    /// Bitmask of the checkpoints (bit cp-1) the checkpoint coordinator aborted
    /// (`abortPendingCheckpoint`: declined by another task, or expired), so that it may trigger
    /// the next one.
    pub aborted: u8,
}

// The state hashes as one string of bytes (`Packer`): each channel's kept hash, then the gate,
// the pools, the flags (bits of one byte), the checkpoints and the small numbers; the task's,
// the recycler's and the clients' registers and the alignment, enums with fields, follow the
// usual way. Every field is hashed (the destructuring names them all).
impl Hash for State {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let State {
            channels,
            gate,
            pools,
            task,
            partitions_requested,
            converted,
            closed,
            checkpoints,
            barriers_seen,
            io_pc,
            io_waiting,
            io_buffer,
            task_announce,
            client_backlog,
            client_announce,
            recycler,
            violation,
            alignment,
            ghost_converted,
            ghost_lent_across,
            upstream_recovered,
            aborted,
        } = self;
        let InputChannelsWithData {
            channels: queued,
            num_priority,
        } = gate;
        let mut p = Packer::new(state);
        p.length(channels.len());
        for ch in channels {
            p.u64(ch.hash_code());
        }
        p.seq(queued);
        p.length(pools.len());
        for LocalBufferPool { available, listeners } in pools {
            p.seq(available);
            p.seq(listeners);
        }
        let flags = [
            partitions_requested,
            converted,
            closed,
            io_waiting,
            ghost_converted,
            ghost_lent_across,
        ];
        let flags = flags.iter().enumerate().fold(0u8, |acc, (i, &&f)| acc | (f as u8) << i);
        p.put([flags, *num_priority, *io_pc, *upstream_recovered, *aborted]);
        p.length(checkpoints.len());
        for status in checkpoints {
            p.u8(*status as u8);
        }
        p.seq(barriers_seen);
        match io_buffer {
            None => p.u8(0),
            Some((c, b)) => {
                p.u8(1);
                p.u8(*c);
                p.u16(b.code());
            }
        }
        match violation {
            None => p.u8(0),
            Some((c, v)) => p.put([1, *c, *v as u8]),
        }
        let state = p.finish();
        task.hash(state);
        task_announce.hash(state);
        client_backlog.hash(state);
        client_announce.hash(state);
        recycler.hash(state);
        alignment.hash(state);
    }
}

// Every transition clones its source state. Besides its channels (shared, see
// [`SharedChannel`]) and the handler's alignment, the state's fields are `Copy` values and
// inline vectors of `Copy` elements (the pools' too): while none of those vectors has moved to
// the heap, they are copied as one block of bytes rather than field by field, and the channels
// and the alignment are cloned beside.
impl Clone for State {
    fn clone(&self) -> Self {
        let State {
            channels,
            gate,
            pools,
            task,
            partitions_requested,
            converted,
            closed,
            checkpoints,
            barriers_seen,
            io_pc,
            io_waiting,
            io_buffer,
            task_announce,
            client_backlog,
            client_announce,
            recycler,
            violation,
            alignment,
            ghost_converted,
            ghost_lent_across,
            upstream_recovered,
            aborted,
        } = self;
        copy((
            *task,
            *partitions_requested,
            *converted,
            *closed,
            *io_pc,
            *io_waiting,
            *io_buffer,
            *task_announce,
            *client_backlog,
            *client_announce,
            *recycler,
            *violation,
            *ghost_converted,
            *ghost_lent_across,
            *upstream_recovered,
            *aborted,
        ));
        let InputChannelsWithData {
            channels: queued,
            num_priority,
        } = gate;
        copy(*num_priority);
        let pool_inline =
            |LocalBufferPool { available, listeners }: &LocalBufferPool| !spilled(available) && !spilled(listeners);
        let pools_inline = !pools.spilled() && pools.iter().all(pool_inline);
        let channels = channels.clone();
        let alignment = alignment.clone();
        if pools_inline && !spilled(queued) && !spilled(checkpoints) && !spilled(barriers_seen) {
            let mut copy = std::mem::MaybeUninit::<State>::uninit();
            let at = copy.as_mut_ptr();
            // SAFETY: the bytes of `self` are copied, then its two fields that own memory
            // elsewhere (the channels' vector, the alignment's) are overwritten, without being
            // dropped, by clones of their own. What remains are `Copy` values and vectors
            // stored inline (checked above), whose bytes are a value equal to them that shares
            // nothing with them: a `LocalBufferPool` is two inline vectors of `Copy` elements,
            // and the gate a vector and a number.
            unsafe {
                std::ptr::copy_nonoverlapping(self, at, 1);
                std::ptr::addr_of_mut!((*at).channels).write(channels);
                std::ptr::addr_of_mut!((*at).alignment).write(alignment);
                copy.assume_init()
            }
        } else {
            State {
                channels,
                gate: gate.clone(),
                pools: pools.clone(),
                task: *task,
                partitions_requested: *partitions_requested,
                converted: *converted,
                closed: *closed,
                checkpoints: checkpoints.clone(),
                barriers_seen: barriers_seen.clone(),
                io_pc: *io_pc,
                io_waiting: *io_waiting,
                io_buffer: *io_buffer,
                task_announce: *task_announce,
                client_backlog: *client_backlog,
                client_announce: *client_announce,
                recycler: *recycler,
                violation: *violation,
                alignment,
                ghost_converted: *ghost_converted,
                ghost_lent_across: *ghost_lent_across,
                upstream_recovered: *upstream_recovered,
                aborted: *aborted,
            }
        }
    }
}

impl State {
    /// Starts loading the channels' memory into the cache, for a state about to be searched:
    /// its channels were written a level ago and the properties read most of their fields.
    #[inline(always)]
    pub fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        for ch in &self.channels {
            let start = Arc::as_ptr(&ch.0).cast::<i8>();
            for line in (0..std::mem::size_of::<(Channel, KeptHash)>()).step_by(64) {
                // SAFETY: a prefetch is a hint to the cache: it neither reads nor faults, and the
                // address is inside the channel's allocation.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.wrapping_add(line))
                }
            }
        }
    }

    /// Channel `c`.
    pub fn ch(&self, c: u8) -> &Channel {
        &self.channels[c as usize]
    }
    /// Channel `c`, mutably.
    pub fn ch_mut(&mut self, c: u8) -> &mut Channel {
        self.channels[c as usize].make_mut()
    }
    /// Which of `pools` channel `c` borrows floating buffers from.
    pub fn pool_index(&self, c: u8) -> usize {
        if self.pools.len() == self.channels.len() {
            c as usize
        } else {
            0
        }
    }
    /// The `LocalBufferPool` of channel `c`.
    pub fn pool_of(&self, c: u8) -> &LocalBufferPool {
        &self.pools[self.pool_index(c)]
    }
    /// Channel `c` and its `LocalBufferPool`, both mutably.
    pub fn ch_and_pool(&mut self, c: u8) -> (&mut Channel, &mut LocalBufferPool) {
        let p = self.pool_index(c);
        (self.channels[c as usize].make_mut(), &mut self.pools[p])
    }
    /// Whether an upstream failed (`faults`) or the task failed: liveness is not owed after
    /// that, the task is failing or waits to be cancelled.
    pub fn faulted(&self) -> bool {
        self.channels.iter().any(|ch| ch.error || ch.producer.released) || self.task_failed()
    }
    /// Whether the task failed for a reason of its own (not an upstream's), which the safety
    /// property naming it reports.
    pub fn task_failed(&self) -> bool {
        matches!(self.task, TaskPc::Failed { cause, .. } if !cause.is_upstream())
    }
    /// Records a violation; the first one wins.
    pub fn violate(&mut self, c: u8, v: Violation) {
        if self.violation.is_none() {
            self.violation = Some((c, v));
        }
    }
}

impl TaskPc {
    /// Whether the task is inside the gate's turn (`SingleInputGate.waitAndGetNextData`), which
    /// holds `inputChannelsWithData` across the channel's `getNextBuffer`.
    pub fn holds_gate_lock(&self) -> bool {
        matches!(
            self,
            TaskPc::ClearPendingPriority { .. } | TaskPc::RereadPendingPriority { .. }
        )
    }
}
