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
//! model thread. `notifyBufferAvailable` takes its model thread from the name of the thread
//! that announced. Recycling is a model step (`recycle`, `recycleFloatingBuffer`) on the
//! `recycler` thread only; a buffer recycled on any other thread is part of what that thread is
//! doing (a push into a released channel, a `BufferResponse` a released channel discards, a
//! release).
//!
//! Order. `recovery-impl` records each event inside the critical section that decided it (an
//! atomic operation is performed inside the recorder's order), and the log's own lock puts all
//! events in one order consistent with every recording lock. Events of one thread keep their
//! logged order (program order). Across threads the logged order is tried first; with
//! `window > 1`, an event may be placed before up to `window - 1` earlier events of other
//! threads, a bounded search for an interleaving the model accepts.
//!
//! Compound steps. Some model actions are one step where the implementation takes several
//! critical sections, with other threads free to run between them:
//! - `onBuffer`: `requestBuffer()` (data only) or `onBlockingUpstream`'s
//!   `releaseFloatingBuffers()` (a blocking event on a channel without exclusive buffers, with
//!   the recycles of the floating buffers and the announcement of a listener that takes one)
//!   under `bufferQueue`, then the `onBuffer` decision under `receivedBuffers`
//!   (`onSenderBacklog`'s `requestFloatingBuffers` after it is a model step of its own);
//! - the task's `getNextBuffer` of the last channel's `EndOfOutputChannelStateEvent`: the poll,
//!   then the `UpstreamRecoveryTracker`'s `resumeConsumption` of every channel (a local one's
//!   subpartition, a remote one's credit reset and queued message);
//! - a remote `onRecoveredStateBuffer`: the drainer's `requestBufferBlocking()` under
//!   `bufferQueue`, then the append under `receivedBuffers`;
//! - `recycle` / `recycleFloatingBuffer` of a floating buffer: `LocalBufferPool.recycle`, then
//!   the waiting manager's `notifyBufferAvailable(Buffer)` under `bufferQueue` (and the pool
//!   again if it refuses);
//! - `releaseAllResources`: `isReleased` set, the queue drained (a local channel's view with
//!   it), then `releaseAllBuffers` under `bufferQueue` and the floating buffers recycled; where
//!   the model's configuration has `release_step`, the drain starts a step of its own
//!   (`releaseQueuedBuffers`), as the model splits the call there;
//! - `convertRecoveredInputChannels`: the conversion's pushes into each new channel.
//!
//! A drainer whose `requestBufferBlocking()` parks logs the wait
//! ([`Event::RequestBufferBlockingWait`]): the model's `requestBufferBlocking`. The buffer it
//! takes once woken begins the `onRecoveredStateBuffer` that follows.
//!
//! The gate's hand-off (`pollNext`) is no step of its own: the model's `getNextBuffer` hands
//! on what it polls. [`steps`] checks it instead: every element a channel's poll returned (the
//! sentinel aside) must be handed on before the task polls again, so an element polled and
//! then dropped is refused.
//!
//! Each part is recorded where it happens, and [`steps`] joins the parts of one call into one
//! step, placed at its first part. The step's *span* is the number of later-starting steps of
//! other threads logged before its last part: the search may place the model's atomic step at
//! any point between its first and its last part (after up to `span` of those steps), the
//! usual linearization of an operation that spans an interval. A log is rejected only if no
//! such point works. This is as strong as the model's granularity allows and no stronger:
//! where a real interleaving between two parts yields a state no linearization point of the
//! model's step reaches, the log is rejected, and that is a finding about the model's
//! granularity (see `docs/conformance.md`).
//!
//! A local channel's `hasPendingPriorityEvent` is written outside any lock the consumer shares
//! with the producer: the producer's `ResultSubpartition.add` of a priority barrier is recorded
//! under the subpartition's lock, its `notifyPriorityEvent` sets the flag after that lock, and
//! the task's `pullPriorityFromSubpartitionView` clears it after the view's lock. Both writes
//! are recorded ([`Event::NotifyPriorityEvent`], [`Event::ClearPendingPriorityEvent`]). Where
//! the model's channel has `priority_notify_step` they are steps of their own, as in the code
//! (the task's poll returns the priority event it pulled in the clear's step); otherwise each is a part of its call (`add`, the poll), which then spans up to it. An `add`
//! with no notification logged after it (no listener yet, or not the first priority element)
//! is *deferrable*: other threads' steps may be placed before it whatever the window, as long as
//! the model accepts every step.
//!
//! Names. Elements are named by their payload ([`item_of`]) and network buffers by the driver's
//! segment ids ([`IdMap`] of the model's configuration), so a run must build its pools as
//! [`ImplDriver`](crate::impl_driver::ImplDriver) does.

