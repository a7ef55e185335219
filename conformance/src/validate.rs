//! Validation, implementation to spec: an [`EventLog`](recovery_impl::event_log::EventLog) of a
//! real multi-threaded run is mapped to model actions ([`steps`]) and replayed through the model
//! ([`validate`]), which accepts it only if every logged step is enabled where it is placed and
//! yields the logged observation, and what the step logged of the model's state agrees with it:
//! the elements a push or the conversion appended, the network buffer an element landed in or
//! was handed out in, the `BufferResponse` or `AddCredit` a step took from the wire, and where a
//! thread paused after deciding a credit announcement or a floating buffer to give back.
//!
//! Threads. Real threads are named after the model's ([`Thread`]'s names: `task`, `io`,
//! `netty-client`, `netty-server`, `producer`, `recycler`, `canceler`) and each must play one
//! model thread.
//!
//! Order. `recovery-impl` records each event inside the critical section that decided it (an
//! atomic operation is performed inside the recorder's order), and the log's own lock puts all
//! events in one order consistent with every recording lock. Events of one thread keep their
//! logged order (program order), a producer's per channel: the model's upstream of each channel
//! is a program of its own, as a Flink gate's channels read different upstream tasks, so one
//! thread writing several channels (the soak's producer) orders nothing between them. Across
//! threads the logged order is tried first; with `window > 1`, an event may be placed before up
//! to `window - 1` earlier events of other threads, a bounded search for an interleaving the
//! model accepts.
//!
//! From events to steps. [`steps`] reads the log event by event through a dispatch table
//! (`Builder::event`): one arm per event, calling a method named after the Flink method the
//! event stands for, whose documentation gives the rule it applies. Most events are a step of
//! their own. Some model actions are one step where the implementation takes several critical
//! sections, with other threads free to run between them: a *compound step*, which its first
//! event opens and the others continue or close, each a part of it. Per thread, the builder
//! keeps the thread's last step and what it still expects (`Open`):
//!
//! | `Open` | opened by | what follows |
//! |---|---|---|
//! | `Done` | any other event | a new step |
//! | `Response(c)` | `requestBuffer()`, `releaseFloatingBuffers()` | `onBuffer` closes it |
//! | `Backlog(c)` | `onBuffer` queued or stashed | `requestFloatingBuffers`, the model's `onSenderBacklog` |
//! | `Offered(b)` | `LocalBufferPool.recycle` to a waiting listener | the listener's decision |
//! | `Refused(b)` | the listener refused `b` | `LocalBufferPool.recycle` takes it back |
//! | `Converting` | `convertRecoveredInputChannels` | the pushes of `toInputChannel` continue it |
//!
//! Other parts join the thread's last step whatever it expects: the resumption of every channel
//! in the task's poll of the last `EndOfOutputChannelStateEvent`, the rest of
//! `releaseAllResources`, a buffer recycled on a thread other than the recycler, a priority flag
//! set or cleared after its `add` or poll. The gate's hand-off (`pollNext`) is no step: each
//! element a poll returned must be handed on before the thread polls again.
//!
//! Each part is recorded where it happens, and [`steps`] joins the parts of one call into one
//! step, placed at its first part. The step's *span* is the number of later-starting steps of
//! other threads logged before its last part: the search may place the model's atomic step at
//! any point between its first and its last part (after up to `span` of those steps), the
//! usual linearization of an operation that spans an interval. A log is rejected only if no
//! such point works. This is as strong as the model's granularity allows and no stronger:
//! where a real interleaving between two parts yields a state no linearization point of the
//! model's step reaches, the log is rejected, and that is a finding about the model's
//! granularity (see `docs/conformance.md`). `requestPartitions` (alone or after a conversion)
//! creates the local views and sends the remote requests after its logged start, unlogged: its
//! step ends, at the latest, where its thread's next step begins. A producer's `add` of a
//! priority barrier with no notification logged after it is *deferrable*: other threads' steps
//! may be placed before it whatever the window, as long as the model accepts every step. A
//! local channel's `add` tells the view's listener in the model exactly where the log has it
//! notify: no listener before the channel's view, none behind another priority element.
//!
//! Names. Elements are named by their payload ([`item_of`]) and network buffers by the driver's
//! segment ids ([`IdMap`] of the model's configuration), so a run must build its pools as
//! [`ImplDriver`](crate::impl_driver::ImplDriver) does.

use crate::impl_driver::{error_kind, failure};
use crate::observation::{Buf, DataType, Item, Observation, Pending, WireElement};
use crate::projection::{IdMap, impl_pending, item_of, model_observation, model_snapshot};
use recovery_impl::event_log::{Event, Recorded};
use recovery_impl::pause_point::PausePoint;
use recovery_impl::{BufferId, BufferKind, BufferSnapshot, ChannelError, CheckpointId, InputChannelInfo};
use recovery_model::model::GatePolling;
use recovery_model::state::{NetBuf, State};
use recovery_model::{Action, ChannelKind, RecoveryModel, Thread};
use stateright::Model;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

/// What a step took from the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// `onBuffer`: the `BufferResponse`.
    Response(WireElement),
    /// `addCredit`: the `AddCredit` message's credit.
    Credit(i32),
}

/// One logged call (one event, or the events of its critical sections) in the model's
/// vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The recording thread.
    pub thread: String,
    /// The model action the call is.
    pub action: Action,
    /// What the implementation's caller saw.
    pub observation: Observation,
    /// For `onRecoveredStateBuffer` and `convertRecoveredInputChannels`: the elements appended,
    /// with their channel, in order (none where a released channel recycled them).
    pub pushed: Vec<(u8, Item)>,
    /// `Some(b)`: the channel's network buffer the element was put in or handed out in (`None`
    /// inside: none of the channel's, e.g. heap memory); `None`: not checked.
    pub buffer: Option<Option<Buf>>,
    /// What the step took from the wire, if it is `onBuffer` or `addCredit`.
    pub received: Option<Received>,
    /// Where the thread is after the step, if the call decided it: paused before announcing
    /// credit or giving a floating buffer back, or idle.
    pub pending: Option<Pending>,
    /// How many of the following steps (other threads', logged before this step's last part)
    /// it may be placed after (see the module documentation); 0 for a one-event step.
    pub span: usize,
    /// A producer's `add` of a priority barrier with no logged notification: other threads'
    /// steps may be placed before it whatever the window (see the module documentation).
    pub deferrable: bool,
    /// For a local channel's `emitCheckpointBarrier`: whether `add` told the view's listener
    /// (`notifyPriorityEvent` followed it), which the model's step must decide alike; `None`:
    /// not checked.
    pub notified: Option<bool>,
}

impl Step {
    fn new(thread: &str, action: Action, observation: Observation) -> Step {
        Step {
            thread: thread.to_string(),
            action,
            observation,
            pushed: Vec::new(),
            buffer: None,
            received: None,
            pending: None,
            span: 0,
            deferrable: matches!(action, Action::EmitCheckpointBarrier { .. }),
            notified: None,
        }
    }

    /// Whether other threads' steps may be placed before it regardless of the window (see the
    /// module documentation).
    pub fn deferrable(&self) -> bool {
        self.deferrable
    }
}

