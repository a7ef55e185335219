//! [`RecoveryModel`]: the stateright `Model` tying the components together. `actions` lists
//! what each thread may do next; `next_state` runs one critical section.

use crate::action::{Action, Thread};
use crate::buffer_manager::{BufferManager, Recycled};
use crate::config::{ChannelConfig, ChannelKind, Delivery, ModelConfig};
use crate::local_buffer_pool::LocalBufferPool;
use crate::local_input_channel as local;
use crate::producer::Producer;
use crate::recoverable_input_channel as rc;
use crate::recovered_input_channel as recovered;
use crate::remote_input_channel as remote;
use crate::state::*;
use crate::task;
use crate::variant::Variant;
use smallvec::smallvec;
use stateright::{Model, Property};

/// One step of the drainer's program on the IO thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IoStep {
    /// Push the next recovered buffer of a channel.
    Push(u8),
    /// `finishRecoveredBufferDelivery` of a channel.
    Finish(u8),
}

/// How the task picks the channel it polls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GatePolling {
    /// As Flink's gate: the head of `inputChannelsWithData`, which may have nothing to return.
    #[default]
    Queue,
    /// Any channel that has something to return, the gate's queue not modelled. Validation of
    /// implementation logs uses this: a log records what was polled, not the gate's queue.
    AnyChannelWithData,
}

/// The recovery protocol of a configured gate, with one fix possibly switched off.
#[derive(Clone, Debug)]
pub struct RecoveryModel {
    /// The configuration.
    pub cfg: ModelConfig,
    /// Which fix is off.
    pub variant: Variant,
    /// How the task picks the channel to poll.
    pub polling: GatePolling,
    /// Lines the Explorer's picture of an initial state shows, each with an optional link (the
    /// counterexamples `cdr explore` found, how to get every verdict).
    pub explorer_notes: Vec<(String, Option<String>)>,
    /// Counts the edges that do not increase [`crate::progress::rank`] while the checker runs.
    pub rank_check: Option<std::sync::Arc<crate::progress::RankCheck>>,
    io_program: Vec<IoStep>,
}

impl RecoveryModel {
    /// A model of `cfg` with `variant`. The configuration must be valid.
    pub fn new(cfg: ModelConfig, variant: Variant) -> Self {
        let mut io_program = Vec::new();
        if matches!(cfg.delivery, Delivery::Drainer | Delivery::Legacy | Delivery::Migration) {
            for (c, ch) in cfg.channels.iter().enumerate() {
                io_program.extend((0..ch.recovered).map(|_| IoStep::Push(c as u8)));
            }
            io_program.extend((0..cfg.channels.len()).map(|c| IoStep::Finish(c as u8)));
        }
        RecoveryModel {
            cfg,
            variant,
            polling: GatePolling::Queue,
            explorer_notes: Vec::new(),
            rank_check: None,
            io_program,
        }
    }

    /// The same model with the task polling as `polling` says.
    pub fn with_polling(mut self, polling: GatePolling) -> Self {
        self.polling = polling;
        self
    }

    /// Whether the gate's channel queue is modelled.
    pub fn models_gate_queue(&self) -> bool {
        self.polling == GatePolling::Queue
    }

    /// Whether `getNextBuffer()` of channel `c` returns something now (or throws the error
    /// `onError` set, which notified the gate).
    pub fn has_next(&self, s: &State, c: u8) -> bool {
        if s.ch(c).error {
            return true;
        }
        if self.is_recovered_channel(s) {
            return recovered::has_next(s.ch(c));
        }
        match self.kind(c) {
            ChannelKind::Local if self.migrates() => local::has_next_migrated(s.ch(c)),
            ChannelKind::Local => local::has_next(s.ch(c)),
            ChannelKind::Remote => remote::has_next(s.ch(c)),
        }
    }

    /// Whether the physical channels received migrated buffers (Flink 2.3.0, flag on).
    pub fn migrates(&self) -> bool {
        self.cfg.delivery == Delivery::Migration
    }

    /// `notifyChannelNonEmpty` (or `notifyPriorityEvent` with `priority`) of channel `c`.
    fn notify(&self, s: &mut State, c: u8, priority: bool) {
        if !self.models_gate_queue() {
            return;
        }
        if priority {
            s.gate.notify_priority_event(c);
        } else {
            s.gate.notify_channel_non_empty(c);
        }
    }

    /// What a step's push returned: notify the gate, or record the violation.
    fn pushed(&self, s: &mut State, c: u8, r: Result<bool, Violation>) {
        match r {
            Ok(true) => self.notify(s, c, false),
            Ok(false) => {}
            Err(v) => s.violate(c, v),
        }
    }

    /// The element `getNextBuffer` of channel `c` names as `nextDataType` after returning
    /// `polled` (`None`: nothing, the gate drops the channel).
    pub fn next_after_poll(&self, s: &State, c: u8, polled: Payload) -> Option<Payload> {
        if self.is_recovered_channel(s) {
            return s.ch(c).queue.first().map(|e| e.payload);
        }
        match self.kind(c) {
            ChannelKind::Local if self.migrates() => local::next_after_migrated_poll(s.ch(c), polled),
            ChannelKind::Local => local::next_after_poll(s.ch(c), polled),
            ChannelKind::Remote => s.ch(c).queue.first().map(|e| e.payload),
        }
    }

    /// What `getNextBuffer()` of channel `c` throws because its upstream failed, if it does:
    /// a remote channel's `checkError()` first of all; a local one's released view once the
    /// channel has nothing of its own to return.
    pub fn poll_throws(&self, s: &State, c: u8) -> Option<Failure> {
        let ch = s.ch(c);
        match self.kind(c) {
            ChannelKind::Remote => ch.error.then_some(Failure::Transport),
            ChannelKind::Local if ch.released || !ch.producer.released => None,
            // A pending priority event is pulled before any recovered buffer.
            ChannelKind::Local if ch.in_recovery => ch.pending_priority.then_some(Failure::NoPriorityEvent),
            ChannelKind::Local => Some(Failure::PartitionReleased),
        }
    }

