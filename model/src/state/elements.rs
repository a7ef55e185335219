//! The elements the state is made of: payloads, network buffers, checkpoint ids, the queue
//! entries, and the inline vectors that hold them. Every other state file builds on these.

use serde::{Deserialize, Serialize};
use smallvec::{Array, SmallVec};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

// The state's sequences are small vectors stored inline: cloning a state, which every transition
// does, then copies bytes instead of allocating one heap vector per queue. An inline capacity is
// the configuration's bound (`ModelConfig::validate`) where that is small, and otherwise a few
// elements; a longer sequence moves to the heap, so no configuration is refused or cut.
// Equality, hashing and `Debug` are those of the slice, as for `Vec`.

/// At most this many channels (`ModelConfig::validate`).
pub const MAX_CHANNELS: usize = 4;
/// At most this many checkpoints (`ModelConfig::validate`).
pub const MAX_CHECKPOINTS: usize = 4;

/// One slot per channel.
pub type PerChannel<T> = InlineVec<[T; MAX_CHANNELS]>;
/// One slot per checkpoint (index cp-1).
pub type PerCheckpoint<T> = InlineVec<[T; MAX_CHECKPOINTS]>;
/// A channel's queue of elements (`recoveredBuffers`, `receivedBuffers`).
pub type Queue = InlineVec<[Entry; 8]>;
/// The remote channel's `recoveryEventStash`: ordinary events only.
pub type Stash = InlineVec<[Entry; 4]>;
/// Network buffers: a buffer manager's queues, a pool, the held and returned buffers. A
/// channel has at most 4 exclusive and 4 floating buffers.
pub type Buffers = InlineVec<[NetBuf; 8]>;
/// Client-to-server messages on the wire: `AddCredit(k)` as `k`, `ResumeConsumption` as
/// [`RESUME_CONSUMPTION`] (16 fit in the space of the heap vector's header).
pub type Credits = InlineVec<[u8; 16]>;

/// `ResumeConsumption` among the `AddCredit` messages of [`Channel::add_credit_in_flight`]: an
/// `AddCredit` never carries 0.
pub const RESUME_CONSUMPTION: u8 = 0;
/// What the gate handed to the operator.
pub type Deliveries = InlineVec<[Delivered; 8]>;
/// Recovered buffer numbers (at most 8 per channel).
pub type RecoveredIds = InlineVec<[u8; 8]>;
/// What was written for checkpoints: (checkpoint, payload).
pub type Written = InlineVec<[(CheckpointId, Payload); 8]>;

/// A `SmallVec` of `Copy` elements whose clone copies the elements in one go (`from_slice`)
/// rather than pushing them one by one. It dereferences to the `SmallVec`.
pub struct InlineVec<A: Array>(pub SmallVec<A>);

impl<A: Array> Clone for InlineVec<A>
where
    A::Item: Copy,
{
    fn clone(&self) -> Self {
        InlineVec(SmallVec::from_slice(&self.0))
    }
}

impl<A: Array> Default for InlineVec<A> {
    fn default() -> Self {
        InlineVec(SmallVec::new())
    }
}

impl<A: Array> Deref for InlineVec<A> {
    type Target = SmallVec<A>;
    fn deref(&self) -> &SmallVec<A> {
        &self.0
    }
}

impl<A: Array> DerefMut for InlineVec<A> {
    fn deref_mut(&mut self) -> &mut SmallVec<A> {
        &mut self.0
    }
}

impl<A: Array> PartialEq for InlineVec<A>
where
    A::Item: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<A: Array> Eq for InlineVec<A> where A::Item: Eq {}

impl<A: Array, const N: usize> PartialEq<[A::Item; N]> for InlineVec<A>
where
    A::Item: PartialEq,
{
    fn eq(&self, other: &[A::Item; N]) -> bool {
        self.0[..] == other[..]
    }
}

impl<A: Array> PartialEq<Vec<A::Item>> for InlineVec<A>
where
    A::Item: PartialEq,
{
    fn eq(&self, other: &Vec<A::Item>) -> bool {
        self.0[..] == other[..]
    }
}

impl<A: Array> Hash for InlineVec<A>
where
    A::Item: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<A: Array> fmt::Debug for InlineVec<A>
