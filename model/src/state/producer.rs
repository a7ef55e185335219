//! The producer side's fields: the subpartition, the view reader and the wire of one channel,
//! and the methods that touch them alone. Its steps are in `producer.rs`.

use crate::config::{ChannelConfig, Upstream};
use crate::state::elements::{CheckpointId, InlineVec, Payload, PopFront};
use std::hash::{Hash, Hasher};

/// A `BufferResponse` on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wire {
    /// Buffer or event.
    pub payload: Payload,
    /// Upstream sequence number (from 0).
    pub seq: i32,
    /// Sender backlog: data buffers still in the subpartition.
    pub backlog: u8,
}

// One number per element, as for the consumer's queue elements (state.rs).
impl Hash for Wire {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let code = self.payload.code() as u64 | (self.seq as u32 as u64) << 16;
        state.write_u64(code | (self.backlog as u64) << 48);
    }
}

/// Subpartition, reader and wire of one channel.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Producer {
    /// Upstream elements written so far (see [`Producer::with_output`]).
    pub emitted: u8,
    /// Checkpoint barriers written so far.
    pub barriers: u8,
    /// The subpartition's buffers; priority events at the head.
    pub subpartition: InlineVec<[Payload; 8]>,
    /// `isReleased`: the producer failed and released the subpartition (`faults`).
    pub released: bool,
    /// Remote: the view reader's `numCreditsAvailable`, once the partition request created it.
    pub reader_credit: Option<u8>,
    /// Next upstream sequence number.
    pub next_seq: i32,
    /// `BufferResponse`s on the wire, server to client.
    pub wire: InlineVec<[Wire; 4]>,
    /// `add` of this priority barrier released the subpartition's lock and has yet to call
    /// `notifyPriorityEvent` (`priority_notify_step`).
    pub notify_pending: Option<CheckpointId>,
    /// That `notifyPriorityEvent` set the listener's `hasPendingPriorityEvent` and waits for
    /// `inputChannelsWithData`, which the task holds in its turn, to queue the channel
    /// (`SingleInputGate.queueChannel`); it lands when the turn ends.
    #[serde(default)]
    pub notify_blocked: bool,
    /// The largest backlog a `BacklogAnnouncement` carried so far (0: none sent).
    pub backlog_announced: u8,
    /// `isBlocked`: the subpartition handed out `EndOfOutputChannelStateEvent` and waits for
    /// `resumeConsumption`; until then only priority elements go out, with a backlog of 0.
    pub blocked: bool,
}

impl Producer {
    /// The payload of upstream element `i`.
    pub fn element(cfg: &ChannelConfig, i: u8) -> Payload {
        match cfg.upstream[i as usize] {
            Upstream::Data => Payload::Data(i),
            Upstream::Event => Payload::Event(i),
            Upstream::EndOfOutputChannelState => Payload::EndOfOutput(i),
        }
    }

    /// A subpartition holding what the upstream wrote before the consumer started: all of
    /// its output but the `late` elements.
    pub fn with_output(cfg: &ChannelConfig) -> Self {
        let n = (cfg.upstream.len() - cfg.late as usize) as u8;
        Producer {
            emitted: n,
            subpartition: (0..n).map(|i| Self::element(cfg, i)).collect(),
            ..Default::default()
        }
    }

    /// Whether the upstream has elements left to write.
    pub fn writes_more(&self, cfg: &ChannelConfig) -> bool {
        (self.emitted as usize) < cfg.upstream.len() && !self.released
    }

    /// `add(bufferConsumer)`: the next upstream element at the tail. True if the subpartition
    /// was empty and is not blocked (`shouldNotifyDataAvailable`: the view's listener is told).
    pub fn add(&mut self, cfg: &ChannelConfig) -> bool {
        let was_empty = self.subpartition.is_empty() && !self.blocked;
        self.subpartition.push(Self::element(cfg, self.emitted));
        self.emitted += 1;
        was_empty
    }

    /// The producer takes checkpoint `cp`: its barrier overtakes queued buffers (unaligned)
    /// and goes behind the priority events already at the head.
    pub fn emit_barrier(&mut self, cp: CheckpointId) {
        let at = self
            .subpartition
            .iter()
            .take_while(|p| matches!(p, Payload::Barrier(_)))
            .count();
        self.subpartition.insert(at, Payload::Barrier(cp));
        self.barriers += 1;
    }

