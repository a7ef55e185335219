//! [`RecoveryModel`]: the protocol's transition system tying the components together. Each action's
//! guard is in the program of the thread that runs it and its effect is a method in the file of
//! the Flink class it calls, which `action.rs`'s table names:
//!
//! | thread | its program | the effects of its actions |
//! |---|---|---|
//! | task | `task_actions`, task.rs | single_input_gate.rs: `ConvertRecoveredInputChannels`, `RequestPartitions`, `GetNextBuffer`, `ClearPendingPriorityEvent`, `RereadPendingPriorityEvent`; task.rs: `InsertRecoveryCheckpointBarrier`, `CheckpointStarted`, `AlignedCheckpointTimeout`; recoverable_input_channel.rs: `OnRecoveredStateConsumed`; remote_input_channel.rs: `EnableNotify` |
//! | io | `io_actions`, sequential_channel_state_reader.rs | sequential_channel_state_reader.rs: `OnRecoveredStateBuffer`, `RequestBufferBlocking`, `FinishRecoveredBufferDelivery` |
//! | producer | `producer_actions`, producer.rs | producer.rs: `EmitCheckpointBarrier`, `EmitTimeoutableCheckpointBarrier`, `AlignedBarrierTimeout`, `NotifyPriorityEvent`, `AddBuffer`, `ReleasePartition` |
//! | netty-server | `netty_server_actions`, producer.rs | producer.rs: `SendBuffer`, `OnAddCredit`, `OnResumeConsumption`, `AnnounceBacklog` |
//! | netty-client | `netty_client_actions`, remote_input_channel.rs | remote_input_channel.rs: `OnBuffer`, `OnSenderBacklog`, `SendAddCredit`, `SendResumeConsumption`, `OnError` |
//! | recycler | `recycler_actions`, buffer_manager.rs | buffer_manager.rs: `Recycle`, `ReturnFloatingBuffer` |
//! | canceler | `canceler_actions`, recoverable_input_channel.rs | recoverable_input_channel.rs: `ReleaseAllResources`, `ReleaseQueuedBuffers`; single_input_gate.rs: `CloseGate` |
//! | coordinator | `coordinator_actions`, producer.rs | producer.rs: `AbortPendingCheckpoint` |
//! | the thread that computed the credit | the pending announcement of each thread's program | remote_input_channel.rs: `NotifyBufferAvailable` |
//!
//! `model/tests/layout.rs` checks the table against `action.rs` and the sources. What is left
//! here: the configuration-wide queries, the initial state, the order the threads' programs
//! are asked, and the step. `tooling/model.rs` makes it a stateright `Model`.

use crate::action::{Action, Thread};
use crate::config::{ChannelConfig, ChannelKind, Delivery, ModelConfig};
use crate::state::LocalBufferPool;
use crate::state::producer::Producer;
use crate::state::sequential_channel_state_reader::{self as reader, IoStep};
use crate::state::*;
use crate::variant::Variant;
use smallvec::smallvec;

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
    /// The drainer's program (`sequential_channel_state_reader::program`).
    pub(crate) io_program: Vec<IoStep>,
}

impl RecoveryModel {
    /// A model of `cfg` with `variant`. The configuration must be valid.
    pub fn new(cfg: ModelConfig, variant: Variant) -> Self {
        RecoveryModel {
            io_program: reader::program(&cfg),
            cfg,
            variant,
            polling: GatePolling::Queue,
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

    /// Whether the physical channels received migrated buffers (Flink 2.3.0, flag on).
    pub fn migrates(&self) -> bool {
        self.cfg.delivery == Delivery::Migration
    }

    /// Whether the channels are still `RecoveredInputChannel`s (flag off, or flag on in 2.3.0:
    /// polled through the gate until the `requestPartitions` mail converts them).
    pub fn is_recovered_channel(&self, s: &State) -> bool {
        matches!(self.cfg.delivery, Delivery::Legacy | Delivery::Migration) && !s.converted
    }

    pub(crate) fn kind(&self, c: u8) -> ChannelKind {
        self.cfg.channels[c as usize].kind
    }

    /// Whether the drainer fills channel `c` through `requestRecoveryBufferBlocking`: a buffer
    /// lent by the channel's own manager, once `upstreamReady` is open. Remote channels always;
    /// local ones when they have exclusive buffers (else heap buffers).
    pub(crate) fn lends_recovery_buffers(&self, c: u8) -> bool {
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
        self.enabled_actions(s, &mut a);
        a.is_empty()
    }

    /// The actions enabled in `s`, each thread's program asked in turn.
    pub fn enabled_actions(&self, s: &State, out: &mut Vec<Action>) {
        if s.violation.is_some() || matches!(s.task, TaskPc::Failed { .. }) {
            // An assertion fired or an upstream failure reached the task: the task fails here.
            return;
        }
        self.task_actions(s, out);
        self.io_actions(s, out);
        self.producer_actions(s, out);
        self.netty_server_actions(s, out);
        self.netty_client_actions(s, out);
        self.recycler_actions(s, out);
        self.canceler_actions(s, out);
        self.coordinator_actions(s, out);
    }

    /// The state `action` leads to from `last`.
    pub fn next(&self, last: &State, action: Action) -> State {
        let mut s = last.clone();
        action.apply(self, &mut s);
        s
    }

    /// The initial state: every channel still in recovery, nothing requested.
    pub fn initial_state(&self) -> State {
        let n = self.cfg.checkpoints as usize;
        let channels = self
            .cfg
            .channels
            .iter()
            .map(|cc| {
                let needs_recovery = self.cfg.delivery.needs_recovery();
                let mut bm = crate::state::buffer_manager::BufferManager {
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
                    resume_queued: false,
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
            .map(SharedChannel::new)
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
            io_waiting: false,
            io_buffer: None,
            task_announce: None,
            client_backlog: None,
            client_announce: None,
            recycler: RecyclerPc::Idle,
            violation: None,
            alignment: None,
            ghost_converted: false,
            ghost_lent_across: false,
            upstream_recovered: 0,
            aborted: 0,
        }
    }
}
