//! The soak: one gate's channels under every thread that touches them, for as long as asked.
//!
//! Threads (named after the model's, numbered when there are several):
//! - `io`: the channel-state drainer. Drainer delivery: for each channel in turn
//!   `requestRecoveryBufferBlocking` (or a heap buffer for a local channel without exclusive
//!   buffers) and `onRecoveredStateBuffer`, then `finishRecoveredBufferDelivery` of every
//!   channel. Conversion delivery: fills each `RecoveredInputChannel` and
//!   `finishReadRecoveredState`; the task converts afterwards.
//! - `producer`: `ResultSubpartition.add` of each channel's upstream (data and events, the first
//!   element `EndOfOutputChannelStateEvent`, which blocks the subpartition once handed out),
//!   with a bounded queue standing in for the producer's buffer pool, and every checkpoint's
//!   priority barrier.
//! - `checkpoint-coordinator` (long runs): triggers the next checkpoint each time the task has
//!   consumed a given number of elements and the last one ended, until the producers are done.
//!   With a fixed number of checkpoints, the producers take checkpoint `n + 1` only once the
//!   task completed or declined `n`, as Flink's coordinator triggers them.
//! - `netty-server`: a `CreditBasedSequenceNumberingViewReader` per remote channel; sends what
//!   credit allows, takes `AddCredit` and `ResumeConsumption`.
//! - `netty-client`: `requestBuffer` + `onBuffer` for each `BufferResponse`, `AddCredit` with
//!   `getAndResetUnannouncedCredit`, the `ResumeConsumption` a channel queued.
//! - `task`: requests the partitions (converting in conversion delivery) at a random point, polls
//!   the gate, triggers checkpoints as `SingleCheckpointBarrierHandler` does (the first barrier of
//!   a checkpoint inserts `RecoveryCheckpointBarrier`s on every channel, then `checkpointStarted`
//!   on each until one declines; completes once every live channel delivered its barrier), and
//!   hands each `EndOfOutputChannelStateEvent` to the gate's `UpstreamRecoveryTracker`, which
//!   resumes every channel after the last one's.
//! - `recycler`: recycles the network buffers the task consumed.
//! - `canceler` (some runs): once the task consumed a random number of elements, releases some
//!   channels or closes the gate.
//! - `watchdog`: fails the run if no thread made progress for `stall`, with every thread's state.
//!
//! What a run asserts: each channel delivers its recovered elements, then its upstream elements,
//! each exactly once and in order (a released channel a prefix of that), and its checkpoint
//! barriers in increasing order; what a checkpoint persisted of a channel are data elements of
//! that channel, in order, that precede the checkpoint's barrier upstream and that the task
//! consumed after the checkpoint started; and at the end every segment is back in its global
//! pool.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::credit_based_sequence_numbering_view_reader::{
    BufferResponse, CreditBasedSequenceNumberingViewReader,
};
use recovery_impl::event_log::{Recorder, set_thread_recorder};
use recovery_impl::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use recovery_impl::input_channel_info::InputChannelInfo;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::netty_message::ResumeConsumption;
use recovery_impl::pause_point::set_thread_wait_hook;
use recovery_impl::recoverable_input_channel::ChannelContext;
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::upstream_recovery_tracker::ResumableInputGate;
use recovery_impl::{BufferId, BufferKind, BufferSnapshot, ChannelError, NetworkBuffer, RecoverableInputChannel};

/// Local or remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `LocalInputChannel`.
    Local,
    /// `RemoteInputChannel`.
    Remote,
}

/// An upstream element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Up {
    /// A data buffer.
    Data,
    /// An ordinary event.
    Event,
    /// `EndOfOutputChannelStateEvent`, which an upstream task writes first: it blocks the
    /// subpartition until the task's `UpstreamRecoveryTracker` resumes every channel. Named
    /// as an event ([`Class::Event`]).
    EndOfOutputChannelState,
}

impl Up {
    /// The buffer kind and the naming class of the element.
    fn kind(self) -> (BufferKind, Class) {
        match self {
            Up::Data => (BufferKind::Data, Class::Data),
            Up::Event => (BufferKind::Event, Class::Event),
            Up::EndOfOutputChannelState => (BufferKind::EndOfOutputChannelState, Class::Event),
        }
    }
}

/// How recovered buffers reach the physical channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The drainer pushes into the physical channels.
    Drainer,
    /// The task converts `RecoveredInputChannel`s filled by the IO thread.
    Conversion,
}

/// What an element is, as its payload names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Recovered data `i`.
    Recovered,
    /// Upstream element `i`, a data buffer.
    Data,
    /// Upstream element `i`, an event (`EndOfOutputChannelStateEvent` included).
    Event,
}

/// One channel of the gate.
#[derive(Clone, Debug)]
pub struct ChannelSpec {
    /// Local or remote.
    pub kind: Kind,
    /// Recovered data buffers.
    pub recovered: u64,
    /// The upstream elements, in order.
    pub upstream: Vec<Up>,
    /// Exclusive buffers (a local channel's lend the drainer its recovery buffers).
    pub exclusive: usize,
    /// Floating buffers this channel adds to the pool.
    pub floating: usize,
    /// How many of the last upstream elements the producer writes during the run.
    pub late: usize,
}

impl ChannelSpec {
    /// Recovered plus upstream elements.
    pub fn total(&self) -> u64 {
        self.recovered + self.upstream.len() as u64
    }
}

/// A release during the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// None.
    None,
    /// `releaseAllResources` of these channels, in order.
    Channels(Vec<usize>),
    /// `SingleInputGate.close()`.
    Gate,
}

/// Which checkpoints the producers emit barriers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoints {
    /// Checkpoints `1..=n`, all triggered upstream from the start.
    Fixed(u64),
    /// A coordinator triggers the next checkpoint each time the task consumed this many more
    /// elements, until the producers wrote everything.
    Every(u64),
}

/// Where segments come from.
#[derive(Clone, Copy, Debug)]
pub enum Pools {
    /// One global pool; the gate's `LocalBufferPool` holds every channel's floating buffers.
    Shared,
    /// A global pool and a `LocalBufferPool` per channel, the global pool's first segment id
    /// given by the function (the conformance suite's naming of the model's buffers).
    PerChannel(fn(usize, &ChannelSpec) -> u32),
}

/// How payloads name elements.
#[derive(Clone, Copy, Debug)]
pub struct Naming {
    /// The payload of element `i` of `class` on channel `c`.
    pub payload: fn(u8, Class, u64) -> u64,
    /// The element a buffer of channel `c` carries.
    pub decode: fn(u8, &BufferSnapshot) -> Option<(Class, u64)>,
}

fn plain_payload(c: u8, class: Class, i: u64) -> u64 {
    let tag = match class {
        Class::Recovered => 1,
        Class::Data => 2,
        Class::Event => 3,
    };
    ((c as u64 + 1) << 48) | (tag << 40) | i
}

fn plain_decode(c: u8, b: &BufferSnapshot) -> Option<(Class, u64)> {
    if b.payload >> 48 != c as u64 + 1 {
        return None;
    }
    let class = match (b.payload >> 40) & 0xff {
        1 => Class::Recovered,
        2 => Class::Data,
        3 => Class::Event,
        _ => return None,
    };
    Some((class, b.payload & ((1 << 40) - 1)))
}