where
    A::Item: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<A: Array> From<SmallVec<A>> for InlineVec<A> {
    fn from(v: SmallVec<A>) -> Self {
        InlineVec(v)
    }
}

impl<A: Array> FromIterator<A::Item> for InlineVec<A> {
    fn from_iter<I: IntoIterator<Item = A::Item>>(iter: I) -> Self {
        InlineVec(iter.into_iter().collect())
    }
}

impl<'a, A: Array> IntoIterator for &'a InlineVec<A> {
    type Item = &'a A::Item;
    type IntoIter = std::slice::Iter<'a, A::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, A: Array> IntoIterator for &'a mut InlineVec<A> {
    type Item = &'a mut A::Item;
    type IntoIter = std::slice::IterMut<'a, A::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<A: Array> Serialize for InlineVec<A>
where
    A::Item: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, A: Array> Deserialize<'de> for InlineVec<A>
where
    A::Item: Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        SmallVec::deserialize(deserializer).map(InlineVec)
    }
}

/// A checkpoint id, 1-based.
pub type CheckpointId = u8;

/// What an element of a channel queue, stash, subpartition or the wire is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "id")]
pub enum Payload {
    /// Recovered data buffer number `i` of this channel, read from the checkpoint.
    Recovered(u8),
    /// Live data buffer: element `i` of the channel's upstream sequence.
    Data(u8),
    /// Live ordinary event: element `i` of the channel's upstream sequence.
    Event(u8),
    /// The upstream's unaligned checkpoint barrier (a priority event).
    Barrier(CheckpointId),
    /// `RecoveryCheckpointBarrier`: sentinel inside the recovery queue.
    RecoveryBarrier(CheckpointId),
    /// `EndOfFetchedChannelStateEvent`: the tail sentinel of the recovered stream.
    EndOfRecovery,
    /// The upstream's aligned checkpoint barrier with an alignment timeout
    /// (`TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER`): an ordinary event that `requiresAnnouncement`.
    AlignedBarrier(CheckpointId),
    /// `EventAnnouncement` of an aligned barrier: a priority element carrying the barrier's
    /// sequence number (its entry's `seq`).
    Announcement(CheckpointId),
    /// A `BacklogAnnouncement` message on the wire (never in a queue): the backlog only.
    BacklogAnnouncement,
    /// `EndOfOutputChannelStateEvent`: element `i` (always 0) of the channel's upstream
    /// sequence, an event whose data type (`RECOVERY_COMPLETION`) blocks the subpartition that
    /// hands it out.
    EndOfOutput(u8),
}

impl Payload {
    /// `Buffer.isBuffer()`: data, as opposed to an event.
    pub fn is_data(self) -> bool {
        matches!(self, Payload::Recovered(_) | Payload::Data(_))
    }
    /// Element of the recovered stream (data or one of the two sentinels).
    pub fn is_recovery_element(self) -> bool {
        matches!(
            self,
            Payload::Recovered(_) | Payload::RecoveryBarrier(_) | Payload::EndOfRecovery
        )
    }
    /// Live element from upstream that is not a priority event.
    pub fn is_live_ordinary(self) -> bool {
        matches!(self, Payload::Data(_) | Payload::Event(_) | Payload::EndOfOutput(_))
    }
    /// `DataType.isBlockingUpstream()`: the subpartition that hands it out is blocked until
    /// `resumeConsumption`.
    pub fn is_blocking_upstream(self) -> bool {
        matches!(self, Payload::EndOfOutput(_) | Payload::AlignedBarrier(_))
    }
    /// `DataType.hasPriority()`: an unaligned barrier or an announcement.
    pub fn has_priority(self) -> bool {
        matches!(self, Payload::Barrier(_) | Payload::Announcement(_))
    }
}

// The elements of the state's queues hash as one number each: a fingerprint then takes one
// hasher call per element rather than one per field and discriminant. Each number determines
// the element, so no two distinct states hash alike any more than before.

