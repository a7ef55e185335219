//! Mirrors Flink's `BufferRecycler` interface: who takes a memory segment back when its buffer
//! is recycled. `BufferManager` (exclusive segments) and `LocalBufferPool` (floating buffers)
//! implement it; a `NetworkBuffer` holds one. An interface, as in Flink, so that the buffer does
//! not import the pools that hand it out.

use crate::error::Result;
use crate::ids::BufferId;
use crate::sync::Arc;

/// Flink's `BufferRecycler`.
pub(crate) trait BufferRecycler: Send + Sync {
    /// `recycle(memorySegment)`: the segment `id` goes back to this recycler. Recycling a
    /// segment that is not lent out is [`ChannelError::DoubleRecycle`](crate::ChannelError).
    fn recycle(self: Arc<Self>, id: BufferId) -> Result<()>;
}
