//! Validation, implementation to spec, of remote channels: real multi-threaded runs of
//! `recovery-impl` with a local and a remote channel record an event log, and the model must
//! accept every log. The threads are named after the model's: `io` (the drainer), `producer`
//! (checkpoint barriers), `netty-server` (the view reader: sends, `addCredit`), `netty-client`
//! (`onBuffer`, `AddCredit` writes), `task` (conversion or `requestPartitions`, polls through
//! the gate, `SingleCheckpointBarrierHandler`'s trigger), `recycler` (drops the buffers the task
//! consumed) and `canceler` (`releaseAllResources` at a random point). Corrupted logs are
//! rejected at the first step that cannot be placed.

mod common;

use common::runs::{handle_end_of_output, jitter, upstream_buffer};
use conformance::generate::SplitMix64;
use conformance::observation::{DataType, Item, Observation};
use conformance::projection::{IdMap, item_of, payload_of};
use conformance::validate::{Received, Step, steps, validate};
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::credit_based_sequence_numbering_view_reader::{
    BufferResponse, CreditBasedSequenceNumberingViewReader,
};
use recovery_impl::event_log::{Event, EventLog, Recorded, Recorder, set_thread_recorder};
use recovery_impl::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use recovery_impl::input_channel_info::InputChannelInfo;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::netty_message::ResumeConsumption;
use recovery_impl::recoverable_input_channel::ChannelContext;
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::{BufferId, BufferKind, ChannelError, NetworkBuffer, RecoverableInputChannel};
use recovery_model::config::{ChannelKind, Delivery, ModelConfig, Upstream, local, remote};
use recovery_model::state::Payload;
use recovery_model::{Action, RecoveryModel, Variant};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::channel;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use Upstream::{Data as D, EndOfOutputChannelState as O};

/// The drainer's path (preset `tiny` with release): a local channel, and a remote channel with
/// one exclusive buffer and no floating one (see `a_drainer_with_a_floating_buffer`), released
/// at a random point in half of the runs.
fn drainer() -> ModelConfig {
    ModelConfig {
        channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 0)],
        checkpoints: 1,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: true,
        release: true,
        faults: false,
        // A release is two parts in the implementation, as in Flink: the log shows polls between.
        release_step: true,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    }
}

/// The drainer waiting for its buffer: a remote channel with two recovered buffers and one
/// exclusive buffer, so that the drainer parks in `requestBufferBlocking` until the consumer
/// recycles the first (with releases, as `drainer`).
fn drainer_waits() -> ModelConfig {
    ModelConfig {
        channels: vec![local(1, &[O, D]), remote(2, &[O, D], 1, 0)],
        ..drainer()
    }
}

/// PR3's conversion (preset `conversion` with a second data buffer upstream of the remote
/// channel): the floating buffer's listener, its announcement, and an exclusive recycle handing
/// it back.
fn conversion() -> ModelConfig {
    ModelConfig {
        channels: vec![local(1, &[O, D]), remote(1, &[O, D, D], 1, 1)],
        checkpoints: 1,
        delivery: Delivery::Conversion,
        insert_recovery_barriers: true,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    }
}

/// What the Netty client wrote to the server: `AddCredit`, or a `ResumeConsumption` frame.
enum ClientMessage {
    AddCredit(i32),
    ResumeConsumption(Vec<u8>),
}

struct Run {
    log: Vec<Recorded>,
    subpartitions: Vec<usize>,
}

fn recovered_payload(c: u8, i: u8) -> u64 {
    payload_of(c, &Item::Known(Payload::Recovered(i)))
}

/// A thread named after a model thread, with the log as its recorder.
fn spawn(name: &str, log: &Arc<EventLog>, body: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    let recorder = Arc::clone(log) as Arc<dyn Recorder>;
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            set_thread_recorder(Some(recorder));
            body();
        })
        .expect("spawn a thread of the run")
}

/// The remote channel at index `c` once the gate holds it (after the conversion).
fn remote_of(gate: &SingleInputGate, c: usize) -> Option<Arc<RemoteInputChannel>> {
    gate.channel(c).and_then(|h| h.as_remote().cloned())
}

fn physical_of(gate: &SingleInputGate, c: usize) -> Option<Arc<dyn RecoverableInputChannel>> {
    gate.channel(c).and_then(|h| h.as_recoverable())
}

fn recovered_buffer(c: u8, i: u8) -> NetworkBuffer {
    let id = BufferId(60_000 + 100 * c as u32 + i as u32);
    NetworkBuffer::unpooled(id, BufferKind::Data, recovered_payload(c, i))
}

