//! The common vocabulary of a replay: what a caller of the implementation sees after one step
//! ([`Observation`]) and the abstract state both sides are projected to ([`Snapshot`]).
//!
//! Both are plain serde types owned by this crate. The model predicts them (see
//! [`crate::projection::model_observation`] and [`crate::projection::model_snapshot`]), the
//! implementation driver reads them from `recovery-impl` ([`crate::projection::impl_channel`]),
//! and one comparison prints the difference. Elements and buffers are written in the model's
//! short names (`r0`, `d1`, `e0`, `eoo0`, `barrier1`, `RCB1`, `EOR`, `x0`, `f0`) so that a diff reads
//! like the model's counterexamples.

use recovery_model::ChannelKind;
use recovery_model::state::{NetBuf, Payload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// An element of a queue, stash, subpartition, the wire or a checkpoint, by what it carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub enum Item {
    /// An element the model names, written as the model writes it (`r0`, `d1`, `e0`, `eoo0`,
    /// `barrier1`, `RCB1`, `EOR`, `aligned1`, `announce1`, `backlog`).
    Known(Payload),
    /// Something the model has no name for (an implementation-only buffer), described
    /// (`?what`).
    Unknown(String),
}

impl From<Payload> for Item {
    fn from(p: Payload) -> Self {
        Item::Known(p)
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Known(p) => write!(f, "{p}"),
            Item::Unknown(what) => write!(f, "?{what}"),
        }
    }
}

impl FromStr for Item {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix('?') {
            Some(what) => Ok(Item::Unknown(what.to_string())),
            None => s.parse().map(Item::Known),
        }
    }
}

impl TryFrom<String> for Item {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Item> for String {
    fn from(i: Item) -> String {
        i.to_string()
    }
}

/// A network buffer of a remote channel's `BufferManager`: exclusive `x0` or floating `f0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct Buf(pub NetBuf);

impl fmt::Display for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl TryFrom<String> for Buf {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let n = |rest: &str| {
            rest.parse::<u8>()
                .map_err(|_| format!("`{s}` is not a buffer (x0, f0)"))
        };
        match s.split_at_checked(1) {
            Some(("x", rest)) => Ok(Buf(NetBuf::Exclusive(n(rest)?))),
            Some(("f", rest)) => Ok(Buf(NetBuf::Floating(n(rest)?))),
            _ => Err(format!("`{s}` is not a buffer (x0, f0)")),
        }
    }
}

impl From<Buf> for String {
    fn from(b: Buf) -> String {
        b.to_string()
    }
}

/// One queued element: what it is, its sequence number where the channel has assigned one, and
/// the network buffer holding it where that is one of the channel's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Element {
    /// What it carries.
    pub item: Item,
    /// Sequence number (remote channels number elements on arrival; local ones on consumption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i32>,
    /// The channel's network buffer holding it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Buf>,
}

/// A `BufferResponse` on the wire from the producer's Netty server to the consumer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireElement {
    /// What it carries.
    pub item: Item,
    /// Upstream sequence number.
    pub seq: i32,
    /// Sender backlog.
    pub backlog: i32,
}

/// `Buffer.DataType` of what follows the returned element (`nextDataType`, `moreAvailable` when
/// not `none`): the gate keeps a channel queued on it (at the head when it has priority), the
/// Netty server keeps a view reader queued on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DataType {
    /// `NONE`: nothing the caller may take next.
    None,
    /// `DATA_BUFFER`.
    DataBuffer,
    /// `EVENT_BUFFER`.
    EventBuffer,
    /// `PRIORITIZED_EVENT_BUFFER`.
    PriorityEventBuffer,
}

impl DataType {
    /// The type of an element the model names.
    pub fn of(p: Payload) -> Self {
        match p {
            Payload::Recovered(_) | Payload::Data(_) => DataType::DataBuffer,
            Payload::Barrier(_) | Payload::Announcement(_) => DataType::PriorityEventBuffer,
            Payload::Event(_)
            | Payload::EndOfOutput(_)
            | Payload::RecoveryBarrier(_)
            | Payload::EndOfRecovery
            | Payload::AlignedBarrier(_)
            | Payload::BacklogAnnouncement => DataType::EventBuffer,
        }
    }

    /// The type of the head of a queue, `none` when it is empty.
    pub fn of_head(head: Option<Payload>) -> Self {
        head.map_or(DataType::None, DataType::of)
    }
}

