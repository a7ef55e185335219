package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;

import java.util.ArrayDeque;

/**
 * Flink 2.3.0's {@link RemoteInputChannel} with {@link
 * LateFloatingCreditAndMissedWakeupFixedBufferManager} as its buffer manager. The constructor is
 * 2.3.0's; right after it, before anything can see the channel, the private final {@code
 * bufferManager} field (set at line 159) is pointed at the fixed manager, made with the same
 * arguments. Every method of the channel is 2.3.0's.
 */
public class LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel extends RemoteInputChannel {
    public LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel(
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
            Counter numBytesIn,
            Counter numBuffersIn,
            ChannelStateWriter stateWriter,
            ArrayDeque<Buffer> recoveredBuffers) {
        super(inputGate, channelIndex, partitionId, consumedSubpartitionIndexSet, connectionId, connectionManager,
                initialBackOff, maxBackoff, partitionRequestListenerTimeout, networkBuffersPerChannel, numBytesIn,
                numBuffersIn, stateWriter, recoveredBuffers);
        LateFloatingCreditAndMissedWakeupFixedBufferManager.installInto(this);
    }
}