/// One run on real threads (see the module documentation). The pools are built as the
/// conformance driver builds them, so that segment ids name the model's buffers.
fn run(cfg: &ModelConfig, seed: u64) -> Run {
    let log = EventLog::new();
    let writer = Arc::new(ChannelStateWriter::new());
    let gate = SingleInputGate::new(0, LocalBufferPool::new(NetworkBufferPool::new(0), 0).unwrap());
    let mut handles = Vec::new();
    let mut partitions = Vec::new();
    for (c, cc) in cfg.channels.iter().enumerate() {
        let c8 = c as u8;
        let ids = IdMap::new(c8, cc.floating, cc.exclusive);
        let global = NetworkBufferPool::with_first_id(ids.base, (cc.floating + cc.exclusive) as u32);
        let pool = LocalBufferPool::new(Arc::clone(&global), cc.floating as usize).unwrap();
        let partition = ResultSubpartition::new();
        for (i, u) in cc.upstream.iter().enumerate() {
            partition.add(upstream_buffer(c8, i as u8, *u)).unwrap();
        }
        let context = ChannelContext {
            channel_info: InputChannelInfo {
                gate_idx: 0,
                input_channel_idx: c as u32,
            },
            gate: Arc::clone(gate.channels_with_data()),
            global_pool: global,
            buffer_pool: pool,
            writer: Arc::clone(&writer),
            network_buffers_per_channel: cc.exclusive as usize,
            flink_fixes: conformance::impl_driver::flink_fixes(cfg),
        };
        let handle = match (cfg.delivery, cc.kind) {
            (delivery @ (Delivery::Drainer | Delivery::NoRecovery), ChannelKind::Local) => {
                let channel = LocalInputChannel::new(context, Arc::clone(&partition), delivery.needs_recovery());
                channel.setup().unwrap();
                InputChannelHandle::Local(channel)
            }
            (delivery @ (Delivery::Drainer | Delivery::NoRecovery), ChannelKind::Remote) => {
                let channel = RemoteInputChannel::new(context, delivery.needs_recovery());
                channel.setup().unwrap();
                InputChannelHandle::Remote(channel)
            }
            // What the drainer read before the task converts: heap buffers and the legacy
            // EndOfInputChannelStateEvent (the model leaves this implicit; nothing is recorded).
            (Delivery::Conversion, kind) => {
                let kind = match kind {
                    ChannelKind::Local => RecoveredChannelKind::Local {
                        partition: Arc::clone(&partition),
                    },
                    ChannelKind::Remote => RecoveredChannelKind::Remote,
                };
                let recovered = RecoveredInputChannel::new(context, kind);
                for i in 0..cc.recovered {
                    recovered.on_recovered_state_buffer(recovered_buffer(c8, i)).unwrap();
                }
                recovered.finish_read_recovered_state().unwrap();
                InputChannelHandle::Recovered(recovered)
            }
            (Delivery::Legacy | Delivery::Migration, _) => {
                unimplemented!("the validated runs do not use the RecoveredInputChannel paths")
            }
        };
        handles.push(handle);
        partitions.push(partition);
    }
    gate.set_input_channels(handles);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();

    // IO: the drainer's program (drainer delivery only). Its deliveries and the recovery
    // trigger's insertions take the drainer's lock, as the model's do.
    let io_done = Arc::new(AtomicBool::new(cfg.delivery == Delivery::Conversion));
    let drainer = FetchedChannelStateDrainer::new(cfg.channels.iter().map(|cc| cc.recovered as usize).collect());
    if cfg.delivery == Delivery::Drainer {
        let (gate, cfg, done, drainer) = (Arc::clone(&gate), cfg.clone(), Arc::clone(&io_done), drainer.clone());
        threads.push(spawn("io", &log, move || {
            let mut rng = SplitMix64::new(seed ^ 0x10);
            let channels: Vec<_> = (0..cfg.channels.len())
                .map(|c| gate.channel(c).unwrap().as_recoverable().unwrap())
                .collect();
            for (c, ch) in channels.iter().enumerate() {
                for i in 0..cfg.channels[c].recovered {
                    jitter(&mut rng);
                    // A local channel's recovered data is in heap memory.
                    if cfg.channels[c].kind == ChannelKind::Local {
                        drainer.deliver(c, &**ch, recovered_buffer(c as u8, i)).unwrap();
                        continue;
                    }
                    match ch.request_recovery_buffer_blocking() {
                        Ok(buffer) => {
                            let buffer = buffer.fill(BufferKind::Data, recovered_payload(c as u8, i));
                            drainer.deliver(c, &**ch, buffer).unwrap();
                        }
                        // A released channel: the model's drainer goes on, pushing into it.
                        Err(ChannelError::Released(_)) => {}
                        Err(e) => panic!("requestBufferBlocking: {e}"),
                    }
                }
            }
            for ch in &channels {
                ch.finish_recovered_buffer_delivery().unwrap();
            }
            done.store(true, Ordering::SeqCst);
        }));
    }

    // Producer: the upstream takes checkpoint 1 and writes its priority barrier.
    let producer_partitions = partitions.clone();
    threads.push(spawn("producer", &log, move || {
        let mut rng = SplitMix64::new(seed ^ 0x20);
        for p in &producer_partitions {
            jitter(&mut rng);
            p.add(NetworkBuffer::event(BufferKind::CheckpointBarrier(1))).unwrap();
        }
    }));

    // The Netty wire in both directions.
    let (responses, wire) = channel::<(usize, BufferResponse)>();
    let (credits, add_credits) = channel::<(usize, ClientMessage)>();

    // Netty server: a view reader per partition request; sends what credit allows.
    let (server_gate, server_partitions, server_stop) = (Arc::clone(&gate), partitions.clone(), Arc::clone(&stop));
    threads.push(spawn("netty-server", &log, move || {
        let mut rng = SplitMix64::new(seed ^ 0x40);
        let mut readers: Vec<Option<CreditBasedSequenceNumberingViewReader>> =
            server_partitions.iter().map(|_| None).collect();
        while !server_stop.load(Ordering::SeqCst) {
            jitter(&mut rng);
            for (c, reader) in readers.iter_mut().enumerate() {
                if reader.is_none()
                    && let Some(request) = remote_of(&server_gate, c).and_then(|r| r.partition_request())
                {
                    let subpartition = Arc::clone(&server_partitions[c]);
                    *reader = Some(CreditBasedSequenceNumberingViewReader::new(&request, subpartition).unwrap());
                }
            }
            while let Ok((c, message)) = add_credits.try_recv() {
                // Netty delivers a connection's messages in order: a credit sent after the
                // partition request finds its reader, even if the request was made since the
                // loop above looked.
                if readers[c].is_none() {
                    let request = remote_of(&server_gate, c)
                        .and_then(|r| r.partition_request())
                        .expect("credit for a requested partition");
                    let subpartition = Arc::clone(&server_partitions[c]);
                    readers[c] = Some(CreditBasedSequenceNumberingViewReader::new(&request, subpartition).unwrap());
                }
                let reader = readers[c].as_mut().expect("a reader");
                match message {
                    ClientMessage::AddCredit(credit) => reader.add_credit(credit),
                    // PartitionRequestQueue.resumeConsumption.
                    ClientMessage::ResumeConsumption(frame) => {
                        ResumeConsumption::decode(&frame).expect("a ResumeConsumption frame");
                        reader.resume_consumption().expect("a blocked subpartition resumes");
                    }
                }
            }
            for (c, reader) in readers.iter_mut().enumerate() {
                if let Some(reader) = reader
                    && let Some(response) = reader.get_next_buffer().expect("the reader respects credit")
                {
                    let _ = responses.send((c, response));
                }
            }
        }
    }));

    // Netty client: decodes responses into buffers from requestBuffer(), onBuffer, and writes
    // AddCredit(getAndResetUnannouncedCredit()) once credit was announced.
    let (client_gate, client_stop, channels) = (Arc::clone(&gate), Arc::clone(&stop), cfg.channels.len());
    threads.push(spawn("netty-client", &log, move || {
        let mut rng = SplitMix64::new(seed ^ 0x50);
        while !client_stop.load(Ordering::SeqCst) {
            jitter(&mut rng);
            while let Ok((c, response)) = wire.try_recv() {
                let remote = remote_of(&client_gate, c).expect("a response for a remote channel");
                // CreditBasedPartitionRequestClientHandler drops a released channel's messages.
                if remote.is_released() {
                    response.buffer.recycle_buffer().unwrap();
                    continue;
                }
                let buffer = if response.buffer.is_buffer() {
                    match remote.request_buffer() {
                        Some(target) => {
                            let (kind, payload) = (response.buffer.kind(), response.buffer.payload());
                            response.buffer.recycle_buffer().unwrap();
                            target.fill(kind, payload)
                        }
                        // Released meanwhile (onBuffer discards it), or credit over-announced
                        // (the model rejects the log).
                        None => response.buffer,
                    }
                } else {
                    response.buffer
                };
                // An error is in the log, where the model judges it.
                let _ = remote.on_buffer(buffer, response.sequence_number, response.backlog);
            }
            for c in 0..channels {
                // The ResumeConsumption the channel queued (dropped once it is released).
                if let Some(remote) = remote_of(&client_gate, c)
                    && remote.resume_consumption_queued()
                    && let Some(message) = remote.take_resume_consumption()
                {
                    let _ = credits.send((c, ClientMessage::ResumeConsumption(message.encode())));
                }
                if let Some(remote) = remote_of(&client_gate, c)
                    && !remote.is_released()
                    && remote.unannounced_credit() > 0
                {
                    let credit = remote.get_and_reset_unannounced_credit();
                    if credit > 0 && !remote.is_released() {
                        let _ = credits.send((c, ClientMessage::AddCredit(credit)));
                    }
                }
            }
        }
    }));

    // Recycler: drops the network buffers the task consumed.
    let (held, to_recycle) = channel::<NetworkBuffer>();
    threads.push(spawn("recycler", &log, move || {
        let mut rng = SplitMix64::new(seed ^ 0x60);
        for buffer in to_recycle {
            jitter(&mut rng);
            buffer.recycle_buffer().unwrap();
        }
    }));

    // Canceler: in about half of the runs of a configuration with release, releases the remote
    // channel, the local one, or both (local first) at a random point.
    // A channel is released only once the partitions were requested: Flink's gate stops
    // requesting at a released local channel (`checkState(!isReleased)`), and the model runs
    // no `requestPartitions` mail once a channel is released (the task is being cancelled).
    let partitions_requested = Arc::new(AtomicBool::new(false));
    // Channels whose release returned: they deliver nothing more.
    let released_done = Arc::new(AtomicU64::new(0));
    let mut rng = SplitMix64::new(seed ^ 0x70);
    if cfg.release && rng.below(2) == 0 {
        let requested = Arc::clone(&partitions_requested);
        let done = Arc::clone(&released_done);
        let delay = Duration::from_micros(rng.below(3_000) as u64);
        let canceler_gate = Arc::clone(&gate);
        let of_kind = |kind| cfg.channels.iter().position(|cc| cc.kind == kind).unwrap();
        let targets = match rng.below(3) {
            0 => vec![of_kind(ChannelKind::Remote)],
            1 => vec![of_kind(ChannelKind::Local)],
            _ => vec![of_kind(ChannelKind::Local), of_kind(ChannelKind::Remote)],
        };
        threads.push(spawn("canceler", &log, move || {
            thread::sleep(delay);
            for c in targets {
                while !requested.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_micros(50));
                }
                let channel = physical_of(&canceler_gate, c).expect("a physical channel");
                channel.release_all_resources().unwrap();
                done.fetch_or(1 << c, Ordering::SeqCst);
            }
        }));
    }

    // Task: converts (or requests partitions at a random point), polls the gate, handles the
    // barrier as SingleCheckpointBarrierHandler does, until every channel delivered everything
    // upstream or is released.
    let ids: Vec<IdMap> = (cfg.channels.iter().enumerate())
        .map(|(c, cc)| IdMap::new(c as u8, cc.floating, cc.exclusive))
        .collect();
    let expected: Vec<usize> = (cfg.channels.iter())
        .map(|cc| cc.upstream.len() + cfg.checkpoints as usize)
        .collect();
    let (task_gate, conversion) = (Arc::clone(&gate), cfg.delivery == Delivery::Conversion);
    let task_drainer = drainer.clone();
    let task_requested = Arc::clone(&partitions_requested);
    let task_released_done = Arc::clone(&released_done);
    let checkpoints = cfg.checkpoints as usize;
    let task = spawn("task", &log, move || {
        let mut rng = SplitMix64::new(seed ^ 0x30);
        let request_after = if conversion { 0 } else { rng.below(4) };
        let (mut polls, mut requested) = (0, false);
        let (mut triggered, mut ended) = (false, false);
        let channels = ids.len();
        let (mut live, mut seen) = (vec![0; channels], vec![false; channels]);
        let deadline = Instant::now() + Duration::from_secs(10);
        let released = |gate: &SingleInputGate, c: usize| physical_of(gate, c).is_some_and(|r| r.is_released());
        let any_released = |gate: &SingleInputGate| (0..channels).any(|c| released(gate, c));
        // A released channel that never delivered its end-of-output event leaves the tracker
        // waiting for good: every other channel is done once its own event and its barriers are
        // in (its upstream stays blocked behind them).
        let (mut eoo, mut stuck) = (vec![false; channels], false);
        let stuck_expected = 1 + checkpoints;
        let done = |gate: &SingleInputGate, live: &[usize], eoo: &[bool], stuck: bool| {
            (0..channels)
                .all(|c| live[c] >= expected[c] || released(gate, c) || (stuck && eoo[c] && live[c] >= stuck_expected))
        };
        while !done(&task_gate, &live, &eoo, stuck) || !io_done.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the run did not finish");
            let released_done = task_released_done.load(Ordering::SeqCst);
            if !task_gate.upstream_recovery_tracker().all_channels_recovered()
                && (0..channels).any(|c| released_done & (1 << c) != 0 && !eoo[c])
            {
                stuck = true;
            }
            if !requested && polls >= request_after {
                // A released channel makes the request fail (the model skips it).
                let _ = task_gate.request_partitions(true);
                requested = true;
                task_requested.store(true, Ordering::SeqCst);
            }
            polls += 1;
            jitter(&mut rng);
            let next = match task_gate.poll_next() {
                Ok(Some(next)) => next,
                Ok(None) => continue,
                // A released channel's queue is drained: the task goes on with the others.
                Err(_) if any_released(&task_gate) => continue,
                Err(e) => panic!("pollNext: {e}"),
            };
            let c = next.channel_info.input_channel_idx as usize;
            let next_channel = next.channel_info;
            let item = item_of(c as u8, &next.buffer.snapshot());
            if next.buffer.is_pooled() {
                let _ = held.send(next.buffer);
            } else {
                next.buffer.recycle_buffer().unwrap();
            }
            if matches!(
                item,
                Item::Known(Payload::Data(_) | Payload::Event(_) | Payload::EndOfOutput(_) | Payload::Barrier(_))
            ) {
                live[c] += 1;
            }
            if let Item::Known(Payload::EndOfOutput(_)) = item {
                eoo[c] = true;
                handle_end_of_output(&task_gate, next_channel);
            }
            if let Item::Known(Payload::Barrier(cp)) = item {
                seen[c] = true;
                let all: Vec<_> = (0..channels).map(|c| task_gate.channel(c).unwrap()).collect();
                if !triggered {
                    triggered = true;
                    // The recovery trigger inserts on every channel, then the gate starts the
                    // checkpoint channel by channel until one throws.
                    let recoverable: Vec<_> = all.iter().map(|ch| ch.as_recoverable().unwrap()).collect();
                    let refs: Vec<&dyn RecoverableInputChannel> = recoverable.iter().map(|ch| &**ch).collect();
                    task_drainer.snapshot_and_insert_barriers(&refs, cp as i64).unwrap();
                    for ch in &all {
                        if ch.checkpoint_started(cp as i64).is_err() {
                            ended = true;
                            all.iter().for_each(|ch| ch.checkpoint_stopped(cp as i64));
                            break;
                        }
                    }
                }
                // Complete once every live channel's barrier is in.
                if !ended && (0..channels).all(|c| seen[c] || released(&task_gate, c)) {
                    ended = true;
                    all.iter().for_each(|ch| ch.checkpoint_stopped(cp as i64));
                }
            }
        }
        drop(held);
    });
    task.join().expect("the task thread panicked");
    // Let the Netty threads serve what is in flight, then stop them.
    thread::sleep(Duration::from_millis(2));
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("a thread of the run panicked");
    }
    Run {
        log: log.events(),
        subpartitions: partitions.iter().map(|p| p.event_id()).collect(),
    }
}

