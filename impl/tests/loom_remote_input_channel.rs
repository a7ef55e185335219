//! loom: replaying the recovery event stash (`on_recovered_state_consumed`) racing the netty
//! thread's `on_buffer` loses and reorders nothing.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p recovery-impl --test loom_remote_input_channel`
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::single_input_gate::SingleInputGate;
use recovery_impl::{BufferId, BufferKind, NetworkBuffer, RecoverableInputChannel};

fn event(id: u32) -> NetworkBuffer {
    NetworkBuffer::unpooled(BufferId(id), BufferKind::Event, 0)
}

/// Events stashed before and delivered during the replay come out in upstream order, once.
#[test]
fn on_recovered_state_consumed_concurrent_with_on_buffer() {
    loom::model(|| {
        let global = NetworkBufferPool::new(1);
        let local = LocalBufferPool::new(Arc::clone(&global), 0).unwrap();
        let gate = SingleInputGate::new(0, local);
        let context = gate.channel_context(0, global, Arc::new(ChannelStateWriter::new()), 1);
        let channel = RemoteInputChannel::new(context, true);
        channel.setup().unwrap();
        channel.request_subpartitions().unwrap();
        channel.on_buffer(event(10), 0, -1).unwrap();

        let netty = Arc::clone(&channel);
        let network = thread::spawn(move || {
            netty.on_buffer(event(11), 1, -1).unwrap();
            netty.on_buffer(event(12), 2, -1).unwrap();
        });
        channel.on_recovered_state_consumed().unwrap();
        network.join().unwrap();

        let mut polled = Vec::new();
        while let Some(next) = channel.get_next_buffer().unwrap() {
            polled.push(next.buffer.id().0);
        }
        assert_eq!(polled, vec![10, 11, 12]);
        let snapshot = channel.snapshot();
        assert!(snapshot.recovery_event_stash.is_empty());
        assert_eq!(snapshot.unannounced_credit, 1);
    });
}