/// Payload `channel << 48 | class << 40 | index`.
pub const PLAIN: Naming = Naming {
    payload: plain_payload,
    decode: plain_decode,
};

/// One run.
pub struct SoakConfig {
    /// The channels.
    pub channels: Vec<ChannelSpec>,
    /// The delivery.
    pub delivery: Delivery,
    /// The checkpoints.
    pub checkpoints: Checkpoints,
    /// A release during the run.
    pub release: Release,
    /// The release happens once the task consumed this many elements.
    pub release_after: u64,
    /// Seeds every thread's choices.
    pub seed: u64,
    /// Producer threads (each writes a share of the channels).
    pub producers: usize,
    /// Recycler threads.
    pub recyclers: usize,
    /// Segment pools.
    pub pools: Pools,
    /// Payloads.
    pub naming: Naming,
    /// Installed on every thread of the run (not the watchdog), if any.
    pub recorder: Option<Arc<dyn Recorder>>,
    /// No progress for this long fails the run.
    pub stall: Duration,
    /// Buffers a producer lets queue in a subpartition before it waits (all of them: a blocked
    /// subpartition has no backlog).
    pub backlog_cap: i32,
    /// Every thread pauses at random (a yield or a sleep) before most steps; otherwise rarely.
    pub heavy_jitter: bool,
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Elements the task consumed (recovered, data, events and barriers).
    pub delivered: u64,
    /// Per channel: elements (not barriers) delivered, and whether it was released.
    pub channels: Vec<(u64, bool)>,
    /// Checkpoints triggered while a channel still had recovered elements to deliver.
    pub during_recovery: u64,
    /// Checkpoints completed, declined, and subsumed or left open.
    pub completed: u64,
    /// Declined.
    pub declined: u64,
    /// Subsumed by a newer checkpoint or not complete at the end.
    pub other: u64,
    /// Threads of the run, the watchdog included.
    pub threads: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Each subpartition's `event_id`, by channel (for event logs).
    pub subpartitions: Vec<usize>,
}

// ---------------------------------------------------------------------------------------------
// Thread states and the watchdog
// ---------------------------------------------------------------------------------------------

struct SlotState {
    doing: &'static str,
    waiting: Option<&'static Location<'static>>,
    ops: u64,
    at: Instant,
    finished: bool,
}

/// What one thread last did, and where it last parked.
struct Slot {
    name: String,
    state: Mutex<SlotState>,
    progress: Arc<AtomicU64>,
}

impl Slot {
    fn doing(&self, what: &'static str) {
        let mut s = self.state.lock().unwrap();
        s.doing = what;
        s.waiting = None;
        s.ops += 1;
        s.at = Instant::now();
    }

    fn progressed(&self) {
        self.progress.fetch_add(1, SeqCst);
    }

    fn waiting(&self, site: &'static Location<'static>) {
        if let Ok(mut s) = self.state.try_lock() {
            s.waiting = Some(site);
        }
    }

    fn describe(&self, now: Instant) -> String {
        let s = self.state.lock().unwrap();
        let state = if s.finished { "finished" } else { "running" };
        let mut line = format!(
            "  {:<24} {state}, {} steps, last: {} ({:.1} s ago)",
            self.name,
            s.ops,
            s.doing,
            now.duration_since(s.at).as_secs_f64()
        );
        if let Some(site) = s.waiting {
            let _ = write!(line, ", parked at {}:{}", site.file(), site.line());
        }
        line
    }
}

#[derive(Clone)]
struct Board {
    slots: Arc<Mutex<Vec<Arc<Slot>>>>,
    progress: Arc<AtomicU64>,
    recorder: Option<Arc<dyn Recorder>>,
}

impl Board {
    fn slot(&self, name: &str) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            name: name.to_string(),
            state: Mutex::new(SlotState {
                doing: "starting",
                waiting: None,
                ops: 0,
                at: Instant::now(),
                finished: false,
            }),
            progress: Arc::clone(&self.progress),
        });
        self.slots.lock().unwrap().push(Arc::clone(&slot));
        slot
    }

    /// Spawns a thread of the run: named, recording if asked, reporting where it parks.
    fn spawn(&self, name: &str, body: impl FnOnce(&Slot) + Send + 'static) -> (String, JoinHandle<()>) {
        let slot = self.slot(name);
        let recorder = self.recorder.clone();
        let handle = thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                set_thread_recorder(recorder);
                let hook = Arc::clone(&slot);
                set_thread_wait_hook(Some(Box::new(move |site| hook.waiting(site))));
                body(&slot);
                slot.state.lock().unwrap().finished = true;
            })
            .expect("spawn a soak thread");
        (name.to_string(), handle)
    }

    fn dump(&self) -> String {
        let now = Instant::now();
        let slots = self.slots.lock().unwrap();
        slots.iter().map(|s| s.describe(now) + "\n").collect()
    }
}

/// `name` or `name-k` when there are several.
fn numbered(name: &str, k: usize, of: usize) -> String {
    if of == 1 {
        name.to_string()
    } else {
        format!("{name}-{k}")
    }
}

// ---------------------------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------------------------

/// SplitMix64.
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Jitter {
    rng: Rng,
    heavy: bool,
}