/// Why a call failed, by kind (messages differ between the two descriptions on purpose).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A peer broke the protocol: live data reached a channel in recovery.
    ProtocolViolation,
    /// A data buffer arrived and `requestBuffer()` had none: credit was over-announced.
    NoBufferForData,
    /// A `checkState` precondition (push after recovery, recovery already finished, expected
    /// priority event, ...).
    IllegalState,
    /// The producer sent a data buffer without credit.
    SendWithoutCredit,
    /// Use after release.
    Released,
    /// A buffer was recycled twice.
    DoubleRecycle,
    /// An upstream sequence number out of order.
    BufferReordering,
    /// The connection to the producer failed (`RemoteTransportException`).
    RemoteTransport,
    /// A lookup found nothing (`NoSuchElementException`): the alignment timer's
    /// `convertToPriorityEvent` did not find the announced barrier in `receivedBuffers`.
    NoSuchElement,
}

/// Why `checkpointStarted` refused a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// Declined: no `RecoveryCheckpointBarrier` for it in the queue.
    MissingBarrier,
    /// Declined: a later `RecoveryCheckpointBarrier` came first.
    LaterBarrier,
    /// Subsumed by a newer checkpoint.
    Subsumed,
}

/// What a caller of the implementation sees when one step returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum Observation {
    /// The call returned (or reached a pause point, see [`Pending`]) with nothing to show.
    Done,
    /// `getNextBuffer` returned an element with its sequence number.
    Polled {
        /// The element.
        item: Item,
        /// Its sequence number.
        seq: i32,
        /// What follows it.
        next: DataType,
    },
    /// `getNextBuffer` returned nothing.
    NothingPolled,
    /// `checkpointStarted` accepted the checkpoint and persisted these buffers for it now.
    Persisted {
        /// The checkpoint.
        checkpoint: u8,
        /// What was written for it by this call, in order.
        buffers: Vec<Item>,
    },
    /// `checkpointStarted` refused the checkpoint.
    Refused {
        /// The checkpoint.
        checkpoint: u8,
        /// Why.
        reason: Refusal,
    },
    /// The view reader sent a `BufferResponse`.
    Sent {
        /// What was sent.
        sent: WireElement,
        /// What the reader may send next (`none` also when only data without credit follows).
        next: DataType,
    },
    /// The view reader had nothing it may send.
    NothingSent,
    /// The Netty client took the unannounced credit and wrote `AddCredit(credit)` (None: none
    /// written, nothing to announce or the channel is released).
    CreditSent {
        /// The credit written.
        credit: Option<i32>,
    },
    /// The call failed.
    Error {
        /// How.
        error: ErrorKind,
    },
    /// The call did not return within the driver's timeout: it is blocked.
    Blocked,
    /// The driver could not perform the step (e.g. the thread that must continue is not paused
    /// where the model says), described.
    Unperformable {
        /// What is wrong.
        reason: String,
    },
}

impl Observation {
    /// The observation with `nextDataType` left out (set to `none`), for sources that do not
    /// record it (an implementation's event log).
    pub fn without_next(mut self) -> Self {
        if let Observation::Polled { next, .. } | Observation::Sent { next, .. } = &mut self {
            *next = DataType::None;
        }
        self
    }
}

/// A thread that is between two critical sections of one call (a pause point of the
/// implementation, a pending step of the model).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "at", deny_unknown_fields)]
pub enum Pending {
    /// Not inside a call.
    #[default]
    Idle,
    /// About to announce `n` credits to `channel` (`notifyBufferAvailable(n)`).
    Announce {
        /// Channel index.
        channel: u8,
        /// Credit.
        n: u8,
    },
    /// About to hand a floating buffer back to the `LocalBufferPool`.
    ReturnFloating {
        /// Channel index.
        channel: u8,
        /// The buffer.
        buffer: Buf,
    },
    /// Between `onBuffer`'s enqueue and `onSenderBacklog`.
    SenderBacklog {
        /// Channel index.
        channel: u8,
    },
    /// Between the unstash of `onRecoveredStateConsumed` and `enableNotify`.
    EnableNotify {
        /// Channel index.
        channel: u8,
    },
    /// Somewhere the other description has no name for, described.
    Elsewhere {
        /// Where.
        what: String,
    },
}

