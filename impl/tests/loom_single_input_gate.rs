//! loom: one turn of the gate's poll holds `inputChannelsWithData` across `getChannel`,
//! `getNextBuffer` and the requeue, as Flink's `waitAndGetNextData` does, so a priority
//! notification racing the poll never leaves a channel in the priority section whose priority
//! element was already polled. Flink's `CheckpointedInputGate.processPriorityEvents` polls on
//! such a notification and `checkState`s that what it gets has priority ("Should only poll
//! priority events"); a stale priority entry would fail the task there.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p recovery-impl --release --test loom_single_input_gate`
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{ChannelPoll, InputChannelHandle, SingleInputGate};
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
