//! [`FlinkFixes`]: changes to Flink's code that the findings propose (docs/findings.md), each
//! a switch of the channels built with it ([`ChannelContext`](crate::recoverable_input_channel::ChannelContext)).
//! All off (the default) is Flink as it is. The model has the same four (`FlinkFix`); the
//! conformance driver turns the model's configuration into this.

use serde::{Deserialize, Serialize};

/// Which of the findings' changes to Flink's code are made. Each field names the class and
/// method it changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlinkFixes {
    /// `priority-from-view-head`: `LocalInputChannel.getNextBuffer` sets
    /// `hasPendingPriorityEvent` from the view's head (`peekNextDataType().hasPriority()`)
    /// before it reads it, so that a lost update of the flag (the task's clear over a
    /// producer's set) or a stale set does not outlive the next poll.
    pub priority_from_view_head: bool,
    /// `wake-on-refused-buffer`: `BufferManager.notifyBufferAvailable(Buffer)` wakes the
    /// threads in `requestBufferBlocking` (`bufferQueue.notifyAll()`) when it turns the buffer
    /// down too: it cleared `isWaitingForFloatingBuffers`, so the drainer must look at the
    /// pool again rather than wait for a callback that will not come.
    pub wake_on_refused_buffer: bool,
    /// `announce-under-queue-lock`: `BufferManager.notifyBufferAvailable(Buffer)` announces
    /// the credit of the floating buffer it took (`inputChannel.notifyBufferAvailable(n)`)
    /// while it still holds `bufferQueue`, so `releaseFloatingBuffers` cannot give the buffer
    /// back between the take and the announcement.
    pub announce_under_queue_lock: bool,
    /// `persist-only-upstream-data` (FLINK-40016 in 2.3.0's migration path, apache/flink#28605
    /// and #28607): `LocalInputChannel` persists (`maybePersist`) only what it polls from the
    /// view, not the migrated recovered buffers `checkpointStarted` persisted already.
    pub persist_only_upstream_data: bool,
}

impl FlinkFixes {
    /// Flink as it is: no fix.
    pub const NONE: FlinkFixes = FlinkFixes {
        priority_from_view_head: false,
        wake_on_refused_buffer: false,
        announce_under_queue_lock: false,
        persist_only_upstream_data: false,
    };

    /// Every fix.
    pub const ALL: FlinkFixes = FlinkFixes {
        priority_from_view_head: true,
        wake_on_refused_buffer: true,
        announce_under_queue_lock: true,
        persist_only_upstream_data: true,
    };
}
