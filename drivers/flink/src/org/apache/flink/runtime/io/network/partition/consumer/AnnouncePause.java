package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.ArrayDeque;

/**
 * The driver's pause point for a credit announcement made by a `BufferManager`: after
 * `BufferManager.recycle` (or the pool's `notifyBufferAvailable(Buffer)`) has left its
 * `bufferQueue` critical section and before it calls `inputChannel.notifyBufferAvailable(n)`,
 * where the model splits the call into its `notifyBufferAvailable` step.
 *
 * <p>`unannouncedCredit.getAndAdd` is final, so the pause cannot sit inside the channel; instead
 * the manager's `inputChannel` field (private final, set by reflection when the channel is
 * adopted) points to this stand-in, which forwards every call the manager makes on its channel
 * (`isReleased`, `notifyBufferAvailable`, `setError`) to the real `RemoteInputChannel`, stopping a
 * driver worker before `notifyBufferAvailable`. Its own `inputGate` is the real gate, which
 * `tryRequestBuffers` reads for the floating-buffer pool. Nothing else refers to it.
 */
final class AnnouncePause extends RemoteInputChannel {
    private static final Field INPUT_CHANNEL;

    static {
        try {
            INPUT_CHANNEL = BufferManager.class.getDeclaredField("inputChannel");
            INPUT_CHANNEL.setAccessible(true);
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RemoteInputChannel real;

    private AnnouncePause(
            RemoteInputChannel real,
            ResultPartitionID partition,
            ResultSubpartitionIndexSet subpartitions,
            ConnectionID connection,
            ConnectionManager connections,
            ChannelStateWriter writer) {
        super(real.inputGate, real.getChannelIndex(), partition, subpartitions, connection, connections, 0, 0, 0, 0,
                new SimpleCounter(), new SimpleCounter(), writer, new ArrayDeque<>());
        this.real = real;
    }

    /** Puts a pause point between `real`'s buffer manager and `real`. */
    static void install(
            RemoteInputChannel real,
            ConnectionID connection,
            ConnectionManager connections,
            ChannelStateWriter writer)
            throws IllegalAccessException {
        BufferManager bm = real.getBufferManager();
        if (INPUT_CHANNEL.get(bm) instanceof AnnouncePause) {
            return;
        }
        INPUT_CHANNEL.set(bm, new AnnouncePause(
                real, real.getPartitionId(), real.getConsumedSubpartitionIndexSet(), connection, connections, writer));
    }

    @Override
    public void notifyBufferAvailable(int numAvailableBuffers) throws IOException {
        Workers.Worker worker = Workers.current();
        if (worker != null && numAvailableBuffers > 0 && !insideFixedCriticalSection()) {
            worker.pauseAt(new Workers.Pause("announce", real.getChannelIndex(), numAvailableBuffers));
        }
        real.notifyBufferAvailable(numAvailableBuffers);
    }

    /**
     * With `--flink-fixes` the channel's manager is a {@link
     * LateFloatingCreditAndMissedWakeupFixedBufferManager}, whose {@code notifyBufferAvailable(Buffer)}
     * announces inside its {@code bufferQueue} critical section: no step can come between, so
     * there is no pause (the model's {@code announce-under-queue-lock} fix makes the same
     * announcement part of the recycle step). The exclusive recycle's announcement stays outside
     * the lock, with its pause.
     */
    private boolean insideFixedCriticalSection() {
        BufferManager bm = real.getBufferManager();
        return bm instanceof LateFloatingCreditAndMissedWakeupFixedBufferManager
                && Thread.holdsLock(((LateFloatingCreditAndMissedWakeupFixedBufferManager) bm).monitor());
    }

    @Override
    public boolean isReleased() {
        return real.isReleased();
    }

    @Override
    protected void setError(Throwable cause) {
        real.setError(cause);
    }
}
