package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.checkpoint.channel.ResultSubpartitionInfo;
import org.apache.flink.runtime.event.TaskEvent;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.PartitionRequestClient;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.util.CloseableIterator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * What the driver supplies around Flink's channel classes: the Netty client side
 * ({@link ConnectionManager}, {@link PartitionRequestClient}) and the task's
 * {@link ChannelStateWriter}. They record; the driver plays the wire from what they record.
 */
final class Stubs {
    private Stubs() {}

    /** The server side answers a `PartitionRequest` (the driver's Netty server stand-in). */
    interface PartitionRequests {
        void serve(RemoteInputChannel channel, ResultPartitionID partition, ResultSubpartitionIndexSet subpartitions)
                throws IOException;
    }

    /**
     * The consumer's Netty client. `notifyCreditAvailable` is where
     * `RemoteInputChannel.notifyCreditAvailable` queues an `AddCredit` write (the handler's
     * `userEventTriggered`); the driver counts those per channel and serves them in its
     * `sendAddCredit` step. `resumeConsumption` is where `RemoteInputChannel.resumeConsumption`
     * queues a `ResumeConsumption` write (NettyPartitionRequestClient's `sendToChannel` of a
     * `ResumeConsumptionMessage`); the driver counts those too and writes them in its
     * `sendResumeConsumption` step, onto the same client-to-server wire as the `AddCredit`s.
     */
    static final class Client implements PartitionRequestClient, ConnectionManager {
        private final PartitionRequests server;
        /** `notifyCreditAvailable` calls per channel index. */
        final long[] creditNotifications;
        /** `resumeConsumption` calls per channel index. */
        final long[] resumeNotifications;

        Client(PartitionRequests server, int channels) {
            this.server = server;
            this.creditNotifications = new long[channels];
            this.resumeNotifications = new long[channels];
        }

        // --- ConnectionManager ---
        @Override
        public int start() {
            return -1;
        }

        @Override
        public PartitionRequestClient createPartitionRequestClient(ConnectionID connectionId) {
            return this;
        }

        @Override
        public void closeOpenChannelConnections(ConnectionID connectionId) {}

        @Override
        public int getNumberOfActiveConnections() {
            return 0;
        }

        @Override
        public void shutdown() {}

        // --- PartitionRequestClient ---
        @Override
        public void requestSubpartition(
                ResultPartitionID partitionId,
                ResultSubpartitionIndexSet subpartitionIndexSet,
                RemoteInputChannel inputChannel,
                int delayMs)
                throws IOException {
            server.serve(inputChannel, partitionId, subpartitionIndexSet);
        }

        @Override
        public void notifyCreditAvailable(RemoteInputChannel inputChannel) {
            creditNotifications[inputChannel.getChannelIndex()]++;
        }

        @Override
        public void notifyNewBufferSize(RemoteInputChannel inputChannel, int bufferSize) {}

        @Override
        public void notifyRequiredSegmentId(RemoteInputChannel inputChannel, int subpartitionId, int segmentId) {}

        @Override
        public void resumeConsumption(RemoteInputChannel inputChannel) {
            resumeNotifications[inputChannel.getChannelIndex()]++;
        }

        @Override
        public void acknowledgeAllRecordsProcessed(RemoteInputChannel inputChannel) {}

        @Override
        public void sendTaskEvent(ResultPartitionID partitionId, TaskEvent event, RemoteInputChannel inputChannel) {}

        @Override
        public void close(RemoteInputChannel inputChannel) {}
    }

    /**
     * The task's channel state writer: what `ChannelStatePersister` hands it for each checkpoint
     * and channel, by the model's names, in order. It releases every buffer it is given, as the
     * real writer does once written.
     */
    static class Writer implements ChannelStateWriter {
        /** checkpoint -> channel index -> names, in order. */
        final Map<Long, Map<Integer, List<String>>> persisted = new TreeMap<>();

        @Override
        public void start(long checkpointId, CheckpointOptions checkpointOptions) {}

        @Override
        public void addInputData(long checkpointId, InputChannelInfo info, int startSeqNum, CloseableIterator<Buffer> data) {
            int c = info.getInputChannelIdx();
            List<String> names = persisted.computeIfAbsent(checkpointId, k -> new TreeMap<>())
                    .computeIfAbsent(c, k -> new ArrayList<>());
            try {
                while (data.hasNext()) {
                    Buffer b = data.next();
                    names.add(Items.name(c, b));
                    b.recycleBuffer();
                }
                data.close();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        List<String> of(long checkpointId, int channel) {
            return persisted.getOrDefault(checkpointId, Map.of()).getOrDefault(channel, List.of());
        }

        @Override
        public void addOutputData(long checkpointId, ResultSubpartitionInfo info, int startSeqNum, Buffer... data) {
            for (Buffer b : data) {
                b.recycleBuffer();
            }
        }

        @Override
        public void addOutputDataFuture(
                long checkpointId, ResultSubpartitionInfo info, int startSeqNum, CompletableFuture<List<Buffer>> data) {
            data.thenAccept(buffers -> buffers.forEach(Buffer::recycleBuffer));
        }

        @Override
        public void finishInput(long checkpointId) {}

        @Override
        public void finishOutput(long checkpointId) {}

        @Override
        public void abort(long checkpointId, Throwable cause, boolean cleanup) {}

        @Override
        public ChannelStateWriteResult getAndRemoveWriteResult(long checkpointId) {
            return ChannelStateWriteResult.EMPTY;
        }

        @Override
        public void close() {}
    }

    /** The producer's writer: unaligned barriers hand it their in-flight output; released at once. */
    static final class OutputWriter extends Writer {}
}
