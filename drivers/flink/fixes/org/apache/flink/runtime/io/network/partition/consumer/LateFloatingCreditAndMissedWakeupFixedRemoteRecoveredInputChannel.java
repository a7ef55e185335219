package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.metrics.InputChannelMetrics;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;

import java.io.IOException;
import java.util.ArrayDeque;

/**
 * Flink 2.3.0's {@link RemoteRecoveredInputChannel} (what {@code SingleInputGateFactory} makes for
 * every remote channel, line 362) that converts into a {@link
 * LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel} instead of a {@link
 * RemoteInputChannel}.
 *
 * <p>{@code toInputChannelInternal} (2.3.0 lines 73-89) constructs the {@code RemoteInputChannel}
 * and calls its {@code setup()}, which requests the exclusive buffers into the manager; the manager
 * cannot be replaced after that, and the construction inside it cannot be intercepted. So the
 * override makes the same two calls with the fixed class and the same arguments (the recovered
 * channel's own fields, 2.3.0 lines 76-88) instead of calling {@code super}. Everything else is
 * 2.3.0's.
 */
public class LateFloatingCreditAndMissedWakeupFixedRemoteRecoveredInputChannel extends RemoteRecoveredInputChannel {
    private final ConnectionID connectionId;
    private final ConnectionManager connectionManager;
    private final int partitionRequestListenerTimeout;

    public LateFloatingCreditAndMissedWakeupFixedRemoteRecoveredInputChannel(
            SingleInputGate inputGate,
            int channelIndex,
            ResultPartitionID partitionId,
            ResultSubpartitionIndexSet consumedSubpartitionIndexSet,
            ConnectionID connectionId,
            ConnectionManager connectionManager,
            int initialBackOff,
            int maxBackoff,
            int partitionRequestListenerTimeout,
            int networkBuffersPerChannel,
            InputChannelMetrics metrics) {
        super(inputGate, channelIndex, partitionId, consumedSubpartitionIndexSet, connectionId, connectionManager,
                initialBackOff, maxBackoff, partitionRequestListenerTimeout, networkBuffersPerChannel, metrics);
        this.connectionId = connectionId;
        this.connectionManager = connectionManager;
        this.partitionRequestListenerTimeout = partitionRequestListenerTimeout;
    }

    @Override
    protected InputChannel toInputChannelInternal(ArrayDeque<Buffer> remainingBuffers) throws IOException {
        RemoteInputChannel channel = new LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel(
                inputGate, getChannelIndex(), partitionId, consumedSubpartitionIndexSet, connectionId,
                connectionManager, initialBackoff, maxBackoff, partitionRequestListenerTimeout,
                networkBuffersPerChannel, numBytesIn, numBuffersIn, channelStateWriter, remainingBuffers);
        channel.setup();
        return channel;
    }
}