fn listing(steps: &[Step]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("  {:>3}. {s}\n", i + 1))
        .collect()
}

/// Runs `rounds` seeds of `cfg`, asserts that the model accepts every log, and returns the
/// action kinds the logs contained (with how many steps of each).
fn accept_runs(cfg: ModelConfig, rounds: u64) -> BTreeMap<&'static str, usize> {
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    let mut kinds = BTreeMap::new();
    let (mut exact, mut interleavings) = (0, std::collections::HashSet::new());
    let mut compound = 0;
    for seed in 0..rounds {
        let r = run(&m.cfg, seed);
        let steps = steps(&m, &r.log, &r.subpartitions).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let placed = validate(&m, &steps, 1)
            .or_else(|_| validate(&m, &steps, 4))
            .unwrap_or_else(|rejection| panic!("seed {seed}: {rejection}\nlog:\n{}", listing(&steps)));
        let logged: Vec<Action> = steps.iter().map(|s| s.action).collect();
        exact += usize::from(placed == logged);
        compound += usize::from(steps.iter().any(|s| s.span > 0));
        interleavings.insert(logged);
        for s in &steps {
            *kinds.entry(s.action.method()).or_insert(0) += 1;
        }
    }
    println!(
        "{rounds} runs: {} accepted, {exact} of them in exactly the recorded order (the rest with a \
         compound step placed inside its span or a barrier deferred), {compound} with a compound \
         step spanning other threads' steps, {} distinct interleavings; kinds: {kinds:?}",
        rounds,
        interleavings.len()
    );
    assert!(interleavings.len() > 1, "the runs race");
    kinds
}

