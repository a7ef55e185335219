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
use crate::tooling::progress::RankCheck;
use stateright::{Expectation, Model};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Counts a running search publishes, for progress reports.
#[derive(Debug, Default)]
pub struct Counters {
    /// States generated, counting revisits (and the initial states).
    pub states: AtomicUsize,
    /// Distinct states.
    pub unique_states: AtomicUsize,
    /// Levels begun: the length, in states, of the longest path so far.
    pub max_depth: AtomicUsize,
    /// [`Frontier::Encoded`]: the states encoded so far, and their bytes.
    pub encoded_states: AtomicUsize,
    /// See `encoded_states`.
    pub encoded_bytes: AtomicUsize,
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
    /// [`Frontier::Encoded`]: the mean size of an encoded state, in bytes.
    pub encoded_bytes_per_state: Option<f64>,
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
const _: () = assert!(
    std::mem::size_of::<(u64, ())>() == 8,
    "with the links on disk, a seen state costs its key alone"
);

/// What the seen set keeps beside a state's fingerprint: its [`Seen`] link, or nothing when
/// the links are on disk ([`Frontier::Spilled`]).
trait Link: Copy {
    const EMPTY: Self;
    /// A state reached again: whether `new` replaces the link it has.
    fn replaces(&self, new: &Self) -> bool;
}

impl Link for Seen {
    const EMPTY: Self = Seen {
        parent: 0,
        action: Action::RequestPartitions,
        depth: 0,
    };
    /// Reached again in the same level from a parent with a smaller fingerprint, so that the
    /// tree does not depend on which thread came first.
    fn replaces(&self, new: &Self) -> bool {
        self.depth == new.depth && new.parent < self.parent
    }
}

impl Link for () {
    const EMPTY: Self = ();
    fn replaces(&self, _: &Self) -> bool {
        false
    }
}

/// One shard of the seen states: an open-addressing table probed linearly, each slot a
/// fingerprint and its link side by side, so that a probe, which misses the cache on a
/// table this size, costs one miss where a map with a separate control array costs two.
/// Fingerprint 0 marks an empty slot; a state whose fingerprint is 0 is kept aside.
struct Shard<V> {
    slots: Vec<(u64, V)>,
    len: usize,
    zero: Option<V>,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard {
            slots: Vec::new(),
            len: 0,
            zero: None,
        }
    }
}

impl<V: Link> Shard<V> {
    /// The slot holding `fp`, or the empty slot where it would go (`fp` is not 0, and the
    /// table is never full).
    fn slot(&self, fp: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = fp as usize & mask;
        while self.slots[i].0 != fp && self.slots[i].0 != 0 {
            i = (i + 1) & mask;
        }
        i
    }

    fn get_mut(&mut self, fp: u64) -> Option<&mut V> {
        if fp == 0 {
            return self.zero.as_mut();
        }
        if self.slots.is_empty() {
            return None;
        }
        let i = self.slot(fp);
        (self.slots[i].0 == fp).then_some(&mut self.slots[i].1)
    }

    /// Inserts `fp`, which is not in the table.
    fn insert_new(&mut self, fp: u64, link: V) {
        if fp == 0 {
            self.zero = Some(link);
            return;
        }
        // At most three quarters full, so that probes stay short.
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            let size = (2 * self.slots.len()).max(1024);
            let old = std::mem::replace(&mut self.slots, vec![(0, V::EMPTY); size]);
            for (k, v) in old.into_iter().filter(|&(k, _)| k != 0) {
                let i = self.slot(k);
                self.slots[i] = (k, v);
            }
        }
        let i = self.slot(fp);
        self.slots[i] = (fp, link);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len + usize::from(self.zero.is_some())
    }

    /// Records `fp`; true if it is new.
    fn insert(&mut self, fp: u64, new: V) -> bool {
        match self.get_mut(fp) {
            None => {
                self.insert_new(fp, new);
                true
            }
            Some(link) => {
                if link.replaces(&new) {
                    *link = new;
                }
                false
            }
        }
    }
}