/// `ChannelStatePersister.CheckpointStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PersistStatus {
    /// No persist window open.
    Completed,
    /// Started, barrier not yet seen: arriving data is persisted.
    BarrierPending,
    /// Barrier seen.
    BarrierReceived,
}

/// Who holds the network buffers of a remote channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Buffers {
    /// `bufferQueue.exclusiveBuffers`, head first.
    pub exclusive: Vec<Buf>,
    /// `bufferQueue.floatingBuffers`, head first.
    pub floating: Vec<Buf>,
    /// Free in the gate's `LocalBufferPool`.
    pub pool: Vec<Buf>,
    /// Exclusive segments back in the global `NetworkBufferPool`.
    pub global: Vec<Buf>,
    /// Held by the consumer after `getNextBuffer`, until it recycles them.
    pub held: Vec<Buf>,
}

/// The credit side of a remote channel and its producer's view reader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Credit {
    /// `notifyAvailable` of the `BufferManager`.
    pub notify_available: bool,
    /// `isWaitingForFloatingBuffers`.
    pub waiting_for_floating: bool,
    /// `numRequiredBuffers`.
    pub required: i32,
    /// `unannouncedCredit`.
    pub unannounced: i32,
    /// An `AddCredit` write is queued on the Netty client (not shown once released).
    pub add_credit_queued: bool,
    /// A `ResumeConsumption` write is queued on the Netty client (`resumeConsumption()` of the
    /// channel, not yet written).
    pub resume_queued: bool,
    /// Client-to-server messages on the wire to the producer, in order: `AddCredit(k)` as `k`,
    /// and `ResumeConsumption` as 0 (an `AddCredit` never carries 0).
    pub add_credit_in_flight: Vec<i32>,
    /// The view reader's `numCreditsAvailable` (None before the partition request).
    pub reader_credit: Option<i32>,
    /// `BufferResponse`s on the wire to the consumer.
    pub wire: Vec<WireElement>,
    /// Who holds which buffer.
    pub buffers: Buffers,
}

/// One input channel, as both descriptions can show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelView {
    /// Local or remote.
    pub kind: ChannelKind,
    /// `inRecovery`.
    pub in_recovery: bool,
    /// `isReleased`.
    pub released: bool,
    /// Remote: `setError` kept a cause (the connection failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// The producer released the subpartition (it failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partition_released: bool,
    /// `upstreamReady` is open.
    pub upstream_ready: bool,
    /// `stateConsumedFuture` is done (normally or exceptionally).
    pub state_consumed: bool,
    /// `recoverySequenceNumber`: the next number to hand out.
    pub recovery_seq: i32,
    /// `recoveredBuffers` (local) or `receivedBuffers` (remote), head first.
    pub queue: Vec<Element>,
    /// Priority elements at the head of `queue`.
    pub priority_len: usize,
    /// `recoveryEventStash`, oldest first.
    pub stash: Vec<Element>,
    /// Local: `hasPendingPriorityEvent`.
    pub pending_priority: bool,
    /// The persister's status.
    pub persist_status: PersistStatus,
    /// The persister's `lastSeenBarrier` (-1 for none).
    pub last_seen_barrier: i64,
    /// What the `ChannelStateWriter` received from this channel, per checkpoint, in order.
    pub persisted: BTreeMap<u8, Vec<Item>>,
    /// What the checkpoint trigger wrote of this channel's recovered state that the drainer
    /// had not delivered yet (`addInputDataFromSpill`), per checkpoint, in order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spilled: BTreeMap<u8, Vec<Item>>,
    /// What the gate handed on from this channel, in order: to the operator, or a barrier to
    /// the barrier handler. The sentinel, which the gate consumes itself, is not in it.
    #[serde(default)]
    pub delivered: Vec<Item>,
    /// The producer's subpartition, head first.
    pub subpartition: Vec<Item>,
    /// `PipelinedSubpartition.isBlocked`: it handed out its `EndOfOutputChannelStateEvent` and
    /// waits for `resumeConsumption`.
    pub subpartition_blocked: bool,
    /// Remote only: credit, wire and buffers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit: Option<Credit>,
}

