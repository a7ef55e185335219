//! [`ImplDriver`]: replays model actions against `recovery-impl`, one model action to the calls
//! the Flink thread named by the action makes.
//!
//! Threads. A call that can block (the drainer's `requestRecoveryBufferBlocking`,
//! `finishRecoveredBufferDelivery`) or that the model splits in two steps (a call that
//! announces credit after releasing `bufferQueue`, `onRecoveredStateConsumed` before
//! `enableNotify`) runs on a worker thread of its own: the task, IO, Netty client and recycler
//! workers. The worker installs a [`pause_point`](recovery_impl::pause_point) hook, so the
//! implementation stops exactly where the model's next step of that thread begins, and the
//! driver resumes it when the trace takes that step (`notifyBufferAvailable`,
//! `recycleFloatingBuffer`, `enableNotify`; with `priority_notify_step`, the producer's
//! `notifyPriorityEvent` after `add` and the task's clear of `hasPendingPriorityEvent` after
//! a pulled priority event). A call whose thread is about to park (the
//! implementation's wait hook, [`set_thread_wait_hook`]) is reported as
//! [`Observation::Blocked`] at once: the thread says it waits, no clock decides. A call that
//! neither returns nor parks within the watchdog is a harness error. Calls that can neither
//! block nor pause run inline. The drainer's `requestBufferBlocking` that finds no buffer is
//! such a call (the model's `requestBufferBlocking` that parks); woken, it pauses before it
//! takes the buffer (`PausePoint::RequestBufferBlocking`), and the model's next
//! `requestBufferBlocking` of the channel lets it take the buffer. With its buffer, the drainer
//! stops before the append (`PausePoint::OnRecoveredStateBuffer`) until the model's
//! `onRecoveredStateBuffer`.
//!
//! Stand-ins. The Netty layer (the wire in both directions, the client's queued `AddCredit`
//! and `ResumeConsumption` writes) is not in `recovery-impl`; the driver plays it, as Flink's
//! `CreditBasedPartitionRequestClientHandler` and `PartitionRequestQueue` would. It also plays
//! `CheckpointedInputGate` over the gate: a polled `EndOfOutputChannelStateEvent` goes to the
//! gate's `UpstreamRecoveryTracker`. The task's
//! checkpoint barrier handler is impl/'s `SingleCheckpointBarrierHandler`, over the driver's
//! channels; the driver makes the channel calls it decides on, one model step each.

use crate::driver::{Driver, DriverError};
use crate::observation::{DataType, ErrorKind, GateView, Item, Observation, Pending, Refusal, Snapshot, WireElement};
use crate::projection::{
    IdMap, ImplParts, NettyParts, SHARED_BASE, announces_for, impl_channel, impl_pending, item_of, payload_of,
};
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::credit_based_sequence_numbering_view_reader::{
    BufferResponse, CreditBasedSequenceNumberingViewReader,
};
use recovery_impl::fetched_channel_state_drainer::{DrainerLockGuard, FetchedChannelStateDrainer};
use recovery_impl::input_channel_info::InputChannelInfo;
use recovery_impl::input_channels_with_data::{ChannelPoll, InputChannelsWithData};
use recovery_impl::input_gate::IndexedInputGate;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::netty_message::ResumeConsumption;
use recovery_impl::pause_point::{PausePoint, set_thread_hook, set_thread_wait_hook};
use recovery_impl::recoverable_input_channel::ChannelContext;
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::recovery_checkpoint_trigger::RecoveryCheckpointTrigger;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_checkpoint_barrier_handler::{CheckpointableInput, SingleCheckpointBarrierHandler};
use recovery_impl::single_input_gate::{ChannelSnapshot, InputChannelHandle, SingleInputGate};
use recovery_impl::upstream_recovery_tracker::ResumableInputGate;
use recovery_impl::{
    BufferId, BufferKind, ChannelError, DeclineReason, FlinkFixes, NetworkBuffer, RecoverableInputChannel,
};
use recovery_model::config::{ChannelConfig, ChannelKind, Delivery, FlinkFix, ModelConfig, Upstream};
use recovery_model::state::{NetBuf, Payload};
use recovery_model::variant::Variant;
use recovery_model::{Action, RecoveryModel, Thread};
use std::collections::VecDeque;
use std::panic::Location;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// What the Netty server wrote to a channel's connection: Flink's `NettyMessage.BufferResponse`
/// or `NettyMessage.BacklogAnnouncement`.
enum ServerMessage {
    Response(BufferResponse),
    BacklogAnnouncement { backlog: i32 },
}

/// What the Netty client wrote to a channel's connection: `NettyMessage.AddCredit`, or
/// `NettyMessage.ResumeConsumption` as its frame.
enum ClientMessage {
    AddCredit(i32),
    ResumeConsumption(Vec<u8>),
}

// ---------------------------------------------------------------------------------------------
// Workers
// ---------------------------------------------------------------------------------------------

type Job = Box<dyn FnOnce() -> Observation + Send>;

/// How long a call may neither return nor park before the harness gives up on it. A call that
/// parks is reported at once by the wait hook; this only catches a genuine hang (a busy loop, a
/// lock never released), which is a harness error, never a divergence.
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(120);