use crate::impl_driver::{error_kind, failure};
use crate::observation::{Buf, DataType, Item, Observation, Pending, WireElement};
use crate::projection::{IdMap, impl_pending, item_of, model_observation, model_snapshot};
use recovery_impl::event_log::{Event, Recorded};
use recovery_impl::pause_point::PausePoint;
use recovery_impl::{BufferId, BufferKind, BufferSnapshot, ChannelError, InputChannelInfo};
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
    /// A remote push took its buffer: the append follows.
    Push(u8),
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
    /// Log index of each step's first and last event.
    parts: Vec<(usize, usize)>,
    /// Per thread: its last step and what that step still expects.
    open: HashMap<String, (usize, Open)>,
    /// Per thread: an element a channel's poll returned that `pollNext` has not handed on yet
    /// (the log index of the poll, and the element).
    unhanded: HashMap<String, (usize, Item)>,
}

fn outcome(r: &Result<(), ChannelError>) -> Observation {
    match r {
        Ok(()) => Observation::Done,
        Err(e) => Observation::Error { error: error_kind(e) },
    }
}

fn at(channel: InputChannelInfo) -> u8 {
    channel.input_channel_idx as u8
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

    /// Makes event `k` a part of the thread's last step, now expecting `open`.
    fn continue_step(&mut self, k: usize, thread: &str, open: Open) -> Result<&mut Step, String> {
        let Some((i, _)) = self.last(thread) else {
            return Err(format!("thread {thread} continues a call it never started"));
        };
        self.open.insert(thread.to_string(), (i, open));
        self.parts[i].1 = k;
        Ok(&mut self.steps[i])
    }

    fn event(&mut self, k: usize, r: &Recorded) -> Result<(), String> {
        let thread = r.thread.as_str();
        let last = self.last(thread);
        let open = last.map_or(Open::Done, |(_, o)| o);
        let recycler = model_thread(thread) == Some(Thread::Recycler);
        let new = |action, observation| Step::new(thread, action, observation);
        match &r.event {
            Event::RequestPartitions { .. } => {
                self.start(k, new(Action::RequestPartitions, Observation::Done), Open::Done)
            }
            Event::ConvertRecoveredInputChannels { .. } => self.start(
                k,
                new(Action::ConvertRecoveredInputChannels, Observation::Done),
                Open::Converting,
            ),
            Event::OnRecoveredStateBuffer {
                channel,
                buffer,
                outcome: o,
            } => {
                let c = at(*channel);
                let item = item_of(c, buffer);
                let name = self.name(c, buffer.id);
                let observation = match o {
                    Ok(_) => Observation::Done,
                    Err(e) => Observation::Error { error: error_kind(e) },
                };
                let appended = matches!(o, Ok(true));
                match open {
                    Open::Converting => {
                        let step = self.continue_step(k, thread, Open::Converting)?;
                        if appended {
                            step.pushed.push((c, item));
                        }
                        if step.observation == Observation::Done {
                            step.observation = observation;
                        }
                    }
                    Open::Push(p) if p == c => {
                        let step = self.continue_step(k, thread, Open::Done)?;
                        if appended {
                            step.pushed.push((c, item));
                            step.buffer = Some(name);
                        }
                        step.observation = observation;
                    }
                    _ => {
                        let mut step = new(Action::OnRecoveredStateBuffer { channel: c }, observation);
                        if appended {
                            step.pushed.push((c, item));
                        }
                        self.start(k, step, Open::Done);
                    }
                }
            }
            Event::RequestBufferBlocking { channel, outcome: o } => {
                let c = at(*channel);
                match o {
                    Ok(_) => self.start(
                        k,
                        new(Action::OnRecoveredStateBuffer { channel: c }, Observation::Done),
                        Open::Push(c),
                    ),
                    // The drainer of a released channel stops quietly (CancelTaskException).
                    Err(ChannelError::Released(_)) => self.start(
                        k,
                        new(Action::OnRecoveredStateBuffer { channel: c }, Observation::Done),
                        Open::Done,
                    ),
                    Err(e) => self.start(
                        k,
                        new(
                            Action::OnRecoveredStateBuffer { channel: c },
                            Observation::Error { error: error_kind(e) },
                        ),
                        Open::Done,
                    ),
                }
            }
            // The drainer parks: the model's `requestBufferBlocking`; its wake-up and push is
            // the `onRecoveredStateBuffer` that `RequestBufferBlocking` starts later.
            Event::RequestBufferBlockingWait { channel } => self.start(
                k,
                new(
                    Action::RequestBufferBlocking { channel: at(*channel) },
                    Observation::Blocked,
                ),
                Open::Done,
            ),
            // `onBlockingUpstream`, before `onBuffer`'s lock: the first part of the model's
            // `onBuffer` (the floating buffers it gives back, and a listener's announcement of
            // one it takes, are parts too).
            Event::ReleaseFloatingBuffers { channel, .. } => {
                let c = at(*channel);
                self.start(
                    k,
                    new(Action::OnBuffer { channel: c }, Observation::Done),
                    Open::Response(c),
                );
            }
            Event::NotifyBufferAvailable { .. } if matches!(open, Open::Response(_)) => {
                self.continue_step(k, thread, open)?;
            }
            // Part of the task's poll of the last `EndOfOutputChannelStateEvent`: the gate's
            // tracker resumes every channel in the same model step.
            Event::ResumeConsumption { channel } => {
                let step = self.continue_step(k, thread, open)?;
                if !matches!(step.action, Action::GetNextBuffer { .. }) {
                    return Err(format!(
                        "channel {} resumed after {}, not in the poll of an end-of-output event",
                        at(*channel),
                        step.action.method()
                    ));
                }
            }
            Event::SendResumeConsumption { channel, .. } => self.start(
                k,
                new(
                    Action::SendResumeConsumption { channel: at(*channel) },
                    Observation::Done,
                ),
                Open::Done,
            ),
            // A local channel's view resumes in the task's poll; a remote channel's view reader on
            // the Netty server, from the `ResumeConsumption` message (a model step).
            Event::SubpartitionResumeConsumption {
                subpartition,
                outcome: o,
            } => {
                let c = self.of_subpartition(*subpartition)?;
                match self.kind(c)? {
                    ChannelKind::Local => {
                        let step = self.continue_step(k, thread, open)?;
                        if !matches!(step.action, Action::GetNextBuffer { .. }) {
                            return Err(format!(
                                "channel {c}'s subpartition resumed after {}, not in the poll of an end-of-output event",
                                step.action.method()
                            ));
                        }
                        if let Err(e) = o {
                            step.observation = Observation::Error { error: error_kind(e) };
                        }
                    }
                    ChannelKind::Remote => self.start(
                        k,
                        new(Action::OnResumeConsumption { channel: c }, outcome(o)),
                        Open::Done,
                    ),
                }
            }
            Event::FinishRecoveredBufferDelivery { channel, outcome: o } => self.start(
                k,
                new(
                    Action::FinishRecoveredBufferDelivery { channel: at(*channel) },
                    outcome(o),
                ),
                Open::Done,
            ),
            Event::InsertRecoveryCheckpointBarrierIfInRecovery { channel, checkpoint_id } => self.start(
                k,
                new(
                    Action::InsertRecoveryCheckpointBarrier {
                        channel: at(*channel),
                        cp: *checkpoint_id as u8,
                    },
                    Observation::Done,
                ),
                Open::Done,
            ),
            Event::CheckpointStarted {
                channel,
                checkpoint_id,
                outcome: o,
            } => {
                let (c, cp) = (at(*channel), *checkpoint_id as u8);
                let observation = match o {
                    Ok(buffers) => Observation::Persisted {
                        checkpoint: cp,
                        buffers: buffers.iter().map(|b| item_of(c, b)).collect(),
                    },
                    Err(e) => failure(cp, e),
                };
                self.start(
                    k,
                    new(Action::CheckpointStarted { channel: c, cp }, observation),
                    Open::Done,
                );
            }
            Event::OnRecoveredStateConsumed { channel, outcome: o } => self.start(
                k,
                new(Action::OnRecoveredStateConsumed { channel: at(*channel) }, outcome(o)),
                Open::Done,
            ),
            Event::GetNextBuffer {
                channel,
                buffer,
                sequence_number,
            } => {
                let c = at(*channel);
                self.polled(k, thread, c, buffer)?;
                let observation = Observation::Polled {
                    item: item_of(c, buffer),
                    seq: *sequence_number,
                    next: DataType::None,
                };
                let mut step = new(Action::GetNextBuffer { channel: c }, observation);
                step.buffer = Some(self.name(c, buffer.id));
                self.start(k, step, Open::Done);
            }
            // The gate's hand-off of what the poll returned: part of the model's
            // `getNextBuffer`, which hands it on in the same step.
            Event::PollNext { channel, buffer } => {
                let c = at(*channel);
                let item = item_of(c, buffer);
                match self.unhanded.remove(thread) {
                    Some((_, polled)) if polled == item => {}
                    Some((at, polled)) => {
                        return Err(format!(
                            "pollNext handed on {item} of channel {c}, but the poll at event {} returned {polled}",
                            at + 1
                        ));
                    }
                    None => {
                        return Err(format!(
                            "pollNext handed on {item} of channel {c}, which no poll returned"
                        ));
                    }
                }
            }
            Event::Add { subpartition, buffer } => {
                let c = self.of_subpartition(*subpartition)?;
                let BufferKind::CheckpointBarrier(cp) = buffer.kind else {
                    return Err("the producer adds only checkpoint barriers during a run".into());
                };
                let action = Action::EmitCheckpointBarrier {
                    channel: c,
                    cp: cp as u8,
                };
                self.start(k, new(action, Observation::Done), Open::Done);
            }
            // The listener's flag is a step of its own only where the model splits it off
            // (`priority_notify_step`); otherwise it is part of the producer's `add` or the
            // task's poll. A split poll returns what it pulled in the clear's step.
            Event::NotifyPriorityEvent { channel } | Event::ClearPendingPriorityEvent { channel } => {
                let c = at(*channel);
                let notify = matches!(r.event, Event::NotifyPriorityEvent { .. });
                if self
                    .m
                    .cfg
                    .channels
                    .get(c as usize)
                    .is_some_and(|cc| cc.priority_notify_step)
                {
                    let action = match notify {
                        true => Action::NotifyPriorityEvent { channel: c },
                        false => Action::ClearPendingPriorityEvent { channel: c },
                    };
                    let observation = match self.last(thread) {
                        Some((i, _)) if !notify && self.steps[i].action == (Action::GetNextBuffer { channel: c }) => {
                            std::mem::replace(&mut self.steps[i].observation, Observation::Done)
                        }
                        _ => Observation::Done,
                    };
                    self.start(k, new(action, observation), Open::Done);
                } else {
                    let step = self.continue_step(k, thread, Open::Done)?;
                    let same = match step.action {
                        Action::EmitCheckpointBarrier { channel, .. } => notify && channel == c,
                        Action::GetNextBuffer { channel } => !notify && channel == c,
                        _ => false,
                    };
                    if !same {
                        return Err(format!(
                            "thread {thread} changed channel {c}'s priority flag after {}, not in an add or a poll of that channel",
                            step.action.method()
                        ));
                    }
                    // The step ends at the flag: not deferrable, it spans its parts.
                    step.deferrable = false;
                }
            }
            Event::PollBuffer {
                subpartition,
                buffer,
                sequence_number,
                backlog,
            } => {
                let c = self.of_subpartition(*subpartition)?;
                let item = item_of(c, buffer);
                if self.kind(c)? == ChannelKind::Local {
                    self.polled(k, thread, c, buffer)?;
                }
                let step = match self.kind(c)? {
                    ChannelKind::Local => new(
                        Action::GetNextBuffer { channel: c },
                        Observation::Polled {
                            item,
                            seq: *sequence_number,
                            next: DataType::None,
                        },
                    ),
                    // The view reader of a remote channel sends what it polls.
                    ChannelKind::Remote => new(
                        Action::SendBuffer { channel: c },
                        Observation::Sent {
                            sent: WireElement {
                                item,
                                seq: *sequence_number,
                                backlog: *backlog,
                            },
                            next: DataType::None,
                        },
                    ),
                };
                self.start(k, step, Open::Done);
            }
            Event::RequestBuffer { channel, .. } => {
                let c = at(*channel);
                self.start(
                    k,
                    new(Action::OnBuffer { channel: c }, Observation::Done),
                    Open::Response(c),
                );
            }
            Event::OnBuffer {
                channel,
                buffer,
                sequence_number,
                backlog,
                outcome: o,
            } => {
                let c = at(*channel);
                let item = item_of(c, buffer);
                let name = self.name(c, buffer.id);
                let next = match o {
                    Ok(true) => Open::Backlog(c),
                    _ => Open::Done,
                };
                let step = match open {
                    Open::Response(p) if p == c => self.continue_step(k, thread, next)?,
                    _ => {
                        self.start(k, new(Action::OnBuffer { channel: c }, Observation::Done), next);
                        self.steps.last_mut().expect("just started")
                    }
                };
                step.received = Some(Received::Response(WireElement {
                    item,
                    seq: *sequence_number,
                    backlog: *backlog,
                }));
                match o {
                    Ok(true) if buffer.kind.is_buffer() => {
                        step.buffer = Some(name);
                        step.pending = Some(Pending::SenderBacklog { channel: c });
                    }
                    Ok(true) => step.pending = Some(Pending::SenderBacklog { channel: c }),
                    Ok(false) => step.pending = Some(Pending::Idle),
                    Err(e) => step.observation = Observation::Error { error: error_kind(e) },
                }
            }
            Event::RequestFloatingBuffers { channel, announce, .. } => {
                let c = at(*channel);
                if open != Open::Backlog(c) {
                    return Err(format!("requestFloatingBuffers outside an onBuffer of channel {c}"));
                }
                // `onSenderBacklog`, the model's next Netty-client step after `onBuffer`.
                let mut step = new(Action::OnSenderBacklog { channel: c }, Observation::Done);
                step.pending = Some(Self::announce(c, *announce));
                self.start(k, step, Open::Done);
            }
            Event::EnableNotify { channel, outcome: o } => {
                let c = at(*channel);
                let (observation, pending) = match o {
                    Ok(n) => (Observation::Done, Some(Self::announce(c, *n))),
                    Err(e) => (Observation::Error { error: error_kind(e) }, None),
                };
                let mut step = new(Action::EnableNotify { channel: c }, observation);
                step.pending = pending;
                self.start(k, step, Open::Done);
            }
            Event::NotifyBufferAvailable {
                channel,
                number_of_buffers,
            } => {
                let Some(t) = model_thread(thread) else {
                    return Err(format!("thread {thread} is not named after a model thread"));
                };
                let action = Action::NotifyBufferAvailable {
                    thread: t,
                    channel: at(*channel),
                    n: *number_of_buffers as u8,
                };
                let mut step = new(action, Observation::Done);
                step.pending = Some(Pending::Idle);
                self.start(k, step, Open::Done);
            }
            Event::GetAndResetUnannouncedCredit {
                channel,
                credit,
                released,
            } => {
                let credit = (*credit > 0 && !released).then_some(*credit);
                let step = new(
                    Action::SendAddCredit { channel: at(*channel) },
                    Observation::CreditSent { credit },
                );
                self.start(k, step, Open::Done);
            }
            Event::AddCredit { receiver, credit } => {
                let mut step = new(Action::OnAddCredit { channel: at(*receiver) }, Observation::Done);
                step.received = Some(Received::Credit(*credit));
                self.start(k, step, Open::Done);
            }
            Event::ReleaseAllResources { channel } => self.start(
                k,
                new(Action::ReleaseAllResources { channel: at(*channel) }, Observation::Done),
                Open::Done,
            ),
            // The second part of the release: a step of its own where the model splits the
            // release (`release_step`), otherwise a part of `releaseAllResources`.
            Event::ReleaseQueuedBuffers { channel } if self.m.cfg.release_step => self.start(
                k,
                new(
                    Action::ReleaseQueuedBuffers { channel: at(*channel) },
                    Observation::Done,
                ),
                Open::Done,
            ),
            // Buffers leaving a manager or recycled: a model step on the recycler only.
            Event::Recycle { channel, buffer, then } if recycler => {
                let c = at(*channel);
                let (_, b) = self.buffer(*buffer)?;
                let mut step = new(Action::Recycle { channel: c, buffer: b }, Observation::Done);
                step.pending = Some(self.pending(c, *then));
                self.start(k, step, Open::Done);
            }
            Event::LocalBufferPoolRecycle { buffer, to_listener } if recycler => {
                let next = match to_listener {
                    true => Open::Offered(*buffer),
                    false => Open::Done,
                };
                match open {
                    Open::Offered(b) | Open::Refused(b) if b == *buffer => {
                        let step = self.continue_step(k, thread, next)?;
                        if !to_listener {
                            step.pending = Some(Pending::Idle);
                        }
                    }
                    _ => {
                        let (c, b) = self.buffer(*buffer)?;
                        // Handed back by this thread's `recycle` of an exclusive buffer?
                        let returned = last.is_some_and(|(i, _)| {
                            self.steps[i].pending
                                == Some(Pending::ReturnFloating {
                                    channel: c,
                                    buffer: Buf(b),
                                })
                        });
                        let action = match returned {
                            true => Action::ReturnFloatingBuffer { channel: c, buffer: b },
                            false => Action::Recycle { channel: c, buffer: b },
                        };
                        let mut step = new(action, Observation::Done);
                        if !to_listener {
                            step.pending = Some(Pending::Idle);
                        }
                        self.start(k, step, next);
                    }
                }
            }
            Event::BufferListenerNotifyBufferAvailable {
                channel,
                buffer,
                taken,
                announce,
            } if recycler => {
                if open != Open::Offered(*buffer) {
                    return Err(format!("a listener decided on {} no recycle offered it", buffer.0));
                }
                let c = at(*channel);
                let next = match taken {
                    true => Open::Done,
                    false => Open::Refused(*buffer),
                };
                let step = self.continue_step(k, thread, next)?;
                if *taken {
                    step.pending = Some(Self::announce(c, *announce));
                }
            }
            Event::Recycle { .. }
            | Event::LocalBufferPoolRecycle { .. }
            | Event::BufferListenerNotifyBufferAvailable { .. }
            | Event::ReleaseQueuedBuffers { .. }
            | Event::ReleaseAllBuffers { .. } => {
                if recycler {
                    return Err("releaseAllBuffers on the recycler thread".into());
                }
                self.continue_step(k, thread, open)?;
            }
        }
        Ok(())
    }

    /// A channel's poll (event `k`) returned `buffer`: `pollNext` must hand it on before the
    /// thread polls again, except the sentinel, which the gate consumes itself.
    fn polled(&mut self, k: usize, thread: &str, c: u8, buffer: &BufferSnapshot) -> Result<(), String> {
        if let Some((at, item)) = self.unhanded.remove(thread) {
            return Err(format!(
                "the poll at event {} returned {item}, which pollNext never handed on (dropped after the poll)",
                at + 1
            ));
        }
        if buffer.kind != BufferKind::EndOfFetchedChannelState {
            self.unhanded.insert(thread.to_string(), (k, item_of(c, buffer)));
        }
        Ok(())
    }

    fn finish(mut self) -> Vec<Step> {
        for i in 0..self.steps.len() {
            let last = self.parts[i].1;
            self.steps[i].span = self.parts[i + 1..]
                .iter()
                .take_while(|(first, _)| *first < last)
                .count();
        }
        self.steps
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
    Ok(b.finish())
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
    // What the step takes from the wire is the model's next message.
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
    if matches!(
        step.action,
        Action::OnRecoveredStateBuffer { .. } | Action::ConvertRecoveredInputChannels
    ) && next.violation.is_none()
    {
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
    }
    if let Some(logged) = step.buffer {
        let model = model_buffer(step, s, &next);
        if model != logged {
            return Err(format!(
                "the model has the element in {}, the log in {}",
                buf(model),
                buf(logged)
            ));
        }
    }
    if let Some(logged) = &step.pending {
        let snapshot = model_snapshot(m, &next);
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
    Ok(next)
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
    /// Per recording thread, its step indices in log order.
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

    fn run(&mut self, s: &State, cursors: &mut Vec<usize>) -> bool {
        let Some(first) = self.first_unplaced(cursors) else {
            return true;
        };
        if self.budget == 0 || !self.seen.insert((cursors.clone(), s.clone())) {
            return false;
        }
        self.budget -= 1;
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
        let mut why_first = None;
        for (i, t) in candidates {
            match accept(self.m, s, &self.steps[i]) {
                Ok(next) => {
                    cursors[t] += 1;
                    self.placed.push(self.steps[i].action);
                    self.placed_at.push(i);
                    if self.run(&next, cursors) {
                        return true;
                    }
                    self.placed.pop();
                    self.placed_at.pop();
                    cursors[t] -= 1;
                }
                Err(reason) if i == first => why_first = Some(reason),
                Err(_) => {}
            }
        }
        let reason = why_first.unwrap_or_else(|| "every placement of it led to a later rejection".into());
        // The farthest dead end; at the same step, preferably the one reached by placing the
        // steps before it in their logged order, whose reason is the logged order's own.
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
        false
    }
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
    let mut names: Vec<&str> = Vec::new();
    let mut threads: Vec<Vec<usize>> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let t = match names.iter().position(|n| *n == step.thread) {
            Some(t) => t,
            None => {
                names.push(&step.thread);
                threads.push(Vec::new());
                names.len() - 1
            }
        };
        threads[t].push(i);
    }
    let mut search = Search {
        m: model,
        steps,
        threads,
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
