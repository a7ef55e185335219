//! loom: a local channel's poll in recovery racing the producer's priority event. The task's
//! `getNextBuffer` polls a recovered buffer under `recoveredBuffers` and reads
//! `hasPendingPriorityEvent` there; the producer's `add(barrier)` sets the flag
//! (`notifyPriorityEvent`) after its subpartition lock, then queues the channel at the gate's
//! priority head. Whatever the order, the polled recovered buffer is returned (never dropped
//! for the event: the variant `recovered-buffer-dropped-for-priority-event` drops it when the
//! flag is read again after the lock), and the barrier is returned too, each exactly once.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom cargo test -p recovery-impl --test loom_local_input_channel`
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::input_channels_with_data::ChannelPoll;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{InputChannelHandle, SingleInputGate};
use recovery_impl::{BufferId, BufferKind, NetworkBuffer, RecoverableInputChannel};

#[test]
fn local_recovered_poll_concurrent_with_a_priority_event_loses_nothing() {
    loom::model(|| {
        let global = NetworkBufferPool::new(1);
        let pool = LocalBufferPool::new(Arc::clone(&global), 0).unwrap();
        let gate = SingleInputGate::new(0, pool);
        let context = gate.channel_context(0, global, Arc::new(ChannelStateWriter::new()), 1);
        let partition = ResultSubpartition::new();
        let channel = LocalInputChannel::new(context, Arc::clone(&partition), true);
        gate.set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
        gate.request_partitions(true).unwrap();
        // The drainer pushed one recovered buffer: the channel is queued.
        let recovered = NetworkBuffer::unpooled(BufferId(20), BufferKind::Data, 1);
        channel.on_recovered_state_buffer(recovered).unwrap();

        let producer = Arc::clone(&partition);
        let upstream = thread::spawn(move || {
            producer
                .add(NetworkBuffer::unpooled(
                    BufferId(11),
                    BufferKind::CheckpointBarrier(1),
                    0,
                ))
                .unwrap()
        });
        let mut polled = Vec::new();
        if let ChannelPoll::Buffer { next, .. } = gate.poll_channel().unwrap() {
            polled.push(next.buffer.id());
        }
        upstream.join().unwrap();
        // The task polls on while a channel is queued (each poll of a turn that returned
        // nothing leaves the queue).
        for _ in 0..4 {
            match gate.poll_channel().unwrap() {
                ChannelPoll::Buffer { next, .. } => polled.push(next.buffer.id()),
                ChannelPoll::Empty { .. } => {}
                ChannelPoll::NoChannel => break,
            }
        }
        polled.sort();
        assert_eq!(
            polled,
            vec![BufferId(11), BufferId(20)],
            "the barrier and the recovered buffer, each once"
        );
    });
}