enum Report {
    Paused(PausePoint),
    /// About to park in a condition wait or latch await at this source location.
    Waiting(&'static Location<'static>),
    Done(Observation),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WorkerState {
    Idle,
    Paused {
        channel: u8,
        point: PausePoint,
    },
    /// Parked in a wait of the implementation: the call blocked.
    Blocked {
        site: &'static Location<'static>,
    },
    /// Neither returned nor parked within the watchdog: a harness error.
    Hung,
}

/// One OS thread standing for one Flink thread.
struct Worker {
    name: &'static str,
    jobs: Sender<Job>,
    reports: Receiver<Report>,
    resume: Sender<()>,
    state: WorkerState,
    channel: u8,
}

impl Worker {
    fn spawn(name: &'static str) -> Worker {
        let (jobs, job_rx) = channel::<Job>();
        let (report_tx, reports) = channel::<Report>();
        let (resume, resume_rx) = channel::<()>();
        std::thread::Builder::new()
            .name(format!("conform-{name}"))
            .spawn(move || {
                let hook_tx = report_tx.clone();
                set_thread_hook(Some(Box::new(move |point| {
                    // Stop here until the driver says the model's next step of this thread runs.
                    if hook_tx.send(Report::Paused(point)).is_ok() {
                        let _ = resume_rx.recv();
                    }
                })));
                let wait_tx = report_tx.clone();
                set_thread_wait_hook(Some(Box::new(move |site| {
                    // The thread parks next: the call blocked. Only report; never stop here.
                    let _ = wait_tx.send(Report::Waiting(site));
                })));
                for job in job_rx {
                    if report_tx.send(Report::Done(job())).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn a worker thread");
        Worker {
            name,
            jobs,
            reports,
            resume,
            state: WorkerState::Idle,
            channel: 0,
        }
    }

    fn wait(&mut self, watchdog: Duration) -> Observation {
        match self.reports.recv_timeout(watchdog) {
            Ok(Report::Paused(point)) => {
                self.state = WorkerState::Paused {
                    channel: self.channel,
                    point,
                };
                Observation::Done
            }
            Ok(Report::Waiting(site)) => {
                self.state = WorkerState::Blocked { site };
                Observation::Blocked
            }
            Ok(Report::Done(observation)) => {
                self.state = WorkerState::Idle;
                observation
            }
            Err(_) => {
                self.state = WorkerState::Hung;
                Observation::Blocked
            }
        }
    }

    fn start(&mut self, channel: u8, job: Job, watchdog: Duration) -> Observation {
        if self.state != WorkerState::Idle {
            return Observation::Unperformable {
                reason: format!("the thread is busy ({:?})", self.state),
            };
        }
        self.channel = channel;
        if self.jobs.send(job).is_err() {
            self.state = WorkerState::Hung;
            return Observation::Blocked;
        }
        self.wait(watchdog)
    }

    fn resume(&mut self, watchdog: Duration) -> Observation {
        if self.resume.send(()).is_err() {
            self.state = WorkerState::Hung;
            return Observation::Blocked;
        }
        self.wait(watchdog)
    }

    /// Lets an interrupted call run to its end (reset); false if it does not end.
    fn finish(&mut self, watchdog: Duration) -> bool {
        for _ in 0..16 {
            match self.state {
                WorkerState::Idle => return true,
                WorkerState::Paused { .. } => {
                    self.resume(watchdog);
                }
                WorkerState::Blocked { .. } | WorkerState::Hung => {
                    self.wait(watchdog);
                    if self.state == WorkerState::Hung {
                        return false;
                    }
                }
            }
        }
        false
    }

    fn pending(&self, ids: &[IdMap]) -> Pending {
        match self.state {
            WorkerState::Idle => Pending::Idle,
            WorkerState::Paused { channel, point } => impl_pending(channel, ids[channel as usize], point),
            WorkerState::Blocked { .. } | WorkerState::Hung => Pending::Elsewhere {
                what: format!("blocked in a call on channel {}", self.channel),
            },
        }
    }

    /// Where the thread is, for a harness error.
    fn position(&self) -> String {
        let at = match self.state {
            WorkerState::Idle => "idle".to_string(),
            WorkerState::Paused { channel, point } => format!("paused at {point:?} on channel {channel}"),
            WorkerState::Blocked { site } => format!("parked at {site} (channel {})", self.channel),
            WorkerState::Hung => format!(
                "running a call on channel {}, neither returned nor parked",
                self.channel
            ),
        };
        format!("{}: {at}", self.name)
    }
}

struct Workers {
    task: Worker,
    producer: Worker,
    io: Worker,
    netty_client: Worker,
    recycler: Worker,
    canceler: Worker,
}

impl Workers {
    fn spawn() -> Workers {
        Workers {
            task: Worker::spawn("task"),
            producer: Worker::spawn("producer"),
            io: Worker::spawn("io"),
            netty_client: Worker::spawn("netty-client"),
            recycler: Worker::spawn("recycler"),
            canceler: Worker::spawn("canceler"),
        }
    }

    fn of(&mut self, thread: Thread) -> Option<&mut Worker> {
        match thread {
            Thread::Task => Some(&mut self.task),
            Thread::Producer => Some(&mut self.producer),
            Thread::Io => Some(&mut self.io),
            Thread::NettyClient => Some(&mut self.netty_client),
            Thread::Recycler => Some(&mut self.recycler),
            Thread::Canceler => Some(&mut self.canceler),
            _ => None,
        }
    }

    fn all(&mut self) -> [&mut Worker; 6] {
        [
            &mut self.task,
            &mut self.producer,
            &mut self.io,
            &mut self.netty_client,
            &mut self.recycler,
            &mut self.canceler,
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// One instance of the implementation and the driver's stand-ins
// ---------------------------------------------------------------------------------------------

/// One channel: the implementation's objects and the stand-ins around it.
struct Chan {
    kind: ChannelKind,
    info: InputChannelInfo,
    ids: IdMap,
    global: Arc<NetworkBufferPool>,
    pool: Arc<LocalBufferPool>,
    subpartition: Arc<ResultSubpartition>,
    handle: InputChannelHandle,
    // Recovered buffers the drainer read (conversion: into the `RecoveredInputChannel`).
    recovered: u8,
    // Netty server: the view reader and what it wrote.
    reader: Option<CreditBasedSequenceNumberingViewReader>,
    wire: VecDeque<ServerMessage>,
    // Netty client: AddCredit and ResumeConsumption messages written, and notifications served.
    add_credit_in_flight: VecDeque<ClientMessage>,
    credit_writes: u64,
    // Task / recycler: buffers the consumer holds.
    held: Vec<NetworkBuffer>,
    // IO: recovered buffers pushed so far.
    pushed: u8,
    // The operator's side: what the gate handed on from this channel.
    delivered: Vec<Item>,
    // Producer: how much of the channel's upstream it has written.
    written: u8,
}

/// The driver's channels as the barrier handler's `CheckpointableInput`.
struct Inputs<'a>(&'a [Chan]);

impl CheckpointableInput for Inputs<'_> {
    fn num_channels(&self) -> usize {
        self.0.len()
    }
    fn is_live(&self, c: usize) -> bool {
        !self.0[c].handle.as_recoverable().is_some_and(|r| r.is_released())
    }
    fn checkpoint_stopped(&self, cp: i64) {
        for ch in self.0 {
            ch.handle.checkpoint_stopped(cp);
        }
    }
    fn resume_consumption(&self, c: usize) -> recovery_impl::Result<()> {
        self.0[c].handle.resume_consumption()
    }
}

struct System {
    gate: Arc<SingleInputGate>,
    writer: Arc<ChannelStateWriter>,
    channels: Vec<Chan>,
    barriers: SingleCheckpointBarrierHandler,
    /// The drainer's lock: each delivery of a recovered buffer takes it, and the trigger holds
    /// it ([`ImplDriver::insert_recovery_checkpoint_barrier`]).
    drainer: FetchedChannelStateDrainer,
    /// The task's recovery checkpoint trigger (drainer delivery): the drainer from the first
    /// partition request on (the model has no `NOT_READY` window), `NO_OP` once every channel's
    /// recovered state was consumed.
    trigger: RecoveryCheckpointTrigger,
}

fn element_buffer(c: u8, kind: Upstream, i: u8) -> NetworkBuffer {
    let (kind, item) = match kind {
        Upstream::Data => (BufferKind::Data, Item::Known(Payload::Data(i))),
        Upstream::Event => (BufferKind::Event, Item::Known(Payload::Event(i))),
        Upstream::EndOfOutputChannelState => (
            BufferKind::EndOfOutputChannelState,
            Item::Known(Payload::EndOfOutput(i)),
        ),
    };
    NetworkBuffer::unpooled(BufferId(50_000 + 100 * c as u32 + i as u32), kind, payload_of(c, &item))
}

/// The model's `flink_fixes` as impl/'s switches: each fix changes the same code in both.
pub fn flink_fixes(cfg: &ModelConfig) -> FlinkFixes {
    let mut fixes = FlinkFixes::NONE;
    for fix in &cfg.flink_fixes {
        match fix {
            FlinkFix::PriorityFromViewHead => fixes.priority_from_view_head = true,
            FlinkFix::WakeOnRefusedBuffer => fixes.wake_on_refused_buffer = true,
            FlinkFix::AnnounceUnderQueueLock => fixes.announce_under_queue_lock = true,
            FlinkFix::PersistOnlyUpstreamData => fixes.persist_only_upstream_data = true,
        }
    }
    fixes
}

/// Creates the gate's channels, as Flink's `SingleInputGateFactory` does: each with its buffer
/// pools, its producer's subpartition and the task's `ChannelStateWriter`.
struct InputChannelFactory<'a> {
    cfg: &'a ModelConfig,
    gate: &'a SingleInputGate,
    writer: &'a Arc<ChannelStateWriter>,
    /// The gate's one pool (`shared_pool`), and its floating buffers.
    shared_pool: Option<&'a Arc<LocalBufferPool>>,
    shared: u8,
}

impl InputChannelFactory<'_> {
    /// Channel `c`, set up (its exclusive buffers assigned) unless it is a placeholder.
    fn create(&self, c: u8) -> Chan {
        let cc = &self.cfg.channels[c as usize];
        let ids = match self.shared_pool {
            Some(_) => IdMap::with_shared_pool(c, self.shared, cc.exclusive),
            None => IdMap::new(c, cc.floating, cc.exclusive),
        };
        let global = NetworkBufferPool::with_first_id(ids.base, (ids.floating + cc.exclusive) as u32);
        let pool = match self.shared_pool {
            Some(pool) => Arc::clone(pool),
            None => LocalBufferPool::new(Arc::clone(&global), cc.floating as usize).expect("segments exist"),
        };
        let (subpartition, written) = producer_subpartition(c, cc);
        let info = InputChannelInfo {
            gate_idx: 0,
            input_channel_idx: c as u32,
        };
        let context = ChannelContext {
            channel_info: info,
            gate: Arc::clone(self.gate.channels_with_data()),
            global_pool: Arc::clone(&global),
            buffer_pool: Arc::clone(&pool),
            writer: Arc::clone(self.writer),
            network_buffers_per_channel: cc.exclusive as usize,
            flink_fixes: flink_fixes(self.cfg),
        };
        let handle = self.create_input_channel(cc.kind, context, &subpartition);
        if let Some(physical) = handle.as_recoverable() {
            physical.setup().expect("exclusive segments exist");
        }
        Chan {
            kind: cc.kind,
            info,
            ids,
            global,
            pool,
            subpartition,
            handle,
            recovered: cc.recovered,
            reader: None,
            wire: VecDeque::new(),
            add_credit_in_flight: VecDeque::new(),
            credit_writes: 0,
            held: Vec::new(),
            pushed: 0,
            delivered: Vec::new(),
            written,
        }
    }

    /// `createInputChannel`: with conversion the gate starts with placeholders that
    /// `requestPartitions(true)` converts with `toInputChannel(true)`; flag off, the task polls
    /// them first and `requestPartitions(false)` converts them with `toInputChannel(false)`.
    fn create_input_channel(
        &self,
        kind: ChannelKind,
        context: ChannelContext,
        subpartition: &Arc<ResultSubpartition>,
    ) -> InputChannelHandle {
        match (self.cfg.delivery, kind) {
            (Delivery::Conversion | Delivery::Legacy | Delivery::Migration, ChannelKind::Local) => {
                let partition = Arc::clone(subpartition);
                InputChannelHandle::Recovered(RecoveredInputChannel::new(
                    context,
                    RecoveredChannelKind::Local { partition },
                ))
            }
            (Delivery::Conversion | Delivery::Legacy | Delivery::Migration, ChannelKind::Remote) => {
                InputChannelHandle::Recovered(RecoveredInputChannel::new(context, RecoveredChannelKind::Remote))
            }
            (delivery, ChannelKind::Local) => InputChannelHandle::Local(LocalInputChannel::new(
                context,
                Arc::clone(subpartition),
                delivery.needs_recovery(),
            )),
            (delivery, ChannelKind::Remote) => {
                InputChannelHandle::Remote(RemoteInputChannel::new(context, delivery.needs_recovery()))
            }
        }
    }
}

/// Channel `c`'s producer subpartition, holding what the producer wrote before the task
/// started (all its upstream but the `late` elements), and how many that is.
fn producer_subpartition(c: u8, cc: &ChannelConfig) -> (Arc<ResultSubpartition>, u8) {
    let subpartition = ResultSubpartition::new();
    let written = cc.upstream.len() - cc.late as usize;
    for (i, u) in cc.upstream.iter().take(written).enumerate() {
        subpartition
            .add(element_buffer(c, *u, i as u8))
            .expect("a fresh subpartition accepts");
    }
    (subpartition, written as u8)
}

impl System {
    fn new(cfg: &ModelConfig) -> System {
        let writer = Arc::new(ChannelStateWriter::new());
        let gate_pool = LocalBufferPool::new(NetworkBufferPool::new(0), 0).expect("an empty pool");
        let gate = SingleInputGate::new(0, gate_pool);
        // The gate's one pool (`shared_pool`), over a global pool of its own segments; else each
        // channel gets a pool of its own, standing for the gate's, so that buffer names map to ids.
        let shared: u8 = cfg.channels.iter().map(|cc| cc.floating).sum();
        let shared_pool = cfg.shared_pool.then(|| {
            let global = NetworkBufferPool::with_first_id(SHARED_BASE, shared as u32);
            LocalBufferPool::new(global, shared as usize).expect("segments exist")
        });
        let factory = InputChannelFactory {
            cfg,
            gate: &gate,
            writer: &writer,
            shared_pool: shared_pool.as_ref(),
            shared,
        };
        let channels: Vec<Chan> = (0..cfg.channels.len() as u8).map(|c| factory.create(c)).collect();
        gate.set_input_channels(channels.iter().map(|ch| ch.handle.clone()).collect());
        let n = cfg.checkpoints as usize;
        let drainer = FetchedChannelStateDrainer::new(cfg.channels.iter().map(|cc| cc.recovered as usize).collect());
        System {
            trigger: RecoveryCheckpointTrigger::Drainer(drainer.clone()),
            drainer,
            gate,
            writer,
            channels,
            barriers: SingleCheckpointBarrierHandler::new(n),
        }
    }

    fn release_everything(&self) {
        for ch in &self.channels {
            let _ = ch.handle.release_all_resources();
        }
    }

    /// The gate handed the task a barrier of `cp` from channel `c`.
    fn on_barrier(&mut self, c: u8, cp: u8) -> recovery_impl::Result<()> {
        self.barriers.process_barrier(c, cp, &Inputs(&self.channels))?;
        for (k, seq) in self.barriers.take_conversions() {
            if let Some(remote) = self.channels[k as usize].handle.as_remote() {
                remote.convert_to_priority_event(seq)?;
            }
        }
        Ok(())
    }

    /// The gate handed the task an `EventAnnouncement` of `cp`'s barrier numbered `seq`; after
    /// the alignment timeout the handler converts the barrier at once.
    fn process_barrier_announcement(&mut self, c: u8, cp: u8, seq: i32) -> recovery_impl::Result<()> {
        if !self.barriers.process_barrier_announcement(c, cp, seq) {
            return Ok(());
        }
        match self.channels[c as usize].handle.as_remote() {
            Some(remote) => remote.convert_to_priority_event(seq),
            None => Ok(()),
        }
    }

    /// The gate handed the task an aligned barrier of `cp` from channel `c`.
    fn process_aligned_barrier(&mut self, c: u8, cp: u8) -> recovery_impl::Result<()> {
        self.barriers.process_aligned_barrier(c, cp, &Inputs(&self.channels))
    }
}

/// The gate as the driver's `UpstreamRecoveryTracker` resumes it: a released channel is
/// skipped, as the model skips it (its `checkState(!isReleased)` would throw, and the task is
/// being cancelled then).
struct Resuming<'a>(&'a SingleInputGate);

impl ResumableInputGate for Resuming<'_> {
    fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
        self.0.get_channel_infos()
    }

