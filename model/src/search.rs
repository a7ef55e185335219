//! The breadth-first search `check` runs: level by level over every reachable state, on as
//! many threads as asked, evaluating every property on every state as stateright's
//! breadth-first checker does, and giving the same counts and verdicts (tests in
//! `model/tests/search.rs` compare the two on every preset and variant).
//!
//! Why not stateright's own: per state it probes its map of discoveries once per property
//! (a SipHash of the property's name each), re-records a `sometimes` example every time the
//! property holds (a copy of the path and a write to that map), and copies the path of action
//! indices into every generated state. Here a property already decided in an earlier level is
//! not evaluated again, and a path is kept once, as a parent link per state.
//!
//! Unlike stateright's, it never stops early (stateright stops once every property has a
//! discovery): the ranking that proves the graph acyclic needs every edge.
//!
//! The result is deterministic whatever the number of threads: a level is finished before the
//! next starts, a state reached from several parents in one level keeps the parent with the
//! smallest fingerprint, and a property discovered by several states of one level keeps the
//! state with the smallest fingerprint. Each example is therefore a shortest one.

use crate::action::Action;
use crate::model::RecoveryModel;
use crate::properties::PropertyId;
use crate::state::State;
use stateright::{Expectation, Model};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts a running search publishes, for progress reports.
#[derive(Debug, Default)]
pub struct Counters {
    /// States generated, counting revisits (and the initial states).
    pub states: AtomicUsize,
    /// Distinct states.
    pub unique_states: AtomicUsize,
    /// Levels begun: the length, in states, of the longest path so far.
    pub max_depth: AtomicUsize,
}

/// What a finished search found.
#[derive(Debug)]
pub struct Outcome {
    /// States generated, counting revisits.
    pub states: usize,
    /// Distinct states.
    pub unique_states: usize,
    /// States on the longest shortest path.
    pub max_depth: usize,
    /// Per property of [`PropertyId::ALL`]: a shortest path to a state that discovers it (an
    /// `always` property false, a `sometimes` property true, a terminal state whose path never
    /// satisfied an `eventually` property).
    pub discoveries: Vec<Option<Vec<Action>>>,
}

/// A fingerprint is already a hash: the seen-state maps use it as it is.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// How a state was first reached: its parent and the action from it, and its level (1 for an
/// initial state, whose parent and action mean nothing). Sixteen bytes.
#[derive(Clone, Copy)]
struct Seen {
    parent: u64,
    action: Action,
    depth: u32,
}

const _: () = assert!(
    std::mem::size_of::<Seen>() == 16,
    "a seen state costs 16 bytes and its key"
);

/// The states seen so far, in shards by fingerprint, each behind its own lock.
struct SeenStates {
    shards: Vec<Mutex<HashMap<u64, Seen, BuildHasherDefault<Identity>>>>,
}

const SHARDS: usize = 64;

impl SeenStates {
    fn new() -> Self {
        SeenStates {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, HashMap<u64, Seen, BuildHasherDefault<Identity>>> {
        // Middle bits pick the shard: the map takes its bucket from the low bits and its
        // control byte from the top ones, which must stay varied within a shard.
        self.shards[(fp >> 32) as usize % SHARDS]
            .lock()
            .expect("no thread panics holding it")
    }

    /// Records `fp` reached at `depth` from `parent`. True if it is new. A state reached again
    /// in the same level keeps the parent with the smallest fingerprint, so that the tree does
    /// not depend on which thread came first.
    fn insert(&self, fp: u64, new: Seen) -> bool {
        let mut shard = self.shard(fp);
        match shard.get_mut(&fp) {
            None => {
                shard.insert(fp, new);
                true
            }
            Some(seen) => {
                if seen.depth == new.depth && new.parent < seen.parent {
                    *seen = new;
                }
                false
            }
        }
    }

    fn get(&self, fp: u64) -> Option<Seen> {
        self.shard(fp).get(&fp).copied()
    }

    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("no thread panics holding it").len())
            .sum()
    }

    /// The actions from an initial state to `fp`.
    fn path_to(&self, mut fp: u64) -> Vec<Action> {
        let mut path = Vec::new();
        while let Some(seen) = self.get(fp).filter(|seen| seen.depth > 1) {
            path.push(seen.action);
            fp = seen.parent;
        }
        path.reverse();
        path
    }
}

/// One state of the level being searched: the state, its fingerprint and the `eventually`
/// properties its path has not yet satisfied (a bit per index of [`PropertyId::ALL`]). A state
/// reached along several paths keeps the bits of the first that reached it, as stateright's
/// search does. The liveness predicates are stable (docs/model.md): one that held on a path
/// holds at its end, so once the state itself is evaluated its bits are the same whichever
/// path reached it.
struct Item {
    state: State,
    fp: u64,
    eventually: u64,
}

/// The discoveries of one level: per property, the smallest fingerprint that discovered it.
/// Only properties no earlier level discovered are recorded.
struct Found(Mutex<Vec<Option<u64>>>);

impl Found {
    fn record(&self, i: usize, fp: u64) {
        let mut found = self.0.lock().expect("no thread panics holding it");
        if found[i].is_none_or(|f| fp < f) {
            found[i] = Some(fp);
        }
    }
}

/// A property's predicate on one state.
type Pred = fn(&RecoveryModel, &State) -> bool;

