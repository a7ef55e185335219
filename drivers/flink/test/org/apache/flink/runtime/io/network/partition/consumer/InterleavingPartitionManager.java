package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.runtime.io.network.partition.BufferAvailabilityListener;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition.BufferAndBacklog;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionView;

import java.io.IOException;
import java.util.function.Consumer;

/**
 * The real {@link ResultPartitionManager}, except that the view it hands a consumer is wrapped:
 * the wrapper can run a step of another thread between the real poll
 * ({@code PipelinedSubpartition.pollBuffer}, which fixes the polled element's next data type
 * under the subpartition lock) and the return of that element to the consumer: a window the
 * producer's thread can hit in Flink, hit here on the consumer's thread, deterministically.
 *
 * <p>{@code LocalInputChannel.requestSubpartitions} (2.3.0 line 182) calls
 * {@link #createSubpartitionView} with the channel itself as the listener, so the real view still
 * notifies the real channel ({@code notifyDataAvailable}, {@code notifyPriorityEvent}).
 */
final class InterleavingPartitionManager extends ResultPartitionManager {
    private volatile InterleavingView view;

    @Override
    public ResultSubpartitionView createSubpartitionView(
            ResultPartitionID partitionId,
            ResultSubpartitionIndexSet subpartitionIndexSet,
            BufferAvailabilityListener availabilityListener)
            throws IOException {
        InterleavingView created = new InterleavingView(
                super.createSubpartitionView(partitionId, subpartitionIndexSet, availabilityListener));
        view = created;
        return created;
    }

    /** The view handed out last (one consumer per test). */
    InterleavingView view() {
        if (view == null) {
            throw new IllegalStateException("no subpartition view was requested yet");
        }
        return view;
    }

    /** A delegating view with a one-shot step between the real poll and the return. */
    static final class InterleavingView implements ResultSubpartitionView {
        private final ResultSubpartitionView real;
        private Consumer<BufferAndBacklog> afterNextPoll;

        InterleavingView(ResultSubpartitionView real) {
            this.real = real;
        }

        /** Runs {@code step} once, after the next poll that returns an element, before returning it. */
        void afterNextPoll(Consumer<BufferAndBacklog> step) {
            afterNextPoll = step;
        }

        boolean armed() {
            return afterNextPoll != null;
        }

        @Override
        public BufferAndBacklog getNextBuffer() throws IOException {
            BufferAndBacklog polled = real.getNextBuffer();
            Consumer<BufferAndBacklog> step = afterNextPoll;
            if (polled != null && step != null) {
                afterNextPoll = null;
                step.accept(polled);
            }
            return polled;
        }

        @Override
        public void notifyDataAvailable() {
            real.notifyDataAvailable();
        }

        @Override
        public void notifyPriorityEvent(int prioritySequenceNumber) {
            real.notifyPriorityEvent(prioritySequenceNumber);
        }

        @Override
        public void releaseAllResources() throws IOException {
            real.releaseAllResources();
        }

        @Override
        public boolean isReleased() {
            return real.isReleased();
        }

        @Override
        public void resumeConsumption() {
            real.resumeConsumption();
        }

        @Override
        public void acknowledgeAllDataProcessed() {
            real.acknowledgeAllDataProcessed();
        }

        @Override
        public Throwable getFailureCause() {
            return real.getFailureCause();
        }

        @Override
        public AvailabilityWithBacklog getAvailabilityAndBacklog(boolean isCreditAvailable) {
            return real.getAvailabilityAndBacklog(isCreditAvailable);
        }

        @Override
        public int unsynchronizedGetNumberOfQueuedBuffers() {
            return real.unsynchronizedGetNumberOfQueuedBuffers();
        }

        @Override
        public int getNumberOfQueuedBuffers() {
            return real.getNumberOfQueuedBuffers();
        }

        @Override
        public void notifyNewBufferSize(int newBufferSize) {
            real.notifyNewBufferSize(newBufferSize);
        }

        @Override
        public void notifyRequiredSegmentId(int subpartitionId, int segmentId) {
            real.notifyRequiredSegmentId(subpartitionId, segmentId);
        }

        @Override
        public int peekNextBufferSubpartitionId() throws IOException {
            return real.peekNextBufferSubpartitionId();
        }
    }
}