/// A shard behind its lock, with where its table is, kept beside the lock so that a prefetch
/// need not take it: the address of the first slot and the table's size less one, published
/// after each insertion (the table moves only when one grows it). A prefetch that reads them
/// while another thread grows the table loads a line of the old table or one past it: a hint
/// to the cache, never a read.
struct Locked<V> {
    shard: Mutex<Shard<V>>,
    start: AtomicUsize,
    mask: AtomicUsize,
}

impl<V> Default for Locked<V> {
    fn default() -> Self {
        Locked {
            shard: Mutex::default(),
            start: AtomicUsize::new(0),
            mask: AtomicUsize::new(0),
        }
    }
}

impl<V: Link> Locked<V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shard<V>> {
        self.shard.lock().expect("no thread panics holding it")
    }

    /// Records `fp`; true if it is new.
    fn insert(&self, fp: u64, new: V) -> bool {
        let mut shard = self.lock();
        let added = shard.insert(fp, new);
        if added {
            self.start.store(shard.slots.as_ptr() as usize, Ordering::Relaxed);
            self.mask.store(shard.slots.len().wrapping_sub(1), Ordering::Relaxed);
        }
        added
    }

    /// The address of the slot `fp`'s probe starts at, as last published.
    fn first_slot(&self, fp: u64) -> Option<*const i8> {
        let start = self.start.load(Ordering::Relaxed);
        let slot = (fp as usize & self.mask.load(Ordering::Relaxed)) * std::mem::size_of::<(u64, V)>();
        (start != 0).then(|| start.wrapping_add(slot) as *const i8)
    }
}

/// The states seen so far, in shards by fingerprint, each behind its own lock: with their
/// links (24 bytes a slot), or fingerprints alone (8 bytes a slot) when the links are written
/// to disk ([`paths_from_traces`]).
enum SeenStates {
    Linked(Vec<Locked<Seen>>),
    Fingerprints(Vec<Locked<()>>),
}

const SHARDS: usize = 64;

/// The shard of `fp`. Middle bits pick the shard: the table takes its slot from the low ones.
fn shard<V>(shards: &[Locked<V>], fp: u64) -> &Locked<V> {
    &shards[(fp >> 32) as usize % SHARDS]
}

impl SeenStates {
    fn new(links_on_disk: bool) -> Self {
        if links_on_disk {
            SeenStates::Fingerprints((0..SHARDS).map(|_| Locked::default()).collect())
        } else {
            SeenStates::Linked((0..SHARDS).map(|_| Locked::default()).collect())
        }
    }

    /// Records `fp` reached at `depth` from `parent`. True if it is new. A state reached again
    /// in the same level keeps the parent with the smallest fingerprint (with its link in
    /// memory).
    fn insert(&self, fp: u64, new: Seen) -> bool {
        match self {
            SeenStates::Linked(shards) => shard(shards, fp).insert(fp, new),
            SeenStates::Fingerprints(shards) => shard(shards, fp).insert(fp, ()),
        }
    }

    /// Starts loading the slot `fp` is looked up from, so that a later [`Self::insert`] finds
    /// it in the cache.
    fn prefetch(&self, fp: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let address = match self {
                SeenStates::Linked(shards) => shard(shards, fp).first_slot(fp),
                SeenStates::Fingerprints(shards) => shard(shards, fp).first_slot(fp),
            };
            if let Some(address) = address {
                // SAFETY: a prefetch is a hint to the cache: it neither reads nor faults.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address) }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fp;
    }

    /// The link of `fp`, with the links in memory.
    fn get(&self, fp: u64) -> Option<Seen> {
        match self {
            SeenStates::Linked(shards) => shard(shards, fp).lock().get_mut(fp).copied(),
            SeenStates::Fingerprints(_) => None,
        }
    }

    fn len(&self) -> usize {
        fn total<V: Link>(shards: &[Locked<V>]) -> usize {
            shards.iter().map(|s| s.lock().len()).sum()
        }
        match self {
            SeenStates::Linked(shards) => total(shards),
            SeenStates::Fingerprints(shards) => total(shards),
        }
    }

    /// The actions from an initial state to `fp` (links in memory).
    fn path_to(&self, mut fp: u64) -> Vec<Action> {
        assert!(matches!(self, SeenStates::Linked(_)), "the links are on disk");
        let mut path = Vec::new();
        while let Some(seen) = self.get(fp).filter(|seen| seen.depth > 1) {
            path.push(seen.action);
            fp = seen.parent;
        }
        path.reverse();
        path
    }
}

/// How the states of a level wait to be searched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Frontier {
    /// As `State` values: nothing to decode, but a state of four channels takes kilobytes.
    #[default]
    Whole,
    /// Encoded (postcard: variable-length integers, no field names), a chunk's states in one
    /// buffer, decoded when searched: TLC's way of holding a frontier of millions of states.
    Encoded,
    /// Encoded, and written to a file of this directory, one per level, read back when the
    /// level is searched and removed after; the parent links go to files of the directory too,
    /// and the seen set keeps fingerprints alone (8 bytes a slot instead of 24).
    Spilled(PathBuf),
}