/// Searches every state reachable from `model`'s initial states, on `threads` threads.
pub fn bfs(model: &RecoveryModel, threads: usize, counters: &Counters) -> Outcome {
    let properties: Vec<(Expectation, Pred)> = PropertyId::ALL
        .iter()
        .map(|p| (p.expectation(), p.predicate()))
        .collect();
    assert!(properties.len() <= 64, "one bit per property");
    let all_eventually = (properties.iter().enumerate())
        .filter(|(_, (e, _))| *e == Expectation::Eventually)
        .fold(0u64, |bits, (i, _)| bits | 1 << i);
    let seen = SeenStates::new();
    let mut first: Vec<Item> = Vec::new();
    for state in model.init_states() {
        let fp = crate::check::state_fingerprint(&state);
        let initial = Seen {
            parent: 0,
            action: Action::RequestPartitions,
            depth: 1,
        };
        if seen.insert(fp, initial) {
            first.push(Item {
                state,
                fp,
                eventually: all_eventually,
            });
        }
    }
    counters.states.store(first.len(), Ordering::Relaxed);
    counters.unique_states.store(first.len(), Ordering::Relaxed);
    // A level is a list of chunks; a thread takes one, and frees it once searched, so that the
    // level searched and the next one together hold about one level's states.
    let mut level: Vec<Vec<Item>> = vec![first];
    let mut discovered: Vec<Option<u64>> = vec![None; properties.len()];
    let mut depth = 0u32;
    while level.iter().any(|part| !part.is_empty()) {
        depth += 1;
        counters.max_depth.store(depth as usize, Ordering::Relaxed);
        let found = Found(Mutex::new(vec![None; properties.len()]));
        let work = Work {
            model,
            properties: &properties,
            decided: &discovered,
            seen: &seen,
            found: &found,
            counters,
            depth,
            chunks: Mutex::new(std::mem::take(&mut level)),
        };
        let parts: Vec<Vec<Vec<Item>>> = if threads <= 1 {
            vec![work.run()]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads).map(|_| scope.spawn(|| work.run())).collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a search thread panicked"))
                    .collect()
            })
        };
        let found = found.0.into_inner().expect("no thread panics holding it");
        for (d, f) in discovered.iter_mut().zip(found) {
            *d = d.or(f);
        }
        level = parts.into_iter().flatten().collect();
    }
    Outcome {
        states: counters.states.load(Ordering::Relaxed),
        unique_states: seen.len(),
        max_depth: depth as usize,
        discoveries: discovered.into_iter().map(|fp| fp.map(|fp| seen.path_to(fp))).collect(),
    }
}

/// What the threads share while they search one level.
struct Work<'a> {
    model: &'a RecoveryModel,
    properties: &'a [(Expectation, Pred)],
    /// Discoveries of earlier levels: those properties are not evaluated again.
    decided: &'a [Option<u64>],
    seen: &'a SeenStates,
    found: &'a Found,
    counters: &'a Counters,
    depth: u32,
    /// The chunks of the level not yet taken.
    chunks: Mutex<Vec<Vec<Item>>>,
}

/// States a thread takes from the level at a time, and gives to the next.
const CHUNK: usize = 256;

/// Room for a visit's successors past [`CHUNK`], so that a chunk is never reallocated.
const SLACK: usize = 64;

impl Work<'_> {
    /// Takes chunks of the level until none is left; returns the new states they led to, in
    /// chunks of at most [`CHUNK`] (allocated at that size, never grown).
    fn run(&self) -> Vec<Vec<Item>> {
        let mut done = Vec::new();
        let mut out = Vec::with_capacity(CHUNK + SLACK);
        let mut actions = Vec::new();
        loop {
            let Some(chunk) = self.chunks.lock().expect("no thread panics holding it").pop() else {
                if !out.is_empty() {
                    done.push(out);
                }
                return done;
            };
            let (mut generated, mut new) = (0, 0);
            for item in &chunk {
                let before = out.len();
                generated += self.visit(item, &mut actions, &mut out);
                new += out.len() - before;
                if out.len() >= CHUNK {
                    done.push(std::mem::replace(&mut out, Vec::with_capacity(CHUNK + SLACK)));
                }
            }
            drop(chunk);
            self.counters.states.fetch_add(generated, Ordering::Relaxed);
            self.counters.unique_states.fetch_add(new, Ordering::Relaxed);
        }
    }

    /// Evaluates the properties on one state and generates its successors; returns how many.
    fn visit(&self, item: &Item, actions: &mut Vec<Action>, out: &mut Vec<Item>) -> usize {
        let (model, s) = (self.model, &item.state);
        let mut eventually = item.eventually;
        for (i, (expectation, pred)) in self.properties.iter().enumerate() {
            match expectation {
                Expectation::Always if self.decided[i].is_none() && !pred(model, s) => self.found.record(i, item.fp),
                Expectation::Sometimes if self.decided[i].is_none() && pred(model, s) => self.found.record(i, item.fp),
                Expectation::Eventually if eventually & (1 << i) != 0 && pred(model, s) => eventually &= !(1 << i),
                _ => {}
            }
        }
        actions.clear();
        model.actions(s, actions);
        let mut generated = 0;
        for &action in actions.iter() {
            let Some(next) = model.next_state(s, action) else {
                continue;
            };
            generated += 1;
            let fp = crate::check::state_fingerprint(&next);
            let seen = Seen {
                parent: item.fp,
                action,
                depth: self.depth + 1,
            };
            if self.seen.insert(fp, seen) {
                out.push(Item {
                    state: next,
                    fp,
                    eventually,
                });
            }
        }
        if generated == 0 {
            // A terminal state: every `eventually` property its path never satisfied fails.
            for i in (0..self.properties.len()).filter(|&i| eventually & (1 << i) != 0 && self.decided[i].is_none()) {
                self.found.record(i, item.fp);
            }
        }
        generated
    }
}