fn rounds() -> u64 {
    // VALIDATE_ROUNDS=3000 for a longer run (docs/conformance.md reports one).
    std::env::var("VALIDATE_ROUNDS").map_or(40, |r| r.parse().expect("a number"))
}

#[test]
fn logs_of_remote_runs_with_the_drainer_and_releases_are_accepted_by_the_model() {
    let kinds = accept_runs(drainer(), rounds());
    for kind in [
        "onRecoveredStateBuffer",
        "finishRecoveredBufferDelivery",
        "releaseAllResources",
        "onBuffer",
    ] {
        assert!(kinds.contains_key(kind), "{kind} missing: {kinds:?}");
    }
}

#[test]
fn logs_of_remote_runs_whose_drainer_waits_for_its_buffer_are_accepted_by_the_model() {
    let kinds = accept_runs(drainer_waits(), rounds());
    for kind in ["requestBufferBlocking", "onRecoveredStateBuffer", "recycle"] {
        assert!(kinds.contains_key(kind), "{kind} missing: {kinds:?}");
    }
}

#[test]
fn logs_of_remote_runs_with_the_conversion_are_accepted_by_the_model() {
    let kinds = accept_runs(conversion(), rounds());
    for kind in [
        "convertRecoveredInputChannels",
        "recycleFloatingBuffer",
        "notifyBufferAvailable",
    ] {
        assert!(kinds.contains_key(kind), "{kind} missing: {kinds:?}");
    }
}

