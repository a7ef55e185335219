//! Partial-order reduction (`cdr check --por`): in each state the search follows only a
//! stubborn set of the enabled actions, built from the footprints of `crate::footprint`.
//!
//! A set `T` of actions (enabled or not) is stubborn in a state `s` when
//! * for every enabled action of `T`, every action that may conflict with it (write what it
//!   reads or writes, or read what it writes) is in `T`: a path that runs actions outside `T`
//!   first cannot change what the `T` action does, nor disable it;
//! * for every disabled action of `T`, a necessary enabling set is in `T`: every action that may
//!   write what the disabled action reads. A path outside `T` cannot enable it.
//!
//! Footprints of enabled actions are taken in `s`, those of the others over every state
//! ([`crate::footprint::static_footprint`]). The universe of actions is every action of the
//! configuration up to the values that do not change a footprint (the credit announced, which
//! buffer is recycled).
//!
//! Following only `T`'s enabled actions keeps every terminal state (stubborn sets preserve
//! deadlocks; for halted ones, see `halt` below). Two more conditions keep every property's
//! verdict:
//! * **visibility**: if an enabled action of `T` may write a component a property reads, the
//!   state is expanded fully;
//! * **cycles**: if a successor by `T` does not increase the rank (`tooling::progress::rank`),
//!   the state is expanded fully. Every cycle has such an edge, so every cycle of the reduced
//!   graph passes through a fully expanded state: no action is postponed forever. On an acyclic
//!   graph, which the rank proves on every preset, this never fires.
//!
//! The one read no conflict counts is `halt`'s: every action reads it, because no thread runs
//! once an assertion fired or the task failed. A state in which an enabled action may halt is
//! expanded fully. A step outside the set that halts later, after the set's steps, reaches a
//! halted state that differs from the one it reaches first only in what those steps wrote,
//! which no property reads: the verdicts are the same, though that halted state itself may be
//! missed (stubborn sets that counted `halt` would keep every terminal state, and reduce
//! nothing, since most actions may halt somewhere).

use crate::action::{Action, Thread};
use crate::footprint::{Component, Components, Footprint, footprint, static_footprint};
use crate::model::RecoveryModel;
use crate::state::{NetBuf, State};
use std::collections::HashMap;

/// Up to 256 action classes, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ClassSet([u64; 4]);

impl ClassSet {
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & 1 << (i % 64) != 0
    }
    fn union(&mut self, o: &ClassSet) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
    }
    fn minus(&self, o: &ClassSet) -> ClassSet {
        let mut r = *self;
        for (a, b) in r.0.iter_mut().zip(o.0) {
            *a &= !b;
        }
        r
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..256).filter(|&i| self.contains(i))
    }
}

/// The bit of `halt`, which no conflict counts.
fn halt() -> Components {
    Component::Halt.into()
}

/// What the reduction knows of a model: its actions' classes and static footprints, indexed by
/// component, and what the properties read.
#[derive(Debug)]
pub struct Reduction {
    classes: HashMap<Action, usize>,
    /// Each class's action.
    actions: Vec<Action>,
    /// Per component bit: the classes that may read it, and those that may write it.
    readers: Vec<ClassSet>,
    writers: Vec<ClassSet>,
    /// Per class: the classes that may write what it reads, which may enable it.
    enablers: Vec<ClassSet>,
    /// What the properties read.
    visible: Components,
}

/// The class of an action: the action with the fields a footprint does not depend on cleared.
pub fn class_of(a: &Action) -> Action {
    match *a {
        Action::NotifyBufferAvailable { thread, channel, .. } => {
            Action::NotifyBufferAvailable { thread, channel, n: 0 }
        }
        Action::Recycle { channel, buffer } => Action::Recycle {
            channel,
            buffer: match buffer {
                NetBuf::Exclusive(_) => NetBuf::Exclusive(0),
                NetBuf::Floating(_) => NetBuf::Floating(0),
            },
        },
        Action::ReturnFloatingBuffer { channel, .. } => Action::ReturnFloatingBuffer {
            channel,
            buffer: NetBuf::Floating(0),
        },
        other => other,
    }
}

/// Every action of the configuration, one per class.
pub fn universe(m: &RecoveryModel) -> Vec<Action> {
    use Action::*;
    let channels = m.cfg.channels.len() as u8;
    let cps = 1..=m.cfg.checkpoints;
    let mut out = vec![ConvertRecoveredInputChannels, RequestPartitions, CloseGate];
    for cp in cps.clone() {
        out.extend([AlignedCheckpointTimeout { cp }, AbortPendingCheckpoint { cp }]);
    }
    for channel in 0..channels {
        out.extend([
            OnRecoveredStateBuffer { channel },
            RequestBufferBlocking { channel },
            FinishRecoveredBufferDelivery { channel },
            GetNextBuffer { channel },
            OnRecoveredStateConsumed { channel },
            EnableNotify { channel },
            NotifyPriorityEvent { channel },
            ClearPendingPriorityEvent { channel },
            RereadPendingPriorityEvent { channel },
            SendBuffer { channel },
            OnAddCredit { channel },
            OnResumeConsumption { channel },
            AnnounceBacklog { channel },
            OnBuffer { channel },
            OnSenderBacklog { channel },
            SendAddCredit { channel },
            SendResumeConsumption { channel },
            Recycle {
                channel,
                buffer: NetBuf::Exclusive(0),
            },
            Recycle {
                channel,
                buffer: NetBuf::Floating(0),
            },
            ReturnFloatingBuffer {
                channel,
                buffer: NetBuf::Floating(0),
            },
            AddBuffer { channel },
            ReleasePartition { channel },
            OnError { channel },
            ReleaseAllResources { channel },
            ReleaseQueuedBuffers { channel },
        ]);
        for thread in [Thread::Task, Thread::NettyClient, Thread::Recycler] {
            out.push(NotifyBufferAvailable { thread, channel, n: 0 });
        }
        for cp in cps.clone() {
            out.extend([
                InsertRecoveryCheckpointBarrier { channel, cp },
                CheckpointStarted { channel, cp },
                EmitCheckpointBarrier { channel, cp },
                EmitTimeoutableCheckpointBarrier { channel, cp },
                AlignedBarrierTimeout { channel, cp },
            ]);
        }
    }
    out
}