impl Payload {
    /// The payload as one number: its variant in the high byte, its id in the low one.
    pub fn code(self) -> u16 {
        let (variant, id) = match self {
            Payload::Recovered(i) => (0, i),
            Payload::Data(i) => (1, i),
            Payload::Event(i) => (2, i),
            Payload::Barrier(cp) => (3, cp),
            Payload::RecoveryBarrier(cp) => (4, cp),
            Payload::EndOfRecovery => (5, 0),
            Payload::AlignedBarrier(cp) => (6, cp),
            Payload::Announcement(cp) => (7, cp),
            Payload::BacklogAnnouncement => (8, 0),
            Payload::EndOfOutput(i) => (9, i),
        };
        (variant as u16) << 8 | id as u16
    }
}

impl Hash for Payload {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u16(self.code());
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Payload::Recovered(i) => write!(f, "r{i}"),
            Payload::Data(i) => write!(f, "d{i}"),
            Payload::Event(i) => write!(f, "e{i}"),
            Payload::Barrier(cp) => write!(f, "barrier{cp}"),
            Payload::RecoveryBarrier(cp) => write!(f, "RCB{cp}"),
            Payload::EndOfRecovery => write!(f, "EOR"),
            Payload::AlignedBarrier(cp) => write!(f, "aligned{cp}"),
            Payload::Announcement(cp) => write!(f, "announce{cp}"),
            Payload::BacklogAnnouncement => write!(f, "backlog"),
            Payload::EndOfOutput(i) => write!(f, "eoo{i}"),
        }
    }
}

impl std::str::FromStr for Payload {
    type Err = String;

    /// Reads the short name [`fmt::Display`] writes (`r0`, `d1`, `e0`, `eoo0`, `barrier1`,
    /// `RCB1`, `EOR`, `aligned1`, `announce1`, `backlog`), as traces and diffs carry it.
    fn from_str(s: &str) -> Result<Self, String> {
        let num = |prefix: &str| s.strip_prefix(prefix).and_then(|n| n.parse::<u8>().ok());
        // Longest prefixes first: "RCB", "barrier", "aligned", "announce", "eoo" before one letter.
        let parsed = match s {
            "EOR" => Some(Payload::EndOfRecovery),
            "backlog" => Some(Payload::BacklogAnnouncement),
            _ => (num("RCB").map(Payload::RecoveryBarrier))
                .or_else(|| num("barrier").map(Payload::Barrier))
                .or_else(|| num("aligned").map(Payload::AlignedBarrier))
                .or_else(|| num("announce").map(Payload::Announcement))
                .or_else(|| num("eoo").map(Payload::EndOfOutput))
                .or_else(|| num("r").map(Payload::Recovered))
                .or_else(|| num("d").map(Payload::Data))
                .or_else(|| num("e").map(Payload::Event)),
        };
        parsed.ok_or_else(|| {
            format!("`{s}` is not an element (r0, d1, e0, eoo0, barrier1, RCB1, EOR, aligned1, announce1, backlog)")
        })
    }
}

/// A network buffer of a remote channel's `BufferManager`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "id")]
pub enum NetBuf {
    /// Exclusive segment `i` from the global `NetworkBufferPool`.
    Exclusive(u8),
    /// Floating buffer `i` from the gate's `LocalBufferPool`.
    Floating(u8),
}

impl NetBuf {
    /// The buffer as one number: 1 for floating in the high byte, its id in the low one.
    pub fn code(self) -> u16 {
        match self {
            NetBuf::Exclusive(i) => i as u16,
            NetBuf::Floating(i) => 1 << 8 | i as u16,
        }
    }
    /// An optional buffer as one number: [`NetBuf::code`], or 2 in the high byte for none.
    pub fn code_of(b: Option<NetBuf>) -> u16 {
        b.map_or(2 << 8, NetBuf::code)
    }
}

/// `Payload`'s and `NetBuf`'s form in JSON (traces, reports): `{"kind": "recovered", "id": 0}`.
/// A format that is not human-readable (the search's encoded frontier) takes two bytes instead,
/// the variant's index and its number, since its field names cost more than the element.
mod json {
    use super::{CheckpointId, NetBuf, Payload};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "Payload", rename_all = "kebab-case", tag = "kind", content = "id")]
    pub(super) enum PayloadJson {
        Recovered(u8),
        Data(u8),
        Event(u8),
        Barrier(CheckpointId),
        RecoveryBarrier(CheckpointId),
        EndOfRecovery,
        AlignedBarrier(CheckpointId),
        Announcement(CheckpointId),
        BacklogAnnouncement,
        EndOfOutput(u8),
    }

    #[derive(Serialize, Deserialize)]
    #[serde(remote = "NetBuf", rename_all = "kebab-case", tag = "kind", content = "id")]
    pub(super) enum NetBufJson {
        Exclusive(u8),
        Floating(u8),
    }
}