/// The accepted logs of the three configurations contain every action kind of the model but
/// the gate's `close`, the upstream failures and writes during the run: the runs release
/// channels one by one and do not close the gate, and their upstreams write everything before
/// the run and do not fail, nor take aligned checkpoints (these are replayed against the
/// implementation, not validated from its logs); and the coordinator's abort, which is the
/// JobManager's and takes one checkpoint more than the runs do; and the priority flag's writes
/// as steps of their own, which only a configuration with `priority_notify_step` makes.
#[test]
fn the_accepted_remote_logs_cover_every_action_kind() {
    let mut all = BTreeSet::new();
    for cfg in [drainer(), drainer_waits(), conversion()] {
        all.extend(accept_runs(cfg, rounds()).into_keys());
    }
    let missing: Vec<_> = (Action::KINDS.iter())
        .filter(|k| !all.contains(*k) && !["close", "add", "onError", "releasePartition"].contains(*k))
        .filter(|k| {
            ![
                "processTimeoutableCheckpointBarrier",
                "alignedCheckpointTimeout",
                "alignedBarrierTimeout",
            ]
            .contains(*k)
        })
        .filter(|k| **k != "abortPendingCheckpoint")
        // Every logged channel has exclusive buffers: no reader announces its backlog.
        .filter(|k| **k != "announceBacklog")
        // No logged channel splits the priority flag's writes off (`priority_notify_step`,
        // validated by soak_log.rs).
        .filter(|k| !["notifyPriorityEvent", "pullPriorityFromSubpartitionView"].contains(*k))
        .filter(|k| !Action::MODEL_ONLY_KINDS.contains(*k))
        .collect();
    println!(
        "{} of {} action kinds in the accepted logs",
        all.len(),
        Action::KINDS.len()
    );
    assert!(missing.is_empty(), "kinds never logged: {missing:?}");
}