/// One-line JSON, for messages.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializes")
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {:?} -> {}", self.thread, self.action, json(&self.observation))?;
        if !self.pushed.is_empty() {
            let pushed: Vec<String> = self.pushed.iter().map(|(c, i)| format!("{i}@{c}")).collect();
            write!(f, " (pushed {})", pushed.join(", "))?;
        }
        if let Some(Some(b)) = &self.buffer {
            write!(f, " (in {b})")?;
        }
        match &self.received {
            Some(Received::Response(w)) => write!(f, " (took {})", json(w))?,
            Some(Received::Credit(k)) => write!(f, " (took AddCredit({k}))")?,
            None => {}
        }
        if let Some(p) = &self.pending {
            write!(f, " (then {})", json(p))?;
        }
        if self.span > 0 {
            write!(f, " (spans {})", self.span)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// From events to steps
// ---------------------------------------------------------------------------------------------

/// What the last step of a thread still expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    /// Nothing: the thread's next event starts a step (recycles of a non-recycler thread aside).
    Done,
    /// A data `BufferResponse` got its buffer: `onBuffer` follows.
    Response(u8),
    /// `onBuffer` queued or stashed the element: `requestFloatingBuffers` (the model's
    /// `onSenderBacklog` step) follows.
    Backlog(u8),
    /// A floating buffer went to a waiting listener: its decision follows.
    Offered(BufferId),
    /// The listener refused the floating buffer: the pool takes it back.
    Refused(BufferId),
    /// A conversion: the pushes of `toInputChannel` follow.
    Converting,
}

/// The model thread a real thread is named after.
pub fn model_thread(name: &str) -> Option<Thread> {
    use Thread::*;
    [Task, Io, NettyClient, NettyServer, Producer, Recycler, Canceler]
        .into_iter()
        .find(|t| t.to_string() == name)
}

struct Builder<'a> {
    m: &'a RecoveryModel,
    subpartitions: &'a [usize],
    ids: Vec<IdMap>,
    steps: Vec<Step>,
    /// Log index of each step's first and last event (for a call that returns unlogged, where
    /// it returned at the latest, [`Self::returned`]).
    parts: Vec<(usize, usize)>,
    /// Per thread: its last step and what that step still expects.
    open: HashMap<String, (usize, Open)>,
    /// Per thread: an element a channel's poll returned that `pollNext` has not handed on yet
    /// (the log index of the poll, and the element).
    unhanded: HashMap<String, (usize, Item)>,
}

/// The observation of a call's result.
fn outcome_of(r: &Result<(), ChannelError>) -> Observation {
    match r {
        Ok(()) => Observation::Done,
        Err(e) => Observation::Error { error: error_kind(e) },
    }
}

fn at(channel: InputChannelInfo) -> u8 {
    channel.input_channel_idx as u8
}

/// The event being mapped: its index in the log and the thread that recorded it.
#[derive(Clone, Copy)]
struct Ev<'r> {
    k: usize,
    thread: &'r str,
}

impl Ev<'_> {
    /// A step of the recording thread.
    fn step(&self, action: Action, observation: Observation) -> Step {
        Step::new(self.thread, action, observation)
    }

    /// Whether the recording thread is the model's `recycler`.
    fn recycler(&self) -> bool {
        model_thread(self.thread) == Some(Thread::Recycler)
    }
}

