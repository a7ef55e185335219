//! Validation, implementation to spec: an [`EventLog`](recovery_impl::event_log::EventLog) of a
//! real multi-threaded run is mapped to model actions ([`steps`]) and replayed through the model
//! ([`validate`]), which accepts it only if every logged step is enabled where it is placed and
//! yields the logged observation (and, for a push, appends the logged element).
//!
//! Order. `recovery-impl` records each event inside the critical section that decided it, and
//! the log's own lock puts all events in one order consistent with every recording lock. Events
//! of one thread keep their logged order (program order). Across threads the logged order is
//! tried first; with `window > 1`, an event may be placed before up to `window - 1` earlier
//! events of other threads, a bounded search for an interleaving the model accepts.
//!
//! One event is not recorded at the point where the consumer sees it: the producer's
//! `ResultSubpartition.add` of a priority barrier is recorded under the subpartition's lock, but
//! a local channel in recovery sees it only when `notifyPriorityEvent` sets its flag, after that
//! lock is released (the model makes the two one step, as Flink's threads can be preempted
//! between them). An [`Action::EmitCheckpointBarrier`] step is therefore *deferrable*: other
//! threads' steps may be placed before it whatever the window, as long as the model accepts
//! every step. The price: the checker cannot tell a late notification from a late barrier, so a
//! log cannot show that a pending priority event was ignored in recovery (the replay of model
//! traces, spec to implementation, checks that).
//!
//! What is validated: the events `recovery_impl::event_log` records, that is, local channels,
//! the gate's `requestPartitions` and the producer's barriers (see `docs/conformance.md`).

use crate::impl_driver::error_kind;
use crate::observation::{DataType, Item, Observation, Refusal};
use crate::projection::{item_of, model_observation};
use recovery_impl::event_log::{Event, Recorded};
use recovery_impl::{BufferKind, ChannelError, DeclineReason};
use recovery_model::state::{Payload, State};
use recovery_model::{Action, RecoveryModel, Thread};
use stateright::Model;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// One logged event in the model's vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The recording thread.
    pub thread: String,
    /// The model action the event is.
    pub action: Action,
    /// What the implementation's caller saw.
    pub observation: Observation,
    /// For `onRecoveredStateBuffer`: the element appended.
    pub pushed: Option<Item>,
}

impl Step {
    /// Whether other threads' steps may be placed before it regardless of the window (see the
    /// module documentation).
    pub fn deferrable(&self) -> bool {
        matches!(self.action, Action::EmitCheckpointBarrier { .. })
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let observation = serde_json::to_string(&self.observation).expect("serializes");
        write!(f, "[{}] {:?} -> {observation}", self.thread, self.action)?;
        if let Some(item) = &self.pushed {
            write!(f, " (pushed {item})")?;
        }
        Ok(())
    }
}

/// Maps a log to model steps. `subpartitions[c]` is the
/// [`event_id`](recovery_impl::result_subpartition::ResultSubpartition::event_id) of the
/// subpartition channel `c` reads. Fails on an event that is no model action.
pub fn steps(log: &[Recorded], subpartitions: &[usize]) -> Result<Vec<Step>, String> {
    log.iter()
        .enumerate()
        .map(|(i, r)| step(r, subpartitions).map_err(|e| format!("event {}: {e}: {:?}", i + 1, r.event)))
        .collect()
}

fn outcome(r: &Result<(), ChannelError>) -> Observation {
    match r {
        Ok(()) => Observation::Done,
        Err(e) => Observation::Error { error: error_kind(e) },
    }
}

fn step(r: &Recorded, subpartitions: &[usize]) -> Result<Step, String> {
    let at = |channel: recovery_impl::InputChannelInfo| channel.input_channel_idx as u8;
    let of_subpartition = |id: usize| {
        subpartitions
            .iter()
            .position(|s| *s == id)
            .map(|c| c as u8)
            .ok_or_else(|| "a subpartition no channel reads".to_string())
    };
    let mut pushed = None;
    let (action, observation) = match &r.event {
        Event::RequestPartitions { .. } => (Action::RequestPartitions, Observation::Done),
        Event::OnRecoveredStateBuffer { channel, buffer } => {
            let c = at(*channel);
            pushed = Some(item_of(c, buffer));
            (Action::OnRecoveredStateBuffer { channel: c }, Observation::Done)
        }
        Event::FinishRecoveredBufferDelivery { channel, outcome: o } => (
            Action::FinishRecoveredBufferDelivery { channel: at(*channel) },
            outcome(o),
        ),
        Event::InsertRecoveryCheckpointBarrierIfInRecovery { channel, checkpoint_id } => (
            Action::InsertRecoveryCheckpointBarrier {
                channel: at(*channel),
                cp: *checkpoint_id as u8,
            },
            Observation::Done,
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
                Err(ChannelError::CheckpointDeclined { reason, .. }) => Observation::Refused {
                    checkpoint: cp,
                    reason: match reason {
                        DeclineReason::LaterRecoveryCheckpointBarrier { .. } => Refusal::LaterBarrier,
                        _ => Refusal::MissingBarrier,
                    },
                },
                Err(ChannelError::CheckpointSubsumed { .. }) => Observation::Refused {
                    checkpoint: cp,
                    reason: Refusal::Subsumed,
                },
                Err(e) => Observation::Error { error: error_kind(e) },
            };
            (Action::CheckpointStarted { channel: c, cp }, observation)
        }
        Event::OnRecoveredStateConsumed { channel, outcome: o } => {
            (Action::OnRecoveredStateConsumed { channel: at(*channel) }, outcome(o))
        }
        Event::GetNextBuffer {
            channel,
            buffer,
            sequence_number,
        } => {
            let c = at(*channel);
            let observation = Observation::Polled {
                item: item_of(c, buffer),
                seq: *sequence_number,
                next: DataType::None,
            };
            (Action::GetNextBuffer { channel: c }, observation)
        }
        Event::Add { subpartition, buffer } => {
            let c = of_subpartition(*subpartition)?;
            match buffer.kind {
                BufferKind::CheckpointBarrier(cp) => (
                    Action::EmitCheckpointBarrier {
                        channel: c,
                        cp: cp as u8,
                    },
                    Observation::Done,
                ),
                _ => return Err("the producer adds only checkpoint barriers during a run".into()),
            }
        }
        Event::PollBuffer {
            subpartition,
            buffer,
            sequence_number,
            ..
        } => {
            let c = of_subpartition(*subpartition)?;
            let observation = Observation::Polled {
                item: item_of(c, buffer),
                seq: *sequence_number,
                next: DataType::None,
            };
            (Action::GetNextBuffer { channel: c }, observation)
        }
    };
    Ok(Step {
        thread: r.thread.clone(),
        action,
        observation,
        pushed,
    })
}

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