// ---------------------------------------------------------------------------------------------
// Corrupted logs
// ---------------------------------------------------------------------------------------------

/// A log of a real run of `cfg` that the model accepts in its recorded order and that
/// satisfies `wanted`.
fn accepted_log(cfg: ModelConfig, wanted: impl Fn(&[Step]) -> bool) -> (RecoveryModel, Vec<Step>) {
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    for seed in 100..400 {
        let r = run(&m.cfg, seed);
        let steps = steps(&m, &r.log, &r.subpartitions).unwrap();
        if wanted(&steps) && validate(&m, &steps, 1).is_ok() {
            return (m, steps);
        }
    }
    panic!("no run's log was accepted in its recorded order");
}

/// Where the Netty client's `onBuffer` took `item` from the wire.
fn on_buffer_of(steps: &[Step], item: &Item) -> usize {
    steps
        .iter()
        .position(|s| matches!(&s.received, Some(Received::Response(w)) if w.item == *item))
        .unwrap_or_else(|| panic!("onBuffer of {item} logged"))
}

/// The remote channel of both configurations.
const REMOTE: u8 = 1;

/// Where the task polled `item` from the remote channel.
fn poll_of(steps: &[Step], item: &Item) -> usize {
    steps
        .iter()
        .position(|s| {
            s.action == Action::GetNextBuffer { channel: REMOTE }
                && matches!(&s.observation, Observation::Polled { item: i, .. } if i == item)
        })
        .unwrap_or_else(|| panic!("poll of {item} logged"))
}

