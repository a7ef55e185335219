//! `StreamTask` on real threads over real gates: recovered local channels, the channel-IO thread
//! reading their state, the mailbox loop, and an operator reading one or two inputs. The task
//! must finish with every element delivered once, each channel's recovered buffers before its
//! live records; with a select-first operator, input 0 wholly before input 1. Also
//! `getChannel(InputChannelInfo)` on a union gate.
//!
//! The failure paths, inside Flink's `Task`: a state read that throws fails `invoke` and the
//! task with the read's cause, with the flag off (`handleAsyncException` → `failExternally` →
//! the canceler's `cancel()` → `ensureNotCanceled()`) and on (the recovery future fails and
//! `get()` rethrows), and once the task released its resources every buffer is back in its pool.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::executor::{SingleThreadExecutor, ThreadPerTaskExecutor};
use recovery_impl::input_gate::{
    IndexedInputGate, InputElement, InputElementKind, SequentialChannelStateReader, UnionInputGate,
};
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::stream_input_processor::InputSelection;
use recovery_impl::stream_task::{DataOutput, StreamTask, StreamTaskConfig, TaskPhase};
use recovery_impl::task::{ExecutionState, Task, TaskSnapshot};
use recovery_impl::{BufferId, BufferKind, ChannelError, InputChannelInfo, NetworkBuffer, Result};

/// One gate: recovered local channels, each with `recovered` buffers of state and `live` records
/// (then `EndOfPartition`) already in its subpartition.
struct TestGate {
    gate: Arc<SingleInputGate>,
    channels: Vec<(Arc<RecoveredInputChannel>, u32)>,
}

fn gate(index: u32, global: &Arc<NetworkBufferPool>, channels: &[(u32, u32)]) -> TestGate {
    let pool = LocalBufferPool::new(Arc::clone(global), 0).unwrap();
    let gate = SingleInputGate::new(index, pool);
    let writer = Arc::new(ChannelStateWriter::new());
    let mut recovered = Vec::new();
    for (c, &(state, live)) in channels.iter().enumerate() {
        let partition = ResultSubpartition::new();
        for record in 0..live {
            let id = 1000 * (index + 1) + 100 * c as u32 + record;
            partition
                .add(NetworkBuffer::unpooled(BufferId(id), BufferKind::Data, id as u64))
                .unwrap();
        }
        partition
            .add(NetworkBuffer::unpooled(
                BufferId::UNPOOLED,
                BufferKind::EndOfPartition,
                0,
            ))
            .unwrap();
        let context = gate.channel_context(c as u32, Arc::clone(global), Arc::clone(&writer), 2);
        recovered.push((
            RecoveredInputChannel::new(context, RecoveredChannelKind::Local { partition }),
            state,
        ));
    }
    gate.set_input_channels(
        recovered
            .iter()
            .map(|(ch, _)| InputChannelHandle::Recovered(Arc::clone(ch)))
            .collect(),
    );
    TestGate {
        gate,
        channels: recovered,
    }
}

/// The gates of `shapes` on `global`, and the same as the task sees them.
fn gates_of(
    global: &Arc<NetworkBufferPool>,
    shapes: &[&[(u32, u32)]],
) -> (Vec<TestGate>, Vec<Arc<dyn IndexedInputGate>>) {
    let gates: Vec<TestGate> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| gate(i as u32, global, s))
        .collect();
    let task_gates = gates
        .iter()
        .map(|g| Arc::clone(&g.gate) as Arc<dyn IndexedInputGate>)
        .collect();
    (gates, task_gates)
}

/// The channel-IO thread's reader: each channel's recovered buffers, from the network pool.
struct Reader(Vec<Vec<(Arc<RecoveredInputChannel>, u32)>>);