/// The gate, as both descriptions can show it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateView {
    /// `inputChannelsWithData`: the channels the task polls next, head first.
    pub queue: Vec<u8>,
    /// How many of them, at the head, were queued with priority.
    pub priority: usize,
    /// `getStateConsumedFuture()` is done: every channel's future is.
    pub state_consumed: bool,
    /// `UpstreamRecoveryTrackerImpl.numUnrestoredChannels`: the channels whose
    /// `EndOfOutputChannelStateEvent` the task has not handled (0 once every one was).
    pub unrestored_channels: i32,
}

/// The abstract state after a step: every channel, the gate, and the threads inside a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// By channel index.
    pub channels: Vec<ChannelView>,
    /// The gate.
    pub gate: GateView,
    /// The task thread.
    pub task: Pending,
    /// The Netty client thread.
    pub netty_client: Pending,
    /// The recycler thread.
    pub recycler: Pending,
}

impl Snapshot {
    /// Pretty JSON, one field per line: the text a divergence diffs.
    pub fn to_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a snapshot serializes")
    }
}

/// Removes from `value` every field `pointer` names: a JSON Pointer (`/channels/*/credit/wire`)
/// in which `*` matches any array index or object key.
pub fn remove_pointer(value: &mut serde_json::Value, pointer: &str) {
    fn go(value: &mut serde_json::Value, parts: &[&str]) {
        let Some((head, rest)) = parts.split_first() else {
            return;
        };
        let last = rest.is_empty();
        match value {
            serde_json::Value::Object(map) => {
                if *head == "*" {
                    if last {
                        map.clear();
                    } else {
                        map.values_mut().for_each(|v| go(v, rest));
                    }
                } else if last {
                    map.remove(*head);
                } else if let Some(v) = map.get_mut(*head) {
                    go(v, rest);
                }
            }
            serde_json::Value::Array(items) => {
                if *head == "*" {
                    if last {
                        items.clear();
                    } else {
                        items.iter_mut().for_each(|v| go(v, rest));
                    }
                } else if let Some(v) = head.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    if last {
                        *v = serde_json::Value::Null;
                    } else {
                        go(v, rest);
                    }
                }
            }
            _ => {}
        }
    }
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    go(value, &parts);
}

/// `snapshot` as JSON without the `unobserved` fields.
pub fn masked(snapshot: &Snapshot, unobserved: &[String]) -> serde_json::Value {
    let mut v = serde_json::to_value(snapshot).expect("a snapshot serializes");
    for p in unobserved {
        remove_pointer(&mut v, p);
    }
    v
}

/// Whether two snapshots agree on every field but the `unobserved` ones.
pub fn snapshots_agree(model: &Snapshot, actual: &Snapshot, unobserved: &[String]) -> bool {
    if unobserved.is_empty() {
        model == actual
    } else {
        masked(model, unobserved) == masked(actual, unobserved)
    }
}

/// [`diff`] without the `unobserved` fields.
pub fn diff_masked(model: &Snapshot, actual: &Snapshot, unobserved: &[String], context: usize) -> String {
    if unobserved.is_empty() {
        return diff(model, actual, context);
    }
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).expect("serializes");
    let (a, b) = (pretty(masked(model, unobserved)), pretty(masked(actual, unobserved)));
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(context)
        .header("model", "impl")
        .to_string()
}

/// A unified diff of two snapshots headed `model` / `impl`, with `context` lines around changes.
pub fn diff(model: &Snapshot, actual: &Snapshot, context: usize) -> String {
    let (a, b) = (model.to_pretty(), actual.to_pretty());
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(context)
        .header("model", "impl")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_through_their_short_names() {
        for item in [
            Item::Known(Payload::Recovered(0)),
            Item::Known(Payload::Data(3)),
            Item::Known(Payload::Event(1)),
            Item::Known(Payload::EndOfOutput(0)),
            Item::Known(Payload::Barrier(2)),
            Item::Known(Payload::RecoveryBarrier(1)),
            Item::Known(Payload::EndOfRecovery),
            Item::Unknown("id 7".into()),
        ] {
            assert_eq!(item.to_string().parse::<Item>(), Ok(item));
        }
        assert!("q1".parse::<Item>().is_err());
    }

    #[test]
    fn buffers_round_trip_through_their_short_names() {
        for b in [Buf(NetBuf::Exclusive(0)), Buf(NetBuf::Floating(2))] {
            assert_eq!(Buf::try_from(b.to_string()), Ok(b));
        }
        assert!(Buf::try_from("y1".to_string()).is_err());
    }
}