#[test]
fn a_log_with_a_dropped_on_buffer_is_rejected_at_the_next_on_buffer() {
    let (d1, d2) = (Item::Known(Payload::Data(1)), Item::Known(Payload::Data(2)));
    // A run where d2 arrives before the task polls d1 (so the next step that needs d1 is the
    // onBuffer of d2), the Netty client doing nothing in between but d1's onSenderBacklog.
    let backlog = Action::OnSenderBacklog { channel: REMOTE };
    let (m, mut log) = accepted_log(conversion(), |steps| {
        let (a, b) = (on_buffer_of(steps, &d1), on_buffer_of(steps, &d2));
        let client: Vec<_> = steps[a + 1..b].iter().filter(|s| s.thread == "netty-client").collect();
        b < poll_of(steps, &d1) && client.len() == 1 && client[0].action == backlog
    });
    // Drop the whole onBuffer of d1: its enqueue and its onSenderBacklog.
    let (dropped, next) = (on_buffer_of(&log, &d1), on_buffer_of(&log, &d2));
    let its_backlog = (dropped + 1..next).find(|i| log[*i].action == backlog).unwrap();
    log.remove(its_backlog);
    log.remove(dropped);
    let rejection = validate(&m, &log, 4).expect_err("an onBuffer is missing");
    assert_eq!(rejection.index, next - 2, "{rejection}");
    assert_eq!(rejection.step.action, Action::OnBuffer { channel: REMOTE });
    assert!(
        rejection
            .reason
            .contains("the model's next BufferResponse is {\"item\":\"d1\""),
        "{rejection}"
    );
}

#[test]
fn a_log_with_a_wrong_credit_in_send_add_credit_is_rejected_there() {
    let (m, mut log) = accepted_log(conversion(), |steps| {
        steps
            .iter()
            .any(|s| matches!(s.observation, Observation::CreditSent { credit: Some(_) }))
    });
    let at = log
        .iter()
        .position(|s| matches!(s.observation, Observation::CreditSent { credit: Some(_) }))
        .unwrap();
    let Observation::CreditSent { credit: Some(k) } = log[at].observation else {
        unreachable!()
    };
    log[at].observation = Observation::CreditSent { credit: Some(k + 1) };
    let rejection = validate(&m, &log, 4).expect_err("the credit is wrong");
    assert_eq!(rejection.index, at, "{rejection}");
    assert_eq!(rejection.step.action, Action::SendAddCredit { channel: REMOTE });
    assert!(
        rejection.reason.contains(&format!(
            "the model predicts {{\"kind\":\"credit-sent\",\"credit\":{k}}}"
        )),
        "{rejection}"
    );
}

/// Where the task announced credit after `enableNotify`, and its next step.
fn task_announcement(steps: &[Step]) -> Option<(usize, usize)> {
    let at = steps.iter().position(|s| {
        matches!(
            s.action,
            Action::NotifyBufferAvailable {
                thread: recovery_model::Thread::Task,
                ..
            }
        )
    })?;
    let next = at + 1 + steps[at + 1..].iter().position(|s| s.thread == "task")?;
    Some((at, next))
}

#[test]
fn a_log_with_a_dropped_credit_announcement_is_rejected_at_the_next_step_of_that_thread() {
    // A run where no AddCredit is written between the task's announcement and its next step
    // (that write needs the announced credit and would be rejected first).
    let (m, mut log) = accepted_log(conversion(), |steps| {
        task_announcement(steps).is_some_and(|(at, next)| {
            steps[at..next]
                .iter()
                .all(|s| !matches!(s.action, Action::SendAddCredit { .. }))
        })
    });
    let (at, next) = task_announcement(&log).unwrap();
    log.remove(at);
    let rejection = validate(&m, &log, 4).expect_err("an announcement is missing");
    // The model's task must announce before it does anything else.
    assert_eq!(rejection.index, next - 1, "{rejection}");
    assert!(rejection.reason.contains("is not enabled"), "{rejection}");
}