    /// Whether the channels are still `RecoveredInputChannel`s (flag off, or flag on in 2.3.0:
    /// polled through the gate until the `requestPartitions` mail converts them).
    pub fn is_recovered_channel(&self, s: &State) -> bool {
        matches!(self.cfg.delivery, Delivery::Legacy | Delivery::Migration) && !s.converted
    }

    fn kind(&self, c: u8) -> ChannelKind {
        self.cfg.channels[c as usize].kind
    }

    /// Whether the drainer fills channel `c` through `requestRecoveryBufferBlocking`: a buffer
    /// lent by the channel's own manager, once `upstreamReady` is open. Remote channels always;
    /// local ones when they have exclusive buffers (else heap buffers).
    fn lends_recovery_buffers(&self, c: u8) -> bool {
        self.kind(c) == ChannelKind::Remote || self.cfg.channels[c as usize].exclusive > 0
    }

    /// The thread that runs `action` in this configuration.
    pub fn thread(&self, action: &Action) -> Thread {
        match action {
            // PR3's conversion finishes the delivery on the task thread (bug B5's setting).
            Action::FinishRecoveredBufferDelivery { .. } if self.cfg.delivery == Delivery::Conversion => Thread::Task,
            _ => action.thread(),
        }
    }

    /// "local#0" / "remote#1".
    pub fn channel_name(&self, c: u8) -> String {
        match self.kind(c) {
            ChannelKind::Local => format!("local#{c}"),
            ChannelKind::Remote => format!("remote#{c}"),
        }
    }

    /// Whether no action is enabled.
    pub fn is_terminal(&self, s: &State) -> bool {
        let mut a = Vec::new();
        self.actions(s, &mut a);
        a.is_empty()
    }

    fn initial_state(&self) -> State {
        let n = self.cfg.checkpoints as usize;
        let channels = self
            .cfg
            .channels
            .iter()
            .map(|cc| {
                let needs_recovery = self.cfg.delivery.needs_recovery();
                let mut bm = crate::buffer_manager::BufferManager {
                    // A remote channel created in recovery has credit notification disabled; a
                    // local channel's recovery manager has it on (and announces to nobody).
                    notify_available: !needs_recovery || cc.kind == ChannelKind::Local,
                    ..Default::default()
                };
                // setup(): exclusive buffers are queued, not announced.
                bm.request_exclusive_buffers(cc.exclusive);
                Channel {
                    queue: Default::default(),
                    priority_len: 0,
                    stash: Default::default(),
                    in_recovery: needs_recovery,
                    recovery_seq: if self.variant == Variant::RecoverySequenceFromZero {
                        0
                    } else {
                        i32::MIN
                    },
                    upstream_ready: false,
                    released: false,
                    releasing: false,
                    // `stateConsumedFuture` is created complete without recovery; the flag-off
                    // path's RecoveredInputChannel completes it at its legacy sentinel.
                    state_consumed: !needs_recovery
                        && !matches!(self.cfg.delivery, Delivery::Legacy | Delivery::Migration),
                    pending_priority: false,
                    listener: false,
                    error: false,
                    last_barrier: (-1, -1),
                    persister: Default::default(),
                    bm,
                    unannounced_credit: 0,
                    add_credit_queued: false,
                    add_credit_in_flight: Default::default(),
                    held: Default::default(),
                    global_pool: Default::default(),
                    // The upstream has already written its output; what matters is when the
                    // consumer side lets it through (credit, recovery), not when it was written.
                    producer: Producer::with_output(cc),
                    ghost_pushed: 0,
                    ghost_delivered: Default::default(),
                    ghost_freed: Default::default(),
                    ghost_persisted: Default::default(),
                    ghost_replayed: 0,
                    ghost_rcb_at: smallvec![None; n].into(),
                    ghost_spilled: Default::default(),
                    ghost_started_at: smallvec![None; n].into(),
                    ghost_barrier_after: smallvec![None; n].into(),
                }
            })
            .collect();
        // Floating buffers are numbered per pool: per channel, or across the gate's one pool.
        let pools = if self.cfg.shared_pool {
            let total: u8 = self.cfg.channels.iter().map(|cc| cc.floating).sum();
            smallvec![LocalBufferPool::with((0..total).map(NetBuf::Floating))]
        } else {
            let per_channel = |cc: &ChannelConfig| LocalBufferPool::with((0..cc.floating).map(NetBuf::Floating));
            self.cfg.channels.iter().map(per_channel).collect()
        };
        State {
            channels,
            gate: Default::default(),
            pools,
            task: TaskPc::Idle,
            partitions_requested: false,
            converted: false,
            closed: false,
            checkpoints: smallvec![CheckpointStatus::NotTriggered; n].into(),
            barriers_seen: smallvec![0; n].into(),
            io_pc: 0,
            task_announce: None,
            client_backlog: None,
            client_announce: None,
            recycler: RecyclerPc::Idle,
            violation: None,
            alignment: None,
            ghost_converted: false,
            ghost_lent_across: false,
        }
    }

