package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.core.memory.MemorySegmentProvider;
import org.apache.flink.runtime.io.network.buffer.Buffer;

import java.lang.reflect.Field;

/**
 * Flink 2.3.0's {@link BufferManager} without two faults of {@code notifyBufferAvailable(Buffer)}
 * (docs/findings.md), as a subclass: Flink's method runs unchanged through {@code super}; the
 * private {@code bufferQueue} (the manager's monitor) is read by reflection.
 *
 * <p><b>A floating credit announced after {@code resumeConsumption}.</b> In 2.3.0 the pool's
 * listener call queues the buffer and computes the credit under {@code bufferQueue} (lines
 * 325-347) and announces it after leaving the monitor: {@code
 * inputChannel.notifyBufferAvailable(numBuffers)} (line 349). {@code releaseFloatingBuffers}
 * (lines 244-253, called by {@code RemoteInputChannel.onBlockingUpstream}, line 492) takes the
 * buffer back under the same monitor in between, and the announcement can then land after {@code
 * resumeConsumption} reset both sides (line 469, and the server's reader). Here the whole of
 * {@code super.notifyBufferAvailable(buffer)} runs inside {@code synchronized (bufferQueue)}
 * (reentrant: {@code super} takes it again), so the queueing and the announcement are one critical
 * section: {@code releaseFloatingBuffers} either runs before it (then {@code numRequiredBuffers} is
 * 0 and the buffer is turned down, lines 338-340: no credit) or after the announcement (then the
 * credit is in {@code unannouncedCredit} before the blocking buffer is queued, so before the task
 * can resume, and {@code resumeConsumption}'s reset covers it, as FLINK-16641 intended).
 *
 * <p><b>The missed wake-up.</b> The refusing branch (lines 338-340) clears {@code
 * isWaitingForFloatingBuffers} without {@code notifyAll}, so a thread in {@code
 * requestBufferBlocking} (line 117, {@code bufferQueue.wait()}) that relied on the listener sleeps
 * on while the pool has the buffer. Here a refused buffer also wakes the monitor's waiters; the
 * waiter's loop (lines 99-117) sees it is no longer a listener and asks the pool again (or
 * registers again, and the buffer that {@code LocalBufferPool.recycle} (lines 581-609) then offers
 * to the next listener is accepted).
 *
 * <p><b>Not changed: {@code recycle(MemorySegment)}</b> (lines 211-238) has the same shape, an
 * exclusive buffer queued under the monitor and {@code notifyBufferAvailable(1)} after it (line
 * 235), but its late announcement is harmless: exclusive buffers exist only with {@code
 * initialCredit > 0}, where {@code onBlockingUpstream} releases nothing (line 486) and neither
 * {@code resumeConsumption} (line 463) nor the server's reader resets the credit. Holding the
 * monitor across it would also run the released floating buffer's {@code recycleBuffer()} (line
 * 232) under it, and {@code LocalBufferPool.recycle} hands that buffer to another channel's
 * listener, taking that manager's monitor: two managers' monitors in either order, a deadlock.
 *
 * <p><b>Lock order.</b> Under {@code bufferQueue} the extended section adds only what line 349
 * does: {@code RemoteInputChannel.notifyBufferAvailable(int)} (lines 453-456, an atomic add and
 * {@code notifyCreditAvailable}, which hands an {@code AddCredit} to the Netty event loop's task
 * queue, no monitor), and only when that throws, {@code InputChannel.setError} (line 351), which
 * queues the channel under the gate's {@code inputChannelsWithData}. The task holds that monitor
 * while it polls a channel ({@code SingleInputGate.waitAndGetNextData}); {@code
 * RemoteInputChannel.getNextBuffer} takes no {@code bufferQueue}, and the only buffers recycled
 * under it are end-of-data and end-of-partition events of a multi-subpartition channel (heap
 * buffers, not the pool's), so no cycle closes. {@code tryRequestBuffers} already took the pool's
 * lock inside {@code bufferQueue} in 2.3.0 (line 345); the pool calls its listener outside its own
 * lock (LocalBufferPool line 605).
 */
public class LateFloatingCreditAndMissedWakeupFixedBufferManager extends BufferManager {
    private static final Field BUFFER_QUEUE = accessible(BufferManager.class, "bufferQueue");
    private static final Field BUFFER_MANAGER = accessible(RemoteInputChannel.class, "bufferManager");

    /** {@code BufferManager.bufferQueue}: the manager's monitor. */
    private final Object bufferQueue;

    public LateFloatingCreditAndMissedWakeupFixedBufferManager(
            MemorySegmentProvider globalPool, InputChannel inputChannel, int numRequiredBuffers) {
        super(globalPool, inputChannel, numRequiredBuffers);
        try {
            bufferQueue = BUFFER_QUEUE.get(this);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Replaces the {@code BufferManager} a {@link RemoteInputChannel} made in its constructor (line
     * 159: {@code new BufferManager(inputGate.getMemorySegmentProvider(), this, 0)}) with this
     * class, made with the same arguments. Must run before the channel's {@code setup()} and
     * before anything else sees the channel: the replaced manager holds nothing yet.
     */
    static LateFloatingCreditAndMissedWakeupFixedBufferManager installInto(RemoteInputChannel channel) {
        BufferManager old = channel.getBufferManager();
        if (old instanceof LateFloatingCreditAndMissedWakeupFixedBufferManager) {
            return (LateFloatingCreditAndMissedWakeupFixedBufferManager) old;
        }
        if (old.getNumberOfAvailableBuffers() != 0 || old.unsynchronizedGetNumberOfRequiredBuffers() != 0) {
            throw new IllegalStateException("the channel's BufferManager is in use already: " + channel);
        }
        LateFloatingCreditAndMissedWakeupFixedBufferManager fixed =
                new LateFloatingCreditAndMissedWakeupFixedBufferManager(
                        channel.inputGate.getMemorySegmentProvider(), channel, 0);
        try {
            BUFFER_MANAGER.set(channel, fixed);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        return fixed;
    }

    @Override
    public boolean notifyBufferAvailable(Buffer buffer) {
        synchronized (bufferQueue) {
            boolean accepted = super.notifyBufferAvailable(buffer);
            if (!accepted) {
                // The refusing branch (lines 338-340) left the listeners without waking a waiter
                // of requestBufferBlocking: wake it to ask the pool again.
                bufferQueue.notifyAll();
            }
            return accepted;
        }
    }

    /** The monitor, for tests that check who holds it. */
    Object monitor() {
        return bufferQueue;
    }

    private static Field accessible(Class<?> owner, String name) {
        try {
            Field f = owner.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