    fn resume_consumption(&self, channel_info: &InputChannelInfo) -> recovery_impl::Result<()> {
        let released = (self.0.channel(channel_info.input_channel_idx as usize))
            .and_then(|h| h.as_recoverable())
            .is_some_and(|r| r.is_released());
        match released {
            true => Ok(()),
            false => self.0.resume_consumption(channel_info),
        }
    }
}

/// The observation's name of a `Buffer.DataType`.
fn data_type(t: recovery_impl::DataType) -> DataType {
    match t {
        recovery_impl::DataType::None => DataType::None,
        recovery_impl::DataType::DataBuffer => DataType::DataBuffer,
        // RECOVERY_COMPLETION is an event without priority to every caller here.
        recovery_impl::DataType::EventBuffer | recovery_impl::DataType::RecoveryCompletion => DataType::EventBuffer,
        recovery_impl::DataType::PriorityEventBuffer => DataType::PriorityEventBuffer,
    }
}

/// What `checkpointStarted`'s error means: the checkpoint declined or subsumed (a
/// `CheckpointException` the handler aborts on), or `None` for any other error.
pub(crate) fn refusal(e: &ChannelError) -> Option<Refusal> {
    match e {
        ChannelError::CheckpointDeclined {
            reason: DeclineReason::MissingRecoveryCheckpointBarrier,
            ..
        } => Some(Refusal::MissingBarrier),
        ChannelError::CheckpointDeclined {
            reason: DeclineReason::LaterRecoveryCheckpointBarrier { .. },
            ..
        } => Some(Refusal::LaterBarrier),
        ChannelError::CheckpointSubsumed { .. } => Some(Refusal::Subsumed),
        _ => None,
    }
}

/// The observation of an implementation call that failed: a refused checkpoint
/// ([`refusal`]), else the error's kind.
pub(crate) fn failure(checkpoint: u8, e: &ChannelError) -> Observation {
    match refusal(e) {
        Some(reason) => Observation::Refused { checkpoint, reason },
        None => Observation::Error { error: error_kind(e) },
    }
}

/// The observation's name of an implementation error (a refused checkpoint is not one:
/// [`refusal`]).
pub(crate) fn error_kind(e: &ChannelError) -> ErrorKind {
    match e {
        ChannelError::ProtocolViolation(_) => ErrorKind::ProtocolViolation,
        ChannelError::IllegalState(_)
        | ChannelError::CheckpointDeclined { .. }
        | ChannelError::CheckpointSubsumed { .. } => ErrorKind::IllegalState,
        ChannelError::Released(_) => ErrorKind::Released,
        ChannelError::DoubleRecycle(_) => ErrorKind::DoubleRecycle,
        ChannelError::BufferReordering { .. } => ErrorKind::BufferReordering,
        ChannelError::RemoteTransport(_) => ErrorKind::RemoteTransport,
        ChannelError::NoSuchElement(_) => ErrorKind::NoSuchElement,
        ChannelError::Asynchronous { cause, .. } => error_kind(cause),
        // The task level's: a failed state read, a rejected mail. No channel throws them; the
        // protocol names them as the state errors they are to the channel model.
        ChannelError::Io(_) | ChannelError::MailboxClosed(_) => ErrorKind::IllegalState,
    }
}

fn outcome(r: recovery_impl::Result<()>) -> Observation {
    match r {
        Ok(()) => Observation::Done,
        Err(e) => Observation::Error { error: error_kind(&e) },
    }
}

/// Channel `c`'s recovered buffer `i` in heap memory, as the drainer reads it from the fetched
/// state (and as the spill holds it).
fn recovered_on_heap(c: u8, i: u8) -> NetworkBuffer {
    let payload = payload_of(c, &Item::Known(Payload::Recovered(i)));
    NetworkBuffer::unpooled(BufferId(60_000 + 100 * c as u32 + i as u32), BufferKind::Data, payload)
}