/// A chunk of a level: at most [`CHUNK`] states, whole, encoded, or encoded in the level's
/// spill file.
enum Chunk {
    Whole(Vec<Item>),
    Encoded(Encoded),
    Spilled { offset: u64, len: usize },
}

/// A level's file on disk: its chunks of encoded states, or the parent links of its states
/// ([`paths_from_traces`]). Written at disjoint offsets by the threads, read back when needed,
/// and removed when dropped.
struct SpillFile {
    file: File,
    path: PathBuf,
    end: AtomicU64,
}

impl SpillFile {
    fn create(dir: &Path, what: &str, depth: u32) -> SpillFile {
        let path = dir.join(format!("cdr-{what}-{}-{depth}.bin", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot create the spill file {}: {e}", path.display()));
        SpillFile {
            file,
            path,
            end: AtomicU64::new(0),
        }
    }

    /// Writes `buf` after everything written so far; returns where.
    fn append(&self, buf: &[u8]) -> u64 {
        let offset = self.end.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.file
            .write_all_at(buf, offset)
            .unwrap_or_else(|err| panic!("cannot write the spill file {}: {err}", self.path.display()));
        offset
    }

    fn read_at(&self, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .unwrap_or_else(|err| panic!("cannot read the spill file {}: {err}", self.path.display()));
        buf
    }

    /// Writes `e` as: the number of states (u32), each one's fingerprint, `eventually` bits
    /// and end (u64, u64, u32), then the encodings.
    fn write(&self, e: &Encoded) -> Chunk {
        let mut buf = Vec::with_capacity(4 + 20 * e.items.len() + e.bytes.len());
        buf.extend_from_slice(&(e.items.len() as u32).to_le_bytes());
        for &(fp, eventually, end) in &e.items {
            buf.extend_from_slice(&fp.to_le_bytes());
            buf.extend_from_slice(&eventually.to_le_bytes());
            buf.extend_from_slice(&end.to_le_bytes());
        }
        buf.extend_from_slice(&e.bytes);
        let offset = self.append(&buf);
        Chunk::Spilled { offset, len: buf.len() }
    }

    fn read(&self, offset: u64, len: usize) -> Encoded {
        let buf = self.read_at(offset, len);
        let n = word(&buf, 0, 4) as usize;
        let items = (0..n)
            .map(|i| {
                let at = 4 + 20 * i;
                (word(&buf, at, 8), word(&buf, at + 8, 8), word(&buf, at + 16, 4) as u32)
            })
            .collect();
        Encoded {
            bytes: buf[4 + 20 * n..].to_vec(),
            items,
        }
    }

    /// Every (state, parent) link of a trace file, in the order written.
    fn for_each_link(&self, mut f: impl FnMut(u64, u64)) {
        let (end, mut at) = (self.end.load(Ordering::Relaxed), 0);
        while at < end {
            let len = (end - at).min(1 << 20) as usize;
            let buf = self.read_at(at, len);
            for link in buf.chunks_exact(LINK) {
                f(word(link, 0, 8), word(link, 8, 8));
            }
            at += len as u64;
        }
    }
}

/// The little-endian integer of `n` bytes at `at`.
fn word(buf: &[u8], at: usize, n: usize) -> u64 {
    let mut b = [0; 8];
    b[..n].copy_from_slice(&buf[at..at + n]);
    u64::from_le_bytes(b)
}

/// The bytes of a parent link on disk: the state's fingerprint and its parent's.
const LINK: usize = 16;

/// With a spilled frontier, the parent links are on disk too, TLC's way, and the seen set keeps
/// fingerprints alone: a file per level, each state's link written when it is first seen (by
/// whichever thread sees it first). The discoveries' paths are rebuilt at the end: the files
/// are read once each, the last level first, collecting the links of the states on the paths;
/// then each path is replayed from its initial state, taking at each step the first action
/// that leads to the next state. A path is as short as with the links in memory, but with more
/// than one thread, which of several shortest paths it is may vary from run to run.
fn paths_from_traces(
    model: &RecoveryModel,
    traces: &[SpillFile],
    targets: &[Option<(u64, u32)>],
) -> Vec<Option<Vec<Action>>> {
    use std::collections::{HashMap, HashSet};
    let deepest = targets.iter().flatten().map(|&(_, d)| d).max().unwrap_or(1);
    // wanted[d]: fingerprints of level d whose parent is needed.
    let mut wanted: Vec<HashSet<u64>> = vec![HashSet::new(); deepest as usize + 1];
    for &(fp, d) in targets.iter().flatten() {
        wanted[d as usize].insert(fp);
    }
    let mut parent: HashMap<(u32, u64), u64> = HashMap::new();
    for d in (2..=deepest).rev() {
        let want = std::mem::take(&mut wanted[d as usize]);
        if want.is_empty() {
            continue;
        }
        // The file of level d is the (d - 1)th: level 1, the initial states, has none.
        traces[d as usize - 2].for_each_link(|fp, p| {
            if want.contains(&fp) {
                parent.insert((d, fp), p);
            }
        });
        for fp in want {
            let p = parent[&(d, fp)];
            wanted[d as usize - 1].insert(p);
        }
    }
    let fingerprint = crate::tooling::fingerprint::state_fingerprint;
    targets
        .iter()
        .map(|target| {
            let &(fp, d) = target.as_ref()?;
            let mut chain = vec![fp];
            for level in (2..=d).rev() {
                chain.push(parent[&(level, chain[chain.len() - 1])]);
            }
            chain.reverse();
            let mut state = (model.init_states().into_iter())
                .find(|s| fingerprint(s) == chain[0])
                .expect("a path starts at an initial state");
            let mut path = Vec::with_capacity(chain.len() - 1);
            let mut actions = Vec::new();
            for &next in &chain[1..] {
                actions.clear();
                model.actions(&state, &mut actions);
                let (action, s) = (actions.iter())
                    .find_map(|&a| {
                        model
                            .next_state(&state, a)
                            .filter(|s| fingerprint(s) == next)
                            .map(|s| (a, s))
                    })
                    .expect("a link on disk is an edge of the model");
                path.push(action);
                state = s;
            }
            Some(path)
        })
        .collect()
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// States encoded one after another in `bytes`, each with its fingerprint, its `eventually`
/// bits and where its encoding ends.
#[derive(Default)]
struct Encoded {
    bytes: Vec<u8>,
    items: Vec<(u64, u64, u32)>,
}

impl Encoded {
    fn of(items: &[Item]) -> Self {
        let mut e = Encoded {
            bytes: Vec::new(),
            items: Vec::with_capacity(items.len()),
        };
        for item in items {
            e.bytes = postcard::to_extend(&item.state, std::mem::take(&mut e.bytes)).expect("a state encodes");
            let end = u32::try_from(e.bytes.len()).expect("a chunk's encoding fits in 4 GiB");
            e.items.push((item.fp, item.eventually, end));
        }
        e.bytes.shrink_to_fit();
        e
    }

    /// The states, decoded one at a time.
    fn items(&self) -> impl Iterator<Item = Item> + '_ {
        let starts = std::iter::once(0).chain(self.items.iter().map(|&(_, _, end)| end as usize));
        self.items
            .iter()
            .zip(starts)
            .map(|(&(fp, eventually, end), start)| Item {
                state: postcard::from_bytes(&self.bytes[start..end as usize])
                    .expect("a state decodes as it was encoded"),
                fp,
                eventually,
            })
    }
}

/// The bytes `state` takes encoded, for [`Frontier::Encoded`]'s report.
pub fn encoded_size(state: &State) -> usize {
    postcard::to_allocvec(state).expect("a state encodes").len()
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

/// How a search runs: on how many threads, where a level's states wait, and whether it checks
/// that every edge increases [`crate::tooling::progress::rank`].
#[derive(Clone, Debug, Default)]
pub struct SearchOptions {
    /// Threads (at least one is used).
    pub threads: usize,
    /// Where the states of a level wait to be searched.
    pub frontier: Frontier,
    /// Counts the edges that do not increase the rank.
    pub ranks: Option<std::sync::Arc<RankCheck>>,
    /// Follows only a stubborn set of each state's actions (`--por`).
    pub por: Option<std::sync::Arc<crate::tooling::por::Reduction>>,
}

impl SearchOptions {
    /// A search on `threads` threads, its frontier whole, no rank check.
    pub fn threads(threads: usize) -> Self {
        SearchOptions {
            threads,
            ..Default::default()
        }
    }
}

/// Searches every state reachable from `model`'s initial states, as `options` say.
pub fn bfs(model: &RecoveryModel, options: &SearchOptions, counters: &Counters) -> Outcome {
    let threads = options.threads.max(1);
    let properties: Vec<(Expectation, Pred)> = PropertyId::ALL
        .iter()
        .map(|p| (p.expectation(), p.predicate()))
        .collect();
    assert!(properties.len() <= 64, "one bit per property");
    let all_eventually = (properties.iter().enumerate())
        .filter(|(_, (e, _))| *e == Expectation::Eventually)
        .fold(0u64, |bits, (i, _)| bits | 1 << i);
    let spill_dir = match &options.frontier {
        Frontier::Spilled(dir) => Some(dir.as_path()),
        _ => None,
    };
    let seen = SeenStates::new(spill_dir.is_some());
    let mut first: Vec<Item> = Vec::new();
    for state in model.init_states() {
        let fp = crate::tooling::fingerprint::state_fingerprint(&state);
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
    let mut level: Vec<Chunk> = vec![Chunk::Whole(first)];
    // With a spilled frontier, the file of the level being searched.
    let mut reading: Option<SpillFile> = None;
    // Per property: the fingerprint and level of the state that discovered it.
    let mut discovered: Vec<Option<(u64, u32)>> = vec![None; properties.len()];
    // With a spilled frontier, the parent links of each level from the second on.
    let mut traces: Vec<SpillFile> = Vec::new();
    let mut depth = 0u32;
    while !level.is_empty() {
        depth += 1;
        counters.max_depth.store(depth as usize, Ordering::Relaxed);
        let found = Found(Mutex::new(vec![None; properties.len()]));
        let writing = spill_dir.map(|dir| SpillFile::create(dir, "frontier", depth));
        let trace = spill_dir.map(|dir| SpillFile::create(dir, "trace", depth + 1));
        let decided: Vec<Option<u64>> = discovered.iter().map(|d| d.map(|(fp, _)| fp)).collect();
        let work = Work {
            reading: reading.as_ref(),
            writing: writing.as_ref(),
            model,
            options,
            properties: &properties,
            decided: &decided,
            trace: trace.as_ref(),
            seen: &seen,
            found: &found,
            counters,
            depth,
            chunks: Mutex::new(std::mem::take(&mut level)),
        };
        let parts: Vec<Vec<Chunk>> = if threads <= 1 {
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
            *d = d.or(f.map(|fp| (fp, depth)));
        }
        traces.extend(trace);
        level = parts.into_iter().flatten().collect();
        reading = writing;
    }
    Outcome {
        states: counters.states.load(Ordering::Relaxed),
        unique_states: seen.len(),
        max_depth: depth as usize,
        discoveries: match spill_dir {
            Some(_) => paths_from_traces(model, &traces, &discovered),
            None => (discovered.iter()).map(|d| d.map(|(fp, _)| seen.path_to(fp))).collect(),
        },
        encoded_bytes_per_state: match counters.encoded_states.load(Ordering::Relaxed) {
            0 => None,
            n => Some(counters.encoded_bytes.load(Ordering::Relaxed) as f64 / n as f64),
        },
    }
}

/// What the threads share while they search one level.
struct Work<'a> {
    model: &'a RecoveryModel,
    options: &'a SearchOptions,
    properties: &'a [(Expectation, Pred)],
    /// Discoveries of earlier levels: those properties are not evaluated again.
    decided: &'a [Option<u64>],
    seen: &'a SeenStates,
    found: &'a Found,
    counters: &'a Counters,
    depth: u32,
    /// The chunks of the level not yet taken.
    chunks: Mutex<Vec<Chunk>>,
    /// With a spilled frontier, the file the level's chunks are in, and the next level's.
    reading: Option<&'a SpillFile>,
    writing: Option<&'a SpillFile>,
    /// With a spilled frontier, the file of the parent links of the next level's states.
    trace: Option<&'a SpillFile>,
}

/// States a thread takes from the level at a time, and gives to the next.
const CHUNK: usize = 256;

/// Room for a visit's successors past [`CHUNK`], so that a chunk is never reallocated.
const SLACK: usize = 64;

impl Work<'_> {
    /// Takes chunks of the level until none is left; returns the new states they led to, in
    /// chunks of at most [`CHUNK`] (allocated at that size, never grown).
    fn run(&self) -> Vec<Chunk> {
        let mut done = Vec::new();
        let mut out = Vec::with_capacity(CHUNK + SLACK);
        let mut actions = Vec::new();
        let mut links = Vec::new();
        let seal = |out: Vec<Item>| {
            if self.options.frontier == Frontier::Whole {
                return Chunk::Whole(out);
            }
            let encoded = Encoded::of(&out);
            self.counters.encoded_states.fetch_add(out.len(), Ordering::Relaxed);
            self.counters
                .encoded_bytes
                .fetch_add(encoded.bytes.len(), Ordering::Relaxed);
            match self.writing {
                Some(file) => file.write(&encoded),
                None => Chunk::Encoded(encoded),
            }
        };
        loop {
            let Some(chunk) = self.chunks.lock().expect("no thread panics holding it").pop() else {
                if !out.is_empty() {
                    done.push(seal(out));
                }
                if let Some(trace) = self.trace {
                    trace.append(&links);
                }
                return done;
            };
            let (mut generated, mut new) = (0, 0);
            let mut search = |item: &Item, out: &mut Vec<Item>| {
                let before = out.len();
                generated += self.visit(item, &mut actions, out, &mut links);
                new += out.len() - before;
                if out.len() >= CHUNK {
                    let full = std::mem::replace(out, Vec::with_capacity(CHUNK + SLACK));
                    done.push(seal(full));
                }
            };
            match &chunk {
                Chunk::Whole(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(next) = items.get(i + 1) {
                            next.state.prefetch();
                        }
                        search(item, &mut out);
                    }
                }
                Chunk::Encoded(encoded) => encoded.items().for_each(|item| search(&item, &mut out)),
                &Chunk::Spilled { offset, len } => {
                    let file = self.reading.expect("a spilled chunk is read from its level's file");
                    file.read(offset, len).items().for_each(|item| search(&item, &mut out))
                }
            }
            drop(chunk);
            if let Some(trace) = self.trace.filter(|_| links.len() >= 1 << 20) {
                trace.append(&links);
                links.clear();
            }
            self.counters.states.fetch_add(generated, Ordering::Relaxed);
            self.counters.unique_states.fetch_add(new, Ordering::Relaxed);
        }
    }

    /// Evaluates the properties on one state and generates its successors; returns how many.
    fn visit(&self, item: &Item, actions: &mut Vec<Action>, out: &mut Vec<Item>, links: &mut Vec<u8>) -> usize {
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
        // What `next` does (clone, apply), and the rank check, with the state's rank computed
        // once for all its edges.
        let rank = (self.options.ranks.as_deref()).map(|check| (check, crate::tooling::progress::rank(s)));
        let mut reduced = false;
        if let Some(por) = &self.options.por {
            let all = actions.len();
            por.reduce(model, s, actions);
            reduced = actions.len() < all;
        }
        // Every successor is generated, and the slot of its fingerprint prefetched, before
        // any is looked up: the lookups, which miss the cache, then overlap with the work.
        // The successors go straight to the end of `out`, the i-th from the i-th action, and
        // those already seen are dropped after (a state is moved once, not through a buffer).
        let start = out.len();
        for &action in actions.iter() {
            out.push(Item {
                state: s.clone(),
                fp: 0,
                eventually,
            });
            let next = out.last_mut().expect("just pushed");
            action.apply(model, &mut next.state);
            if let Some((check, rank)) = &rank {
                check.edge_from(rank, &next.state);
            }
            next.fp = crate::tooling::fingerprint::state_fingerprint(&next.state);
            self.seen.prefetch(next.fp);
        }
        // The cycle proviso of the reduction: a stubborn set with a step that does not
        // increase the rank is not enough; the state is expanded fully.
        if reduced {
            let rank = crate::tooling::progress::rank(s);
            if out[start..]
                .iter()
                .any(|next| crate::tooling::progress::rank(&next.state) <= rank)
            {
                let mut all = Vec::new();
                model.actions(s, &mut all);
                all.retain(|a| !actions.contains(a));
                for action in all {
                    let next = model.next(s, action);
                    if let Some(check) = self.options.ranks.as_deref() {
                        check.edge_from(&rank, &next);
                    }
                    let fp = crate::tooling::fingerprint::state_fingerprint(&next);
                    self.seen.prefetch(fp);
                    out.push(Item {
                        state: next,
                        fp,
                        eventually,
                    });
                    actions.push(action);
                }
            }
        }
        let generated = actions.len();
        let mut kept = start;
        for (i, &action) in actions.iter().enumerate() {
            let fp = out[start + i].fp;
            let seen = Seen {
                parent: item.fp,
                action,
                depth: self.depth + 1,
            };
            if self.seen.insert(fp, seen) {
                if self.trace.is_some() {
                    links.extend_from_slice(&fp.to_le_bytes());
                    links.extend_from_slice(&item.fp.to_le_bytes());
                }
                // New states keep their order.
                if kept != start + i {
                    out.swap(kept, start + i);
                }
                kept += 1;
            }
        }
        out.truncate(kept);
        if generated == 0 {
            // A terminal state: every `eventually` property its path never satisfied fails.
            for i in (0..self.properties.len()).filter(|&i| eventually & (1 << i) != 0 && self.decided[i].is_none()) {
                self.found.record(i, item.fp);
            }
        }
        generated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(parent: u64, depth: u32) -> Seen {
        Seen {
            parent,
            action: Action::RequestPartitions,
            depth,
        }
    }

    /// Fingerprints that collide in a shard's slots (same low bits) and in its shard (same
    /// middle bits), fingerprint 0, and enough of them to make every shard grow.
    #[test]
    fn the_seen_states_keep_every_fingerprint_once_through_collisions_and_growth() {
        let states = SeenStates::new(false);
        let colliding = (1..200u64).map(|k| k << 40);
        let spread = (1..20_000u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let fps: Vec<u64> = std::iter::once(0).chain(colliding).chain(spread).collect();
        for (i, &fp) in fps.iter().enumerate() {
            states.prefetch(fp);
            assert!(states.insert(fp, seen(i as u64, 2)), "{fp:#x} is new");
        }
        for (i, &fp) in fps.iter().enumerate() {
            assert!(!states.insert(fp, seen(u64::MAX, 2)), "{fp:#x} was seen");
            assert_eq!(
                states.get(fp).map(|s| s.parent),
                Some(i as u64),
                "{fp:#x} keeps its first parent"
            );
        }
        assert_eq!(states.len(), fps.len());
        assert!(states.get(12345).is_none());
    }

    /// Reached again in the same level, a state keeps the parent with the smaller fingerprint;
    /// reached in a later level, it keeps the one it has.
    #[test]
    fn a_state_reached_twice_in_a_level_keeps_the_smaller_parent() {
        let states = SeenStates::new(false);
        assert!(states.insert(7, seen(50, 3)));
        assert!(!states.insert(7, seen(40, 3)));
        assert!(!states.insert(7, seen(60, 3)));
        assert!(!states.insert(7, seen(1, 4)));
        assert_eq!(states.get(7).map(|s| (s.parent, s.depth)), Some((40, 3)));
        assert!(states.insert(0, seen(9, 1)));
        assert!(!states.insert(0, seen(8, 1)));
        assert_eq!(states.get(0).map(|s| s.parent), Some(8));
        assert_eq!(states.len(), 2);
    }
}