    fn task_actions(&self, s: &State, out: &mut Vec<Action>) {
        if let Some(Announce { channel, n }) = s.task_announce {
            out.push(Action::NotifyBufferAvailable {
                thread: Thread::Task,
                channel,
                n,
            });
            return;
        }
        match s.task {
            TaskPc::Idle => {
                // A closed gate's task is being cancelled: its mails (the conversion, the
                // partition request) do not run; polling what is queued still may.
                if self.cfg.delivery == Delivery::Conversion && !s.converted && !s.closed {
                    out.push(Action::ConvertRecoveredInputChannels);
                    return;
                }
                // Flag off: `allOf(getStateConsumedFuture())` runs the requestPartitions mail,
                // which converts; a released channel's future never completes.
                if self.cfg.delivery == Delivery::Legacy
                    && self.is_recovered_channel(s)
                    && !s.closed
                    && s.channels.iter().all(|ch| ch.state_consumed && !ch.released)
                {
                    out.push(Action::ConvertRecoveredInputChannels);
                }
                // 2.3.0 flag on: `allOf(getBufferFilteringCompleteFuture())`, complete once every
                // `finishReadRecoveredState` ran. A released channel means the task is being
                // cancelled: the model runs no more mails (choice 21).
                if self.migrates()
                    && self.is_recovered_channel(s)
                    && !s.closed
                    && s.io_pc as usize == self.io_program.len()
                    && s.channels.iter().all(|ch| !ch.released)
                {
                    out.push(Action::ConvertRecoveredInputChannels);
                }
                if !s.partitions_requested && !s.closed && !self.is_recovered_channel(s) {
                    out.push(Action::RequestPartitions);
                }
                // The alignment timer's mail (a closed gate's task runs no more mails).
                if let Some(cp) = task::alignment_timer_due(s)
                    && !s.closed
                {
                    out.push(Action::AlignedCheckpointTimeout { cp });
                }
                match self.polling {
                    GatePolling::Queue => {
                        if let Some(channel) = s.gate.head() {
                            out.push(Action::GetNextBuffer { channel });
                        }
                    }
                    GatePolling::AnyChannelWithData => {
                        for c in 0..s.channels.len() as u8 {
                            if self.has_next(s, c) {
                                out.push(Action::GetNextBuffer { channel: c });
                            }
                        }
                    }
                }
            }
            TaskPc::Trigger {
                cp,
                channel,
                inserted: false,
            } => out.push(Action::InsertRecoveryCheckpointBarrier { channel, cp }),
            TaskPc::Trigger {
                cp,
                channel,
                inserted: true,
            } => out.push(Action::CheckpointStarted { channel, cp }),
            TaskPc::Consume { channel } => out.push(Action::OnRecoveredStateConsumed { channel }),
            TaskPc::EnableNotify { channel } | TaskPc::EnableNotifyRest { channel, .. } => {
                out.push(Action::EnableNotify { channel })
            }
            TaskPc::AwaitUpstreamReady { channel } => {
                if s.ch(channel).upstream_ready {
                    out.push(Action::FinishRecoveredBufferDelivery { channel });
                }
            }
            TaskPc::ClearPendingPriority { channel, .. } => out.push(Action::ClearPendingPriorityEvent { channel }),
            TaskPc::RereadPendingPriority { channel, .. } => out.push(Action::RereadPendingPriorityEvent { channel }),
            TaskPc::Failed { .. } => {}
        }
    }

    fn io_actions(&self, s: &State, out: &mut Vec<Action>) {
        match self.io_program.get(s.io_pc as usize) {
            Some(&IoStep::Push(c)) => {
                let ch = s.ch(c);
                // requestRecoveryBufferBlocking() awaits upstreamReady, then a buffer. Heap
                // buffers (flag off, or a local channel without exclusive ones): no wait.
                // A released channel throws once the latch is open (a remote channel's release
                // opens it last, `release_step`).
                let ready = !self.lends_recovery_buffers(c)
                    || self.is_recovered_channel(s)
                    || (ch.upstream_ready && (ch.released || ch.bm.can_request_buffer_blocking(s.pool_of(c))));
                if ready {
                    out.push(Action::OnRecoveredStateBuffer { channel: c });
                }
            }
            // finishReadRecoveredState (flag off) does not wait for the upstream.
            Some(&IoStep::Finish(c)) if s.ch(c).upstream_ready || self.is_recovered_channel(s) => {
                out.push(Action::FinishRecoveredBufferDelivery { channel: c });
            }
            _ => {}
        }
    }

