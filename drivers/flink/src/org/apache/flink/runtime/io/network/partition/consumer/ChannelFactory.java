package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.TaskEventPublisher;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.metrics.InputChannelMetrics;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;

import java.util.ArrayDeque;

/**
 * The one place where {@link FlinkSystem} makes its channels: Flink 2.3.0's classes, or with
 * {@code --flink-fixes} our fixed subclasses from drivers/flink/fixes:
 *
 * <ul>
 *   <li>remote: {@link LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel} (no recovery)
 *       and {@link LateFloatingCreditAndMissedWakeupFixedRemoteRecoveredInputChannel} (legacy,
 *       converting into the former);
 *   <li>local: {@link PendingPriorityEventFixedLocalInputChannel} (no recovery) and {@link
 *       FixedLocalRecoveredInputChannel} (legacy, converting into the former).
 * </ul>
 */
final class ChannelFactory {
    final boolean fixes;

    ChannelFactory(boolean fixes) {
        this.fixes = fixes;
    }

    RemoteInputChannel remote(
            SingleInputGate gate, int index, ResultPartitionID partition, ResultSubpartitionIndexSet sub,
            ConnectionID connection, ConnectionManager connections, int exclusive, Counter bytesIn,
            Counter buffersIn, ChannelStateWriter writer, ArrayDeque<Buffer> recovered) {
        return fixes
                ? new LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel(gate, index, partition, sub, connection,
                        connections, 0, 0, 0, exclusive, bytesIn, buffersIn, writer, recovered)
                : new RemoteInputChannel(gate, index, partition, sub, connection, connections, 0, 0, 0, exclusive,
                        bytesIn, buffersIn, writer, recovered);
    }

    RecoveredInputChannel remoteRecovered(
            SingleInputGate gate, int index, ResultPartitionID partition, ResultSubpartitionIndexSet sub,
            ConnectionID connection, ConnectionManager connections, int exclusive, InputChannelMetrics metrics) {
        return fixes
                ? new LateFloatingCreditAndMissedWakeupFixedRemoteRecoveredInputChannel(gate, index, partition, sub,
                        connection, connections, 0, 0, 0, exclusive, metrics)
                : new RemoteRecoveredInputChannel(gate, index, partition, sub, connection, connections, 0, 0, 0,
                        exclusive, metrics);
    }

    /** With the fixes: the colleague's {@link PendingPriorityEventFixedLocalInputChannel}, plugged in here. */
    LocalInputChannel local(
            SingleInputGate gate, int index, ResultPartitionID partition, ResultSubpartitionIndexSet sub,
            ResultPartitionManager partitions, TaskEventPublisher events, Counter bytesIn, Counter buffersIn,
            ChannelStateWriter writer, ArrayDeque<Buffer> recovered) {
        return fixes
                ? new PendingPriorityEventFixedLocalInputChannel(gate, index, partition, sub, partitions, events, 0, 0,
                        bytesIn, buffersIn, writer, recovered)
                : new LocalInputChannel(gate, index, partition, sub, partitions, events, 0, 0, bytesIn, buffersIn,
                        writer, recovered);
    }

    RecoveredInputChannel localRecovered(
            SingleInputGate gate, int index, ResultPartitionID partition, ResultSubpartitionIndexSet sub,
            ResultPartitionManager partitions, TaskEventPublisher events, InputChannelMetrics metrics) {
        return fixes
                ? new FixedLocalRecoveredInputChannel(this, gate, index, partition, sub, partitions, events, metrics)
                : new LocalRecoveredInputChannel(gate, index, partition, sub, partitions, events, 0, 0, 0, metrics);
    }

    /** Whether a channel the gate holds is one of our fixed classes (or a recovered one converting into one). */
    static boolean isFixed(InputChannel channel) {
        return channel instanceof LateFloatingCreditAndMissedWakeupFixedRemoteRecoveredInputChannel
                || channel instanceof FixedLocalRecoveredInputChannel
                || channel instanceof PendingPriorityEventFixedLocalInputChannel
                || (channel instanceof RemoteInputChannel
                        && ((RemoteInputChannel) channel).getBufferManager()
                                instanceof LateFloatingCreditAndMissedWakeupFixedBufferManager);
    }

    /**
     * 2.3.0's {@link LocalRecoveredInputChannel} converting into {@link #local}'s channel: {@code
     * toInputChannelInternal} (2.3.0 lines 68-70) is the one constructor call, made here with the
     * same arguments and the fixed class.
     */
    static final class FixedLocalRecoveredInputChannel extends LocalRecoveredInputChannel {
        private final ChannelFactory factory;
        private final ResultPartitionManager partitions;
        private final TaskEventPublisher events;

        FixedLocalRecoveredInputChannel(
                ChannelFactory factory, SingleInputGate gate, int index, ResultPartitionID partition,
                ResultSubpartitionIndexSet sub, ResultPartitionManager partitions, TaskEventPublisher events,
                InputChannelMetrics metrics) {
            super(gate, index, partition, sub, partitions, events, 0, 0, 0, metrics);
            this.factory = factory;
            this.partitions = partitions;
            this.events = events;
        }

        @Override
        protected InputChannel toInputChannelInternal(ArrayDeque<Buffer> remainingBuffers) {
            return factory.local(inputGate, getChannelIndex(), partitionId, consumedSubpartitionIndexSet, partitions,
                    events, numBytesIn, numBuffersIn, channelStateWriter, remainingBuffers);
        }
    }
}