/// A log as a real run records it (the interleaving occurs in about 1 of 200 drainer runs):
/// the drainer takes x0 for r0, the task polls the barrier and inserts `RecoveryCheckpointBarrier`
/// 1, then the drainer appends r0 behind it. The model's take (`requestBufferBlocking`) and
/// append (`onRecoveredStateBuffer`) are two steps, as in Flink's drainer, so the log is accepted
/// in the order it happened: r0 lands behind the recovery barrier and is not persisted.
#[test]
fn a_push_split_around_a_recovery_barrier_is_two_steps() {
    let cfg = ModelConfig {
        channels: vec![remote(1, &[O, D], 1, 0)],
        checkpoints: 1,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: true,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    };
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    let channel = InputChannelInfo {
        gate_idx: 0,
        input_channel_idx: 0,
    };
    let x0 = IdMap::new(0, 0, 1).id(recovery_model::state::NetBuf::Exclusive(0));
    let barrier = NetworkBuffer::event(BufferKind::CheckpointBarrier(1)).snapshot();
    let r0 = recovered_buffer(0, 0).fill(BufferKind::Data, recovered_payload(0, 0));
    let r0 = recovery_impl::BufferSnapshot {
        id: x0,
        ..r0.snapshot()
    };
    let subpartition = 7;
    let event = |thread: &str, event| Recorded {
        thread: thread.into(),
        event,
    };
    let log = vec![
        event("task", Event::RequestPartitions { gate: 0 }),
        event(
            "producer",
            Event::Add {
                subpartition,
                buffer: barrier,
            },
        ),
        event(
            "netty-server",
            Event::PollBuffer {
                subpartition,
                buffer: barrier,
                sequence_number: 0,
                backlog: 1,
            },
        ),
        event(
            "netty-client",
            Event::OnBuffer {
                channel,
                buffer: barrier,
                sequence_number: 0,
                backlog: 1,
                outcome: Ok(true),
            },
        ),
        event(
            "netty-client",
            Event::RequestFloatingBuffers {
                channel,
                num_required: 2,
                announce: 0,
            },
        ),
        event(
            "io",
            Event::RequestBufferBlocking {
                channel,
                outcome: Ok(x0),
            },
        ),
        event(
            "task",
            Event::GetNextBuffer {
                channel,
                buffer: barrier,
                sequence_number: 0,
            },
        ),
        event(
            "task",
            Event::PollNext {
                channel,
                buffer: barrier,
            },
        ),
        event(
            "task",
            Event::InsertRecoveryCheckpointBarrierIfInRecovery {
                channel,
                checkpoint_id: 1,
            },
        ),
        event(
            "io",
            Event::OnRecoveredStateBuffer {
                channel,
                buffer: r0,
                outcome: Ok(true),
            },
        ),
        event(
            "task",
            Event::CheckpointStarted {
                channel,
                checkpoint_id: 1,
                outcome: Ok(Vec::new()),
            },
        ),
    ];
    let steps = steps(&m, &log, &[subpartition]).unwrap();
    let at = |action: Action| steps.iter().position(|s| s.action == action).unwrap();
    let take = at(Action::RequestBufferBlocking { channel: 0 });
    let append = at(Action::OnRecoveredStateBuffer { channel: 0 });
    let insert = at(Action::InsertRecoveryCheckpointBarrier { channel: 0, cp: 1 });
    assert!(take < insert && insert < append, "{}", listing(&steps));
    assert_eq!((steps[take].span, steps[append].span), (0, 0), "{}", listing(&steps));
    let placed = validate(&m, &steps, 1).unwrap_or_else(|r| panic!("{r}"));
    assert_eq!(placed, steps.iter().map(|s| s.action).collect::<Vec<_>>());
    // The append placed before the insertion (where a one-step push would have it) puts r0
    // before the recovery barrier: the channel's checkpointStarted then persists it, which
    // the log's does not.
    let mut early = steps.clone();
    let moved = early.remove(append);
    early.insert(insert, moved);
    let rejection = validate(&m, &early, 1).expect_err("r0 is not before the recovery barrier");
    assert_eq!(rejection.step.action, Action::CheckpointStarted { channel: 0, cp: 1 });
    assert!(rejection.reason.contains(r#""buffers":["r0"]"#), "{rejection}");
}

#[test]
fn a_log_with_an_element_in_the_wrong_buffer_is_rejected_where_it_was_handed_out() {
    // The drainer lent the exclusive buffer x0 to the recovered r0; claim the task got it in
    // another buffer.
    let (m, mut log) = accepted_log(drainer(), |steps| {
        steps.iter().any(|s| {
            s.action == Action::GetNextBuffer { channel: REMOTE }
                && s.observation
                    == Observation::Polled {
                        item: Item::Known(Payload::Recovered(0)),
                        seq: i32::MIN,
                        next: DataType::None,
                    }
        })
    });
    let at = poll_of(&log, &Item::Known(Payload::Recovered(0)));
    assert!(matches!(log[at].buffer, Some(Some(_))), "{}", log[at]);
    log[at].buffer = Some(None);
    let rejection = validate(&m, &log, 4).expect_err("the buffer is wrong");
    assert_eq!(rejection.index, at, "{rejection}");
    assert!(
        rejection
            .reason
            .contains("the model has the element in x0, the log in no channel buffer"),
        "{rejection}"
    );
}

/// The drainer of a remote channel with a floating buffer: blocked on `upstreamReady`, it can
/// take a buffer between `onBuffer`'s enqueue (which opens the latch) and `onSenderBacklog`'s
/// `requestFloatingBuffers`, lending the exclusive buffer while the floating one is queued and
/// the manager waits for another. The model has `onSenderBacklog` as a step of its own for
/// this: before it was split from `onBuffer`, a tenth of these logs were rejected.
#[test]
fn logs_of_a_drainer_with_a_floating_buffer_are_accepted() {
    let cfg = ModelConfig {
        channels: vec![local(1, &[O, D]), remote(1, &[O, D], 1, 1)],
        checkpoints: 1,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: true,
        release: false,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    };
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    let kinds = accept_runs(m.cfg, rounds());
    assert!(kinds.contains_key("onSenderBacklog"), "{kinds:?}");
}
