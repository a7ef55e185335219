//! loom: one turn of the gate's poll holds `inputChannelsWithData` across `getChannel`,
//! `getNextBuffer` and the requeue, as Flink's `waitAndGetNextData` does, so a priority
//! notification racing the poll never leaves a channel in the priority section whose priority
//! element was already polled. Flink's `CheckpointedInputGate.processPriorityEvents` polls on
//! such a notification and `checkState`s that what it gets has priority ("Should only poll
//! priority events"); a stale priority entry would fail the task there.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p recovery-impl --test loom_single_input_gate`
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::input_channels_with_data::ChannelPoll;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::{BufferId, BufferKind, NetworkBuffer, RecoverableInputChannel};

fn event(id: u32) -> NetworkBuffer {
    NetworkBuffer::unpooled(BufferId(id), BufferKind::Event, 0)
}

fn barrier(id: u32) -> NetworkBuffer {
    NetworkBuffer::unpooled(BufferId(id), BufferKind::CheckpointBarrier(1), 0)
}

/// If the gate reports a priority channel, polling it yields a priority element.
fn assert_priority_section_is_live(gate: &SingleInputGate) {
    if gate.channels_with_data().snapshot().num_priority == 0 {
        return;
    }
    match gate.poll_channel().unwrap() {
        ChannelPoll::Buffer { next, .. } => assert!(
            next.buffer.kind().has_priority(),
            "the gate reported a priority event, but the channel's head is {:?}",
            next.buffer.kind()
        ),
        other => panic!("the gate reported a priority event, but polling found {other:?}"),
    }
}

/// Remote: the netty thread's `onBuffer(barrier)` against the task's poll of a queued event.
#[test]
fn remote_priority_notification_concurrent_with_poll() {
    loom::model(|| {
        let global = NetworkBufferPool::new(1);
        let pool = LocalBufferPool::new(Arc::clone(&global), 0).unwrap();
        let gate = SingleInputGate::new(0, pool);
        let context = gate.channel_context(0, global, Arc::new(ChannelStateWriter::new()), 1);
        let channel = RemoteInputChannel::new(context, false);
        gate.set_input_channels(vec![InputChannelHandle::Remote(Arc::clone(&channel))]);
        channel.setup().unwrap();
        channel.request_subpartitions().unwrap();
        channel.on_buffer(event(10), 0, -1).unwrap();

        let netty = Arc::clone(&channel);
        let network = thread::spawn(move || netty.on_buffer(barrier(11), 1, -1).unwrap());
        gate.poll_channel().unwrap();
        network.join().unwrap();

        assert_priority_section_is_live(&gate);
    });
}

/// Local: the producer's `add(barrier)` (notifying `notifyPriorityEvent` after its lock) against
/// the task's poll of a queued event.
#[test]
fn local_priority_notification_concurrent_with_poll() {
    loom::model(|| {
        let global = NetworkBufferPool::new(1);
        let pool = LocalBufferPool::new(Arc::clone(&global), 0).unwrap();
        let gate = SingleInputGate::new(0, pool);
        let context = gate.channel_context(0, global, Arc::new(ChannelStateWriter::new()), 1);
        let partition = ResultSubpartition::new();
        let channel = LocalInputChannel::new(context, Arc::clone(&partition), false);
        gate.set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
        gate.request_partitions(false).unwrap();
        partition.add(event(10)).unwrap();

        let producer = Arc::clone(&partition);
        let upstream = thread::spawn(move || producer.add(barrier(11)).unwrap());
        gate.poll_channel().unwrap();
        upstream.join().unwrap();

        assert_priority_section_is_live(&gate);
    });
}

/// Flink's lost update on `hasPendingPriorityEvent` (docs/findings.md), reproduced on impl/,
/// which ports the code as it is: in recovery, the task pulls barrier 1 from the view, whose
/// next data type then has no priority; the producer adds barrier 2 and sets the flag; the task
/// clears it. Barrier 2's notification (after the task's turn, not outdated) puts the channel
/// in the gate's priority section, but the channel returns its recovered buffer instead. Some
/// interleaving must end so; the test fails once the race is fixed, and says so.
#[test]
fn local_pull_priority_loses_a_concurrent_priority_notification() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static LOST: AtomicBool = AtomicBool::new(false);
    loom::model(|| {
        let global = NetworkBufferPool::new(1);
        let pool = LocalBufferPool::new(Arc::clone(&global), 0).unwrap();
        let gate = SingleInputGate::new(0, pool);
        let context = gate.channel_context(0, global, Arc::new(ChannelStateWriter::new()), 1);
        let partition = ResultSubpartition::new();
        let channel = LocalInputChannel::new(context, Arc::clone(&partition), true);
        gate.set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
        gate.request_partitions(true).unwrap();
        partition.add(barrier(11)).unwrap();

        let producer = Arc::clone(&partition);
        let upstream = thread::spawn(move || {
            producer
                .add(NetworkBuffer::unpooled(
                    BufferId(12),
                    BufferKind::CheckpointBarrier(2),
                    0,
                ))
                .unwrap()
        });
        let first = gate.poll_channel().unwrap();
        assert!(
            matches!(&first, ChannelPoll::Buffer { next, .. } if next.buffer.id() == BufferId(11)),
            "{first:?}"
        );
        upstream.join().unwrap();
        // The drainer pushes a recovered buffer; the channel is already queued.
        let recovered = NetworkBuffer::unpooled(BufferId(20), BufferKind::Data, 1);
        channel.on_recovered_state_buffer(recovered).unwrap();

        let queued = gate.channels_with_data().snapshot();
        if queued.num_priority > 0
            && let ChannelPoll::Buffer { next, .. } = gate.poll_channel().unwrap()
            && !next.buffer.kind().has_priority()
        {
            LOST.store(true, Ordering::SeqCst);
        }
    });
    assert!(
        LOST.load(Ordering::SeqCst),
        "no interleaving lost barrier 2's hasPendingPriorityEvent: the race is fixed, update docs/findings.md"
    );
}
