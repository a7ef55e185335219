//! Shared fixtures: pools, a gate, channel contexts, and a netty stand-in for remote channels.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use recovery_impl::buffer_manager::BufferManagerChannel;
use recovery_impl::buffer_pool::{LocalBufferPool, NetworkBufferPool};
use recovery_impl::channel_state_persister::ChannelStateWriter;
use recovery_impl::credit_based_sequence_numbering_view_reader::CreditBasedSequenceNumberingViewReader;
use recovery_impl::recoverable_input_channel::ChannelContext;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::single_input_gate::SingleInputGate;
use recovery_impl::{BufferId, BufferKind, ChannelError, NetworkBuffer, Result};

/// Pools, writer and one gate.
pub struct Fixture {
    pub global: Arc<NetworkBufferPool>,
    pub local_pool: Arc<LocalBufferPool>,
    pub writer: Arc<ChannelStateWriter>,
    pub gate: Arc<SingleInputGate>,
}

impl Fixture {
    /// `segments` global segments (ids 0..), of which `floating` go to the gate's local pool.
    pub fn new(segments: u32, floating: usize) -> Self {
        let global = NetworkBufferPool::new(segments);
        let local_pool = LocalBufferPool::new(Arc::clone(&global), floating).unwrap();
        let writer = Arc::new(ChannelStateWriter::new());
        let gate = SingleInputGate::new(0, Arc::clone(&local_pool));
        Self {
            global,
            local_pool,
            writer,
            gate,
        }
    }

    pub fn context(&self, index: u32, exclusive: usize) -> ChannelContext {
        self.gate
            .channel_context(index, Arc::clone(&self.global), Arc::clone(&self.writer), exclusive)
    }

    /// Every segment is back: none lent by the global pool except the local pool's, and not
    /// even those once the gate's close destroyed the local pool.
    pub fn assert_all_buffers_returned(&self, floating: usize) {
        let global = self.global.snapshot();
        let local = self.local_pool.snapshot();
        assert_eq!(local.lent, Vec::<BufferId>::new(), "floating buffers still lent");
        let held_by_local = if local.destroyed { 0 } else { floating };
        assert_eq!(local.available.len(), held_by_local, "floating buffers missing");
        assert_eq!(global.lent.len(), held_by_local, "segments still lent: {global:?}");
    }
}

/// An unpooled producer-side data buffer.
pub fn data(id: u32, payload: u64) -> NetworkBuffer {
    NetworkBuffer::unpooled(BufferId(id), BufferKind::Data, payload)
}

/// An unpooled producer-side event.
pub fn event(id: u32, kind: BufferKind) -> NetworkBuffer {
    NetworkBuffer::unpooled(BufferId(id), kind, 0)
}

/// The netty stand-in: sends AddCredit, then forwards every available response; data is copied
/// into a consumer buffer. Returns how many responses were delivered.
pub fn deliver(reader: &mut CreditBasedSequenceNumberingViewReader, channel: &RemoteInputChannel) -> Result<usize> {
    let credit = channel.get_and_reset_unannounced_credit();
    if credit > 0 {
        reader.add_credit(credit);
    }
    let mut delivered = 0;
    while let Some(response) = reader.get_next_buffer()? {
        let kind = response.buffer.kind();
        let buffer = if kind.is_buffer() {
            let target = channel.request_buffer().expect("credit guarantees a consumer buffer");
            let payload = response.buffer.payload();
            response.buffer.recycle_buffer()?;
            target.fill(kind, payload)
        } else {
            response.buffer
        };
        channel.on_buffer(buffer, response.sequence_number, response.backlog)?;
        delivered += 1;
    }
    Ok(delivered)
}

/// A `BufferManager`'s channel that counts the credit announced to it.
#[derive(Default)]
pub struct CountingChannel {
    pub released: AtomicBool,
    pub announced: AtomicUsize,
}

impl BufferManagerChannel for CountingChannel {
    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }
    fn notify_buffer_available(&self, n: usize) {
        self.announced.fetch_add(n, Ordering::SeqCst);
    }
    fn set_error(&self, _error: ChannelError) {}
}