    fn producer_actions(&self, s: &State, out: &mut Vec<Action>) {
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            let p = &ch.producer;
            if p.notify_pending.is_some() {
                // add() returns only after its notification.
                out.push(Action::NotifyPriorityEvent { channel: c });
                continue;
            }
            if p.barriers < self.cfg.checkpoints && self.cfg.aligned_checkpoint_timeout {
                out.push(Action::EmitTimeoutableCheckpointBarrier {
                    channel: c,
                    cp: p.barriers + 1,
                });
            } else if p.barriers < self.cfg.checkpoints && !p.released {
                out.push(Action::EmitCheckpointBarrier {
                    channel: c,
                    cp: p.barriers + 1,
                });
            }
            if p.writes_more(&self.cfg.channels[c as usize]) {
                out.push(Action::AddBuffer { channel: c });
            }
            // The upstream task fails while the channel reads its subpartition.
            if self.cfg.faults && self.kind(c) == ChannelKind::Local && ch.listener && !p.released {
                out.push(Action::ReleasePartition { channel: c });
            }
        }
    }

    fn netty_actions(&self, s: &State, out: &mut Vec<Action>) {
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            // A failed connection carries nothing more.
            if self.kind(c) != ChannelKind::Remote || ch.error {
                continue;
            }
            if ch.producer.can_send() {
                out.push(Action::SendBuffer { channel: c });
            }
            if !ch.add_credit_in_flight.is_empty() {
                out.push(Action::OnAddCredit { channel: c });
            }
            if ch
                .producer
                .backlog_to_announce(self.cfg.channels[c as usize].exclusive)
                .is_some()
            {
                out.push(Action::AnnounceBacklog { channel: c });
            }
        }
        if let Some(SenderBacklog { channel, .. }) = s.client_backlog {
            out.push(Action::OnSenderBacklog { channel });
            return;
        }
        if let Some(Announce { channel, n }) = s.client_announce {
            out.push(Action::NotifyBufferAvailable {
                thread: Thread::NettyClient,
                channel,
                n,
            });
            return;
        }
        for (c, ch) in s.channels.iter().enumerate() {
            let c = c as u8;
            if ch.error {
                continue;
            }
            if !ch.producer.wire.is_empty() {
                out.push(Action::OnBuffer { channel: c });
            }
            if ch.add_credit_queued {
                out.push(Action::SendAddCredit { channel: c });
            }
            // The connection to the producer fails (the handler's `exceptionCaught`).
            if self.cfg.faults && self.kind(c) == ChannelKind::Remote && s.partitions_requested && !ch.released {
                out.push(Action::OnError { channel: c });
            }
        }
    }

    fn recycler_actions(&self, s: &State, out: &mut Vec<Action>) {
        match s.recycler {
            RecyclerPc::Announce(Announce { channel, n }) => out.push(Action::NotifyBufferAvailable {
                thread: Thread::Recycler,
                channel,
                n,
            }),
            RecyclerPc::ReturnFloating { channel, buffer } => {
                out.push(Action::ReturnFloatingBuffer { channel, buffer })
            }
            RecyclerPc::Idle => {
                for (c, ch) in s.channels.iter().enumerate() {
                    for &buffer in &ch.held {
                        out.push(Action::Recycle {
                            channel: c as u8,
                            buffer,
                        });
                    }
                }
            }
        }
    }

    /// The flag-off path's `getNextBuffer()` on a `RecoveredInputChannel`: a recovered buffer
    /// is handed to the operator; the legacy sentinel completes the future and is not; a
    /// released channel throws (the task is being cancelled).
    fn get_next_recovered_buffer(&self, s: &mut State, c: u8) {
        let polled = recovered::get_next_buffer(s.ch_mut(c));
        let payload = match polled {
            recovered::Polled::Buffer { payload, .. } => payload,
            recovered::Polled::StateConsumed => Payload::EndOfRecovery,
            recovered::Polled::Nothing | recovered::Polled::Released => return,
        };
        // moreAvailable: queueChannel again.
        if self.models_gate_queue() && self.next_after_poll(s, c, payload).is_some() {
            s.gate.queue_channel(c, false);
        }
        if let recovered::Polled::Buffer { payload, seq } = polled {
            task::handle_polled(s, &self.cfg, c, payload, seq);
        }
    }

    /// Flag off: the `requestPartitions` mail after every state-consumed future completed.
    /// `toInputChannel(false)` turns each (empty) recovered channel into a physical one created
    /// without recovery, numbering from `i32::MIN` afresh; then the partitions are requested.
    fn convert_legacy(&self, s: &mut State) {
        for ch in &mut s.channels {
            ch.recovery_seq = i32::MIN;
        }
        s.converted = true;
        self.request_partitions(s);
    }

    /// 2.3.0 flag on: the `requestPartitions` mail once every `finishReadRecoveredState` ran.
    /// `convertRecoveredInputChannels()`: per channel, `toInputChannel()` moves what is still
    /// queued (the legacy sentinel included) into a physical channel created without recovery,
    /// which numbers it from `i32::MIN`; the recovered channel is released and replaced, and the
    /// gate queues the new channel (at the tail) if it has buffers in use. Then the partitions
    /// are requested.
    fn convert_migration(&self, s: &mut State) {
        for c in 0..s.channels.len() as u8 {
            let had_data = recovered::to_input_channel(s.ch_mut(c));
            if self.models_gate_queue() {
                s.gate.remove(c);
                if had_data {
                    s.gate.queue_channel(c, false);
                }
            }
        }
        s.converted = true;
        self.request_partitions(s);
    }

    /// `toInputChannel(true)` for channels `from..`, then `internalRequestPartitions()`; all on
    /// the task thread inside one `requestPartitions(true)` mail.
    fn convert_from(&self, s: &mut State, from: u8) {
        for c in from..s.channels.len() as u8 {
            let kind = self.kind(c);
            let recovered = self.cfg.channels[c as usize].recovered;
            for i in s.ch(c).ghost_pushed..recovered {
                let r = rc::on_recovered_state_buffer(s.ch_mut(c), kind, Payload::Recovered(i));
                self.pushed(s, c, r);
                s.ch_mut(c).ghost_pushed = i + 1;
            }
            if self.variant == Variant::FinishDeliveryDuringConversion {
                // finishRecoveredBufferDelivery(): upstreamReady.await() on the task thread.
                if !s.ch(c).upstream_ready {
                    s.task = TaskPc::AwaitUpstreamReady { channel: c };
                    return;
                }
                let r = rc::finish_recovered_buffer_delivery(s.ch_mut(c), kind);
                self.pushed(s, c, r);
            } else {
                let r = rc::on_recovered_state_buffer(s.ch_mut(c), kind, Payload::EndOfRecovery);
                self.pushed(s, c, r);
            }
        }
        s.converted = true;
        s.task = TaskPc::Idle;
        self.request_partitions(s);
    }

    /// `internalRequestPartitions()`: local views (opening `upstreamReady`), remote partition
    /// requests; the server creates a view reader with zero credit when `needsRecovery`.
    fn request_partitions(&self, s: &mut State) {
        s.partitions_requested = true;
        for c in 0..s.channels.len() as u8 {
            let exclusive = self.cfg.channels[c as usize].exclusive;
            let ch = s.ch_mut(c);
            if ch.released {
                // requestSubpartitions: checkState(!isReleased); the task is being cancelled.
                continue;
            }
            match self.kind(c) {
                ChannelKind::Local => {
                    ch.upstream_ready = true;
                    ch.listener = true;
                    // createReadView tells its new listener about data already queued.
                    if !ch.producer.subpartition.is_empty() {
                        self.notify(s, c, false);
                    }
                }
                ChannelKind::Remote => {
                    let needs_recovery = self.cfg.delivery.needs_recovery();
                    let ignore = self.variant == Variant::ProducerIgnoresNeedsRecovery;
                    ch.producer.reader_credit = Some(if needs_recovery && !ignore { 0 } else { exclusive });
                }
            }
        }
    }

    /// One turn of the gate's `pollNext` loop: dequeue channel `c`, `getNextBuffer()`, re-queue
    /// it if more is available, and hand what was polled on. A released remote channel throws
    /// (the task is being cancelled and ignores it); a released local one returns nothing.
    fn get_next_buffer(&self, s: &mut State, c: u8) {
        if self.models_gate_queue() {
            s.gate.poll();
        }
        if self.is_recovered_channel(s) {
            return self.get_next_recovered_buffer(s, c);
        }
        if let Some(cause) = self.poll_throws(s, c) {
            s.task = TaskPc::Failed { channel: c, cause };
            return;
        }
        let (payload, seq) = match self.kind(c) {
            ChannelKind::Local if self.migrates() => match local::get_next_migrated_buffer(s.ch_mut(c)) {
                Ok(Some(p)) => (p.payload, p.seq),
                Ok(None) => return,
                Err(v) => return s.violate(c, v),
            },
            ChannelKind::Local
                if self.cfg.channels[c as usize].priority_notify_step && local::pulls_priority(s.ch(c)) =>
            {
                match local::pull_priority_from_subpartition_view_split(s.ch_mut(c)) {
                    Ok((cp, seq, true)) => {
                        // The flag is cleared in the task's next step; the turn goes on.
                        s.task = TaskPc::ClearPendingPriority { channel: c, cp, seq };
                        return;
                    }
                    Ok((cp, seq, false)) => (Payload::Barrier(cp), seq),
                    Err(v) => return s.violate(c, v),
                }
            }
            ChannelKind::Local => match local::get_next_buffer(s.ch_mut(c), self.variant) {
                Ok(Some(p))
                    if self.variant == Variant::RecoveredBufferDroppedForPriorityEvent
                        && s.ch(c).in_recovery
                        && p.payload.is_recovery_element() =>
                {
                    // The bug: the flag is read again after the lock, in a step of its own.
                    s.task = TaskPc::RereadPendingPriority {
                        channel: c,
                        payload: p.payload,
                        seq: p.seq,
                        buffer: p.buffer,
                    };
                    return;
                }
                Ok(Some(p)) => {
                    s.ch_mut(c).held.extend(p.buffer);
                    (p.payload, p.seq)
                }
                Ok(None) => return,
                Err(v) => return s.violate(c, v),
            },
            ChannelKind::Remote => {
                let Some(e) = remote::get_next_buffer(s.ch_mut(c)) else {
                    return;
                };
                // The operator holds the network buffer until it recycles it.
                s.ch_mut(c).held.extend(e.buffer);
                (e.payload, e.seq)
            }
        };
        self.hand_on(s, c, payload, seq);
    }

    /// The end of the gate's turn: re-queue the channel if more is available (`moreAvailable`;
    /// at the priority head for a priority event) and hand what was polled on.
    fn hand_on(&self, s: &mut State, c: u8, payload: Payload, seq: i32) {
        if let Some(next) = self.next_after_poll(s, c, payload)
            && self.models_gate_queue()
        {
            s.gate.queue_channel(c, next.has_priority());
        }
        task::handle_polled(s, &self.cfg, c, payload, seq);
    }

    /// Variant `recovered-buffer-dropped-for-priority-event`: the re-read of
    /// `hasPendingPriorityEvent` after the poll. Set meanwhile, the priority event is pulled
    /// and returned instead, and the polled element is lost.
    fn reread_pending_priority_event(&self, s: &mut State, c: u8) {
        let TaskPc::RereadPendingPriority {
            payload, seq, buffer, ..
        } = s.task
        else {
            unreachable!("guarded");
        };
        s.task = TaskPc::Idle;
        if !s.ch(c).pending_priority {
            s.ch_mut(c).held.extend(buffer);
            return self.hand_on(s, c, payload, seq);
        }
        match local::pull_priority_from_subpartition_view(s.ch_mut(c)) {
            Ok(p) => self.hand_on(s, c, p.payload, p.seq),
            Err(v) => s.violate(c, v),
        }
    }

    /// The second half of `pullPriorityFromSubpartitionView` (`priority_notify_step`): clear
    /// `hasPendingPriorityEvent` on the next data type read when the view was polled, then end
    /// the gate's turn: `peekNextDataType` (the recovered queue's head; in recovery nothing
    /// else), requeue, and the barrier to the handler.
    fn clear_pending_priority_event(&self, s: &mut State, c: u8) {
        let TaskPc::ClearPendingPriority { cp, seq, .. } = s.task else {
            unreachable!("guarded");
        };
        s.task = TaskPc::Idle;
        let ch = s.ch_mut(c);
        ch.pending_priority = false;
        if !ch.queue.is_empty() && self.models_gate_queue() {
            s.gate.queue_channel(c, false);
        }
        task::handle_polled(s, &self.cfg, c, Payload::Barrier(cp), seq);
    }

    fn on_recovered_state_consumed(&self, s: &mut State, c: u8) {
        let r = match self.kind(c) {
            ChannelKind::Local => {
                s.task = TaskPc::Idle;
                // Re-queue the channel so that the live data recovery hid is polled.
                let requeue = self.variant != Variant::NoRequeueAfterRecovery;
                local::on_recovered_state_consumed(s.ch_mut(c)).map_or(Ok(requeue), Err)
            }
            ChannelKind::Remote => {
                s.task = TaskPc::EnableNotify { channel: c };
                remote::on_recovered_state_consumed(s.ch_mut(c), self.variant)
            }
        };
        self.pushed(s, c, r);
    }

    /// `bufferManager.enableNotify()` then `stateConsumedFuture.complete`. The two B6 variants
    /// split the critical section in two task steps.
    fn enable_notify(&self, s: &mut State, c: u8) {
        let pc = s.task;
        let ch = s.ch_mut(c);
        let avail = match (self.variant, pc) {
            (Variant::EnableNotifyFlagAfterCount, TaskPc::EnableNotify { .. }) => {
                let avail = ch.bm.available();
                s.task = TaskPc::EnableNotifyRest { channel: c, avail };
                return;
            }
            (Variant::EnableNotifyFlagBeforeCount, TaskPc::EnableNotify { .. }) => {
                ch.bm.notify_available = true;
                s.task = TaskPc::EnableNotifyRest { channel: c, avail: 0 };
                return;
            }
            (Variant::EnableNotifyFlagAfterCount, TaskPc::EnableNotifyRest { avail, .. }) => {
                ch.bm.notify_available = true;
                avail
            }
            (Variant::EnableNotifyFlagBeforeCount, TaskPc::EnableNotifyRest { .. }) => ch.bm.available(),
            _ => ch.bm.enable_notify(),
        };
        if avail == 0 {
            // complete() (a released channel's future already failed; not yet with
            // `release_step` before the drain).
            ch.state_consumed = true;
        }
        s.task = TaskPc::Idle;
        if avail > 0 {
            // The future completes after the announcement (notify_buffer_available).
            s.task_announce = Some(Announce { channel: c, n: avail });
        }
    }

    /// `notifyBufferAvailable(n)`: add to `unannouncedCredit`; the first credit queues an
    /// `AddCredit` write on the Netty client (`notifyCreditAvailable`).
    fn notify_buffer_available(&self, s: &mut State, thread: Thread, c: u8, n: u8) {
        match thread {
            Thread::Task => s.task_announce = None,
            Thread::NettyClient => s.client_announce = None,
            _ => s.recycler = RecyclerPc::Idle,
        }
        if self.kind(c) == ChannelKind::Local {
            // InputChannel.notifyBufferAvailable: a local channel has no credit to announce.
            return;
        }
        if thread == Thread::Task {
            // onRecoveredStateConsumed: stateConsumedFuture.complete() after enableNotify().
            s.ch_mut(c).state_consumed = true;
        }
        self.add_unannounced_credit(s, c, n);
    }

    /// `RemoteInputChannel.notifyBufferAvailable(n)`: add to `unannouncedCredit`; the first
    /// credit queues an `AddCredit` write on the Netty client (`notifyCreditAvailable`).
    fn add_unannounced_credit(&self, s: &mut State, c: u8, n: u8) {
        if self.kind(c) == ChannelKind::Local {
            return;
        }
        let ch = s.ch_mut(c);
        let before = ch.unannounced_credit;
        ch.unannounced_credit += n;
        if n > 0 && before == 0 && !ch.released {
            ch.add_credit_queued = true;
        }
    }

    fn recycle(&self, s: &mut State, c: u8, buffer: NetBuf) {
        let ch = s.ch_mut(c);
        let at = ch.held.iter().position(|b| *b == buffer).expect("guarded");
        ch.held.remove(at);
        let released = ch.released;
        s.recycler = match buffer {
            NetBuf::Exclusive(_) => match ch.bm.recycle(released, buffer, &mut ch.global_pool) {
                Recycled::Announce => RecyclerPc::Announce(Announce { channel: c, n: 1 }),
                Recycled::ReleaseFloating(f) => RecyclerPc::ReturnFloating { channel: c, buffer: f },
                Recycled::Nothing => RecyclerPc::Idle,
            },
            NetBuf::Floating(_) => self
                .recycle_to_pool(s, c, buffer)
                .map_or(RecyclerPc::Idle, RecyclerPc::Announce),
        };
    }

    /// `LocalBufferPool.recycle` of channel `c`'s floating buffer: to the global pool once the
    /// gate closed and destroyed the pool; else handed to the first registered listener that
    /// takes it (`notifyBufferAvailable(Buffer)`, outside the pool's lock; one that does not is
    /// dropped from the queue), else back to the pool. Returns the taker's announcement.
    fn recycle_to_pool(&self, s: &mut State, c: u8, buffer: NetBuf) -> Option<Announce> {
        if s.closed {
            s.ch_mut(c).global_pool.push(buffer);
            return None;
        }
        let p = s.pool_index(c);
        while let Some(l) = s.pools[p].listeners.pop_front() {
            let listener = &mut s.channels[l as usize];
            let released = listener.released;
            let taken = listener
                .bm
                .notify_buffer_available(&mut s.pools[p], l, released, buffer, self.variant);
            if let Some(n) = taken {
                s.ghost_lent_across |= l != c;
                return (n > 0).then_some(Announce { channel: l, n });
            }
        }
        s.pools[p].available.push(buffer);
        None
    }

    /// Floating buffers a thread without an announcement step of its own (the canceler, the
    /// drainer) recycles: a listener that takes one announces its credit in the same step.
    fn recycle_all_to_pool(&self, s: &mut State, c: u8, buffers: Vec<NetBuf>) {
        for b in buffers {
            if let Some(Announce { channel, n }) = self.recycle_to_pool(s, c, b) {
                self.add_unannounced_credit(s, channel, n);
            }
        }
    }

    fn release_all_resources(&self, s: &mut State, c: u8, split: bool) {
        if self.is_recovered_channel(s) {
            return recovered::release_all_resources(s.ch_mut(c));
        }
        // `isReleased` (a local channel: with the latch and the future, as in Flink's order);
        // split, the queues stay intact until the canceler's next step.
        let local = self.cfg.channels[c as usize].kind == ChannelKind::Local;
        let ch = s.ch_mut(c);
        ch.released = true;
        ch.releasing = true;
        if local {
            ch.upstream_ready = true;
            ch.state_consumed = true;
        }
        if !split {
            self.release_queued_buffers(s, c);
        }
    }

    /// The rest of `releaseAllResources()` (`release_step`): the view, the queue and the stash,
    /// `releaseAllBuffers`; a remote channel opens its latch and fails its future last.
    fn release_queued_buffers(&self, s: &mut State, c: u8) {
        let ch = s.ch_mut(c);
        ch.releasing = false;
        ch.upstream_ready = true;
        ch.state_consumed = true;
        let drained = rc::drain_released(ch);
        let floating = ch.bm.release_all_buffers(drained, &mut ch.global_pool);
        self.recycle_all_to_pool(s, c, floating);
    }

    /// `SingleInputGate.close()` under `requestLock`: release every channel not yet released,
    /// then destroy the `LocalBufferPool`.
    fn close_gate(&self, s: &mut State) {
        s.closed = true;
        for c in 0..s.channels.len() as u8 {
            if !s.ch(c).released {
                // One step per channel even with `release_step`: `close` is the canceler's
                // alternative to single releases, and the split is shown on those.
                self.release_all_resources(s, c, false);
            }
        }
        // A pool's free segments go to the global pool (the first channel's record of it).
        for p in 0..s.pools.len() {
            s.pools[p].lazy_destroy(&mut s.channels[p].global_pool);
        }
    }
}