impl Jitter {
    fn pause(&mut self) {
        if self.heavy {
            match self.rng.below(4) {
                0 => {}
                1 => thread::yield_now(),
                _ => thread::sleep(Duration::from_micros(self.rng.below(200))),
            }
        } else {
            match self.rng.below(512) {
                0 => thread::sleep(Duration::from_micros(self.rng.below(100))),
                1..=15 => thread::yield_now(),
                _ => {}
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

struct Run {
    gate: Arc<SingleInputGate>,
    specs: Vec<ChannelSpec>,
    partitions: Vec<Arc<ResultSubpartition>>,
    naming: Naming,
    stop: AtomicBool,
    delivered: AtomicU64,
    io_done: AtomicBool,
    requested: AtomicBool,
    /// Checkpoints triggered upstream so far, and whether that number is final.
    triggered: AtomicU64,
    /// The latest checkpoint the task completed or declined: the coordinator triggers one
    /// unaligned checkpoint at a time, so an upstream takes the next one only after that.
    ended: AtomicU64,
    triggered_final: AtomicBool,
    producers_done: AtomicUsize,
    /// Channels whose release (or the gate's close) has returned: they deliver nothing more.
    released_done: AtomicU64,
    /// Set by the task: a released channel never delivered its `EndOfOutputChannelStateEvent`,
    /// so the tracker never resumes, and every other upstream stays blocked behind its own
    /// (the producers stop writing; the channels are done once theirs and the barriers are in).
    stuck: AtomicBool,
    /// Per channel, per checkpoint: upstream elements written before its barrier.
    barrier_at: Vec<Mutex<Vec<u64>>>,
    /// The drainer's lock: the IO thread delivers each recovered buffer under it, and the
    /// task's trigger inserts every channel's recovery barrier under it.
    drainer: FetchedChannelStateDrainer,
    /// The task's `ChannelStateWriter`: the trigger writes the drainer's snapshot to it.
    writer: Arc<ChannelStateWriter>,
}

impl Run {
    fn physical(&self, c: usize) -> Option<Arc<dyn RecoverableInputChannel>> {
        self.gate.channel(c).and_then(|h| h.as_recoverable())
    }

    fn released(&self, c: usize) -> bool {
        self.physical(c).is_some_and(|p| p.is_released())
    }

    fn remote(&self, c: usize) -> Option<Arc<RemoteInputChannel>> {
        self.gate.channel(c).and_then(|h| h.as_remote().cloned())
    }

    fn lends_recovery_buffers(&self, c: usize) -> bool {
        self.specs[c].kind == Kind::Remote || self.specs[c].exclusive > 0
    }

    fn upstream_buffer(&self, c: usize, i: usize) -> NetworkBuffer {
        let (kind, class) = self.specs[c].upstream[i].kind();
        let id = BufferId(50_000 + 100 * c as u32 + i.min(99) as u32);
        NetworkBuffer::unpooled(id, kind, (self.naming.payload)(c as u8, class, i as u64))
    }

    fn heap_recovered(&self, c: usize, i: u64) -> NetworkBuffer {
        let id = BufferId(60_000 + 100 * c as u32 + i.min(99) as u32);
        let payload = (self.naming.payload)(c as u8, Class::Recovered, i);
        NetworkBuffer::unpooled(id, BufferKind::Data, payload)
    }
}

/// Global pools and the local pools of a run, for the final accounting.
struct PoolSet {
    global: Vec<(Arc<NetworkBufferPool>, usize)>,
    local: Vec<Arc<LocalBufferPool>>,
}

fn build(
    cfg: &SoakConfig,
) -> (
    Arc<SingleInputGate>,
    Vec<Arc<ResultSubpartition>>,
    PoolSet,
    Arc<ChannelStateWriter>,
) {
    let writer = Arc::new(ChannelStateWriter::new());
    let (gate, contexts, pools) = match cfg.pools {
        Pools::Shared => {
            let floating: usize = cfg.channels.iter().map(|s| s.floating).sum();
            let exclusive: usize = cfg.channels.iter().map(|s| s.exclusive).sum();
            let segments = floating + exclusive;
            let global = NetworkBufferPool::new(segments as u32);
            let local = LocalBufferPool::new(Arc::clone(&global), floating).unwrap();
            let gate = SingleInputGate::new(0, Arc::clone(&local));
            let contexts: Vec<ChannelContext> = (cfg.channels.iter().enumerate())
                .map(|(c, s)| gate.channel_context(c as u32, Arc::clone(&global), Arc::clone(&writer), s.exclusive))
                .collect();
            let pools = PoolSet {
                global: vec![(global, segments)],
                local: vec![local],
            };
            (gate, contexts, pools)
        }
        Pools::PerChannel(first_id) => {
            let unused = NetworkBufferPool::new(0);
            let gate_pool = LocalBufferPool::new(Arc::clone(&unused), 0).unwrap();
            let gate = SingleInputGate::new(0, Arc::clone(&gate_pool));
            let mut pools = PoolSet {
                global: vec![(unused, 0)],
                local: vec![gate_pool],
            };
            let mut contexts = Vec::new();
            for (c, s) in cfg.channels.iter().enumerate() {
                let segments = s.floating + s.exclusive;
                let global = NetworkBufferPool::with_first_id(first_id(c, s), segments as u32);
                let local = LocalBufferPool::new(Arc::clone(&global), s.floating).unwrap();
                contexts.push(ChannelContext {
                    channel_info: InputChannelInfo {
                        gate_idx: 0,
                        input_channel_idx: c as u32,
                    },
                    gate: Arc::clone(gate.channels_with_data()),
                    global_pool: Arc::clone(&global),
                    buffer_pool: Arc::clone(&local),
                    writer: Arc::clone(&writer),
                    network_buffers_per_channel: s.exclusive,
                    flink_fixes: recovery_impl::FlinkFixes::NONE,
                });
                pools.global.push((global, segments));
                pools.local.push(local);
            }
            (gate, contexts, pools)
        }
    };
    let mut partitions = Vec::new();
    let mut handles = Vec::new();
    for (s, context) in cfg.channels.iter().zip(contexts) {
        let partition = ResultSubpartition::new();
        let handle = match (cfg.delivery, s.kind) {
            (Delivery::Drainer, Kind::Local) => {
                let channel = LocalInputChannel::new(context, Arc::clone(&partition), true);
                channel.setup().unwrap();
                InputChannelHandle::Local(channel)
            }
            (Delivery::Drainer, Kind::Remote) => {
                let channel = RemoteInputChannel::new(context, true);
                channel.setup().unwrap();
                InputChannelHandle::Remote(channel)
            }
            (Delivery::Conversion, kind) => {
                let kind = match kind {
                    Kind::Local => RecoveredChannelKind::Local {
                        partition: Arc::clone(&partition),
                    },
                    Kind::Remote => RecoveredChannelKind::Remote,
                };
                InputChannelHandle::Recovered(RecoveredInputChannel::new(context, kind))
            }
        };
        handles.push(handle);
        partitions.push(partition);
    }
    gate.set_input_channels(handles);
    (gate, partitions, pools, writer)
}

/// Runs one soak round; panics (with the watchdog's dump if the run stalled) when an assertion
/// fails.
pub fn run(cfg: SoakConfig) -> Report {
    let started = Instant::now();
    let (gate, partitions, pools, writer) = build(&cfg);
    let n = cfg.channels.len();
    assert!(n <= 64, "at most 64 channels");
    // What the upstream wrote before the consumer started.
    for (c, s) in cfg.channels.iter().enumerate() {
        for i in 0..s.upstream.len() - s.late {
            let (kind, class) = s.upstream[i].kind();
            let id = BufferId(50_000 + 100 * c as u32 + i.min(99) as u32);
            let payload = (cfg.naming.payload)(c as u8, class, i as u64);
            partitions[c].add(NetworkBuffer::unpooled(id, kind, payload)).unwrap();
        }
    }
    let (triggered, triggered_final) = match cfg.checkpoints {
        Checkpoints::Fixed(k) => (k, true),
        Checkpoints::Every(_) => (0, false),
    };
    let run = Arc::new(Run {
        writer: Arc::clone(&writer),
        gate: Arc::clone(&gate),
        specs: cfg.channels.clone(),
        partitions: partitions.clone(),
        naming: cfg.naming,
        stop: AtomicBool::new(false),
        delivered: AtomicU64::new(0),
        io_done: AtomicBool::new(false),
        requested: AtomicBool::new(false),
        triggered: AtomicU64::new(triggered),
        ended: AtomicU64::new(0),
        triggered_final: AtomicBool::new(triggered_final),
        producers_done: AtomicUsize::new(0),
        released_done: AtomicU64::new(0),
        stuck: AtomicBool::new(false),
        barrier_at: (0..n).map(|_| Mutex::new(Vec::new())).collect(),
        // The conversion pushes the recovered state itself: no drainer holds any of it.
        drainer: FetchedChannelStateDrainer::new(match cfg.delivery {
            Delivery::Drainer => cfg.channels.iter().map(|s| s.recovered as usize).collect(),
            Delivery::Conversion => Vec::new(),
        }),
    });
    let board = Board {
        slots: Arc::new(Mutex::new(Vec::new())),
        progress: Arc::new(AtomicU64::new(0)),
        recorder: cfg.recorder.clone(),
    };
    let mut seeds = Rng::new(cfg.seed);
    let heavy = cfg.heavy_jitter;
    let mut jitter = |_heavy: bool| Jitter {
        rng: Rng::new(seeds.next()),
        heavy,
    };
    let mut threads: Vec<(String, JoinHandle<()>)> = Vec::new();

    // IO.
    {
        let (run, mut j) = (Arc::clone(&run), jitter(heavy));
        let delivery = cfg.delivery;
        threads.push(board.spawn("io", move |slot| io_thread(&run, delivery, &mut j, slot)));
    }

    // Producers, and the checkpoint coordinator of long runs.
    let producers = cfg.producers.clamp(1, n);
    for p in 0..producers {
        let (run, mut j) = (Arc::clone(&run), jitter(heavy));
        let cap = cfg.backlog_cap;
        let mine: Vec<usize> = (0..n).filter(|c| c % producers == p).collect();
        threads.push(board.spawn(&numbered("producer", p, producers), move |slot| {
            producer_thread(&run, &mine, cap, &mut j, slot)
        }));
    }
    if let Checkpoints::Every(every) = cfg.checkpoints {
        let run = Arc::clone(&run);
        threads.push(board.spawn("checkpoint-coordinator", move |slot| {
            let mut last = 0;
            while !run.stop.load(SeqCst) {
                if run.producers_done.load(SeqCst) == producers {
                    run.triggered_final.store(true, SeqCst);
                    break;
                }
                let delivered = run.delivered.load(SeqCst);
                // One unaligned checkpoint at a time: the next once the last one ended.
                if delivered >= last + every && run.ended.load(SeqCst) >= run.triggered.load(SeqCst) {
                    slot.doing("trigger a checkpoint");
                    run.triggered.fetch_add(1, SeqCst);
                    slot.progressed();
                    last = delivered;
                }
                thread::sleep(Duration::from_micros(200));
            }
        }));
    }

    // The Netty wire, both directions.
    let (responses, wire) = mpsc::channel::<(usize, BufferResponse)>();
    let (credits, add_credits) = mpsc::channel::<(usize, ClientMessage)>();
    {
        let (run, mut j) = (Arc::clone(&run), jitter(heavy));
        threads.push(board.spawn("netty-server", move |slot| {
            netty_server(&run, &add_credits, &responses, &mut j, slot)
        }));
    }
    {
        let (run, mut j) = (Arc::clone(&run), jitter(heavy));
        threads.push(board.spawn("netty-client", move |slot| {
            netty_client(&run, &wire, &credits, &mut j, slot)
        }));
    }

    // Recyclers.
    let recyclers = cfg.recyclers.max(1);
    let mut to_recyclers = Vec::new();
    for r in 0..recyclers {
        let (tx, rx) = mpsc::channel::<NetworkBuffer>();
        to_recyclers.push(tx);
        let mut j = jitter(heavy);
        threads.push(board.spawn(&numbered("recycler", r, recyclers), move |slot| {
            for buffer in rx {
                j.pause();
                slot.doing("recycleBuffer");
                buffer.recycle_buffer().expect("a consumed buffer is recycled once");
                slot.progressed();
            }
        }));
    }

    // Canceler.
    if cfg.release != Release::None {
        let (run, release, after) = (Arc::clone(&run), cfg.release.clone(), cfg.release_after);
        threads.push(board.spawn("canceler", move |slot| canceler(&run, release, after, slot)));
    }

    // Task.
    let task = {
        let (run, j) = (Arc::clone(&run), jitter(heavy));
        let task_rng = Rng::new(j.rng.0 ^ 0x7a5c);
        let delivery = cfg.delivery;
        let (result_tx, result_rx) = mpsc::channel();
        let handle = board.spawn("task", move |slot| {
            let outcome = task_thread(&run, delivery, task_rng, j, to_recyclers, slot);
            let _ = result_tx.send(outcome);
        });
        (handle, result_rx)
    };
    let ((task_name, task_handle), task_result) = task;
    threads.push((task_name, task_handle));
    let thread_count = threads.len() + 1;

    // Watchdog: no progress for `stall` fails the run with every thread's state.
    let stalled: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let finished = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (board, stalled, finished, gate) = (
            board.clone(),
            Arc::clone(&stalled),
            Arc::clone(&finished),
            Arc::clone(&gate),
        );
        let stall = cfg.stall;
        thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                let (mut seen, mut since) = (board.progress.load(SeqCst), Instant::now());
                while !finished.load(SeqCst) {
                    thread::sleep(Duration::from_millis(20));
                    let now = board.progress.load(SeqCst);
                    if now != seen {
                        (seen, since) = (now, Instant::now());
                    } else if since.elapsed() >= stall {
                        let dump = format!(
                            "no progress for {:.1} s; every thread:\n{}gate: {}",
                            stall.as_secs_f64(),
                            board.dump(),
                            snapshot_within(&gate, Duration::from_secs(1))
                        );
                        *stalled.lock().unwrap() = Some(dump);
                        return;
                    }
                }
            })
            .expect("spawn the watchdog")
    };

    // Wait for every thread, or for the watchdog.
    let seed = cfg.seed;
    let fail = |why: String| -> String {
        run.stop.store(true, SeqCst);
        format!("soak seed {seed}: {why}")
    };
    let mut outcome = None;
    let mut pending = threads;
    while !pending.is_empty() {
        if let Some(dump) = stalled.lock().unwrap().take() {
            panic!("{}", fail(dump));
        }
        let mut still = Vec::new();
        for (name, handle) in pending {
            if !handle.is_finished() {
                still.push((name, handle));
                continue;
            }
            if handle.join().is_err() {
                panic!("{}", fail(format!("thread {name} panicked")));
            }
            if name == "task" {
                match task_result.recv() {
                    Ok(Ok(o)) => outcome = Some(o),
                    Ok(Err(e)) => panic!("{}", fail(e)),
                    Err(_) => panic!("{}", fail("the task reported nothing".into())),
                }
                // Let the Netty threads serve what is in flight, then stop every thread.
                thread::sleep(Duration::from_millis(2));
                run.stop.store(true, SeqCst);
            }
        }
        pending = still;
        thread::sleep(Duration::from_millis(1));
    }
    finished.store(true, SeqCst);
    watchdog.join().unwrap();
    let outcome = outcome.expect("the task finished");

    if let Err(e) = check_persisted(&run, &writer, &outcome) {
        panic!("{}", fail(e));
    }

    // Every segment home: close the gate, destroy the pools, nothing lent anywhere.
    let released: Vec<bool> = (0..n).map(|c| run.released(c)).collect();
    gate.close().unwrap();
    for pool in &pools.local {
        pool.lazy_destroy().unwrap();
    }
    for partition in &partitions {
        partition.release().unwrap();
    }
    for (k, (global, segments)) in pools.global.iter().enumerate() {
        let snapshot = global.snapshot();
        assert!(
            snapshot.lent.is_empty() && snapshot.available.len() == *segments,
            "seed {}: global pool {k}: segments not returned: {snapshot:?}",
            cfg.seed
        );
    }
    for pool in &pools.local {
        let snapshot = pool.snapshot();
        assert!(
            snapshot.lent.is_empty(),
            "seed {}: floating buffers lent: {snapshot:?}",
            cfg.seed
        );
    }

    Report {
        delivered: outcome.delivered,
        during_recovery: outcome.during_recovery,
        channels: outcome.cursor.iter().copied().zip(released).collect(),
        completed: outcome.completed,
        declined: outcome.declined,
        other: outcome.other,
        threads: thread_count,
        elapsed: started.elapsed(),
        subpartitions: partitions.iter().map(|p| p.event_id()).collect(),
    }
}

/// The gate's snapshot, or why none could be taken (a lock held for good).
fn snapshot_within(gate: &Arc<SingleInputGate>, limit: Duration) -> String {
    let (tx, rx) = mpsc::channel();
    let gate = Arc::clone(gate);
    let _ = thread::Builder::new().name("snapshot".into()).spawn(move || {
        let _ = tx.send(format!("{:?}", gate.snapshot()));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| format!("none within {limit:?}: a lock of the gate or a channel is held"))
}

fn io_thread(run: &Run, delivery: Delivery, j: &mut Jitter, slot: &Slot) {
    let n = run.specs.len();
    match delivery {
        Delivery::Drainer => {
            let channels: Vec<_> = (0..n).map(|c| run.physical(c).expect("a physical channel")).collect();
            for (c, channel) in channels.iter().enumerate() {
                for i in 0..run.specs[c].recovered {
                    j.pause();
                    let buffer = if run.lends_recovery_buffers(c) {
                        slot.doing("requestRecoveryBufferBlocking");
                        match channel.request_recovery_buffer_blocking() {
                            Ok(b) => b.fill(BufferKind::Data, (run.naming.payload)(c as u8, Class::Recovered, i)),
                            // Released: the drainer goes on (the model's does too).
                            Err(ChannelError::Released(_)) => continue,
                            Err(e) => panic!("requestRecoveryBufferBlocking on channel {c}: {e}"),
                        }
                    } else {
                        run.heap_recovered(c, i)
                    };
                    slot.doing("onRecoveredStateBuffer");
                    run.drainer.deliver(c, &**channel, buffer).unwrap();
                    slot.progressed();
                }
            }
            for channel in &channels {
                j.pause();
                slot.doing("finishRecoveredBufferDelivery");
                channel.finish_recovered_buffer_delivery().unwrap();
                slot.progressed();
            }
        }
        Delivery::Conversion => {
            for c in 0..n {
                let Some(InputChannelHandle::Recovered(channel)) = run.gate.channel(c) else {
                    panic!("channel {c} is not a RecoveredInputChannel");
                };
                for i in 0..run.specs[c].recovered {
                    j.pause();
                    slot.doing("RecoveredInputChannel.onRecoveredStateBuffer");
                    channel.on_recovered_state_buffer(run.heap_recovered(c, i)).unwrap();
                    slot.progressed();
                }
                slot.doing("finishReadRecoveredState");
                channel.finish_read_recovered_state().unwrap();
            }
        }
    }
    run.io_done.store(true, SeqCst);
}

fn producer_thread(run: &Run, mine: &[usize], cap: i32, j: &mut Jitter, slot: &Slot) {
    let mut added: Vec<usize> = mine
        .iter()
        .map(|&c| run.specs[c].upstream.len() - run.specs[c].late)
        .collect();
    let mut barriers = vec![0u64; mine.len()];
    let mut done = false;
    let mut idle = 0u32;
    while !run.stop.load(SeqCst) {
        let last = run.triggered_final.load(SeqCst);
        let target = run.triggered.load(SeqCst);
        let mut worked = false;
        for (k, &c) in mine.iter().enumerate() {
            // Barrier `n + 1` once checkpoint `n` ended.
            while barriers[k] < target && barriers[k] <= run.ended.load(SeqCst) {
                j.pause();
                barriers[k] += 1;
                run.barrier_at[c].lock().unwrap().push(added[k] as u64);
                slot.doing("add(CheckpointBarrier)");
                let barrier = NetworkBuffer::event(BufferKind::CheckpointBarrier(barriers[k] as i64));
                run.partitions[c].add(barrier).unwrap();
                slot.progressed();
                worked = true;
            }
            let upstream = run.specs[c].upstream.len();
            // A cancelled consumer, or one that is never resumed: the upstream stops writing.
            if added[k] < upstream && (run.released(c) || run.stuck.load(SeqCst)) {
                added[k] = upstream;
            }
            // Everything queued counts: a blocked subpartition has no backlog.
            if added[k] < upstream && run.partitions[c].get_number_of_queued_buffers() < cap as usize {
                j.pause();
                slot.doing("add");
                run.partitions[c].add(run.upstream_buffer(c, added[k])).unwrap();
                added[k] += 1;
                slot.progressed();
                worked = true;
            }
        }
        let all_written = mine
            .iter()
            .enumerate()
            .all(|(k, &c)| added[k] == run.specs[c].upstream.len());
        if all_written && !done {
            done = true;
            run.producers_done.fetch_add(1, SeqCst);
        }
        if done && last && barriers.iter().all(|b| *b == target) {
            break;
        }
        if worked {
            idle = 0;
        } else {
            idle += 1;
            slot.doing("wait for backlog or a checkpoint");
            if idle > 16 {
                thread::sleep(Duration::from_micros(50));
            } else {
                thread::yield_now();
            }
        }
    }
}

fn netty_server(
    run: &Run,
    add_credits: &mpsc::Receiver<(usize, ClientMessage)>,
    responses: &mpsc::Sender<(usize, BufferResponse)>,
    j: &mut Jitter,
    slot: &Slot,
) {
    let n = run.specs.len();
    let mut readers: Vec<Option<CreditBasedSequenceNumberingViewReader>> = (0..n).map(|_| None).collect();
    let mut idle = false;
    while !run.stop.load(SeqCst) {
        j.pause();
        // The PartitionRequest travels on the connection before any AddCredit of its channel:
        // a reader is created when its request is seen, and at the latest with its first credit.
        let request = |c: usize, readers: &mut [Option<CreditBasedSequenceNumberingViewReader>]| {
            if readers[c].is_none()
                && run.specs[c].kind == Kind::Remote
                && let Some(request) = run.remote(c).and_then(|r| r.partition_request())
            {
                slot.doing("PartitionRequest");
                let subpartition = Arc::clone(&run.partitions[c]);
                readers[c] = Some(CreditBasedSequenceNumberingViewReader::new(&request, subpartition).unwrap());
            }
        };
        (0..n).for_each(|c| request(c, &mut readers));
        let credit = |(c, message): (usize, ClientMessage),
                      readers: &mut [Option<CreditBasedSequenceNumberingViewReader>]| {
            request(c, readers);
            let reader = readers[c].as_mut().expect("a message follows the partition request");
            match message {
                ClientMessage::AddCredit(k) => {
                    slot.doing("addCredit");
                    reader.add_credit(k);
                }
                // PartitionRequestQueue.resumeConsumption: the reader, then its subpartition.
                ClientMessage::ResumeConsumption(frame) => {
                    slot.doing("resumeConsumption (view reader)");
                    let message = ResumeConsumption::decode(&frame).expect("a ResumeConsumption frame");
                    assert_eq!(message.receiver.input_channel_idx as usize, c);
                    reader.resume_consumption().expect("a blocked subpartition resumes");
                }
            }
            slot.progressed();
        };
        if idle {
            match add_credits.recv_timeout(Duration::from_micros(100)) {
                Ok(message) => credit(message, &mut readers),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        while let Ok(message) = add_credits.try_recv() {
            credit(message, &mut readers);
        }
        idle = true;
        for (c, reader) in readers.iter_mut().enumerate() {
            if let Some(reader) = reader {
                slot.doing("getNextBuffer (view reader)");
                if let Some(response) = reader.get_next_buffer().expect("the reader respects credit") {
                    let _ = responses.send((c, response));
                    slot.progressed();
                    idle = false;
                }
            }
        }
    }
}

/// A message of the Netty client to the server: `AddCredit`, or a `ResumeConsumption` frame.
enum ClientMessage {
    AddCredit(i32),
    ResumeConsumption(Vec<u8>),
}

fn netty_client(
    run: &Run,
    wire: &mpsc::Receiver<(usize, BufferResponse)>,
    credits: &mpsc::Sender<(usize, ClientMessage)>,
    j: &mut Jitter,
    slot: &Slot,
) {
    let n = run.specs.len();
    let deliver = |c: usize, response: BufferResponse| {
        let remote = run.remote(c).expect("a response for a remote channel");
        // CreditBasedPartitionRequestClientHandler drops a released channel's messages.
        if remote.is_released() {
            response.buffer.recycle_buffer().unwrap();
            return;
        }
        let buffer = if response.buffer.is_buffer() {
            slot.doing("requestBuffer");
            match remote.request_buffer() {
                Some(target) => {
                    let (kind, payload) = (response.buffer.kind(), response.buffer.payload());
                    response.buffer.recycle_buffer().unwrap();
                    target.fill(kind, payload)
                }
                // Released meanwhile (onBuffer discards it); over-announced credit would be a
                // bug, found by the order check (onBuffer of a buffer without a segment).
                None => response.buffer,
            }
        } else {
            response.buffer
        };
        slot.doing("onBuffer");
        if let Err(e) = remote.on_buffer(buffer, response.sequence_number, response.backlog)
            && !remote.is_released()
        {
            panic!("onBuffer on channel {c}: {e}");
        }
        slot.progressed();
    };
    while !run.stop.load(SeqCst) {
        j.pause();
        slot.doing("read the wire");
        match wire.recv_timeout(Duration::from_micros(100)) {
            Ok((c, response)) => deliver(c, response),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while let Ok((c, response)) = wire.try_recv() {
            j.pause();
            deliver(c, response);
        }
        for c in 0..n {
            // The client handler's queued ResumeConsumption (dropped for a released channel).
            if let Some(remote) = run.remote(c)
                && remote.resume_consumption_queued()
            {
                slot.doing("write ResumeConsumption");
                if let Some(message) = remote.take_resume_consumption() {
                    let _ = credits.send((c, ClientMessage::ResumeConsumption(message.encode())));
                    slot.progressed();
                }
            }
            if let Some(remote) = run.remote(c)
                && !remote.is_released()
                && remote.unannounced_credit() > 0
            {
                slot.doing("getAndResetUnannouncedCredit");
                let credit = remote.get_and_reset_unannounced_credit();
                if credit > 0 && !remote.is_released() {
                    let _ = credits.send((c, ClientMessage::AddCredit(credit)));
                    slot.progressed();
                }
            }
        }
    }
}

fn canceler(run: &Run, release: Release, after: u64, slot: &Slot) {
    slot.doing("wait for the release point");
    while run.delivered.load(SeqCst) < after {
        if run.stop.load(SeqCst) {
            return;
        }
        thread::sleep(Duration::from_micros(50));
    }
    // Flink's gate does not request a released local channel (checkState), the model skips it,
    // and a gate closed before the conversion leaves nothing to convert: release once the
    // partitions were requested.
    slot.doing("wait for requestPartitions");
    while !run.requested.load(SeqCst) {
        if run.stop.load(SeqCst) {
            return;
        }
        thread::sleep(Duration::from_micros(50));
    }
    match release {
        Release::None => {}
        Release::Gate => {
            slot.doing("SingleInputGate.close");
            run.gate.close().unwrap();
            run.released_done.store(u64::MAX, SeqCst);
        }
        Release::Channels(targets) => {
            for c in targets {
                slot.doing("releaseAllResources");
                let channel = run.physical(c).expect("a physical channel");
                channel.release_all_resources().unwrap();
                run.released_done.fetch_or(1 << c, SeqCst);
            }
        }
    }
    slot.progressed();
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    NotTriggered,
    Triggered,
    Completed,
    Declined,
    Subsumed,
}

/// What the task saw.
struct TaskOutcome {
    delivered: u64,
    /// Per channel: elements (not barriers) delivered.
    cursor: Vec<u64>,
    /// Per checkpoint (index `cp - 1`): each channel's cursor when the checkpoint started.
    started_at: Vec<Option<Vec<u64>>>,
    during_recovery: u64,
    /// Per checkpoint (index `cp - 1`): completed on every live channel.
    completed_at: Vec<bool>,
    completed: u64,
    declined: u64,
    other: u64,
}

struct Task<'a> {
    run: &'a Run,
    cursor: Vec<u64>,
    last_barrier: Vec<u64>,
    status: Vec<Status>,
    seen: Vec<u64>,
    started_at: Vec<Option<Vec<u64>>>,
    during_recovery: u64,
    /// The live channels before the task's current step, the one that may complete a
    /// checkpoint. A release the event log places before that step had returned by then; one
    /// still running is counted live, as the model counts a release the log places after the
    /// step. Reading the channels' flags after the step instead would let a concurrent release
    /// complete a checkpoint the model, which takes the step at once, still waits for.
    live_at_step: u64,
}

impl Task<'_> {
    fn handles(&self) -> Vec<InputChannelHandle> {
        (0..self.cursor.len())
            .map(|c| self.run.gate.channel(c).unwrap())
            .collect()
    }

    /// The channels whose release has not returned (`released_done`).
    fn live(&self) -> u64 {
        let released = self.run.released_done.load(SeqCst);
        (0..self.cursor.len())
            .filter(|c| released & 1 << c == 0)
            .fold(0, |m, c| m | 1 << c)
    }

    /// `SingleCheckpointBarrierHandler`, as the model's task does it.
    fn on_barrier(&mut self, c: usize, cp: u64, slot: &Slot) {
        let i = cp as usize - 1;
        if self.status.len() <= i {
            self.status.resize(i + 1, Status::NotTriggered);
            self.seen.resize(i + 1, 0);
            self.started_at.resize(i + 1, None);
        }
        self.seen[i] |= 1 << c;
        if self.status[i] != Status::NotTriggered {
            return self.maybe_complete(i);
        }
        for old in self.status[..i].iter_mut() {
            if matches!(old, Status::Triggered | Status::NotTriggered) {
                *old = Status::Subsumed;
            }
        }
        self.status[i] = Status::Triggered;
        self.started_at[i] = Some(self.cursor.clone());
        if (0..self.cursor.len()).any(|c| self.cursor[c] < self.run.specs[c].recovered) {
            self.during_recovery += 1;
        }
        let all = self.handles();
        let recoverable: Vec<_> = all
            .iter()
            .map(|ch| ch.as_recoverable().expect("a physical channel"))
            .collect();
        let refs: Vec<&dyn RecoverableInputChannel> = recoverable.iter().map(|ch| &**ch).collect();
        slot.doing("snapshotAndInsertBarriers");
        let slices = self.run.drainer.snapshot_and_insert_barriers(&refs, cp as i64).unwrap();
        slot.doing("addInputDataFromSpill");
        for (c, slice) in slices.into_iter().enumerate() {
            let info = refs[c].channel_info();
            let buffers = slice.map(|i| self.run.heap_recovered(c, i as u64).snapshot()).collect();
            self.run.writer.add_input_data_from_spill(cp as i64, info, buffers);
        }
        self.live_at_step = self.live();
        for ch in &all {
            slot.doing("checkpointStarted");
            if ch.checkpoint_started(cp as i64).is_err() {
                self.status[i] = Status::Declined;
                self.run.ended.fetch_max(cp, SeqCst);
                slot.doing("checkpointStopped (declined)");
                all.iter().for_each(|ch| ch.checkpoint_stopped(cp as i64));
                return;
            }
        }
        self.maybe_complete(i);
    }

    /// The checkpoint after the last one that ended has every live channel's barrier but did
    /// not complete: a channel was released after the others' barriers came. Only the
    /// coordinator's abort would end it, and this run's has none: no later barrier comes.
    fn pending_for_good(&self) -> bool {
        let i = self.run.ended.load(SeqCst) as usize;
        let live = self.live();
        self.status.get(i) == Some(&Status::Triggered) && self.seen[i] & live == live
    }

    fn maybe_complete(&mut self, i: usize) {
        let live = self.live_at_step;
        if self.status[i] == Status::Triggered && self.seen[i] & live == live {
            self.status[i] = Status::Completed;
            self.run.ended.fetch_max(i as u64 + 1, SeqCst);
            self.handles().iter().for_each(|ch| ch.checkpoint_stopped(i as i64 + 1));
        }
    }
}

fn task_thread(
    run: &Run,
    delivery: Delivery,
    mut rng: Rng,
    mut j: Jitter,
    to_recyclers: Vec<mpsc::Sender<NetworkBuffer>>,
    slot: &Slot,
) -> Result<TaskOutcome, String> {
    let n = run.specs.len();
    let mut task = Task {
        run,
        cursor: vec![0; n],
        last_barrier: vec![0; n],
        status: Vec::new(),
        seen: Vec::new(),
        started_at: Vec::new(),
        during_recovery: 0,
        live_at_step: u64::MAX,
    };
    let totals: Vec<u64> = run.specs.iter().map(ChannelSpec::total).collect();
    let request_after = match delivery {
        // The conversion is the task's first mail, once the IO thread read the state.
        Delivery::Conversion => {
            slot.doing("wait for the IO thread");
            while !run.io_done.load(SeqCst) {
                thread::sleep(Duration::from_micros(50));
            }
            0
        }
        Delivery::Drainer => rng.below(4),
    };
    let (mut polls, mut delivered, mut idle) = (0u64, 0u64, 0u32);
    let mut next_recycler = 0;
    // A channel stuck behind its blocked upstream is done once its
    // `EndOfOutputChannelStateEvent` (the first upstream element) is in.
    let recovered: Vec<u64> = run.specs.iter().map(|s| s.recovered).collect();
    let finished = |task: &Task| {
        let stuck = run.stuck.load(SeqCst);
        let pending_for_good = task.pending_for_good();
        run.io_done.load(SeqCst)
            && (0..n).all(|c| {
                run.released(c)
                    || ((task.cursor[c] == totals[c] || (stuck && task.cursor[c] > recovered[c]))
                        && run.triggered_final.load(SeqCst)
                        && (task.last_barrier[c] == run.triggered.load(SeqCst) || pending_for_good))
            })
    };
    while !finished(&task) {
        // Between two polls: a channel whose release returned delivers nothing more, so if its
        // end-of-output event is not in, the tracker never resumes the others.
        let released_done = run.released_done.load(SeqCst);
        if !run.stuck.load(SeqCst)
            && !run.gate.upstream_recovery_tracker().all_channels_recovered()
            && (0..n).any(|c| released_done & (1 << c) != 0 && task.cursor[c] <= recovered[c])
        {
            run.stuck.store(true, SeqCst);
        }
        if !run.requested.load(SeqCst) && polls >= request_after {
            slot.doing("requestPartitions");
            // A released channel makes the request fail (the model skips it).
            let _ = run.gate.request_partitions(true);
            run.requested.store(true, SeqCst);
        }
        polls += 1;
        j.pause();
        slot.doing("pollNext");
        task.live_at_step = task.live();
        let next = match run.gate.poll_next() {
            Ok(Some(next)) => next,
            Ok(None) => {
                idle += 1;
                if idle > 64 {
                    slot.doing("pollNext: nothing available (sleep)");
                    thread::sleep(Duration::from_micros(20));
                } else {
                    thread::yield_now();
                }
                continue;
            }
            // A released channel's queue is drained: the task goes on with the others.
            Err(_) if (0..n).any(|c| run.released(c)) => continue,
            Err(e) => return Err(format!("pollNext: {e}")),
        };
        idle = 0;
        let c = next.channel_info.input_channel_idx as usize;
        let snapshot = next.buffer.snapshot();
        match snapshot.kind {
            BufferKind::CheckpointBarrier(cp) => {
                let cp = cp as u64;
                if cp != task.last_barrier[c] + 1 {
                    return Err(format!(
                        "channel {c}: barrier {cp} after barrier {}",
                        task.last_barrier[c]
                    ));
                }
                task.last_barrier[c] = cp;
                task.on_barrier(c, cp, slot);
            }
            // A stale RecoveryCheckpointBarrier (its checkpoint declined before this channel
            // started it): the network input ignores it.
            BufferKind::RecoveryCheckpointBarrier(_) => {}
            BufferKind::EndOfFetchedChannelState | BufferKind::EndOfInputChannelState => {
                return Err(format!("channel {c}: the gate handed out a sentinel"));
            }
            BufferKind::EndOfPartition => {
                return Err(format!("channel {c}: no upstream of the soak ends its partition"));
            }
            BufferKind::TimeoutableAlignedCheckpointBarrier(_) | BufferKind::EventAnnouncement(_) => {
                return Err(format!(
                    "channel {c}: no upstream of the soak takes aligned checkpoints"
                ));
            }
            BufferKind::Data | BufferKind::Event | BufferKind::EndOfOutputChannelState => {
                let spec = &run.specs[c];
                let Some((class, i)) = (run.naming.decode)(c as u8, &snapshot) else {
                    return Err(format!("channel {c}: an element of another channel: {snapshot:?}"));
                };
                let upstream_kind = |i: u64| spec.upstream.get(i as usize).map_or(BufferKind::Event, |u| u.kind().0);
                let (position, expected_kind) = match class {
                    Class::Recovered => (i, BufferKind::Data),
                    Class::Data => (spec.recovered + i, BufferKind::Data),
                    Class::Event => (spec.recovered + i, upstream_kind(i)),
                };
                if position != task.cursor[c] || snapshot.kind != expected_kind {
                    let what = if position < task.cursor[c] {
                        "duplicated or reordered"
                    } else {
                        "lost or reordered"
                    };
                    return Err(format!(
                        "channel {c}: {what}: expected element {} of {}, got {class:?} {i} ({snapshot:?})",
                        task.cursor[c], totals[c]
                    ));
                }
                if let (Class::Data | Class::Event, Some(up)) = (class, spec.upstream.get(i as usize))
                    && up.kind().0 != snapshot.kind
                {
                    return Err(format!("channel {c}: element {i} has the wrong kind: {snapshot:?}"));
                }
                task.cursor[c] += 1;
                // CheckpointedInputGate.handleEvent: the gate's tracker, which resumes every
                // channel after the last one's; the network input ignores the event.
                if snapshot.kind == BufferKind::EndOfOutputChannelState {
                    slot.doing("UpstreamRecoveryTracker.handleEndOfRecovery");
                    let tracker = run.gate.upstream_recovery_tracker();
                    tracker
                        .handle_end_of_recovery(next.channel_info, &SkipReleased(run))
                        .map_err(|e| format!("channel {c}: handleEndOfRecovery: {e}"))?;
                }
            }
        }
        slot.doing("hand the buffer to a recycler");
        if next.buffer.is_pooled() {
            to_recyclers[next_recycler % to_recyclers.len()]
                .send(next.buffer)
                .map_err(|_| "a recycler is gone".to_string())?;
            next_recycler += 1;
        } else {
            next.buffer.recycle_buffer().map_err(|e| e.to_string())?;
        }
        delivered += 1;
        run.delivered.store(delivered, SeqCst);
        slot.progressed();
    }
    // Released channels delivered a prefix: checked element by element above. The others
    // delivered everything (the loop condition).
    let (mut completed, mut declined, mut other) = (0, 0, 0);
    for s in &task.status {
        match s {
            Status::Completed => completed += 1,
            Status::Declined => declined += 1,
            _ => other += 1,
        }
    }
    let completed_at = task.status.iter().map(|s| *s == Status::Completed).collect();
    Ok(TaskOutcome {
        completed_at,
        delivered,
        cursor: task.cursor,
        started_at: task.started_at,
        during_recovery: task.during_recovery,
        completed,
        declined,
        other,
    })
}

/// The gate as the task's `UpstreamRecoveryTracker` resumes it: a released channel is skipped
/// (its `resumeConsumption` throws `checkState(!isReleased)`, and a task whose channel was
/// released is being cancelled), as the model skips it.
struct SkipReleased<'a>(&'a Run);

impl ResumableInputGate for SkipReleased<'_> {
    fn get_channel_infos(&self) -> Vec<InputChannelInfo> {
        self.0.gate.get_channel_infos()
    }

    fn resume_consumption(&self, channel_info: &InputChannelInfo) -> recovery_impl::Result<()> {
        let c = channel_info.input_channel_idx as usize;
        if self.0.released(c) {
            return Ok(());
        }
        match self.0.gate.resume_consumption(channel_info) {
            // Released meanwhile.
            Err(ChannelError::IllegalState(_)) if self.0.released(c) => Ok(()),
            outcome => outcome,
        }
    }
}

/// What each checkpoint persisted of a channel: data elements of that channel, in order, that
/// precede the checkpoint's barrier upstream and that the task consumed after the checkpoint
/// started.
fn check_persisted(run: &Run, writer: &ChannelStateWriter, outcome: &TaskOutcome) -> Result<(), String> {
    let snapshot = writer.snapshot();
    let n = run.specs.len();
    let mut per: BTreeMap<(i64, usize), Vec<BufferSnapshot>> = BTreeMap::new();
    for (cp, written) in &snapshot.persisted {
        for p in written {
            per.entry((*cp, p.channel.input_channel_idx as usize))
                .or_default()
                .push(p.buffer);
        }
    }
    // The spill of (cp, c) is the rest of c's recovered state, from where the channel's own part
    // stops: in order, after every recovered buffer persisted from the channel.
    for (cp, written) in &snapshot.spilled {
        let mut spilled: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for p in written {
            let c = p.channel.input_channel_idx as usize;
            match (run.naming.decode)(c as u8, &p.buffer) {
                Some((Class::Recovered, i)) => spilled.entry(c).or_default().push(i),
                _ => {
                    return Err(format!(
                        "checkpoint {cp}, channel {c}: spilled a non-recovered {:?}",
                        p.buffer
                    ));
                }
            }
        }
        for (c, slice) in spilled {
            let from_channel = per.get(&(*cp, c)).into_iter().flatten();
            let recovered = from_channel.filter_map(|b| match (run.naming.decode)(c as u8, b) {
                Some((Class::Recovered, i)) => Some(i),
                _ => None,
            });
            let first = slice[0];
            let recovered: Vec<u64> = recovered.collect();
            if slice != (first..run.specs[c].recovered).collect::<Vec<_>>() || recovered.iter().any(|&i| i >= first) {
                return Err(format!(
                    "checkpoint {cp}, channel {c}: spilled {slice:?}, not the rest after the channel's part"
                ));
            }
            // A completed checkpoint holds every recovered buffer the task had not consumed when
            // it started: the channel's part and the spill meet.
            let started = outcome.started_at.get(*cp as usize - 1).and_then(Option::as_ref);
            let completed = outcome.completed_at.get(*cp as usize - 1) == Some(&true);
            if let Some(started) = started.filter(|_| completed && !run.released(c)) {
                let whole: Vec<u64> = recovered.iter().chain(&slice).copied().collect();
                if whole != (started[c]..run.specs[c].recovered).collect::<Vec<_>>() {
                    return Err(format!(
                        "checkpoint {cp}, channel {c}: persisted {recovered:?} and spilled {slice:?}, not every recovered buffer from {}",
                        started[c]
                    ));
                }
            }
        }
    }
    for ((cp, c), buffers) in per {
        if c >= n || cp < 1 {
            return Err(format!("checkpoint {cp} persisted for channel {c}"));
        }
        let started = outcome
            .started_at
            .get(cp as usize - 1)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("checkpoint {cp} persisted on channel {c} but never started"))?;
        let barrier_at = run.barrier_at[c].lock().unwrap().get(cp as usize - 1).copied();
        let spec = &run.specs[c];
        let mut last = None;
        for b in &buffers {
            let (class, i) = (run.naming.decode)(c as u8, b)
                .ok_or_else(|| format!("checkpoint {cp}, channel {c}: persisted a foreign element {b:?}"))?;
            let position = match class {
                Class::Recovered => i,
                Class::Data => spec.recovered + i,
                Class::Event => return Err(format!("checkpoint {cp}, channel {c}: persisted an event {b:?}")),
            };
            if position >= spec.total() || last.is_some_and(|l| position <= l) {
                return Err(format!(
                    "checkpoint {cp}, channel {c}: persisted out of order or twice: {buffers:?}"
                ));
            }
            if position < started[c] {
                return Err(format!(
                    "checkpoint {cp}, channel {c}: persisted {class:?} {i}, consumed before the checkpoint started"
                ));
            }
            if class == Class::Data && barrier_at.is_some_and(|at| i >= at) {
                return Err(format!(
                    "checkpoint {cp}, channel {c}: persisted data {i}, written after the barrier (at {barrier_at:?})"
                ));
            }
            last = Some(position);
        }
    }
    Ok(())
}