impl Reduction {
    /// The reduction for `m`, with `visible` the components the properties read.
    pub fn new(m: &RecoveryModel, visible: Components) -> Self {
        let shape = m.initial_state();
        let actions = universe(m);
        assert!(actions.len() <= 256, "one bit per action class");
        let static_fps: Vec<Footprint> = actions.iter().map(|a| static_footprint(m, &shape, a)).collect();
        let mut readers = vec![ClassSet::default(); 64];
        let mut writers = vec![ClassSet::default(); 64];
        for (i, f) in static_fps.iter().enumerate() {
            for k in 0..64 {
                if f.reads.0 & 1 << k != 0 {
                    readers[k].insert(i);
                }
                if f.writes.0 & 1 << k != 0 {
                    writers[k].insert(i);
                }
            }
        }
        let enablers = (static_fps.iter())
            .map(|f| {
                let mut e = ClassSet::default();
                for k in bits(f.reads.without(halt())) {
                    e.union(&writers[k]);
                }
                e
            })
            .collect();
        let classes = actions.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        Reduction {
            classes,
            actions,
            readers,
            writers,
            enablers,
            visible: visible | halt(),
        }
    }

    /// A necessary enabling set of class `u`, disabled in `s`: the writers of a false conjunct
    /// of its guard ([`crate::guard`]), else of everything it reads.
    fn necessary_enablers(&self, m: &RecoveryModel, s: &State, u: usize) -> ClassSet {
        match crate::guard::disabled_by(m, s, &self.actions[u]) {
            Some(c) => {
                let mut e = ClassSet::default();
                for k in bits(c.without(halt())) {
                    e.union(&self.writers[k]);
                }
                e
            }
            None => self.enablers[u],
        }
    }

    /// The classes that may conflict with an action of footprint `f`.
    fn conflicts(&self, f: &Footprint) -> ClassSet {
        let mut c = ClassSet::default();
        for k in bits(f.writes.without(halt())) {
            c.union(&self.readers[k]);
            c.union(&self.writers[k]);
        }
        for k in bits(f.reads.without(halt())) {
            c.union(&self.writers[k]);
        }
        c
    }

    /// Keeps in `enabled` (every action enabled in `s`) a stubborn set's enabled actions: the
    /// smallest found from each enabled action as a seed that has no visible action, or all of
    /// them.
    pub fn reduce(&self, m: &RecoveryModel, s: &State, enabled: &mut Vec<Action>) {
        if enabled.len() <= 1 {
            return;
        }
        let mut on = ClassSet::default();
        let mut fps: Vec<(usize, Footprint)> = Vec::with_capacity(enabled.len());
        for a in enabled.iter() {
            let Some(&i) = self.classes.get(&class_of(a)) else {
                return; // an action the universe lacks: no reduction
            };
            let f = footprint(m, s, a);
            if !f.writes.is_disjoint(halt()) {
                return; // an action that may halt here: every step is followed
            }
            on.insert(i);
            fps.push((i, f));
        }
        let classes = on.iter().count();
        let visible = |i: usize| fps.iter().any(|(j, f)| *j == i && !f.writes.is_disjoint(self.visible));
        let mut best: Option<(usize, ClassSet)> = None;
        for &(seed, _) in &fps {
            if visible(seed) {
                continue;
            }
            let mut t = ClassSet::default();
            t.insert(seed);
            let mut todo = vec![seed];
            // The enabled classes in `t`; a set of all of them reduces nothing.
            let mut count = 1;
            let mut rejected = false;
            while let Some(u) = todo.pop() {
                let deps = match on.contains(u) {
                    // Every enabled action of the class (they differ only where no footprint does).
                    true => (fps.iter().filter(|(j, _)| *j == u)).fold(ClassSet::default(), |mut d, (_, f)| {
                        d.union(&self.conflicts(f));
                        d
                    }),
                    false => self.necessary_enablers(m, s, u),
                };
                let new = deps.minus(&t);
                t.union(&new);
                for v in new.iter() {
                    if on.contains(v) {
                        count += 1;
                        if visible(v) || best.as_ref().is_some_and(|(n, _)| count >= *n) || count == classes {
                            rejected = true;
                            break;
                        }
                    }
                    todo.push(v);
                }
                if rejected {
                    break;
                }
            }
            if !rejected {
                best = Some((count, t));
            }
        }
        if let Some((_, t)) = best {
            let keep: Vec<bool> = fps.iter().map(|(i, _)| t.contains(*i)).collect();
            let mut k = keep.iter();
            enabled.retain(|_| *k.next().expect("one flag per action"));
        }
    }
}

/// The bits set in `c`.
fn bits(c: Components) -> impl Iterator<Item = usize> {
    (0..64).filter(move |k| c.0 & 1 << k != 0)
}

impl Reduction {
    /// The reduction for `m`, visibility taken from every property's reads
    /// ([`crate::properties::reads`]).
    pub fn for_properties(m: &RecoveryModel) -> Self {
        Reduction::new(m, crate::properties::reads::read_by_any(m))
    }
}