impl Model for RecoveryModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        if s.violation.is_some() || matches!(s.task, TaskPc::Failed { .. }) {
            // An assertion fired or an upstream failure reached the task: the task fails here.
            return;
        }
        self.task_actions(s, out);
        self.io_actions(s, out);
        self.producer_actions(s, out);
        self.netty_actions(s, out);
        self.recycler_actions(s, out);
        if let Some(c) = s.channels.iter().position(|ch| ch.releasing) {
            // The canceler is inside `releaseAllResources` of channel `c`.
            out.push(Action::ReleaseQueuedBuffers { channel: c as u8 });
        } else if self.cfg.release {
            for (c, ch) in s.channels.iter().enumerate() {
                if !ch.released {
                    out.push(Action::ReleaseAllResources { channel: c as u8 });
                }
            }
            if !s.closed {
                out.push(Action::CloseGate);
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::OnRecoveredStateBuffer { channel: c } if self.is_recovered_channel(&s) => {
                s.io_pc += 1;
                let ch = s.ch_mut(c);
                let i = ch.ghost_pushed;
                ch.ghost_pushed += 1;
                let notify = recovered::on_recovered_state_buffer(ch, Payload::Recovered(i));
                self.pushed(&mut s, c, Ok(notify));
            }
            Action::FinishRecoveredBufferDelivery { channel: c } if self.is_recovered_channel(&s) => {
                s.io_pc += 1;
                let notify = recovered::finish_read_recovered_state(s.ch_mut(c));
                self.pushed(&mut s, c, Ok(notify));
            }
            Action::ConvertRecoveredInputChannels if self.cfg.delivery == Delivery::Legacy => {
                self.convert_legacy(&mut s)
            }
            Action::ConvertRecoveredInputChannels if self.migrates() => self.convert_migration(&mut s),
            Action::OnRecoveredStateBuffer { channel: c } => {
                let kind = self.kind(c);
                s.io_pc += 1;
                let (ch, pool) = s.ch_and_pool(c);
                let i = ch.ghost_pushed;
                ch.ghost_pushed += 1;
                // `requestBufferBlocking` throws for a released channel only when it finds no
                // buffer; one it takes goes back at once (`recycleBuffer` of the released channel).
                let buffer = if self.lends_recovery_buffers(c) {
                    ch.bm.request_buffer_blocking(pool)
                } else {
                    None
                };
                let r = rc::on_recovered_state_buffer(ch, kind, Payload::Recovered(i));
                if let Some(b) = buffer.filter(|_| ch.released) {
                    let floating = BufferManager::release_buffer(b, &mut ch.global_pool);
                    self.recycle_all_to_pool(&mut s, c, floating.into_iter().collect());
                } else if let Some(b) = buffer {
                    // The recovered data sits in a buffer lent by the channel's own manager.
                    match ch.queue.last_mut() {
                        Some(e) if e.payload == Payload::Recovered(i) => e.buffer = Some(b),
                        _ => ch.held.push(b),
                    }
                }
                self.pushed(&mut s, c, r);
            }
            Action::FinishRecoveredBufferDelivery { channel: c } => {
                let r = rc::finish_recovered_buffer_delivery(s.ch_mut(c), self.kind(c));
                self.pushed(&mut s, c, r);
                if let TaskPc::AwaitUpstreamReady { .. } = s.task {
                    self.convert_from(&mut s, c + 1);
                } else {
                    s.io_pc += 1;
                }
            }
            Action::ConvertRecoveredInputChannels => {
                // The drainer filled each live `RecoveredInputChannel` (its legacy sentinel at
                // least): each queued itself, in channel order.
                for c in 0..s.channels.len() as u8 {
                    if !s.ch(c).released {
                        self.notify(&mut s, c, false);
                    }
                }
                self.convert_from(&mut s, 0)
            }
            Action::RequestPartitions => self.request_partitions(&mut s),
            Action::GetNextBuffer { channel: c } => self.get_next_buffer(&mut s, c),
            Action::InsertRecoveryCheckpointBarrier { channel: c, cp } => {
                // B9: the trigger was swapped to NO_OP when the drain finished.
                let no_op = self.variant == Variant::TriggerSwappedWhenDrainFinishes
                    && self.cfg.delivery == Delivery::Drainer
                    && s.io_pc as usize >= self.io_program.len();
                if task::insert_recovery_checkpoint_barrier(&mut s, &self.cfg, self.variant, c, cp, no_op) {
                    self.notify(&mut s, c, false);
                }
            }
            Action::CheckpointStarted { channel: c, cp } => {
                task::checkpoint_started(&mut s, &self.cfg, self.variant, c, cp)
            }
            Action::OnRecoveredStateConsumed { channel: c } => self.on_recovered_state_consumed(&mut s, c),
            Action::EnableNotify { channel: c } => self.enable_notify(&mut s, c),
            Action::NotifyBufferAvailable { thread, channel: c, n } => {
                self.notify_buffer_available(&mut s, thread, c, n)
            }
            Action::EmitCheckpointBarrier { channel: c, cp } if self.cfg.channels[c as usize].priority_notify_step => {
                // add(): under the lock; the notification is the producer's next step, made
                // only for the first priority element (processPriorityBuffer returns -1 else)
                // and only to a view's listener.
                let ch = s.ch_mut(c);
                ch.producer.emit_barrier(cp);
                if ch.producer.priority_elements() == 1 && ch.listener {
                    ch.producer.notify_pending = Some(cp);
                }
            }
            Action::EmitCheckpointBarrier { channel: c, cp } => {
                let ch = s.ch_mut(c);
                ch.producer.emit_barrier(cp);
                // needNotifyPriorityEvent(): only the first priority element is announced.
                if self.kind(c) == ChannelKind::Local
                    && ch.producer.priority_elements() == 1
                    && local::notify_priority_event(ch)
                {
                    self.notify(&mut s, c, true);
                }
            }
            Action::EmitTimeoutableCheckpointBarrier { channel: c, cp } => {
                s.ch_mut(c).producer.emit_timeoutable_barrier(cp);
            }
            Action::AlignedCheckpointTimeout { .. } => {
                for c in task::aligned_checkpoint_timeout(&mut s) {
                    self.notify(&mut s, c, true);
                }
            }
            Action::NotifyPriorityEvent { channel: c } => {
                let ch = s.ch_mut(c);
                let cp = ch.producer.notify_pending.take().expect("guarded");
                local::notify_priority_event(ch);
                // The gate's isOutdated: barrier `cp` was polled already (the task reached it
                // through the view after recovery), so the notification is dropped.
                let outdated = ch.ghost_delivered.iter().any(|d| d.payload == Payload::Barrier(cp));
                if !outdated {
                    self.notify(&mut s, c, true);
                }
            }
            Action::ClearPendingPriorityEvent { channel: c } => self.clear_pending_priority_event(&mut s, c),
            Action::AddBuffer { channel: c } => {
                let ch = s.ch_mut(c);
                let was_empty = ch.producer.add(&self.cfg.channels[c as usize]);
                // notifyDataAvailable: a local view's listener is the channel; a remote one's
                // is the Netty server's reader, which sends whenever it can.
                if self.kind(c) == ChannelKind::Local && ch.listener && was_empty {
                    self.notify(&mut s, c, false);
                }
            }
            Action::ReleasePartition { channel: c } => {
                // Drained and released; the view is not told (no notification), the consumer
                // finds out when it next polls.
                let p = &mut s.ch_mut(c).producer;
                p.subpartition.clear();
                p.released = true;
            }
            Action::OnError { channel: c } => {
                // setError: the first cause wins and notifies the gate, so that the task polls
                // the channel and fails.
                s.ch_mut(c).error = true;
                self.notify(&mut s, c, false);
            }
            Action::SendBuffer { channel: c } => {
                let ch = s.ch_mut(c);
                if let Some(Payload::Barrier(cp) | Payload::AlignedBarrier(cp)) =
                    ch.producer.subpartition.first().copied()
                {
                    ch.ghost_barrier_after[cp as usize - 1] = Some(ch.producer.dequeued());
                }
                if !ch.producer.send() {
                    s.violate(c, Violation::SendWithoutCredit);
                }
            }
            Action::AnnounceBacklog { channel: c } => {
                let exclusive = self.cfg.channels[c as usize].exclusive;
                let producer = &mut s.ch_mut(c).producer;
                let backlog = producer.backlog_to_announce(exclusive).expect("guarded");
                producer.announce_backlog(backlog);
            }
            Action::OnAddCredit { channel: c } => {
                let ch = s.ch_mut(c);
                let credit = ch.add_credit_in_flight.remove(0);
                *ch.producer.reader_credit.as_mut().expect("reader exists") += credit;
            }
            Action::OnBuffer { channel: c } => match remote::on_buffer(s.ch_mut(c), self.variant) {
                Ok(r) => {
                    if r.notify_priority {
                        self.notify(&mut s, c, true);
                    }
                    if r.notify_non_empty {
                        self.notify(&mut s, c, false);
                    }
                    s.client_backlog = r.backlog.map(|backlog| SenderBacklog { channel: c, backlog });
                }
                Err(v) => s.violate(c, v),
            },
            Action::OnSenderBacklog { channel: c } => {
                let backlog = s.client_backlog.take().expect("guarded").backlog;
                let (ch, pool) = s.ch_and_pool(c);
                s.client_announce =
                    remote::on_sender_backlog(ch, pool, &self.cfg.channels[c as usize], c, backlog, self.variant);
            }
            Action::SendAddCredit { channel: c } => {
                let ch = s.ch_mut(c);
                ch.add_credit_queued = false;
                let credit = std::mem::take(&mut ch.unannounced_credit);
                if credit > 0 && !ch.released {
                    ch.add_credit_in_flight.push(credit);
                }
            }
            Action::Recycle { channel: c, buffer } => self.recycle(&mut s, c, buffer),
            Action::ReturnFloatingBuffer { channel: c, buffer } => {
                s.recycler = self
                    .recycle_to_pool(&mut s, c, buffer)
                    .map_or(RecyclerPc::Idle, RecyclerPc::Announce);
            }
            Action::ReleaseAllResources { channel: c } => self.release_all_resources(&mut s, c, self.cfg.release_step),
            Action::ReleaseQueuedBuffers { channel: c } => self.release_queued_buffers(&mut s, c),
            Action::RereadPendingPriorityEvent { channel: c } => self.reread_pending_priority_event(&mut s, c),
            Action::CloseGate => self.close_gate(&mut s),
        }
        if let Some(check) = &self.rank_check {
            check.edge(last, &s);
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::all()
    }

    fn format_action(&self, action: &Action) -> String {
        crate::format::action(self, action)
    }

    fn format_step(&self, last_state: &State, action: Action) -> Option<String> {
        crate::format::step_outcome(self, last_state, &action)
    }

    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        // Each entry is a state and the action that leaves it: the second last holds the step
        // that led to the state shown.
        let mut states = path.into_vec();
        let (last, _) = states.pop()?;
        let step = states.pop().and_then(|(before, a)| a.map(|a| (before, a)));
        crate::svg::state_after(self, &last, step.as_ref().map(|(before, a)| (before, a)))
    }
}