impl Payload {
    /// The variant's index and its number.
    fn to_bytes(self) -> [u8; 2] {
        match self {
            Payload::Recovered(i) => [0, i],
            Payload::Data(i) => [1, i],
            Payload::Event(i) => [2, i],
            Payload::Barrier(cp) => [3, cp],
            Payload::RecoveryBarrier(cp) => [4, cp],
            Payload::EndOfRecovery => [5, 0],
            Payload::AlignedBarrier(cp) => [6, cp],
            Payload::Announcement(cp) => [7, cp],
            Payload::BacklogAnnouncement => [8, 0],
            Payload::EndOfOutput(i) => [9, i],
        }
    }

    fn from_bytes([variant, n]: [u8; 2]) -> Option<Self> {
        Some(match variant {
            0 => Payload::Recovered(n),
            1 => Payload::Data(n),
            2 => Payload::Event(n),
            3 => Payload::Barrier(n),
            4 => Payload::RecoveryBarrier(n),
            5 => Payload::EndOfRecovery,
            6 => Payload::AlignedBarrier(n),
            7 => Payload::Announcement(n),
            8 => Payload::BacklogAnnouncement,
            9 => Payload::EndOfOutput(n),
            _ => return None,
        })
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match s.is_human_readable() {
            true => json::PayloadJson::serialize(self, s),
            false => self.to_bytes().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.is_human_readable() {
            true => json::PayloadJson::deserialize(d),
            false => Payload::from_bytes(<[u8; 2]>::deserialize(d)?)
                .ok_or_else(|| serde::de::Error::custom("no such payload")),
        }
    }
}

impl Serialize for NetBuf {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match s.is_human_readable() {
            true => json::NetBufJson::serialize(self, s),
            false => self.code().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for NetBuf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            return json::NetBufJson::deserialize(d);
        }
        match u16::deserialize(d)? {
            code if code >> 8 == 0 => Ok(NetBuf::Exclusive(code as u8)),
            code if code >> 8 == 1 => Ok(NetBuf::Floating(code as u8)),
            _ => Err(serde::de::Error::custom("no such network buffer")),
        }
    }
}

impl Hash for NetBuf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u16(self.code());
    }
}

impl fmt::Display for NetBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetBuf::Exclusive(i) => write!(f, "x{i}"),
            NetBuf::Floating(i) => write!(f, "f{i}"),
        }
    }
}

/// One element of `recoveredBuffers` (local) or `receivedBuffers` (remote).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entry {
    /// What the element is.
    pub payload: Payload,
    /// Sequence number given at append (remote); 0 and unused on a local channel, which
    /// numbers recovered elements when they are consumed.
    pub seq: i32,
    /// The network buffer holding a live data buffer on a remote channel.
    pub buffer: Option<NetBuf>,
}

/// What the consumer saw: one element returned by `getNextBuffer` to the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Delivered {
    /// What was polled.
    pub payload: Payload,
    /// The sequence number returned with it.
    pub seq: i32,
}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let code = self.payload.code() as u64 | (self.seq as u32 as u64) << 16;
        state.write_u64(code | (NetBuf::code_of(self.buffer) as u64) << 48);
    }
}

impl Hash for Delivered {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.payload.code() as u64 | (self.seq as u32 as u64) << 16);
    }
}

/// `Deque.poll()` on the vectors that stand for Java deques.
pub trait PopFront<T> {
    /// Removes and returns the head.
    fn pop_front(&mut self) -> Option<T>;
}

impl<T> PopFront<T> for Vec<T> {
    fn pop_front(&mut self) -> Option<T> {
        if self.is_empty() { None } else { Some(self.remove(0)) }
    }
}