fn unperformable(reason: impl Into<String>) -> Observation {
    Observation::Unperformable { reason: reason.into() }
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

/// Drives `recovery-impl` with model actions. See the module documentation.
pub struct ImplDriver {
    cfg: ModelConfig,
    workers: Workers,
    sys: System,
    watchdog: Duration,
    /// Whether `getNextBuffer` stops before the re-read of `hasPendingPriorityEvent` after a
    /// local channel's recovered poll, as the variant `recovered-buffer-dropped-for-priority-event`
    /// splits it ([`ImplDriver::for_model`]).
    reread_step: bool,
    /// What the task worker's `poll_channel` returned, once it has.
    turn: Arc<std::sync::Mutex<Option<recovery_impl::Result<ChannelPoll>>>>,
    /// Gate notifications of calls that wait for the task's turn to end (their worker blocked
    /// on `inputChannelsWithData` while the task is stopped inside its poll): the worker, the
    /// channel and whether with priority. A snapshot shows them made, as the model makes them
    /// in the step; the thread's next steps run on a fresh worker, as the model's thread is
    /// free after it.
    /// Workers blocked on `inputChannelsWithData` behind the task's turn: the channel they
    /// notify, with or without priority, and whether the model shows it as made already.
    waiting_for_turn: Vec<(Worker, u8, bool, bool)>,
    /// The system's drainer lock while the trigger holds it, from its first channel's
    /// insertion to its last, which the model steps one channel at a time.
    trigger_lock: Option<DrainerLockGuard>,
}

impl ImplDriver {
    /// A fresh implementation of `cfg`. With the drainer delivery the gate holds physical
    /// channels in recovery from the start; with the conversion delivery it holds
    /// `RecoveredInputChannel`s until `convertRecoveredInputChannels`.
    pub fn new(cfg: &ModelConfig) -> Self {
        ImplDriver {
            cfg: cfg.clone(),
            workers: Workers::spawn(),
            sys: System::new(cfg),
            watchdog: DEFAULT_WATCHDOG,
            reread_step: false,
            turn: Arc::default(),
            waiting_for_turn: Vec::new(),
            trigger_lock: None,
        }
    }

    /// A fresh implementation of `model`'s configuration that stops at every pause point where
    /// the model (its configuration and variant) splits a call in two steps: besides those the
    /// configuration names, the variant `recovered-buffer-dropped-for-priority-event` makes the
    /// re-read of `hasPendingPriorityEvent` after a local channel's recovered poll a step of its
    /// own (`rereadPendingPriorityEvent`), so `getNextBuffer` stops at
    /// [`PausePoint::RereadPendingPriorityEvent`] then.
    pub fn for_model(model: &RecoveryModel) -> Self {
        let mut driver = Self::new(&model.cfg);
        driver.reread_step = model.variant == Variant::RecoveredBufferDroppedForPriorityEvent;
        driver
    }

    /// How long a call may neither return nor park before the run stops with a harness error
    /// ([`DEFAULT_WATCHDOG`]). It never decides whether a call blocked: the wait hooks do.
    pub fn with_watchdog(mut self, watchdog: Duration) -> Self {
        self.watchdog = watchdog;
        self
    }

    /// Every worker's position, for a harness error.
    fn positions(&mut self) -> String {
        self.workers
            .all()
            .iter()
            .map(|w| w.position())
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn hung(&mut self) -> Option<DriverError> {
        if self.workers.all().iter().any(|w| w.state == WorkerState::Hung) {
            let secs = self.watchdog.as_secs_f64();
            return Some(DriverError::Harness {
                message: format!(
                    "a call neither returned nor parked within {secs} s: {}",
                    self.positions()
                ),
            });
        }
        None
    }

    fn ch(&mut self, c: u8) -> &mut Chan {
        &mut self.sys.channels[c as usize]
    }

    fn resume(&mut self, thread: Thread, c: u8, expected: fn(PausePoint) -> bool) -> Observation {
        let timeout = self.watchdog;
        let Some(worker) = self.workers.of(thread) else {
            return unperformable(format!("no {thread} worker"));
        };
        match worker.state {
            // An announcement may be for another channel than the call's (a floating buffer
            // handed to another channel's manager); it names its channel.
            WorkerState::Paused { channel, point }
                if announces_for(point).unwrap_or(channel) == c && expected(point) =>
            {
                worker.resume(timeout)
            }
            state => unperformable(format!("the {thread} thread is not paused there: {state:?}")),
        }
    }

    // --- IO thread ---------------------------------------------------------------------------

    fn on_recovered_state_buffer(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        match self.workers.io.state {
            _ if self.workers.io.state != WorkerState::Idle && self.workers.io.channel != c => {
                return unperformable(format!("the drainer is busy with channel {}", self.workers.io.channel));
            }
            // Filled: the append.
            WorkerState::Paused {
                point: PausePoint::OnRecoveredStateBuffer,
                ..
            } => {
                let observation = self.workers.io.resume(timeout);
                return self.behind_turn(Thread::Io, c, false, observation);
            }
            // Parked, and the channel released: woken, `requestBufferBlocking` throws.
            WorkerState::Blocked { .. } => {
                self.workers.io.wait(timeout);
                if let WorkerState::Paused {
                    point: PausePoint::RequestBufferBlocking,
                    ..
                } = self.workers.io.state
                {
                    let observation = self.workers.io.resume(timeout);
                    return self.behind_turn(Thread::Io, c, false, observation);
                }
                return match self.workers.io.state {
                    WorkerState::Blocked { .. } => Observation::Blocked,
                    ref state => unperformable(format!("the drainer is not woken: {state:?}")),
                };
            }
            WorkerState::Idle => {}
            ref state => return unperformable(format!("the drainer is elsewhere: {state:?}")),
        }
        let ch = self.ch(c);
        // Flag off, and a local channel without exclusive buffers: heap memory, nothing to wait
        // for.
        let heap_memory = matches!(ch.handle, InputChannelHandle::Recovered(_))
            || (ch.kind == ChannelKind::Local && ch.ids.exclusive == 0);
        if !heap_memory {
            // A released channel: `requestBufferBlocking` throws, or takes what its manager
            // still has and the append recycles it, all in this step.
            let mut observation = self.drain_one(c);
            if let WorkerState::Paused {
                point: PausePoint::OnRecoveredStateBuffer,
                ..
            } = self.workers.io.state
            {
                observation = self.workers.io.resume(timeout);
            }
            return self.behind_turn(Thread::Io, c, false, observation);
        }
        let i = ch.pushed;
        ch.pushed += 1;
        let heap = recovered_on_heap(c, i);
        match &ch.handle {
            // Flag off: the IO thread reads into the RecoveredInputChannel (heap memory).
            InputChannelHandle::Recovered(recovered) => outcome(recovered.on_recovered_state_buffer(heap)),
            handle => {
                let channel = handle.as_recoverable().expect("a physical channel");
                let drainer = self.sys.drainer.clone();
                self.beside_turn(Thread::Io, c, false, move || {
                    drainer.deliver(c as usize, &*channel, heap)
                })
            }
        }
    }

    /// `requestBufferBlocking()` for channel `c`'s next recovered buffer: the drainer takes a
    /// buffer and stops before the append, or parks; parked and woken, it takes the buffer now.
    fn request_buffer_blocking(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        match self.workers.io.state {
            WorkerState::Idle => self.drain_one(c),
            WorkerState::Blocked { .. } if self.workers.io.channel == c => {
                self.workers.io.wait(timeout);
                match self.workers.io.state {
                    WorkerState::Paused {
                        point: PausePoint::RequestBufferBlocking,
                        ..
                    } => self.workers.io.resume(timeout),
                    WorkerState::Blocked { .. } => Observation::Blocked,
                    ref state => unperformable(format!("the drainer is not woken: {state:?}")),
                }
            }
            ref state => unperformable(format!("the drainer is busy: {state:?}")),
        }
    }

    /// The drainer's next recovered buffer of channel `c` in a buffer its manager lends, on the
    /// IO worker: `requestRecoveryBufferBlocking`, then (stopped at
    /// `PausePoint::OnRecoveredStateBuffer` while it fills the buffer) `onRecoveredStateBuffer`.
    fn drain_one(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        let ch = self.ch(c);
        let i = ch.pushed;
        ch.pushed += 1;
        let payload = payload_of(c, &Item::Known(Payload::Recovered(i)));
        let channel = ch.handle.as_recoverable().expect("a physical channel");
        let drainer = self.sys.drainer.clone();
        let job: Job = Box::new(move || match channel.request_recovery_buffer_blocking() {
            Ok(buffer) => {
                let filled = buffer.fill(BufferKind::Data, payload);
                recovery_impl::pause_point::reached(PausePoint::OnRecoveredStateBuffer);
                outcome(drainer.deliver(c as usize, &*channel, filled))
            }
            // The drainer of a released channel stops quietly (CancelTaskException).
            Err(ChannelError::Released(_)) if channel.is_released() => Observation::Done,
            Err(e) => Observation::Error { error: error_kind(&e) },
        });
        self.workers.io.start(c, job, timeout)
    }

    fn finish_recovered_buffer_delivery(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        // Flag off: `finishReadRecoveredState()` appends the legacy sentinel.
        if let InputChannelHandle::Recovered(recovered) = &self.ch(c).handle {
            return outcome(recovered.finish_read_recovered_state());
        }
        let channel = self.ch(c).handle.as_recoverable().expect("a physical channel");
        let job: Job = Box::new(move || outcome(channel.finish_recovered_buffer_delivery()));
        if self.cfg.delivery == Delivery::Conversion {
            return self.workers.task.start(c, job, timeout);
        }
        let observation = self.workers.io.start(c, job, timeout);
        self.behind_turn(Thread::Io, c, false, observation)
    }

    // --- task thread -------------------------------------------------------------------------

    /// `requestPartitions`: each live channel requests its subpartition; the producer's Netty
    /// server creates a view reader for each remote request (with zero credit: `needsRecovery`).
    fn request_partitions(&mut self) -> Observation {
        for ch in &mut self.sys.channels {
            let Some(channel) = ch.handle.as_recoverable() else {
                return unperformable("a recovered channel is not converted");
            };
            // A released channel is not requested (requestSubpartitions checks !isReleased).
            if channel.is_released() {
                continue;
            }
            if let Err(e) = channel.request_subpartitions() {
                return Observation::Error { error: error_kind(&e) };
            }
            if let Err(observation) = Self::serve_partition_request(ch) {
                return observation;
            }
        }
        Observation::Done
    }

    /// The producer's Netty server answers a remote channel's `PartitionRequest` with a view
    /// reader.
    fn serve_partition_request(ch: &mut Chan) -> Result<(), Observation> {
        let InputChannelHandle::Remote(remote) = &ch.handle else {
            return Ok(());
        };
        let Some(request) = remote.partition_request() else {
            return Err(Observation::Error {
                error: ErrorKind::Released,
            });
        };
        match CreditBasedSequenceNumberingViewReader::new(&request, Arc::clone(&ch.subpartition)) {
            Ok(reader) => ch.reader = Some(reader),
            Err(e) => return Err(Observation::Error { error: error_kind(&e) }),
        }
        Ok(())
    }

    /// `convertRecoveredInputChannels` inside the `requestPartitions(true)` mail. First the
    /// drainer's side, which the model leaves implicit: every recovered buffer was read into the
    /// channel's `RecoveredInputChannel` (heap memory, unpooled) and `finishReadRecoveredState`
    /// appended the legacy `EndOfInputChannelStateEvent`. Then the gate's
    /// `request_partitions(true)` on the task worker (a call that blocks is reported as such):
    /// `toInputChannel(true)` per channel pushes every buffer and the sentinel, then every
    /// subpartition is requested. Flag off, the IO thread filled the recovered channels and the
    /// task drained them already: only `request_partitions(false)` (`toInputChannel(false)`).
    /// The driver's handles follow the gate's array.
    fn convert_recovered_input_channels(&mut self) -> Observation {
        let timeout = self.watchdog;
        let needs_recovery = self.cfg.delivery.needs_recovery();
        if needs_recovery && let Err(observation) = self.fill_recovered_input_channels() {
            return observation;
        }
        let gate = Arc::clone(&self.sys.gate);
        // Flink 2.3.0 with the flag on: what is still queued migrates into the new channels.
        let migrate = self.cfg.delivery == Delivery::Migration;
        let job: Job = Box::new(move || match migrate {
            true => outcome(gate.request_partitions_migrating()),
            false => outcome(gate.request_partitions(needs_recovery)),
        });
        let observation = self.workers.task.start(0, job, timeout);
        if observation != Observation::Done || self.workers.task.state != WorkerState::Idle {
            return observation;
        }
        for (c, ch) in self.sys.channels.iter_mut().enumerate() {
            match self.sys.gate.channel(c) {
                Some(handle) if handle.as_recoverable().is_some() => ch.handle = handle,
                _ => return unperformable(format!("channel {c} was not converted")),
            }
            if let Err(observation) = Self::serve_partition_request(ch) {
                return observation;
            }
        }
        Observation::Done
    }

    /// What the drainer read before the conversion: each `RecoveredInputChannel`'s recovered
    /// buffers and its legacy sentinel.
    fn fill_recovered_input_channels(&mut self) -> Result<(), Observation> {
        for (c, ch) in self.sys.channels.iter_mut().enumerate() {
            let InputChannelHandle::Recovered(recovered) = &ch.handle else {
                return Err(unperformable(
                    "no recovered channel to convert (drainer delivery or converted)",
                ));
            };
            for i in 0..ch.recovered {
                let buffer = recovered_on_heap(c as u8, i);
                if let Err(e) = recovered.on_recovered_state_buffer(buffer) {
                    return Err(Observation::Error { error: error_kind(&e) });
                }
            }
            if let Err(e) = recovered.finish_read_recovered_state() {
                return Err(Observation::Error { error: error_kind(&e) });
            }
        }
        Ok(())
    }

    /// One turn of the gate's polling loop (`SingleInputGate::poll_channel`): the gate, not
    /// the driver, picks the channel, and it must be the one the model names.
    fn get_next_buffer(&mut self, c: u8) -> Observation {
        let pull_step = self.cfg.channels.iter().any(|cc| cc.priority_notify_step);
        if !self.reread_step && !pull_step {
            let polled = self.sys.gate.poll_channel();
            return self.hand_on(c, polled);
        }
        // On the task worker, which stops where the model ends this step: before the re-read
        // of `hasPendingPriorityEvent` after a recovered poll (`rereadPendingPriorityEvent`
        // resumes it), or before the flag's clear after a pulled priority event
        // (`pullPriorityFromSubpartitionView`).
        let timeout = self.watchdog;
        let (gate, turn) = (Arc::clone(&self.sys.gate), Arc::clone(&self.turn));
        let job: Job = Box::new(move || {
            *turn.lock().expect("the turn's slot") = Some(gate.poll_channel());
            Observation::Done
        });
        let mut observation = self.workers.task.start(c, job, timeout);
        while let WorkerState::Paused { point, .. } = self.workers.task.state
            && !self.splits(point, c)
        {
            observation = self.workers.task.resume(timeout);
        }
        match self.workers.task.state {
            WorkerState::Idle => self.end_turn(c),
            _ => observation,
        }
    }

    /// Whether the model makes what follows `point` in a call on channel `c` a step of its own.
    /// Elsewhere a worker runs on through the point in the same step.
    fn splits(&self, point: PausePoint, c: u8) -> bool {
        match point {
            PausePoint::RereadPendingPriorityEvent => self.reread_step,
            PausePoint::ClearPendingPriorityEvent | PausePoint::NotifyPriorityEvent => {
                self.cfg.channels[c as usize].priority_notify_step
            }
            _ => true,
        }
    }

    /// The gate's turn returned: what it polled is handed on.
    fn end_turn(&mut self, c: u8) -> Observation {
        let polled = self.turn.lock().expect("the turn's slot").take();
        match polled {
            Some(polled) => self.hand_on(c, polled),
            None => unperformable("the task's poll ended without a result"),
        }
    }

    /// Whether the task is stopped inside its poll, holding `inputChannelsWithData`.
    fn in_turn(&self) -> bool {
        matches!(
            self.workers.task.state,
            WorkerState::Paused {
                point: PausePoint::RereadPendingPriorityEvent | PausePoint::ClearPendingPriorityEvent,
                ..
            }
        )
    }

    /// The model's second half of a local channel's `getNextBuffer`, the task stopped inside
    /// the gate's turn at a point `expected` accepts: it resumes (after a recovered poll, the
    /// fixed code re-reads nothing and returns what it polled; after a pulled priority event,
    /// it clears `hasPendingPriorityEvent`), the gate's turn ends, the notifications that
    /// waited for it land, and what was polled is handed on.
    fn end_turn_after(&mut self, c: u8, expected: fn(PausePoint) -> bool) -> Observation {
        let timeout = self.watchdog;
        let resumed = self.resume(Thread::Task, c, expected);
        if !matches!(self.workers.task.state, WorkerState::Idle) {
            return resumed;
        }
        for (mut worker, ..) in std::mem::take(&mut self.waiting_for_turn) {
            worker.wait(timeout);
            if worker.state != WorkerState::Idle {
                return unperformable(format!(
                    "a notification did not land after the turn: {}",
                    worker.position()
                ));
            }
        }
        self.end_turn(c)
    }

    /// The worker of `thread` blocked on `inputChannelsWithData` behind the task's turn: its
    /// notification, on `channel` with or without `priority`, lands when the turn ends; a fresh
    /// worker takes the thread's next steps. Only calls that end with their notification come
    /// here (a push, a sentinel, an `add`): nothing resumes the old worker at a pause point.
    fn wait_for_turn(&mut self, thread: Thread, channel: u8, priority: bool, shown: bool) {
        if let Some(worker) = self.workers.of(thread) {
            let fresh = Worker::spawn(worker.name);
            self.waiting_for_turn
                .push((std::mem::replace(worker, fresh), channel, priority, shown));
        }
    }

    /// A call of `thread` that notifies the gate, while the task may be stopped inside its poll:
    /// then it runs on that thread's worker, which blocks on `inputChannelsWithData` until the
    /// turn ends (its notification, on `channel` with or without `priority`, is shown as made);
    /// otherwise inline. A producer's `add` of a priority event on a channel with
    /// `priority_notify_step` runs on the producer's worker too, which stops before the
    /// listener's notification (`notifyPriorityEvent` resumes it).
    fn beside_turn(
        &mut self,
        thread: Thread,
        channel: u8,
        priority: bool,
        call: impl FnOnce() -> recovery_impl::Result<()> + Send + 'static,
    ) -> Observation {
        let notify_step = thread == Thread::Producer && self.splits(PausePoint::NotifyPriorityEvent, channel);
        if !self.in_turn() && !notify_step {
            return outcome(call());
        }
        let timeout = self.watchdog;
        let Some(worker) = self.workers.of(thread) else {
            return unperformable(format!("no {thread} worker"));
        };
        let mut observation = worker.start(channel, Box::new(move || outcome(call())), timeout);
        // Where the model does not split it off, the notification is part of this step.
        while let WorkerState::Paused {
            point: PausePoint::NotifyPriorityEvent,
            ..
        } = worker.state
            && !notify_step
        {
            observation = worker.resume(timeout);
        }
        self.behind_turn(thread, channel, priority, observation)
    }

    /// What a call of `thread` on its worker observed: if the worker waits for the gate's lock
    /// while the task is stopped inside its turn, the call's own part is done and its
    /// notification, on `channel` with or without `priority`, lands when the turn ends
    /// ([`ImplDriver::wait_for_turn`]).
    fn behind_turn(&mut self, thread: Thread, channel: u8, priority: bool, observation: Observation) -> Observation {
        self.behind_turn_shown(thread, channel, priority, true, observation)
    }

    /// [`ImplDriver::behind_turn`], with the notification shown as made (`shown`) or, as the
    /// model has a producer's `notifyPriorityEvent`, only once the turn ended.
    fn behind_turn_shown(
        &mut self,
        thread: Thread,
        channel: u8,
        priority: bool,
        shown: bool,
        observation: Observation,
    ) -> Observation {
        let waits_for_gate = self.workers.of(thread).is_some_and(
            |w| matches!(w.state, WorkerState::Blocked { site } if site == InputChannelsWithData::lock_site()),
        );
        if !waits_for_gate || !self.in_turn() {
            return observation;
        }
        self.wait_for_turn(thread, channel, priority, shown);
        Observation::Done
    }

    /// What the gate's turn returned, handed on as the task's `CheckpointedInputGate` does; the
    /// channel it polled must be `c`.
    fn hand_on(&mut self, c: u8, polled: recovery_impl::Result<ChannelPoll>) -> Observation {
        let next = match polled {
            Ok(ChannelPoll::NoChannel) => return unperformable(format!("the gate has no channel queued to poll {c}")),
            Ok(ChannelPoll::Empty { channel }) if channel == c as usize => return Observation::NothingPolled,
            Ok(ChannelPoll::Buffer { channel, next }) if channel == c as usize => next,
            Ok(ChannelPoll::Empty { channel } | ChannelPoll::Buffer { channel, .. }) => {
                return unperformable(format!("the gate polled channel {channel}, not {c}"));
            }
            Err(e) => return Observation::Error { error: error_kind(&e) },
        };
        let ch = self.ch(c);
        let item = item_of(c, &next.buffer.snapshot());
        let seq = next.sequence_number;
        let next_type = data_type(next.next_data_type);
        if next.buffer.is_pooled() {
            // The operator holds the network buffer until the recycler drops it.
            ch.held.push(next.buffer);
        } else if let Err(e) = next.buffer.recycle_buffer() {
            return Observation::Error { error: error_kind(&e) };
        }
        if !matches!(
            item,
            Item::Known(Payload::EndOfRecovery) | Item::Known(Payload::Announcement(_))
        ) {
            // The gate hands everything on but the sentinel, which the network input consumes,
            // and announcements, which go to the barrier handler.
            self.ch(c).delivered.push(item.clone());
        }
        let handled = match item {
            Item::Known(Payload::Barrier(cp)) => self.sys.on_barrier(c, cp),
            Item::Known(Payload::Announcement(cp)) => self.sys.process_barrier_announcement(c, cp, seq),
            Item::Known(Payload::AlignedBarrier(cp)) => self.sys.process_aligned_barrier(c, cp),
            // `CheckpointedInputGate.handleEvent`: the tracker notes the channel and, for the
            // last one, resumes every channel in this turn.
            Item::Known(Payload::EndOfOutput(_)) => {
                let tracker = self.sys.gate.upstream_recovery_tracker();
                let info = self.ch(c).info;
                tracker.handle_end_of_recovery(info, &Resuming(&self.sys.gate))
            }
            _ => Ok(()),
        };
        if let Err(e) = handled {
            return Observation::Error { error: error_kind(&e) };
        }
        Observation::Polled {
            item,
            seq,
            next: next_type,
        }
    }

    /// One channel's part of `snapshotAndInsertBarriers`: with the drainer, the first channel's
    /// takes the drainer's lock and the last one's releases it. Under the lock, the reader's
    /// snapshot of the channel, the recovered buffers not yet delivered, goes to the writer
    /// (`addInputDataFromSpill`), as the model writes it at this channel's insertion.
    fn insert_recovery_checkpoint_barrier(&mut self, c: u8, cp: u8) -> Observation {
        if self.cfg.delivery == Delivery::Drainer {
            // The task's mail swaps the trigger to NO_OP once the drain has returned and every
            // channel's state-consumed future is complete; nothing consumes state mid-trigger.
            if c == 0 && self.sys.gate.get_state_consumed_future().is_done() {
                self.sys.trigger = RecoveryCheckpointTrigger::NoOp;
            }
            match &self.sys.trigger {
                RecoveryCheckpointTrigger::Drainer(drainer) if c == 0 => self.trigger_lock = Some(drainer.lock()),
                RecoveryCheckpointTrigger::Drainer(_) => {}
                // NO_OP: no channel is in recovery, so the model's insertion changes nothing either.
                RecoveryCheckpointTrigger::NoOp => return Observation::Done,
                RecoveryCheckpointTrigger::NotReady => {
                    return unperformable("the recovery checkpoint trigger is not ready");
                }
            }
        }
        let channel = self.ch(c).handle.as_recoverable().expect("a physical channel");
        let observation = outcome(channel.insert_recovery_checkpoint_barrier_if_in_recovery(cp as i64));
        if let Some(lock) = &self.trigger_lock
            && !channel.is_released()
        {
            let slice = lock.snapshot(c as usize);
            let buffers: Vec<_> = slice.map(|i| recovered_on_heap(c, i as u8).snapshot()).collect();
            let info = self.sys.channels[c as usize].info;
            if !buffers.is_empty() {
                self.sys.writer.add_input_data_from_spill(cp as i64, info, buffers);
            }
        }
        if c as usize + 1 == self.cfg.channels.len() {
            self.trigger_lock = None;
        }
        observation
    }

    fn checkpoint_started(&mut self, c: u8, cp: u8) -> Observation {
        let (writer, info) = (Arc::clone(&self.sys.writer), self.ch(c).info);
        let before = writer.persisted(cp as i64, info).len();
        let result = self.ch(c).handle.checkpoint_started(cp as i64);
        match result {
            Ok(()) => {
                let buffers = writer.persisted(cp as i64, info)[before..]
                    .iter()
                    .map(|b| item_of(c, b))
                    .collect();
                if c as usize + 1 == self.sys.channels.len()
                    && let Err(e) = self.sys.barriers.trigger_done(cp, &Inputs(&self.sys.channels))
                {
                    return Observation::Error { error: error_kind(&e) };
                }
                Observation::Persisted {
                    checkpoint: cp,
                    buffers,
                }
            }
            Err(e) => {
                let observation = failure(cp, &e);
                if matches!(observation, Observation::Refused { .. }) {
                    self.sys.barriers.trigger_declined(cp, &Inputs(&self.sys.channels));
                }
                observation
            }
        }
    }

    fn on_recovered_state_consumed(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        let channel = self.ch(c).handle.as_recoverable().expect("a physical channel");
        match self.ch(c).kind {
            ChannelKind::Local => outcome(channel.on_recovered_state_consumed()),
            // Remote: pauses before `enableNotify`, the model's next task step.
            ChannelKind::Remote => {
                let job: Job = Box::new(move || outcome(channel.on_recovered_state_consumed()));
                self.workers.task.start(c, job, timeout)
            }
        }
    }

    // --- producer and Netty server -----------------------------------------------------------

    /// The producer's `add` of a priority barrier; with `priority_notify_step` it stops before
    /// its notification ([`ImplDriver::beside_turn`]).
    fn emit_checkpoint_barrier(&mut self, c: u8, cp: u8) -> Observation {
        let barrier = NetworkBuffer::event(BufferKind::CheckpointBarrier(cp as i64));
        let subpartition = Arc::clone(&self.ch(c).subpartition);
        self.beside_turn(Thread::Producer, c, true, move || subpartition.add(barrier))
    }

    /// The producer takes checkpoint `cp` aligned with a timeout: `add` of a
    /// `TIMEOUTABLE_ALIGNED_CHECKPOINT_BARRIER`, which goes to the tail.
    fn emit_timeoutable_checkpoint_barrier(&mut self, c: u8, cp: u8) -> Observation {
        let barrier = NetworkBuffer::event(BufferKind::TimeoutableAlignedCheckpointBarrier(cp as i64));
        let subpartition = Arc::clone(&self.ch(c).subpartition);
        self.beside_turn(Thread::Producer, c, false, move || subpartition.add(barrier))
    }

    /// The upstream's alignment timer: `alignedBarrierTimeout(cp)` on the subpartition.
    fn aligned_barrier_timeout(&mut self, c: u8, cp: u8) -> Observation {
        outcome(self.ch(c).subpartition.aligned_barrier_timeout(cp as i64))
    }

    /// `notifyPriorityEvent` (`priority_notify_step`): the producer stopped after `add`
    /// resumes; the listener sets `hasPendingPriorityEvent`, and its gate notification lands,
    /// or waits for the task's turn to end, where it lands (or is dropped as outdated) as the
    /// model has it.
    fn notify_priority_event(&mut self, c: u8) -> Observation {
        let observation = self.resume(Thread::Producer, c, |p| p == PausePoint::NotifyPriorityEvent);
        self.behind_turn_shown(Thread::Producer, c, true, false, observation)
    }

    /// The alignment timer's mail: `alignedCheckpointTimeout` → `prioritizeAllAnnouncements` →
    /// `RemoteInputChannel::convert_to_priority_event(seq)` on every announced channel, in
    /// the order the announcements were seen; the first that throws fails the task.
    fn aligned_checkpoint_timeout(&mut self, cp: u8) -> Observation {
        let Some(announced) = self.sys.barriers.aligned_checkpoint_timeout(cp) else {
            return unperformable(format!("no alignment timer of checkpoint {cp} is registered"));
        };
        for (c, seq) in announced {
            let Some(remote) = self.ch(c).handle.as_remote().cloned() else {
                return unperformable(format!("channel {c} announced a barrier but is not remote"));
            };
            if let Err(e) = remote.convert_to_priority_event(seq) {
                return Observation::Error { error: error_kind(&e) };
            }
        }
        Observation::Done
    }

    /// The producer writes its next upstream element.
    fn add_buffer(&mut self, c: u8) -> Observation {
        let upstream = &self.cfg.channels[c as usize].upstream;
        let ch = &mut self.sys.channels[c as usize];
        let Some(&kind) = upstream.get(ch.written as usize) else {
            return unperformable(format!("the producer of channel {c} has written everything"));
        };
        let buffer = element_buffer(c, kind, ch.written);
        ch.written += 1;
        let subpartition = Arc::clone(&ch.subpartition);
        self.beside_turn(Thread::Producer, c, false, move || subpartition.add(buffer))
    }

    /// The Netty client's `exceptionCaught`: the connection to the producer is gone.
    fn on_error(&mut self, c: u8) -> Observation {
        let Some(remote) = self.ch(c).handle.as_remote() else {
            return unperformable(format!("channel {c} is not a remote channel"));
        };
        remote.on_error(ChannelError::RemoteTransport("connection reset by peer".into()));
        Observation::Done
    }

    fn send_buffer(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        let Some(reader) = ch.reader.as_mut() else {
            return unperformable("no view reader: the partition was not requested");
        };
        match reader.get_next_buffer() {
            Ok(Some(response)) => {
                let sent = WireElement {
                    item: item_of(c, &response.buffer.snapshot()),
                    seq: response.sequence_number,
                    backlog: response.backlog,
                };
                let next = data_type(response.next_data_type);
                ch.wire.push_back(ServerMessage::Response(response));
                Observation::Sent { sent, next }
            }
            Ok(None) => Observation::NothingSent,
            Err(ChannelError::IllegalState(_)) => Observation::Error {
                error: ErrorKind::SendWithoutCredit,
            },
            Err(e) => Observation::Error { error: error_kind(&e) },
        }
    }

    /// `PartitionRequestQueue.enqueueAvailableReader` on a reader that is not available:
    /// `announceBacklog` when `needAnnounceBacklog()` and there is a backlog.
    fn announce_backlog(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        let Some(reader) = ch.reader.as_ref() else {
            return unperformable("no view reader: the partition was not requested");
        };
        let (available, backlog) = reader.get_availability_and_backlog();
        if available || backlog == 0 || !reader.need_announce_backlog() {
            return unperformable("the reader is available, has no backlog or has credit");
        }
        ch.wire.push_back(ServerMessage::BacklogAnnouncement { backlog });
        Observation::Done
    }

    fn on_add_credit(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        match (ch.add_credit_in_flight.pop_front(), ch.reader.as_mut()) {
            (Some(ClientMessage::AddCredit(credit)), Some(reader)) => {
                reader.add_credit(credit);
                Observation::Done
            }
            _ => unperformable("no AddCredit next on the wire or no reader"),
        }
    }

    /// `PartitionRequestQueue.resumeConsumption` of the `ResumeConsumption` next on the wire:
    /// the receiver's view reader resumes (`enqueueAvailableReader` is the next `sendBuffer`).
    fn on_resume_consumption(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        let (Some(ClientMessage::ResumeConsumption(frame)), Some(reader)) =
            (ch.add_credit_in_flight.pop_front(), ch.reader.as_mut())
        else {
            return unperformable("no ResumeConsumption next on the wire or no reader");
        };
        match ResumeConsumption::decode(&frame) {
            Ok(message) if message.receiver == ch.info => outcome(reader.resume_consumption()),
            Ok(message) => unperformable(format!("a ResumeConsumption for {:?}", message.receiver)),
            Err(e) => unperformable(format!("an undecodable ResumeConsumption: {e}")),
        }
    }

    // --- Netty client ------------------------------------------------------------------------

    /// `decodeBufferOrEvent` + `onBuffer`: a released channel's responses are discarded (the
    /// client handler's check); a data response is copied into a buffer from `requestBuffer()`.
    fn on_buffer(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        let ch = self.ch(c);
        let Some(message) = ch.wire.pop_front() else {
            return unperformable("nothing on the wire");
        };
        let Some(remote) = ch.handle.as_remote().cloned() else {
            return unperformable("not a remote channel");
        };
        let response = match message {
            ServerMessage::Response(response) => response,
            // decodeMsg hands the backlog to onSenderBacklog; a released channel's is dropped.
            ServerMessage::BacklogAnnouncement { backlog } => {
                let job: Job = Box::new(move || {
                    if !remote.is_released() {
                        remote.on_sender_backlog(backlog);
                    }
                    Observation::Done
                });
                return self.workers.netty_client.start(c, job, timeout);
            }
        };
        let job: Job = Box::new(move || {
            if remote.is_released() {
                return outcome(response.buffer.recycle_buffer());
            }
            let buffer = if response.buffer.is_buffer() {
                let Some(target) = remote.request_buffer() else {
                    let _ = response.buffer.recycle_buffer();
                    return Observation::Error {
                        error: ErrorKind::NoBufferForData,
                    };
                };
                let (kind, payload) = (response.buffer.kind(), response.buffer.payload());
                if let Err(e) = response.buffer.recycle_buffer() {
                    return Observation::Error { error: error_kind(&e) };
                }
                target.fill(kind, payload)
            } else {
                response.buffer
            };
            outcome(remote.on_buffer(buffer, response.sequence_number, response.backlog))
        });
        let mut observation = self.workers.netty_client.start(c, job, timeout);
        // `onBlockingUpstream` of a channel without exclusive buffers gives its floating
        // buffers back: a waiting listener that takes one announces in the same model step.
        while let WorkerState::Paused {
            point: PausePoint::Announce { .. },
            ..
        } = self.workers.netty_client.state
        {
            observation = self.workers.netty_client.resume(timeout);
        }
        observation
    }

    /// Writes `AddCredit(getAndResetUnannouncedCredit())` unless nothing is to announce or the
    /// channel is released.
    fn send_add_credit(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        let Some(remote) = ch.handle.as_remote().cloned() else {
            return unperformable("not a remote channel");
        };
        ch.credit_writes = remote.snapshot().credit_notifications;
        let credit = remote.get_and_reset_unannounced_credit();
        let sent = credit > 0 && !remote.is_released();
        if sent {
            ch.add_credit_in_flight.push_back(ClientMessage::AddCredit(credit));
        }
        Observation::CreditSent {
            credit: sent.then_some(credit),
        }
    }

    /// Writes the `ResumeConsumption` the channel's `resumeConsumption()` queued, behind the
    /// `AddCredit`s written before it (none for a released channel).
    fn send_resume_consumption(&mut self, c: u8) -> Observation {
        let ch = self.ch(c);
        let Some(remote) = ch.handle.as_remote().cloned() else {
            return unperformable("not a remote channel");
        };
        if !remote.resume_consumption_queued() {
            return unperformable("no ResumeConsumption is queued");
        }
        if let Some(message) = remote.take_resume_consumption() {
            ch.add_credit_in_flight
                .push_back(ClientMessage::ResumeConsumption(message.encode()));
        }
        Observation::Done
    }

    // --- recycler and canceler ---------------------------------------------------------------

    fn recycle(&mut self, c: u8, buffer: NetBuf) -> Observation {
        let timeout = self.watchdog;
        let ch = self.ch(c);
        let id = ch.ids.id(buffer);
        let Some(at) = ch.held.iter().position(|b| b.id() == id) else {
            return unperformable(format!("the consumer does not hold {buffer}"));
        };
        let held = ch.held.remove(at);
        let job: Job = Box::new(move || outcome(held.recycle_buffer()));
        self.workers.recycler.start(c, job, timeout)
    }

    /// `releaseAllResources` on the canceler's thread. It pauses once `isReleased` is set; the
    /// model's `releaseQueuedBuffers` resumes it where the configuration splits the release
    /// (`release_step`), otherwise it runs on at once.
    fn release_all_resources(&mut self, c: u8) -> Observation {
        let timeout = self.watchdog;
        let handle = self.ch(c).handle.clone();
        let job: Job = Box::new(move || outcome(handle.release_all_resources()));
        let canceler = &mut self.workers.canceler;
        let observation = canceler.start(c, job, timeout);
        match canceler.state {
            WorkerState::Paused { .. } if !self.cfg.release_step => canceler.resume(timeout),
            _ => observation,
        }
    }

    /// `SingleInputGate::close`, then `lazyDestroy` of each channel's `LocalBufferPool`: the
    /// driver gives each channel a pool of its own (so that buffer names map to ids), which
    /// stands for the gate's one pool that `close` destroys.
    fn close_gate(&mut self) -> Observation {
        let mut result = self.sys.gate.close();
        for ch in &self.sys.channels {
            result = result.and(ch.pool.lazy_destroy());
        }
        outcome(result)
    }
}

impl Driver for ImplDriver {
    fn name(&self) -> &str {
        "impl"
    }

    fn reset(&mut self) -> Result<(), DriverError> {
        let timeout = self.watchdog;
        // A trace that ended inside the trigger leaves the drainer's lock held.
        self.trigger_lock = None;
        let mut released = false;
        for w in self.workers.all() {
            if matches!(w.state, WorkerState::Blocked { .. } | WorkerState::Hung) && !released {
                // Unblock waits on latches and buffers of the old instance.
                self.sys.release_everything();
                released = true;
            }
            if !w.finish(timeout) {
                // Left parked on the old instance; a fresh thread takes its place.
                *w = Worker::spawn(w.name);
            }
        }
        self.sys = System::new(&self.cfg);
        self.waiting_for_turn.clear();
        *self.turn.lock().expect("the turn's slot") = None;
        Ok(())
    }

    fn apply(&mut self, action: &Action) -> Result<Observation, DriverError> {
        let observation = self.dispatch(action);
        match self.hung() {
            Some(e) => Err(e),
            None => Ok(observation),
        }
    }

    fn snapshot(&mut self) -> Result<Snapshot, DriverError> {
        Ok(self.read_snapshot())
    }
}

impl ImplDriver {
    /// The dispatch table: one line per model action.
    fn dispatch(&mut self, action: &Action) -> Observation {
        use Action::*;
        match *action {
            OnRecoveredStateBuffer { channel } => self.on_recovered_state_buffer(channel),
            FinishRecoveredBufferDelivery { channel } => self.finish_recovered_buffer_delivery(channel),
            ConvertRecoveredInputChannels => self.convert_recovered_input_channels(),
            RequestPartitions => self.request_partitions(),
            GetNextBuffer { channel } => self.get_next_buffer(channel),
            InsertRecoveryCheckpointBarrier { channel, cp } => self.insert_recovery_checkpoint_barrier(channel, cp),
            CheckpointStarted { channel, cp } => self.checkpoint_started(channel, cp),
            OnRecoveredStateConsumed { channel } => self.on_recovered_state_consumed(channel),
            EnableNotify { channel } => self.resume(Thread::Task, channel, |p| p == PausePoint::EnableNotify),
            OnSenderBacklog { channel } => {
                self.resume(Thread::NettyClient, channel, |p| p == PausePoint::OnSenderBacklog)
            }
            NotifyBufferAvailable { thread, channel, .. } => {
                self.resume(thread, channel, |p| matches!(p, PausePoint::Announce { .. }))
            }
            EmitCheckpointBarrier { channel, cp } => self.emit_checkpoint_barrier(channel, cp),
            AddBuffer { channel } => self.add_buffer(channel),
            RereadPendingPriorityEvent { channel } => {
                self.end_turn_after(channel, |p| p == PausePoint::RereadPendingPriorityEvent)
            }
            ClearPendingPriorityEvent { channel } => {
                self.end_turn_after(channel, |p| p == PausePoint::ClearPendingPriorityEvent)
            }
            NotifyPriorityEvent { channel } => self.notify_priority_event(channel),
            ReleasePartition { channel } => outcome(self.ch(channel).subpartition.release()),
            OnError { channel } => self.on_error(channel),
            SendBuffer { channel } => self.send_buffer(channel),
            OnAddCredit { channel } => self.on_add_credit(channel),
            AnnounceBacklog { channel } => self.announce_backlog(channel),
            OnBuffer { channel } => self.on_buffer(channel),
            SendAddCredit { channel } => self.send_add_credit(channel),
            Recycle { channel, buffer } => self.recycle(channel, buffer),
            ReturnFloatingBuffer { channel, .. } => self.resume(Thread::Recycler, channel, |p| {
                matches!(p, PausePoint::ReturnFloating { .. })
            }),
            ReleaseAllResources { channel } => self.release_all_resources(channel),
            ReleaseQueuedBuffers { channel } => {
                self.resume(Thread::Canceler, channel, |p| p == PausePoint::ReleaseQueuedBuffers)
            }
            CloseGate if self.in_turn() => {
                unperformable("the task is stopped inside its poll, holding the gate's lock that close takes")
            }
            CloseGate => self.close_gate(),
            EmitTimeoutableCheckpointBarrier { channel, cp } => self.emit_timeoutable_checkpoint_barrier(channel, cp),
            AlignedBarrierTimeout { channel, cp } => self.aligned_barrier_timeout(channel, cp),
            AlignedCheckpointTimeout { cp } => self.aligned_checkpoint_timeout(cp),
            OnResumeConsumption { channel } => self.on_resume_consumption(channel),
            SendResumeConsumption { channel } => self.send_resume_consumption(channel),
            // The JobManager's: nothing of the task changes (the next barrier subsumes it).
            AbortPendingCheckpoint { .. } => Observation::Done,
            RequestBufferBlocking { channel } => self.request_buffer_blocking(channel),
        }
    }

    fn read_snapshot(&mut self) -> Snapshot {
        let writer = self.sys.writer.snapshot();
        let ids: Vec<IdMap> = self.sys.channels.iter().map(|ch| ch.ids).collect();
        let mut channels = Vec::new();
        for (c, ch) in self.sys.channels.iter().enumerate() {
            let snapshot: ChannelSnapshot = ch.handle.snapshot();
            let netty = match &snapshot {
                ChannelSnapshot::Remote(r) => Some(netty_parts(c as u8, ch, r.credit_notifications)),
                _ => None,
            };
            let held: Vec<BufferId> = ch.held.iter().map(NetworkBuffer::id).collect();
            channels.push(impl_channel(&ImplParts {
                index: c as u8,
                kind: ch.kind,
                ids: ch.ids,
                channel: &snapshot,
                delivery: self.cfg.delivery,
                subpartition: &ch.subpartition.snapshot(),
                writer: &writer,
                pool: &ch.pool.snapshot(),
                global: &ch.global.snapshot(),
                netty: netty.as_ref(),
                held: &held,
                delivered: &ch.delivered,
            }));
        }
        let (queue, priority) = self.input_channels_with_data();
        let gate = GateView {
            queue,
            priority,
            state_consumed: self.sys.gate.all_state_consumed(),
            unrestored_channels: self.sys.gate.upstream_recovery_tracker().num_unrestored_channels() as i32,
        };
        Snapshot {
            channels,
            gate,
            task: self.workers.task.pending(&ids),
            netty_client: self.workers.netty_client.pending(&ids),
            recycler: self.workers.recycler.pending(&ids),
        }
    }

    /// The gate's `inputChannelsWithData` and how many of them, at the head, have priority,
    /// with the notifications waiting for the task's turn to end shown as made (`queueChannel`).
    fn input_channels_with_data(&self) -> (Vec<u8>, usize) {
        let queued = self.sys.gate.channels_with_data().snapshot();
        let (mut queue, mut priority): (Vec<u8>, usize) =
            (queued.channels.iter().map(|c| *c as u8).collect(), queued.num_priority);
        for &(_, c, with_priority, _) in self.waiting_for_turn.iter().filter(|w| w.3) {
            let at = queue.iter().position(|q| *q == c);
            if at.is_some_and(|at| !with_priority || at < priority) {
                continue;
            }
            if let Some(at) = at {
                queue.remove(at);
            }
            match with_priority {
                true => {
                    queue.insert(priority, c);
                    priority += 1;
                }
                false => queue.push(c),
            }
        }
        (queue, priority)
    }
}

/// The Netty stand-ins of remote channel `c`: the server's view reader and what it wrote, the
/// client's `AddCredit` and `ResumeConsumption` messages, and whether a `notifyCreditAvailable`
/// (of `credit_notifications` so far) is not yet served.
fn netty_parts(c: u8, ch: &Chan, credit_notifications: u64) -> NettyParts {
    NettyParts {
        reader_credit: ch.reader.as_ref().map(|r| r.num_credits_available()),
        wire: ch
            .wire
            .iter()
            .map(|w| match w {
                ServerMessage::Response(w) => WireElement {
                    item: item_of(c, &w.buffer.snapshot()),
                    seq: w.sequence_number,
                    backlog: w.backlog,
                },
                ServerMessage::BacklogAnnouncement { backlog } => WireElement {
                    item: Item::Known(Payload::BacklogAnnouncement),
                    seq: -1,
                    backlog: *backlog,
                },
            })
            .collect(),
        add_credit_in_flight: (ch.add_credit_in_flight.iter())
            .map(|m| match m {
                ClientMessage::AddCredit(credit) => *credit,
                // The model's `RESUME_CONSUMPTION`.
                ClientMessage::ResumeConsumption(_) => 0,
            })
            .collect(),
        add_credit_queued: credit_notifications > ch.credit_writes,
    }
}

impl Drop for ImplDriver {
    fn drop(&mut self) {
        // Let paused calls end so that worker threads exit when their job queue closes.
        let timeout = self.watchdog.min(Duration::from_millis(200));
        if self
            .workers
            .all()
            .iter()
            .any(|w| matches!(w.state, WorkerState::Blocked { .. } | WorkerState::Hung))
        {
            self.sys.release_everything();
        }
        for w in self.workers.all() {
            w.finish(timeout);
        }
    }
}