impl Builder<'_> {
    fn kind(&self, c: u8) -> Result<ChannelKind, String> {
        self.m
            .cfg
            .channels
            .get(c as usize)
            .map(|cc| cc.kind)
            .ok_or_else(|| format!("channel {c} is not in the configuration"))
    }

    fn of_subpartition(&self, id: usize) -> Result<u8, String> {
        self.subpartitions
            .iter()
            .position(|s| *s == id)
            .map(|c| c as u8)
            .ok_or_else(|| "a subpartition no channel reads".to_string())
    }

    /// The channel owning segment `id`, and the model's name of it.
    fn buffer(&self, id: BufferId) -> Result<(u8, NetBuf), String> {
        self.ids
            .iter()
            .enumerate()
            .find_map(|(c, ids)| ids.buf(id).map(|b| (c as u8, b.0)))
            .ok_or_else(|| format!("segment {} is no channel's network buffer", id.0))
    }

    /// The model's name of segment `id` of channel `c` (`None`: not one of the channel's).
    fn name(&self, c: u8, id: BufferId) -> Option<Buf> {
        self.ids.get(c as usize).and_then(|ids| ids.buf(id))
    }

    fn pending(&self, c: u8, point: Option<PausePoint>) -> Pending {
        match point {
            Some(point) => impl_pending(c, self.ids[c as usize], point),
            None => Pending::Idle,
        }
    }

    fn announce(c: u8, n: usize) -> Pending {
        match n {
            0 => Pending::Idle,
            n => Pending::Announce { channel: c, n: n as u8 },
        }
    }

    fn start(&mut self, k: usize, step: Step, open: Open) {
        self.open.insert(step.thread.clone(), (self.steps.len(), open));
        self.steps.push(step);
        self.parts.push((k, k));
    }

    /// The thread's last step and what it expects, if the thread has one.
    fn last(&self, thread: &str) -> Option<(usize, Open)> {
        self.open.get(thread).copied()
    }

    /// What the thread's last step still expects (`Done` if the thread has none).
    fn open(&self, thread: &str) -> Open {
        self.last(thread).map_or(Open::Done, |(_, o)| o)
    }

    /// Makes event `k` a part of the thread's last step, now expecting `open`.
    fn continue_step(&mut self, k: usize, thread: &str, open: Open) -> Result<&mut Step, String> {
        let Some((i, _)) = self.last(thread) else {
            return Err(format!("thread {thread} continues a call it never started"));
        };
        self.open.insert(thread.to_string(), (i, open));
        self.parts[i].1 = k;
        Ok(&mut self.steps[i])
    }

    /// The thread's part of its last step whatever that step expects, which it leaves as it
    /// is: the part of a call with no event of its own in the model.
    fn part_of_last(&mut self, e: Ev) -> Result<&mut Step, String> {
        let open = self.open(e.thread);
        self.continue_step(e.k, e.thread, open)
    }

    /// Event `e` is a step of its own: it opens no compound step.
    fn single(&mut self, e: Ev, action: Action, observation: Observation) -> Result<(), String> {
        self.start(e.k, e.step(action, observation), Open::Done);
        Ok(())
    }

    /// The dispatch table: one arm per logged event (or group of events handled alike), each
    /// calling the method named after the Flink method the event stands for. Each method's
    /// documentation says whether the event is a step of its own, or opens, continues or closes
    /// a compound step.
    // One line per pattern, a table: rustfmt would spread the longer patterns over several lines.
    #[rustfmt::skip]
    fn event(&mut self, k: usize, r: &Recorded) -> Result<(), String> {
        use Event::*;
        let e = Ev { k, thread: r.thread.as_str() };
        match &r.event {
            RequestPartitions { .. } => self.request_partitions(e),
            ConvertRecoveredInputChannels { .. } => self.convert_recovered_input_channels(e),
            OnRecoveredStateBuffer { channel, buffer, outcome } => {
                self.on_recovered_state_buffer(e, at(*channel), buffer, outcome)
            }
            RequestBufferBlocking { channel, outcome } => self.request_buffer_blocking(e, at(*channel), outcome),
            RequestBufferBlockingWait { channel } => self.request_buffer_blocking_wait(e, at(*channel)),
            ReleaseFloatingBuffers { channel, .. } => self.release_floating_buffers(e, at(*channel)),
            NotifyBufferAvailable { .. } if self.in_on_buffer(e) => self.notify_buffer_available_in_on_buffer(e),
            ResumeConsumption { channel } => self.resume_consumption(e, at(*channel)),
            SendResumeConsumption { channel, .. } => self.send_resume_consumption(e, at(*channel)),
            SubpartitionResumeConsumption { subpartition, outcome } => {
                self.subpartition_resume_consumption(e, *subpartition, outcome)
            }
            FinishRecoveredBufferDelivery { channel, outcome } => {
                self.finish_recovered_buffer_delivery(e, at(*channel), outcome)
            }
            InsertRecoveryCheckpointBarrierIfInRecovery { channel, checkpoint_id } => {
                self.insert_recovery_checkpoint_barrier(e, at(*channel), *checkpoint_id)
            }
            CheckpointStarted { channel, checkpoint_id, outcome } => {
                self.checkpoint_started(e, at(*channel), *checkpoint_id, outcome)
            }
            OnRecoveredStateConsumed { channel, outcome } => self.on_recovered_state_consumed(e, at(*channel), outcome),
            GetNextBuffer { channel, buffer, sequence_number } => {
                self.get_next_buffer(e, at(*channel), buffer, *sequence_number)
            }
            PollNext { channel, buffer } => self.poll_next(e, at(*channel), buffer),
            Add { subpartition, buffer } => self.add(e, *subpartition, buffer),
            NotifyPriorityEvent { channel } => self.priority_flag(e, at(*channel), true),
            ClearPendingPriorityEvent { channel } => self.priority_flag(e, at(*channel), false),
            PollBuffer { subpartition, buffer, sequence_number, backlog } => {
                self.poll_buffer(e, *subpartition, buffer, *sequence_number, *backlog)
            }
            RequestBuffer { channel, .. } => self.request_buffer(e, at(*channel)),
            OnBuffer { channel, buffer, sequence_number, backlog, outcome } => {
                self.on_buffer(e, at(*channel), buffer, *sequence_number, *backlog, outcome)
            }
            RequestFloatingBuffers { channel, announce, .. } => {
                self.request_floating_buffers(e, at(*channel), *announce)
            }
            EnableNotify { channel, outcome } => self.enable_notify(e, at(*channel), outcome),
            NotifyBufferAvailable { channel, number_of_buffers } => {
                self.notify_buffer_available(e, at(*channel), *number_of_buffers)
            }
            GetAndResetUnannouncedCredit { channel, credit, released } => {
                self.get_and_reset_unannounced_credit(e, at(*channel), *credit, *released)
            }
            AddCredit { receiver, credit } => self.add_credit(e, at(*receiver), *credit),
            ReleaseAllResources { channel } => self.release_all_resources(e, at(*channel)),
            ReleaseQueuedBuffers { channel } if self.m.cfg.release_step => self.release_queued_buffers(e, at(*channel)),
            Recycle { channel, buffer, then } if e.recycler() => self.recycle(e, at(*channel), *buffer, *then),
            LocalBufferPoolRecycle { buffer, to_listener } if e.recycler() => {
                self.local_buffer_pool_recycle(e, *buffer, *to_listener)
            }
            BufferListenerNotifyBufferAvailable { channel, buffer, taken, announce } if e.recycler() => {
                self.buffer_listener_notify_buffer_available(e, at(*channel), *buffer, *taken, *announce)
            }
            Recycle { .. } | LocalBufferPoolRecycle { .. } | BufferListenerNotifyBufferAvailable { .. } => {
                self.recycled_in_call(e)
            }
            ReleaseQueuedBuffers { .. } | ReleaseAllBuffers { .. } => self.released_in_call(e),
        }
    }

    /// `SingleInputGate.requestPartitions`, with no recovered channel to convert: a step of its
    /// own.
    fn request_partitions(&mut self, e: Ev) -> Result<(), String> {
        self.single(e, Action::RequestPartitions, Observation::Done)
    }

    /// `SingleInputGate.convertRecoveredInputChannels` (its `requestPartitions`): opens a
    /// compound step (`Converting`) that the pushes of each new channel's `toInputChannel`
    /// continue ([`Self::on_recovered_state_buffer`]).
    fn convert_recovered_input_channels(&mut self, e: Ev) -> Result<(), String> {
        let step = e.step(Action::ConvertRecoveredInputChannels, Observation::Done);
        self.start(e.k, step, Open::Converting);
        Ok(())
    }

    /// `onRecoveredStateBuffer`, the append of a recovered buffer (`Ok(true)`; a released
    /// channel recycles it, `Ok(false)`, and nothing is pushed), in the network buffer the
    /// drainer's `requestBufferBlocking()` took or in heap memory. In a conversion
    /// (`Converting`) it continues the conversion's step; otherwise it is a step of its own.
    fn on_recovered_state_buffer(
        &mut self,
        e: Ev,
        c: u8,
        buffer: &BufferSnapshot,
        outcome: &Result<bool, ChannelError>,
    ) -> Result<(), String> {
        let pushed = matches!(outcome, Ok(true)).then(|| (c, item_of(c, buffer)));
        let observation = match outcome {
            Ok(_) => Observation::Done,
            Err(err) => Observation::Error { error: error_kind(err) },
        };
        match self.open(e.thread) {
            Open::Converting => self.push_in_conversion(e, pushed, observation),
            _ => {
                let mut step = e.step(Action::OnRecoveredStateBuffer { channel: c }, observation);
                if pushed.is_some() {
                    step.buffer = Some(self.name(c, buffer.id));
                }
                step.pushed.extend(pushed);
                self.start(e.k, step, Open::Done);
                Ok(())
            }
        }
    }

    /// A push of `toInputChannel` in `convertRecoveredInputChannels`: continues the conversion
    /// (`Converting`), whose observation is the first error of its pushes.
    fn push_in_conversion(
        &mut self,
        e: Ev,
        pushed: Option<(u8, Item)>,
        observation: Observation,
    ) -> Result<(), String> {
        let step = self.continue_step(e.k, e.thread, Open::Converting)?;
        step.pushed.extend(pushed);
        if step.observation == Observation::Done {
            step.observation = observation;
        }
        Ok(())
    }

    /// `BufferManager.requestBufferBlocking()` returned: the drainer's buffer for a channel's
    /// recovered buffer, under `bufferQueue`, a step of its own (the append follows as
    /// `onRecoveredStateBuffer`). Throwing, it is the model's `onRecoveredStateBuffer`: the
    /// drainer of a released channel stops quietly (`CancelTaskException`); another error fails
    /// the call.
    fn request_buffer_blocking(
        &mut self,
        e: Ev,
        c: u8,
        outcome: &Result<BufferId, ChannelError>,
    ) -> Result<(), String> {
        let action = Action::OnRecoveredStateBuffer { channel: c };
        match outcome {
            Ok(_) => self.single(e, Action::RequestBufferBlocking { channel: c }, Observation::Done)?,
            Err(ChannelError::Released(_)) => self.start(e.k, e.step(action, Observation::Done), Open::Done),
            Err(err) => self.start(
                e.k,
                e.step(action, Observation::Error { error: error_kind(err) }),
                Open::Done,
            ),
        }
        Ok(())
    }

    /// `BufferManager.requestBufferBlocking()` parks the drainer in `bufferQueue.wait()`: the
    /// model's `requestBufferBlocking`, a step of its own. The buffer it takes once woken is
    /// the next ([`Self::request_buffer_blocking`]).
    fn request_buffer_blocking_wait(&mut self, e: Ev, c: u8) -> Result<(), String> {
        self.single(e, Action::RequestBufferBlocking { channel: c }, Observation::Blocked)
    }

    /// `BufferManager.releaseFloatingBuffers()` of `onBlockingUpstream` (a blocking event on a
    /// channel without exclusive buffers), under `bufferQueue` before `onBuffer`'s lock: opens
    /// the model's `onBuffer` (`Response`). The floating buffers it gives back, recycled on
    /// this thread, and the announcement of a listener that takes one continue it; the
    /// decision under `receivedBuffers` closes it ([`Self::on_buffer`]).
    fn release_floating_buffers(&mut self, e: Ev, c: u8) -> Result<(), String> {
        let step = e.step(Action::OnBuffer { channel: c }, Observation::Done);
        self.start(e.k, step, Open::Response(c));
        Ok(())
    }

    /// Whether the thread's last step is an `onBuffer` expecting its decision (`Response`).
    fn in_on_buffer(&self, e: Ev) -> bool {
        matches!(self.open(e.thread), Open::Response(_))
    }

    /// `InputChannel.notifyBufferAvailable` inside an `onBuffer` (`Response`): the announcement
    /// of a listener that took one of the floating buffers `releaseFloatingBuffers()` gave
    /// back, on this thread. It continues the `onBuffer`.
    fn notify_buffer_available_in_on_buffer(&mut self, e: Ev) -> Result<(), String> {
        self.part_of_last(e)?;
        Ok(())
    }

    /// `RemoteInputChannel.resumeConsumption()`: continues the task's `getNextBuffer` of the
    /// last channel's `EndOfOutputChannelStateEvent`, in which the gate's
    /// `UpstreamRecoveryTracker` resumes every channel (a remote one's credit reset and queued
    /// message) in the same model step.
    fn resume_consumption(&mut self, e: Ev, c: u8) -> Result<(), String> {
        let step = self.part_of_last(e)?;
        if !matches!(step.action, Action::GetNextBuffer { .. }) {
            return Err(format!(
                "channel {c} resumed after {}, not in the poll of an end-of-output event",
                step.action.method()
            ));
        }
        Ok(())
    }

    /// The Netty client took a channel's queued `ResumeConsumption` to write it
    /// (`sendResumeConsumption`): a step of its own.
    fn send_resume_consumption(&mut self, e: Ev, c: u8) -> Result<(), String> {
        self.single(e, Action::SendResumeConsumption { channel: c }, Observation::Done)
    }

    /// `PipelinedSubpartition.resumeConsumption()`. A local channel's view resumes in the
    /// task's poll of an `EndOfOutputChannelStateEvent`, which it continues
    /// ([`Self::resume_local_subpartition`]); a remote channel's view reader resumes on the
    /// Netty server, from the `ResumeConsumption` message: a step of its own
    /// (`onResumeConsumption`).
    fn subpartition_resume_consumption(
        &mut self,
        e: Ev,
        subpartition: usize,
        outcome: &Result<(), ChannelError>,
    ) -> Result<(), String> {
        let c = self.of_subpartition(subpartition)?;
        match self.kind(c)? {
            ChannelKind::Local => self.resume_local_subpartition(e, c, outcome),
            ChannelKind::Remote => self.single(e, Action::OnResumeConsumption { channel: c }, outcome_of(outcome)),
        }
    }

    /// A local channel's `PipelinedSubpartition.resumeConsumption()`: continues the task's
    /// `getNextBuffer` (see [`Self::resume_consumption`]), which fails if it fails.
    fn resume_local_subpartition(&mut self, e: Ev, c: u8, outcome: &Result<(), ChannelError>) -> Result<(), String> {
        let step = self.part_of_last(e)?;
        if !matches!(step.action, Action::GetNextBuffer { .. }) {
            return Err(format!(
                "channel {c}'s subpartition resumed after {}, not in the poll of an end-of-output event",
                step.action.method()
            ));
        }
        if let Err(err) = outcome {
            step.observation = Observation::Error { error: error_kind(err) };
        }
        Ok(())
    }

    /// `finishRecoveredBufferDelivery()`: a step of its own.
    fn finish_recovered_buffer_delivery(
        &mut self,
        e: Ev,
        c: u8,
        outcome: &Result<(), ChannelError>,
    ) -> Result<(), String> {
        self.single(
            e,
            Action::FinishRecoveredBufferDelivery { channel: c },
            outcome_of(outcome),
        )
    }

    /// `insertRecoveryCheckpointBarrierIfInRecovery(checkpointId)`: a step of its own.
    fn insert_recovery_checkpoint_barrier(&mut self, e: Ev, c: u8, checkpoint_id: CheckpointId) -> Result<(), String> {
        let action = Action::InsertRecoveryCheckpointBarrier {
            channel: c,
            cp: checkpoint_id as u8,
        };
        self.single(e, action, Observation::Done)
    }

    /// `checkpointStarted(barrier)`: a step of its own, observing what `startPersisting` was
    /// given or why the channel declined.
    fn checkpoint_started(
        &mut self,
        e: Ev,
        c: u8,
        checkpoint_id: CheckpointId,
        outcome: &Result<Vec<BufferSnapshot>, ChannelError>,
    ) -> Result<(), String> {
        let cp = checkpoint_id as u8;
        let observation = match outcome {
            Ok(buffers) => Observation::Persisted {
                checkpoint: cp,
                buffers: buffers.iter().map(|b| item_of(c, b)).collect(),
            },
            Err(err) => failure(cp, err),
        };
        self.single(e, Action::CheckpointStarted { channel: c, cp }, observation)
    }

    /// `onRecoveredStateConsumed()`: a step of its own.
    fn on_recovered_state_consumed(&mut self, e: Ev, c: u8, outcome: &Result<(), ChannelError>) -> Result<(), String> {
        self.single(e, Action::OnRecoveredStateConsumed { channel: c }, outcome_of(outcome))
    }

    /// `getNextBuffer()` returned an element from the channel's own queue: a step of its own,
    /// which the resumption of every channel continues after the last channel's
    /// `EndOfOutputChannelStateEvent` ([`Self::resume_consumption`]). `pollNext` must hand the
    /// element on ([`Self::polled`]).
    fn get_next_buffer(&mut self, e: Ev, c: u8, buffer: &BufferSnapshot, seq: i32) -> Result<(), String> {
        self.polled(e, c, buffer)?;
        let observation = Observation::Polled {
            item: item_of(c, buffer),
            seq,
            next: DataType::None,
        };
        let mut step = e.step(Action::GetNextBuffer { channel: c }, observation);
        step.buffer = Some(self.name(c, buffer.id));
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `SingleInputGate.pollNext()` handed an element on: no step of its own, as the model's
    /// `getNextBuffer` hands on what it polls in the same step. It must be what the thread's
    /// last poll returned ([`Self::polled`]).
    fn poll_next(&mut self, e: Ev, c: u8, buffer: &BufferSnapshot) -> Result<(), String> {
        let item = item_of(c, buffer);
        match self.unhanded.remove(e.thread) {
            Some((_, polled)) if polled == item => Ok(()),
            Some((k, polled)) => Err(format!(
                "pollNext handed on {item} of channel {c}, but the poll at event {} returned {polled}",
                k + 1
            )),
            None => Err(format!(
                "pollNext handed on {item} of channel {c}, which no poll returned"
            )),
        }
    }

    /// `ResultSubpartition.add` of a checkpoint barrier, the producer's only `add` during a run:
    /// the model's `emitCheckpointBarrier`, a step that the producer's `notifyPriorityEvent`
    /// closes where the model makes the flag a part of it ([`Self::priority_flag`]). With no
    /// notification logged after it (no listener yet, or not the first priority element) the
    /// step is deferrable: other threads' steps may be placed before it whatever the window, as
    /// long as the model accepts every step. A local channel's step notified nobody until its
    /// notification follows: the model's step must decide alike where it is placed.
    fn add(&mut self, e: Ev, subpartition: usize, buffer: &BufferSnapshot) -> Result<(), String> {
        let c = self.of_subpartition(subpartition)?;
        let BufferKind::CheckpointBarrier(cp) = buffer.kind else {
            return Err("the producer adds only checkpoint barriers during a run".into());
        };
        let action = Action::EmitCheckpointBarrier {
            channel: c,
            cp: cp as u8,
        };
        let mut step = e.step(action, Observation::Done);
        step.notified = (self.kind(c)? == ChannelKind::Local).then_some(false);
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// A local channel's `hasPendingPriorityEvent`, written outside any lock the consumer
    /// shares with the producer: set by `notifyPriorityEvent` (`notify`; the producer, after
    /// `ResultSubpartition.add`'s lock) or cleared by `pullPriorityFromSubpartitionView` (the
    /// task, after the view's lock). Where the model's channel has `priority_notify_step` it is
    /// a step of its own, as in the code, and a split poll returns what it pulled in the
    /// clear's step; otherwise it closes the call it is a part of (`add` or the poll of the
    /// same channel), which then spans up to it and is not deferrable.
    fn priority_flag(&mut self, e: Ev, c: u8, notify: bool) -> Result<(), String> {
        if notify {
            self.notified(e.thread, c);
        }
        let cfg = self.m.cfg.channels.get(c as usize);
        if cfg.is_some_and(|cc| cc.priority_notify_step) {
            let (action, observation) = match notify {
                true => (Action::NotifyPriorityEvent { channel: c }, Observation::Done),
                false => (
                    Action::ClearPendingPriorityEvent { channel: c },
                    self.take_polled(e.thread, c),
                ),
            };
            return self.single(e, action, observation);
        }
        let step = self.continue_step(e.k, e.thread, Open::Done)?;
        let same = match step.action {
            Action::EmitCheckpointBarrier { channel, .. } => notify && channel == c,
            Action::GetNextBuffer { channel } => !notify && channel == c,
            _ => false,
        };
        if !same {
            return Err(format!(
                "thread {} changed channel {c}'s priority flag after {}, not in an add or a poll of that channel",
                e.thread,
                step.action.method()
            ));
        }
        // The step ends at the flag: not deferrable, it spans its parts.
        step.deferrable = false;
        Ok(())
    }

    /// The thread's last step, if it is the `add` of a barrier to channel `c`, told the view's
    /// listener.
    fn notified(&mut self, thread: &str, c: u8) {
        if let Some((i, _)) = self.last(thread)
            && matches!(self.steps[i].action, Action::EmitCheckpointBarrier { channel, .. } if channel == c)
        {
            self.steps[i].notified = Some(true);
        }
    }

    /// The observation of the thread's last step if it is the poll of channel `c`, which the
    /// split poll's clear step returns instead.
    fn take_polled(&mut self, thread: &str, c: u8) -> Observation {
        match self.last(thread) {
            Some((i, _)) if self.steps[i].action == (Action::GetNextBuffer { channel: c }) => {
                std::mem::replace(&mut self.steps[i].observation, Observation::Done)
            }
            _ => Observation::Done,
        }
    }

    /// `ResultSubpartition.pollBuffer()`: a step of its own. A local channel's consumer polls
    /// the view in the task's `getNextBuffer`, whose element `pollNext` must hand on
    /// ([`Self::polled`]); a remote channel's view reader sends what it polls (`sendBuffer`).
    fn poll_buffer(
        &mut self,
        e: Ev,
        subpartition: usize,
        buffer: &BufferSnapshot,
        seq: i32,
        backlog: i32,
    ) -> Result<(), String> {
        let c = self.of_subpartition(subpartition)?;
        let item = item_of(c, buffer);
        if self.kind(c)? == ChannelKind::Local {
            self.polled(e, c, buffer)?;
        }
        let step = match self.kind(c)? {
            ChannelKind::Local => e.step(
                Action::GetNextBuffer { channel: c },
                Observation::Polled {
                    item,
                    seq,
                    next: DataType::None,
                },
            ),
            ChannelKind::Remote => e.step(
                Action::SendBuffer { channel: c },
                Observation::Sent {
                    sent: WireElement { item, seq, backlog },
                    next: DataType::None,
                },
            ),
        };
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `BufferManager.requestBuffer()` for an arriving data buffer, under `bufferQueue`: opens
    /// the model's `onBuffer` (`Response`), which the decision under `receivedBuffers` closes
    /// ([`Self::on_buffer`]).
    fn request_buffer(&mut self, e: Ev, c: u8) -> Result<(), String> {
        let step = e.step(Action::OnBuffer { channel: c }, Observation::Done);
        self.start(e.k, step, Open::Response(c));
        Ok(())
    }

    /// `RemoteInputChannel.onBuffer(buffer, sequenceNumber, backlog)`: what `receivedBuffers`
    /// decided of a `BufferResponse`. It closes the `onBuffer` of the same channel that
    /// `requestBuffer()` or `releaseFloatingBuffers()` opened (`Response`); otherwise (an event
    /// that needs no buffer) it is a step of its own. Queued or stashed, the step expects the
    /// `requestFloatingBuffers` of `onSenderBacklog` (`Backlog`).
    fn on_buffer(
        &mut self,
        e: Ev,
        c: u8,
        buffer: &BufferSnapshot,
        seq: i32,
        backlog: i32,
        outcome: &Result<bool, ChannelError>,
    ) -> Result<(), String> {
        let name = self.name(c, buffer.id);
        let next = match outcome {
            Ok(true) => Open::Backlog(c),
            _ => Open::Done,
        };
        let step = match self.open(e.thread) {
            Open::Response(p) if p == c => self.continue_step(e.k, e.thread, next)?,
            _ => {
                self.start(e.k, e.step(Action::OnBuffer { channel: c }, Observation::Done), next);
                self.steps.last_mut().expect("just started")
            }
        };
        let item = item_of(c, buffer);
        step.received = Some(Received::Response(WireElement { item, seq, backlog }));
        match outcome {
            Ok(true) if buffer.kind.is_buffer() => {
                step.buffer = Some(name);
                step.pending = Some(Pending::SenderBacklog { channel: c });
            }
            Ok(true) => step.pending = Some(Pending::SenderBacklog { channel: c }),
            Ok(false) => step.pending = Some(Pending::Idle),
            Err(err) => step.observation = Observation::Error { error: error_kind(err) },
        }
        Ok(())
    }

    /// `BufferManager.requestFloatingBuffers(numRequired)` of `onSenderBacklog`, after an
    /// `onBuffer` of the same channel queued or stashed its element (`Backlog`): the model's
    /// `onSenderBacklog`, a step of its own, ending where the thread announces the credit it
    /// decided.
    fn request_floating_buffers(&mut self, e: Ev, c: u8, announce: usize) -> Result<(), String> {
        if self.open(e.thread) != Open::Backlog(c) {
            return Err(format!("requestFloatingBuffers outside an onBuffer of channel {c}"));
        }
        let mut step = e.step(Action::OnSenderBacklog { channel: c }, Observation::Done);
        step.pending = Some(Self::announce(c, announce));
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `BufferManager.enableNotify()`: a step of its own, ending where the thread announces the
    /// credit it decided.
    fn enable_notify(&mut self, e: Ev, c: u8, outcome: &Result<usize, ChannelError>) -> Result<(), String> {
        let (observation, pending) = match outcome {
            Ok(n) => (Observation::Done, Some(Self::announce(c, *n))),
            Err(err) => (Observation::Error { error: error_kind(err) }, None),
        };
        let mut step = e.step(Action::EnableNotify { channel: c }, observation);
        step.pending = pending;
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `InputChannel.notifyBufferAvailable(numAvailableBuffers)` of a remote channel, outside an
    /// `onBuffer`: a step of its own, of the model thread the announcing thread is named after.
    fn notify_buffer_available(&mut self, e: Ev, c: u8, n: usize) -> Result<(), String> {
        let Some(thread) = model_thread(e.thread) else {
            return Err(format!("thread {} is not named after a model thread", e.thread));
        };
        let action = Action::NotifyBufferAvailable {
            thread,
            channel: c,
            n: n as u8,
        };
        let mut step = e.step(action, Observation::Done);
        step.pending = Some(Pending::Idle);
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `getAndResetUnannouncedCredit()` of the Netty client building an `AddCredit` message (the
    /// model's `sendAddCredit`): a step of its own.
    fn get_and_reset_unannounced_credit(&mut self, e: Ev, c: u8, credit: i32, released: bool) -> Result<(), String> {
        let credit = (credit > 0 && !released).then_some(credit);
        self.single(
            e,
            Action::SendAddCredit { channel: c },
            Observation::CreditSent { credit },
        )
    }

    /// `CreditBasedSequenceNumberingViewReader.addCredit(creditDeltas)` on the Netty server (the
    /// model's `onAddCredit`): a step of its own, taking the `AddCredit` from the wire.
    fn add_credit(&mut self, e: Ev, c: u8, credit: i32) -> Result<(), String> {
        let mut step = e.step(Action::OnAddCredit { channel: c }, Observation::Done);
        step.received = Some(Received::Credit(credit));
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `releaseAllResources()` set `isReleased`: a step whose later parts continue it whatever
    /// it expects: the queue drained (a local channel's view with it,
    /// [`Self::released_in_call`]), then `releaseAllBuffers` under `bufferQueue` and the
    /// floating buffers recycled ([`Self::recycled_in_call`]).
    fn release_all_resources(&mut self, e: Ev, c: u8) -> Result<(), String> {
        self.single(e, Action::ReleaseAllResources { channel: c }, Observation::Done)
    }

    /// `releaseAllResources()` drained the channel's queue, where the model's configuration has
    /// `release_step`: a step of its own (`releaseQueuedBuffers`), as the model splits the call
    /// there.
    fn release_queued_buffers(&mut self, e: Ev, c: u8) -> Result<(), String> {
        self.single(e, Action::ReleaseQueuedBuffers { channel: c }, Observation::Done)
    }

    /// `BufferManager.recycle(segment)` of an exclusive buffer on the recycler: a step of its own
    /// (`recycle`), ending where the call pauses after the lock: announcing a credit, or giving
    /// a floating buffer back ([`Self::local_buffer_pool_recycle`]).
    fn recycle(&mut self, e: Ev, c: u8, buffer: BufferId, then: Option<PausePoint>) -> Result<(), String> {
        let (_, b) = self.buffer(buffer)?;
        let mut step = e.step(Action::Recycle { channel: c, buffer: b }, Observation::Done);
        step.pending = Some(self.pending(c, then));
        self.start(e.k, step, Open::Done);
        Ok(())
    }

    /// `LocalBufferPool.recycle(segment)` of a floating buffer on the recycler. After an offer
    /// of this buffer (`Offered`) or its refusal (`Refused`) it continues that step: the pool
    /// takes the buffer back. Otherwise it opens a step: the model's `recycleFloatingBuffer`
    /// where the thread's `recycle` of an exclusive buffer paused to give this one back, else
    /// its `recycle` of the floating buffer. Offered to a waiting listener, the step expects the
    /// listener's decision (`Offered`); otherwise the thread is then idle.
    fn local_buffer_pool_recycle(&mut self, e: Ev, buffer: BufferId, to_listener: bool) -> Result<(), String> {
        let next = match to_listener {
            true => Open::Offered(buffer),
            false => Open::Done,
        };
        if let Open::Offered(b) | Open::Refused(b) = self.open(e.thread)
            && b == buffer
        {
            let step = self.continue_step(e.k, e.thread, next)?;
            if !to_listener {
                step.pending = Some(Pending::Idle);
            }
            return Ok(());
        }
        let (c, b) = self.buffer(buffer)?;
        let action = match self.returns(e.thread, c, b) {
            true => Action::ReturnFloatingBuffer { channel: c, buffer: b },
            false => Action::Recycle { channel: c, buffer: b },
        };
        let mut step = e.step(action, Observation::Done);
        if !to_listener {
            step.pending = Some(Pending::Idle);
        }
        self.start(e.k, step, next);
        Ok(())
    }

    /// Whether the thread's last step paused to give floating buffer `b` of channel `c` back
    /// (its `recycle` of an exclusive buffer).
    fn returns(&self, thread: &str, c: u8, b: NetBuf) -> bool {
        let returning = Some(Pending::ReturnFloating {
            channel: c,
            buffer: Buf(b),
        });
        self.last(thread)
            .is_some_and(|(i, _)| self.steps[i].pending == returning)
    }

    /// `BufferManager.notifyBufferAvailable(Buffer)`, the `BufferListener` callback under
    /// `bufferQueue`: the waiting manager's decision on the floating buffer a
    /// `LocalBufferPool.recycle` offered it (`Offered`), which it continues. Taken, it closes
    /// the step, which ends where the thread announces the credit decided; refused, the step
    /// expects the pool to take the buffer back (`Refused`).
    fn buffer_listener_notify_buffer_available(
        &mut self,
        e: Ev,
        c: u8,
        buffer: BufferId,
        taken: bool,
        announce: usize,
    ) -> Result<(), String> {
        if self.open(e.thread) != Open::Offered(buffer) {
            return Err(format!("a listener decided on {} no recycle offered it", buffer.0));
        }
        let next = match taken {
            true => Open::Done,
            false => Open::Refused(buffer),
        };
        let step = self.continue_step(e.k, e.thread, next)?;
        if taken {
            step.pending = Some(Self::announce(c, announce));
        }
        Ok(())
    }

    /// `BufferManager.recycle`, `LocalBufferPool.recycle` or a listener's
    /// `notifyBufferAvailable(Buffer)` on a thread other than the recycler: recycling is a model
    /// step on the recycler only, so it continues whatever the thread is doing (a push into a
    /// released channel, a `BufferResponse` a released channel discards, a release).
    fn recycled_in_call(&mut self, e: Ev) -> Result<(), String> {
        self.part_of_last(e)?;
        Ok(())
    }

    /// `releaseAllResources()`'s drain of the queue (where the model does not split it off,
    /// [`Self::release_queued_buffers`]) or `BufferManager.releaseAllBuffers`: continues the
    /// thread's `releaseAllResources` (or the call that releases), never on the recycler.
    fn released_in_call(&mut self, e: Ev) -> Result<(), String> {
        if e.recycler() {
            return Err("releaseAllBuffers on the recycler thread".into());
        }
        self.part_of_last(e)?;
        Ok(())
    }

    /// A channel's poll (event `e`) returned `buffer`: `pollNext` must hand it on before the
    /// thread polls again ([`Self::poll_next`]), except the sentinel, which the gate consumes
    /// itself. An element polled and then dropped is refused.
    fn polled(&mut self, e: Ev, c: u8, buffer: &BufferSnapshot) -> Result<(), String> {
        if let Some((k, item)) = self.unhanded.remove(e.thread) {
            return Err(format!(
                "the poll at event {} returned {item}, which pollNext never handed on (dropped after the poll)",
                k + 1
            ));
        }
        if buffer.kind != BufferKind::EndOfFetchedChannelState {
            self.unhanded.insert(e.thread.to_string(), (e.k, item_of(c, buffer)));
        }
        Ok(())
    }

    fn finish(mut self, events: usize) -> Vec<Step> {
        for i in 0..self.steps.len() {
            if matches!(
                self.steps[i].action,
                Action::RequestPartitions | Action::ConvertRecoveredInputChannels
            ) {
                self.parts[i].1 = self.parts[i].1.max(self.returned(i, events));
            }
            let last = self.parts[i].1;
            self.steps[i].span = self.parts[i + 1..]
                .iter()
                .take_while(|(first, _)| *first < last)
                .count();
        }
        self.steps
    }

    /// Where step `i`'s call returned, at the latest: the log index of its thread's next step,
    /// or the log's end. `requestPartitions` creates each local channel's view (a producer's
    /// `add` tells the listener only if the view is there) and sends each remote request after
    /// its logged start, in critical sections of its own that are not logged: its step may be
    /// placed after any step that begins before its return.
    fn returned(&self, i: usize, events: usize) -> usize {
        let thread = &self.steps[i].thread;
        (self.steps[i + 1..].iter().zip(&self.parts[i + 1..]))
            .find(|(step, _)| step.thread == *thread)
            .map_or(events, |(_, (first, _))| *first)
    }
}

/// Maps a log to model steps, joining the events of one call's critical sections (see the
/// module documentation). `subpartitions[c]` is the
/// [`event_id`](recovery_impl::result_subpartition::ResultSubpartition::event_id) of the
/// subpartition channel `c` reads; network buffers are named by the segment ids `m`'s
/// configuration gives them ([`IdMap`]). Fails on an event that is no part of a model action.
pub fn steps(m: &RecoveryModel, log: &[Recorded], subpartitions: &[usize]) -> Result<Vec<Step>, String> {
    let ids = (m.cfg.channels.iter().enumerate())
        .map(|(c, cc)| IdMap::new(c as u8, cc.floating, cc.exclusive))
        .collect();
    let mut b = Builder {
        m,
        subpartitions,
        ids,
        steps: Vec::new(),
        parts: Vec::new(),
        open: HashMap::new(),
        unhanded: HashMap::new(),
    };
    for (k, r) in log.iter().enumerate() {
        b.event(k, r)
            .map_err(|e| format!("event {}: {e}: {:?}", k + 1, r.event))?;
    }
    if let Some((at, item)) = b.unhanded.values().next() {
        return Err(format!(
            "event {}: the poll returned {item}, which pollNext never handed on (dropped after the poll)",
            at + 1
        ));
    }
    Ok(b.finish(log.len()))
}

// ---------------------------------------------------------------------------------------------
// Replaying steps through the model
// ---------------------------------------------------------------------------------------------

/// Why a log was not accepted.
#[derive(Clone, Debug)]
pub struct Rejection {
    /// 0-based index of the first step no searched interleaving could place.
    pub index: usize,
    /// That step.
    pub step: Step,
    /// Steps placed before it on the farthest interleaving the search reached.
    pub placed: Vec<Action>,
    /// Why the model does not accept it there.
    pub reason: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "REJECTED step {} of the log: {}", self.index + 1, self.step)?;
        writeln!(f, "reason: {}", self.reason)?;
        writeln!(f, "after {} placed steps:", self.placed.len())?;
        for (i, a) in self.placed.iter().enumerate() {
            writeln!(f, "  {:>3}. {a:?}", i + 1)?;
        }
        Ok(())
    }
}

fn items(v: &[Item]) -> String {
    match v {
        [] => "nothing".to_string(),
        v => v.iter().map(Item::to_string).collect::<Vec<_>>().join(", "),
    }
}

fn buf(b: Option<Buf>) -> String {
    b.map_or("no channel buffer".to_string(), |b| b.to_string())
}

/// The channel buffer the model put the step's element in or handed out in.
fn model_buffer(step: &Step, pre: &State, post: &State) -> Option<Buf> {
    let landed = |c: u8, item: &Item| {
        let ch = post.ch(c);
        ch.queue
            .iter()
            .chain(&ch.stash)
            .find(|e| Item::from(e.payload) == *item)
            .and_then(|e| e.buffer)
    };
    let b = match (step.action, &step.received) {
        (Action::GetNextBuffer { channel: c }, _) => {
            (post.ch(c).held.len() > pre.ch(c).held.len()).then(|| *post.ch(c).held.last().expect("grew"))
        }
        (Action::OnBuffer { channel: c }, Some(Received::Response(w))) => landed(c, &w.item),
        (Action::OnRecoveredStateBuffer { channel: c }, _) => step.pushed.last().and_then(|(_, i)| landed(c, i)),
        _ => None,
    };
    b.map(Buf)
}

/// Whether the model accepts `step` at `s`; the next state if so.
fn accept(m: &RecoveryModel, s: &State, step: &Step) -> Result<State, String> {
    let mut enabled = Vec::new();
    m.actions(s, &mut enabled);
    if !enabled.contains(&step.action) {
        return Err(format!("{:?} is not enabled; enabled: {enabled:?}", step.action));
    }
    takes_the_next_message(s, step)?;
    let next = m.next_state(s, step.action).ok_or("no successor")?;
    // A log does not record `nextDataType` (a local channel's comes from two locks).
    let predicted = model_observation(m, s, &step.action, &next).without_next();
    if predicted != step.observation {
        return Err(format!(
            "the model predicts {}, the log has {}",
            json(&predicted),
            json(&step.observation)
        ));
    }
    pushes_as_the_model(s, &next, step)?;
    notifies_as_the_model(&next, step)?;
    buffer_as_the_model(s, &next, step)?;
    pauses_as_the_model(m, &next, step)?;
    Ok(next)
}

/// What the step takes from the wire is the model's next message at `s`.
fn takes_the_next_message(s: &State, step: &Step) -> Result<(), String> {
    match (step.action, &step.received) {
        (Action::OnBuffer { channel: c }, Some(Received::Response(w))) => {
            if let Some(head) = s.ch(c).producer.wire.first() {
                let expected = WireElement {
                    item: head.payload.into(),
                    seq: head.seq,
                    backlog: head.backlog as i32,
                };
                if expected != *w {
                    return Err(format!(
                        "the model's next BufferResponse is {}, the log took {}",
                        json(&expected),
                        json(w)
                    ));
                }
            }
        }
        (Action::OnAddCredit { channel: c }, Some(Received::Credit(k))) => {
            if let Some(expected) = s.ch(c).add_credit_in_flight.first()
                && *expected as i32 != *k
            {
                return Err(format!("the model's next AddCredit is {expected}, the log took {k}"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The elements a push or the conversion appended to each channel (from `s` to `next`) are
/// those the log has it push.
fn pushes_as_the_model(s: &State, next: &State, step: &Step) -> Result<(), String> {
    if !matches!(
        step.action,
        Action::OnRecoveredStateBuffer { .. } | Action::ConvertRecoveredInputChannels
    ) || next.violation.is_some()
    {
        return Ok(());
    }
    for c in 0..next.channels.len() as u8 {
        let (before, after) = (&s.ch(c).queue, &next.ch(c).queue);
        let model: Vec<Item> = after
            .get(before.len()..)
            .unwrap_or_default()
            .iter()
            .map(|e| e.payload.into())
            .collect();
        let logged: Vec<Item> = step
            .pushed
            .iter()
            .filter(|(p, _)| *p == c)
            .map(|(_, i)| i.clone())
            .collect();
        if model != logged {
            return Err(format!(
                "the model pushes {}, the log pushed {}",
                items(&model),
                items(&logged)
            ));
        }
    }
    Ok(())
}

/// A local channel's `add` of a barrier told the view's listener in the model (a view exists
/// and the barrier is the only priority element, `needNotifyPriorityEvent()`) exactly if it did
/// in the log.
fn notifies_as_the_model(next: &State, step: &Step) -> Result<(), String> {
    let (Action::EmitCheckpointBarrier { channel: c, .. }, Some(logged)) = (step.action, step.notified) else {
        return Ok(());
    };
    match (recovery_model::producer::tells_listener(next.ch(c)), logged) {
        (true, false) => Err("the model's add tells the view's listener, the log's told nobody".into()),
        (false, true) => Err("the model's add tells nobody, the log's told the view's listener".into()),
        _ => Ok(()),
    }
}

/// The channel buffer the log has the step's element in, if it says, is the model's.
fn buffer_as_the_model(s: &State, next: &State, step: &Step) -> Result<(), String> {
    if let Some(logged) = step.buffer {
        let model = model_buffer(step, s, next);
        if model != logged {
            return Err(format!(
                "the model has the element in {}, the log in {}",
                buf(model),
                buf(logged)
            ));
        }
    }
    Ok(())
}

/// Where the log has the step's thread after it, if it says, is where the model's is.
fn pauses_as_the_model(m: &RecoveryModel, next: &State, step: &Step) -> Result<(), String> {
    if let Some(logged) = &step.pending {
        let snapshot = model_snapshot(m, next);
        let model = match m.thread(&step.action) {
            Thread::Task => snapshot.task,
            Thread::NettyClient => snapshot.netty_client,
            Thread::Recycler => snapshot.recycler,
            _ => Pending::Idle,
        };
        if model != *logged {
            return Err(format!(
                "the model's thread is then at {}, the log's at {}",
                json(&model),
                json(logged)
            ));
        }
    }
    Ok(())
}

/// Checks that each recording thread plays one model thread (`RecoveryModel::thread`).
fn threads_consistent(m: &RecoveryModel, steps: &[Step]) -> Result<(), Box<Rejection>> {
    let mut plays: BTreeMap<&str, Thread> = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        let t = m.thread(&step.action);
        let first = *plays.entry(&step.thread).or_insert(t);
        if first != t {
            return Err(Box::new(Rejection {
                index: i,
                step: step.clone(),
                placed: Vec::new(),
                reason: format!(
                    "thread {} played the model's {first} thread before, now {t}",
                    step.thread
                ),
            }));
        }
    }
    Ok(())
}

/// Where a search could not go on.
struct DeadEnd {
    /// The first unplaced step.
    index: usize,
    /// Why the model does not accept it there.
    reason: String,
    /// The steps placed before it.
    placed: Vec<Action>,
    /// Whether they were placed in their logged order.
    in_order: bool,
}

struct Search<'a> {
    m: &'a RecoveryModel,
    steps: &'a [Step],
    /// Per program (a recording thread, or one channel's producer steps of it), its step
    /// indices in log order ([`by_thread`]).
    threads: Vec<Vec<usize>>,
    window: usize,
    seen: HashSet<(Vec<usize>, State)>,
    placed: Vec<Action>,
    /// The log indices of `placed`.
    placed_at: Vec<usize>,
    farthest: Option<DeadEnd>,
    budget: usize,
}

impl Search<'_> {
    /// The last log position a step may be placed at without the window: its own, the end of
    /// its span, or anywhere for a deferrable one.
    fn deadline(&self, i: usize) -> usize {
        match self.steps[i].deferrable() {
            true => usize::MAX,
            false => i + self.steps[i].span,
        }
    }

    /// The most urgent unplaced step: the earliest deadline, then the earliest in log order.
    fn first_unplaced(&self, cursors: &[usize]) -> Option<usize> {
        self.threads
            .iter()
            .zip(cursors)
            .filter_map(|(t, c)| t.get(*c).copied())
            .min_by_key(|i| (self.deadline(*i), *i))
    }

    /// Searches for an interleaving of the unplaced steps (from `cursors` on) that the model
    /// accepts from `s`, depth first; records the farthest dead end if there is none.
    fn run(&mut self, s: &State, cursors: &mut Vec<usize>) -> bool {
        let Some(first) = self.first_unplaced(cursors) else {
            return true;
        };
        if self.budget == 0 || !self.seen.insert((cursors.clone(), s.clone())) {
            return false;
        }
        self.budget -= 1;
        let mut why_first = None;
        for (i, t) in self.candidates(first, cursors) {
            match accept(self.m, s, &self.steps[i]) {
                Ok(next) => {
                    if self.place(i, t, &next, cursors) {
                        return true;
                    }
                }
                Err(reason) if i == first => why_first = Some(reason),
                Err(_) => {}
            }
        }
        let reason = why_first.unwrap_or_else(|| "every placement of it led to a later rejection".into());
        self.dead_end(first, reason);
        false
    }

    /// The steps that may be placed next, in log order, with their thread: each thread's first
    /// unplaced step, within the window of the most urgent one (`first`) or deferrable.
    fn candidates(&self, first: usize, cursors: &[usize]) -> Vec<(usize, usize)> {
        let limit = self.deadline(first).saturating_add(self.window);
        let mut candidates: Vec<(usize, usize)> = self
            .threads
            .iter()
            .zip(cursors.iter())
            .enumerate()
            .filter_map(|(t, (steps, c))| steps.get(*c).map(|i| (*i, t)))
            .filter(|(i, _)| *i < limit || self.steps[*i].deferrable())
            .collect();
        candidates.sort();
        candidates
    }

    /// Places step `i` of thread `t`, reaching `next`, and searches on; takes it back if that
    /// fails.
    fn place(&mut self, i: usize, t: usize, next: &State, cursors: &mut Vec<usize>) -> bool {
        cursors[t] += 1;
        self.placed.push(self.steps[i].action);
        self.placed_at.push(i);
        if self.run(next, cursors) {
            return true;
        }
        self.placed.pop();
        self.placed_at.pop();
        cursors[t] -= 1;
        false
    }

    /// Records that no placement of step `first` works here, for `reason`, if this is the
    /// farthest dead end; at the same step, preferably the one reached by placing the steps
    /// before it in their logged order, whose reason is the logged order's own.
    fn dead_end(&mut self, first: usize, reason: String) {
        let in_order = self.placed_at.iter().enumerate().all(|(k, i)| k == *i);
        let better = |f: &DeadEnd| first > f.index || (first == f.index && in_order && !f.in_order);
        if self.farthest.as_ref().is_none_or(better) {
            self.farthest = Some(DeadEnd {
                index: first,
                reason,
                placed: self.placed.clone(),
                in_order,
            });
        }
    }
}

/// Per program, in the order the programs first appear, its step indices in log order. A
/// program is a recording thread, or for the model's producer one channel's steps of it: the
/// model's upstream of each channel is a program of its own (a notification it owes holds back
/// only that channel's, `producer_actions`), as each channel of a Flink gate reads another
/// upstream task, while one thread may write several channels' subpartitions (the soak's).
fn by_thread(m: &RecoveryModel, steps: &[Step]) -> Vec<Vec<usize>> {
    let mut names: Vec<(&str, Option<u8>)> = Vec::new();
    let mut threads: Vec<Vec<usize>> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let channel = (m.thread(&step.action) == Thread::Producer)
            .then(|| step.action.channel())
            .flatten();
        let name = (step.thread.as_str(), channel);
        let t = match names.iter().position(|n| *n == name) {
            Some(t) => t,
            None => {
                names.push(name);
                threads.push(Vec::new());
                names.len() - 1
            }
        };
        threads[t].push(i);
    }
    threads
}

/// Replays `steps` through `model` from its initial state. Returns the accepted interleaving
/// (the steps' actions in the order placed), or the first step that no interleaving within
/// `window` (1: exactly the logged order, compound steps anywhere in their span) could place.
///
/// The log records what each poll returned, not the gate's channel queue, whose order also
/// depends on notifications racing after their locks (which the model makes atomic): the model
/// used here lets the task poll any channel with data ([`GatePolling::AnyChannelWithData`]).
pub fn validate(model: &RecoveryModel, steps: &[Step], window: usize) -> Result<Vec<Action>, Box<Rejection>> {
    let model = &model.clone().with_polling(GatePolling::AnyChannelWithData);
    threads_consistent(model, steps)?;
    let mut search = Search {
        m: model,
        steps,
        threads: by_thread(model, steps),
        window: window.max(1),
        seen: HashSet::new(),
        placed: Vec::new(),
        placed_at: Vec::new(),
        farthest: None,
        budget: 1_000_000,
    };
    let init = model.init_states().remove(0);
    let mut cursors = vec![0; search.threads.len()];
    if search.run(&init, &mut cursors) {
        return Ok(search.placed);
    }
    let DeadEnd {
        index, reason, placed, ..
    } = search.farthest.expect("a failed search has a dead end");
    Err(Box::new(Rejection {
        index,
        step: steps[index].clone(),
        placed,
        reason,
    }))
}