impl SequentialChannelStateReader for Reader {
    fn read_input_data(&self, gate: &dyn IndexedInputGate) -> Result<()> {
        for (channel, buffers) in &self.0[gate.get_gate_index() as usize] {
            for payload in 0..*buffers {
                let buffer = channel
                    .request_buffer_blocking()?
                    .fill(BufferKind::Data, payload as u64);
                channel.on_recovered_state_buffer(buffer)?;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Collect(Mutex<Vec<InputElement>>);

impl DataOutput for Collect {
    fn emit(&self, element: InputElement) {
        self.0.lock().unwrap().push(element);
    }
}

/// Runs a task over gates of `shapes` to its end on a real mailbox thread and channel-IO thread;
/// returns what the operator read.
fn run(shapes: &[&[(u32, u32)]], flag: bool, selection: InputSelection) -> Vec<InputElement> {
    let global = NetworkBufferPool::new(64);
    let (gates, task_gates) = gates_of(&global, shapes);
    let reader = Arc::new(Reader(gates.iter().map(|g| g.channels.clone()).collect()));
    let output = Arc::new(Collect::default());
    let io = Arc::new(SingleThreadExecutor::spawn("channel-state-unspilling").unwrap());
    let out = Arc::clone(&output);
    let io_executor = Arc::clone(&io);
    let mailbox = std::thread::spawn(move || {
        let task = StreamTask::new(StreamTaskConfig {
            output: out,
            gates: task_gates,
            selection,
            checkpointing_during_recovery: flag,
            reader,
            channel_io_executor: io_executor,
        });
        task.invoke().map(|()| task.snapshot())
    });
    let snapshot = mailbox.join().unwrap().expect("the task finishes");
    assert_eq!(snapshot.phase, TaskPhase::Finished);
    assert!(snapshot.recovered);
    io.shutdown();
    for g in &gates {
        assert!(g.gate.is_finished());
        g.gate.close().unwrap();
    }
    assert!(
        global.snapshot().lent.is_empty(),
        "every recovered buffer went back to the pool"
    );
    output.0.lock().unwrap().clone()
}

/// Each channel's elements: recovered buffers first, then its live records in order, then
/// `EndOfPartition`; every one exactly once.
fn check_channel_order(read: &[InputElement], shapes: &[&[(u32, u32)]]) {
    for (g, channels) in shapes.iter().enumerate() {
        for (c, &(state, live)) in channels.iter().enumerate() {
            let info = InputChannelInfo {
                gate_idx: g as u32,
                input_channel_idx: c as u32,
            };
            let kinds: Vec<InputElementKind> = read.iter().filter(|e| e.channel_info == info).map(|e| e.kind).collect();
            let mut expected = vec![InputElementKind::RecoveredBuffer; state as usize];
            expected.extend(vec![InputElementKind::Record; live as usize]);
            expected.push(InputElementKind::EndOfPartition);
            assert_eq!(kinds, expected, "channel {info:?}");
        }
    }
}

#[test]
fn a_one_input_task_finishes_with_recovered_state_first_with_the_flag_off_and_on() {
    let shapes: &[&[(u32, u32)]] = &[&[(2, 2), (0, 1), (1, 0)]];
    for flag in [false, true] {
        let read = run(shapes, flag, InputSelection::All);
        check_channel_order(&read, shapes);
    }
}

#[test]
fn a_two_input_task_finishes_reading_both_inputs() {
    let shapes: &[&[(u32, u32)]] = &[&[(1, 2), (2, 1)], &[(1, 1)]];
    for flag in [false, true] {
        let read = run(shapes, flag, InputSelection::All);
        check_channel_order(&read, shapes);
    }
}

/// The selective-reading case of B7: input 1's recovered state can only be read once input 0
/// ended, so input 0 must go live on its own.
#[test]
fn a_select_first_operator_reads_input_0_to_its_end_before_input_1() {
    let shapes: &[&[(u32, u32)]] = &[&[(1, 2)], &[(2, 1)]];
    for flag in [false, true] {
        let read = run(shapes, flag, InputSelection::FirstUntilEnd);
        check_channel_order(&read, shapes);
        let last_of_input_0 = read.iter().rposition(|e| e.channel_info.gate_idx == 0).unwrap();
        let first_of_input_1 = read.iter().position(|e| e.channel_info.gate_idx == 1).unwrap();
        assert!(last_of_input_0 < first_of_input_1, "flag {flag}: {read:?}");
    }
}

#[test]
fn a_source_task_finishes_at_once() {
    let read = run(&[], true, InputSelection::All);
    assert!(read.is_empty());
}

#[test]
fn get_channel_of_a_union_gate_resolves_the_member_gate_by_the_channel_info() {
    let global = NetworkBufferPool::new(8);
    let (a, b) = (gate(3, &global, &[(0, 0); 2]), gate(5, &global, &[(0, 0); 3]));
    let union = UnionInputGate::new(vec![(Arc::clone(&a.gate), 2), (Arc::clone(&b.gate), 3)]);
    let info_of = |handle: InputChannelHandle| match handle {
        InputChannelHandle::Recovered(channel) => channel.channel_info(),
        _ => unreachable!("not converted"),
    };
    let member = InputChannelInfo {
        gate_idx: 5,
        input_channel_idx: 1,
    };
    assert_eq!(info_of(union.get_channel(&member).unwrap()), member);
    assert_eq!(info_of(b.gate.get_channel(&member).unwrap()), member);
    // The member index read as a global one names gate 3's channel: the bug the overload fixes.
    let wrong = info_of(
        union
            .get_channel_by_global_index(member.input_channel_idx as usize)
            .unwrap(),
    );
    assert_eq!((wrong.gate_idx, wrong.input_channel_idx), (3, 1));
    // The global index of gate 5's channel 1 is 2 + 1.
    assert_eq!(info_of(union.get_channel_by_global_index(3).unwrap()), member);
    assert!(union.get_channel_by_global_index(5).is_none());
    assert!(
        union
            .get_channel(&InputChannelInfo {
                gate_idx: 4,
                input_channel_idx: 0
            })
            .is_err()
    );
    assert!(a.gate.get_channel(&member).is_err(), "gate 3 has no channel of gate 5");
}

/// The channel-IO thread's reader that throws an `IOException` instead of reading its
/// `fail_after + 1`-th buffer (counted over every gate), as a corrupt checkpoint file would.
struct FailingReader {
    channels: Vec<Vec<(Arc<RecoveredInputChannel>, u32)>>,
    fail_after: u32,
    read: AtomicU32,
}

fn read_failure(fail_after: u32) -> ChannelError {
    ChannelError::Io(format!(
        "checkpointed channel state unreadable after {fail_after} buffers"
    ))
}

impl SequentialChannelStateReader for FailingReader {
    fn read_input_data(&self, gate: &dyn IndexedInputGate) -> Result<()> {
        for (channel, buffers) in &self.channels[gate.get_gate_index() as usize] {
            for payload in 0..*buffers {
                if self.read.fetch_add(1, Ordering::SeqCst) == self.fail_after {
                    return Err(read_failure(self.fail_after));
                }
                let buffer = channel
                    .request_buffer_blocking()?
                    .fill(BufferKind::Data, payload as u64);
                channel.on_recovered_state_buffer(buffer)?;
            }
        }
        Ok(())
    }
}

/// How long a task whose state read failed may take to end.
const WATCHDOG: Duration = Duration::from_secs(10);

/// Runs a `Task` over gates of `shapes` on real threads (the task thread, the channel-IO
/// thread, a thread per `TaskCanceler`) with a reader that fails after `fail_after` buffers.
/// Returns what `Task::run` (`invoke`) returned and the task's final state, once every buffer
/// is back in its pool.
fn run_failing(shapes: &[&[(u32, u32)]], flag: bool, fail_after: u32, what: &str) -> (Result<()>, TaskSnapshot) {
    let global = NetworkBufferPool::new(64);
    let (gates, task_gates) = gates_of(&global, shapes);
    let reader = Arc::new(FailingReader {
        channels: gates.iter().map(|g| g.channels.clone()).collect(),
        fail_after,
        read: AtomicU32::new(0),
    });
    let io = Arc::new(SingleThreadExecutor::spawn("channel-state-unspilling").unwrap());
    let io_executor = Arc::clone(&io);
    let task = Task::new(Arc::new(ThreadPerTaskExecutor::new("canceler")));
    let (done_tx, done) = mpsc::channel();
    let runner = task.clone();
    let task_thread = std::thread::spawn(move || {
        let result = runner.run(StreamTaskConfig {
            output: Arc::new(Collect::default()),
            gates: task_gates,
            selection: InputSelection::All,
            checkpointing_during_recovery: flag,
            reader,
            channel_io_executor: io_executor,
        });
        let _ = done_tx.send(result);
    });
    let result = done.recv_timeout(WATCHDOG).unwrap_or_else(|_| {
        panic!(
            "{what}: the task did not end within {WATCHDOG:?}; state {:?}",
            task.snapshot()
        )
    });
    task_thread.join().unwrap();
    io.shutdown();
    let snapshot = task.snapshot();
    assert!(snapshot.released, "{what}: releaseResources ran");
    let lent = global.snapshot().lent;
    assert!(
        lent.is_empty(),
        "{what}: every buffer is back in its pool after the task released its resources; lent {lent:?}"
    );
    (result, snapshot)
}

/// What a caller of `Task::run` sees when the state read fails: `invoke` throws (flag off
/// `ensureNotCanceled()`'s `CancelTaskException`, flag on the read's exception rethrown by
/// `get()`), and the task ends FAILED with the read's exception as its cause.
fn check_failed_by_the_read(result: &Result<()>, snapshot: &TaskSnapshot, flag: bool, fail_after: u32, what: &str) {
    let expected = read_failure(fail_after);
    let thrown = result.as_ref().expect_err(what);
    if flag {
        assert_eq!(thrown, &expected, "{what}: get() rethrows the read's exception");
    } else {
        assert!(
            thrown.is_cancel_task(),
            "{what}: ensureNotCanceled() throws CancelTaskException, got {thrown}"
        );
    }
    assert_eq!(snapshot.execution_state, ExecutionState::Failed, "{what}");
    let cause = snapshot
        .failure_cause
        .as_ref()
        .expect("a FAILED task records its cause");
    assert_eq!(cause.root_cause(), &expected, "{what}: the cause is the read's");
}

#[test]
fn a_failing_state_read_fails_invoke_and_the_task_with_the_reads_cause() {
    let shapes: &[&[(u32, u32)]] = &[&[(2, 1), (1, 1)]];
    for flag in [false, true] {
        for fail_after in [0, 2] {
            let what = format!("flag {flag}, read fails after {fail_after} buffers");
            let (result, snapshot) = run_failing(shapes, flag, fail_after, &what);
            check_failed_by_the_read(&result, &snapshot, flag, fail_after, &what);
            if !flag {
                assert!(
                    matches!(snapshot.failure_cause, Some(ChannelError::Asynchronous { ref message, .. })
                        if message == "Unable to set up recovered channel state"),
                    "{what}: handleAsyncException wraps the read's exception: {:?}",
                    snapshot.failure_cause
                );
            }
        }
    }
}

/// SplitMix64's finaliser: a run's failure point from its index, the same on every run.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fail_at_random_points(runs: u64) {
    let shapes: &[&[(u32, u32)]] = &[&[(3, 2), (2, 1)], &[(2, 1)]];
    let total: u32 = shapes.iter().flat_map(|g| g.iter()).map(|&(state, _)| state).sum();
    for i in 0..runs {
        let flag = i % 2 == 1;
        let fail_after = (mix(i) % total as u64) as u32;
        let what = format!("run {i} (flag {flag}, read fails after {fail_after} of {total} buffers)");
        let (result, snapshot) = run_failing(shapes, flag, fail_after, &what);
        check_failed_by_the_read(&result, &snapshot, flag, fail_after, &what);
    }
}

/// A read that fails at a random point (seeded by the run's index), flag off and on, on real
/// threads: the task fails within the watchdog's time with the read's cause, and every buffer
/// is back in its pool once it released its resources.
#[test]
fn a_read_failing_at_a_random_point_fails_the_task_and_leaks_no_buffer() {
    fail_at_random_points(300);
}