impl<A: Array> PopFront<A::Item> for SmallVec<A> {
    fn pop_front(&mut self) -> Option<A::Item> {
        if self.is_empty() { None } else { Some(self.remove(0)) }
    }
}

impl<A: Array> PopFront<A::Item> for InlineVec<A> {
    fn pop_front(&mut self) -> Option<A::Item> {
        self.0.pop_front()
    }
}

// A channel and the state's own fields hash as one string of bytes, each value written as a few
// bytes that determine it (vectors with their lengths first), handed to the hasher in one call:
// one call, rather than one per field, vector length and element, each of which went through the
// generic `Hash` of its type. Equal values write equal bytes; distinct values of one type write
// distinct bytes, so no two distinct states are likelier to share a fingerprint than before.

/// Bytes gathered for one hasher call (more if they outgrow the buffer).
pub struct Packer<'a, H: Hasher> {
    state: &'a mut H,
    buf: [u8; 256],
    len: usize,
}

impl<'a, H: Hasher> Packer<'a, H> {
    /// Gathers bytes for `state`; [`Packer::finish`] writes them.
    #[inline(always)]
    pub fn new(state: &'a mut H) -> Self {
        Packer {
            state,
            buf: [0; 256],
            len: 0,
        }
    }

    /// Appends `bytes`.
    #[inline(always)]
    pub fn put<const K: usize>(&mut self, bytes: [u8; K]) {
        if self.len + K > self.buf.len() {
            self.flush();
        }
        self.buf[self.len..self.len + K].copy_from_slice(&bytes);
        self.len += K;
    }

    /// Appends a byte.
    #[inline(always)]
    pub fn u8(&mut self, x: u8) {
        self.put([x]);
    }

    /// Appends a number of two bytes.
    #[inline(always)]
    pub fn u16(&mut self, x: u16) {
        self.put(x.to_le_bytes());
    }

    /// Appends a number of four bytes.
    #[inline(always)]
    pub fn u32(&mut self, x: u32) {
        self.put(x.to_le_bytes());
    }

    /// Appends a number of eight bytes.
    #[inline(always)]
    pub fn u64(&mut self, x: u64) {
        self.put(x.to_le_bytes());
    }

    /// Appends the length of a sequence: one byte below 255, else 255 and eight bytes.
    #[inline(always)]
    pub fn length(&mut self, n: usize) {
        if n < 255 {
            self.u8(n as u8);
        } else {
            self.u8(255);
            self.u64(n as u64);
        }
    }

    /// Appends a sequence: its length, then each element.
    #[inline(always)]
    pub fn seq<T: Pack>(&mut self, items: &[T]) {
        self.length(items.len());
        for x in items {
            x.pack(self);
        }
    }

    /// Writes what is gathered to the hasher.
    #[inline(always)]
    fn flush(&mut self) {
        self.state.write(&self.buf[..self.len]);
        self.len = 0;
    }

    /// Writes what is gathered to the hasher; returns it, for values hashed the usual way.
    #[inline(always)]
    pub fn finish(&mut self) -> &mut H {
        self.flush();
        self.state
    }
}

/// A value written to a [`Packer`] as a few bytes that determine it.
pub trait Pack {
    /// Appends the value's bytes.
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>);
}

impl Pack for u8 {
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u8(*self);
    }
}

impl Pack for Option<u8> {
    /// 0 for none, the number plus one (in two bytes) otherwise.
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u16(self.map_or(0, |n| n as u16 + 1));
    }
}

impl Pack for Payload {
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u16(self.code());
    }
}

impl Pack for NetBuf {
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u16(self.code());
    }
}

impl Pack for (CheckpointId, Payload) {
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u8(self.0);
        p.u16(self.1.code());
    }
}

impl Pack for Entry {
    /// The payload, the sequence number and the buffer: eight bytes.
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        let code = self.payload.code() as u64 | (self.seq as u32 as u64) << 16;
        p.u64(code | (NetBuf::code_of(self.buffer) as u64) << 48);
    }
}

impl Pack for Delivered {
    /// The payload and the sequence number: six bytes.
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut Packer<'_, H>) {
        p.u16(self.payload.code());
        p.u32(self.seq as u32);
    }
}