    /// The producer takes checkpoint `cp` aligned with a timeout: `add` of a
    /// `TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER` (`processTimeoutableCheckpointBarrier`) puts it
    /// at the tail, behind the buffers queued before it.
    pub fn emit_timeoutable_barrier(&mut self, cp: CheckpointId) {
        self.subpartition.push(Payload::AlignedBarrier(cp));
        self.barriers += 1;
    }

    /// `alignedBarrierTimeout(cp)`: the timeoutable barrier of `cp` still queued goes on as an
    /// unaligned barrier, behind the priority events already at the head. False if it was sent.
    pub fn aligned_barrier_timeout(&mut self, cp: CheckpointId) -> bool {
        let Some(at) = self.subpartition.iter().position(|p| *p == Payload::AlignedBarrier(cp)) else {
            return false;
        };
        self.subpartition.remove(at);
        let head = self.priority_elements();
        self.subpartition.insert(head, Payload::Barrier(cp));
        true
    }

    /// Priority elements (barriers) at the head of the subpartition.
    pub fn priority_elements(&self) -> usize {
        self.subpartition
            .iter()
            .filter(|p| matches!(p, Payload::Barrier(_)))
            .count()
    }

    /// Data buffers still in the subpartition (the backlog); 0 while blocked
    /// (`getBuffersInBacklogUnsafe`).
    pub fn backlog(&self) -> u8 {
        if self.blocked {
            return 0;
        }
        self.subpartition.iter().filter(|p| p.is_data()).count() as u8
    }

    /// Whether `pollBuffer` hands out the head: while blocked, only a priority element.
    pub fn head_available(&self) -> Option<Payload> {
        let head = *self.subpartition.first()?;
        (!self.blocked || head.has_priority()).then_some(head)
    }

    /// `pollBuffer` took `payload`: a `RECOVERY_COMPLETION` blocks the subpartition.
    pub fn handed_out(&mut self, payload: Payload) {
        if payload.is_blocking_upstream() {
            self.blocked = true;
        }
    }

    /// Upstream (non-barrier) elements that have left the subpartition.
    pub fn dequeued(&self) -> u8 {
        self.emitted
            - self
                .subpartition
                .iter()
                .filter(|p| !matches!(p, Payload::Barrier(_) | Payload::AlignedBarrier(_)))
                .count() as u8
    }

    /// Whether the reader may send the head: events always, data only with credit; while the
    /// subpartition is blocked, priority elements only.
    pub fn can_send(&self) -> bool {
        match (self.reader_credit, self.head_available()) {
            (Some(credit), Some(head)) => !head.is_data() || credit > 0,
            _ => false,
        }
    }

    /// `enqueueAvailableReader` on a reader that is not available: the backlog to announce if
    /// `needAnnounceBacklog()` (initial credit 0, no credit left) and the backlog is larger than
    /// any announced before (the model's bound on Flink's repeated announcements).
    pub fn backlog_to_announce(&self, initial_credit: u8) -> Option<u8> {
        // Asked for every remote channel in every state: the cheap tests first.
        if initial_credit != 0 || self.reader_credit != Some(0) || self.can_send() {
            return None;
        }
        let backlog = self.backlog();
        (backlog > self.backlog_announced).then_some(backlog)
    }

    /// `announceBacklog(reader, backlog)`: the `BacklogAnnouncement` goes on the wire, behind
    /// the responses written before it.
    pub fn announce_backlog(&mut self, backlog: u8) {
        self.backlog_announced = backlog;
        // The message carries no sequence number: -1 on the wire.
        self.wire.push(Wire {
            payload: Payload::BacklogAnnouncement,
            seq: -1,
            backlog,
        });
    }

    /// `getNextBuffer` on the reader, then write the `BufferResponse`. Returns false when a
    /// data buffer went out without credit.
    pub fn send(&mut self) -> bool {
        let payload = self.subpartition.pop_front().expect("guarded by can_send");
        self.handed_out(payload);
        let mut ok = true;
        if payload.is_data() {
            let credit = self.reader_credit.as_mut().expect("reader exists");
            ok = *credit > 0;
            *credit = credit.saturating_sub(1);
        }
        let backlog = self.backlog();
        self.wire.push(Wire {
            payload,
            seq: self.next_seq,
            backlog,
        });
        self.next_seq += 1;
        ok
    }
}

impl crate::state::elements::Pack for Wire {
    /// The payload, the sequence number and the backlog: seven bytes.
    #[inline(always)]
    fn pack<H: Hasher>(&self, p: &mut crate::state::elements::Packer<'_, H>) {
        p.u16(self.payload.code());
        p.u32(self.seq as u32);
        p.u8(self.backlog);
    }
}