/// Whether the model accepts `step` at `s`; the next state if so.
fn accept(m: &RecoveryModel, s: &State, step: &Step) -> Result<State, String> {
    let mut enabled = Vec::new();
    m.actions(s, &mut enabled);
    if !enabled.contains(&step.action) {
        return Err(format!("{:?} is not enabled; enabled: {enabled:?}", step.action));
    }
    let next = m.next_state(s, step.action).ok_or("no successor")?;
    // A log does not record `nextDataType` (a local channel's comes from two locks).
    let predicted = model_observation(m, s, &step.action, &next).without_next();
    if predicted != step.observation {
        let json = |o: &Observation| serde_json::to_string(o).expect("serializes");
        return Err(format!(
            "the model predicts {}, the log has {}",
            json(&predicted),
            json(&step.observation)
        ));
    }
    if let (Some(item), Action::OnRecoveredStateBuffer { channel }) = (&step.pushed, step.action) {
        let ch = next.ch(channel);
        let expected = Item::from(Payload::Recovered(ch.ghost_pushed - 1));
        if *item != expected {
            return Err(format!("the model pushes {expected}, the log pushed {item}"));
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

struct Search<'a> {
    m: &'a RecoveryModel,
    steps: &'a [Step],
    /// Per recording thread, its step indices in log order.
    threads: Vec<Vec<usize>>,
    window: usize,
    seen: HashSet<(Vec<usize>, State)>,
    placed: Vec<Action>,
    /// The farthest dead end: first unplaced index, why it failed there, the steps placed.
    farthest: Option<(usize, String, Vec<Action>)>,
    budget: usize,
}

impl Search<'_> {
    /// The first unplaced step in log order, deferrable ones only if nothing else is left.
    fn first_unplaced(&self, cursors: &[usize]) -> Option<usize> {
        let next = || self.threads.iter().zip(cursors).filter_map(|(t, c)| t.get(*c).copied());
        next()
            .filter(|i| !self.steps[*i].deferrable())
            .min()
            .or_else(|| next().min())
    }

    fn run(&mut self, s: &State, cursors: &mut Vec<usize>) -> bool {
        let Some(first) = self.first_unplaced(cursors) else {
            return true;
        };
        if self.budget == 0 || !self.seen.insert((cursors.clone(), s.clone())) {
            return false;
        }
        self.budget -= 1;
        let mut candidates: Vec<(usize, usize)> = self
            .threads
            .iter()
            .zip(cursors.iter())
            .enumerate()
            .filter_map(|(t, (steps, c))| steps.get(*c).map(|i| (*i, t)))
            .filter(|(i, _)| *i < first + self.window || self.steps[*i].deferrable())
            .collect();
        candidates.sort();
        let mut why_first = None;
        for (i, t) in candidates {
            match accept(self.m, s, &self.steps[i]) {
                Ok(next) => {
                    cursors[t] += 1;
                    self.placed.push(self.steps[i].action);
                    if self.run(&next, cursors) {
                        return true;
                    }
                    self.placed.pop();
                    cursors[t] -= 1;
                }
                Err(reason) if i == first => why_first = Some(reason),
                Err(_) => {}
            }
        }
        let reason = why_first.unwrap_or_else(|| "every placement of it led to a later rejection".into());
        if self.farthest.as_ref().is_none_or(|(f, ..)| first > *f) {
            self.farthest = Some((first, reason, self.placed.clone()));
        }
        false
    }
}

/// Replays `steps` through `model` from its initial state. Returns the accepted interleaving
/// (the steps' actions in the order placed), or the first step that no interleaving within
/// `window` (1: exactly the logged order) could place.
pub fn validate(model: &RecoveryModel, steps: &[Step], window: usize) -> Result<Vec<Action>, Box<Rejection>> {
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
        farthest: None,
        budget: 1_000_000,
    };
    let init = model.init_states().remove(0);
    let mut cursors = vec![0; search.threads.len()];
    if search.run(&init, &mut cursors) {
        return Ok(search.placed);
    }
    let (index, reason, placed) = search.farthest.expect("a failed search has a dead end");
    Err(Box::new(Rejection {
        index,
        step: steps[index].clone(),
        placed,
        reason,
    }))
}
