package org.apache.flink.runtime.io.network.netty;

import org.apache.flink.runtime.io.network.NetworkSequenceViewReader;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionProvider;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.io.network.partition.consumer.InputChannel.BufferAndAvailability;
import org.apache.flink.runtime.io.network.partition.consumer.InputChannelID;

import java.io.IOException;

/**
 * The producer's Netty server for one remote channel: Flink's own
 * {@link CreditBasedSequenceNumberingViewReader} (its credit count, its `getNextBuffer` with the
 * "no credit available" check, its `nextDataType`), created as the server's
 * `PartitionRequestServerHandler` creates it for a `PartitionRequest`. Its
 * {@link PartitionRequestQueue} has no Netty channel: the queue would write every available
 * buffer at once, while the model sends one `BufferResponse` per step, so the driver calls
 * {@link #getNextBuffer} when the trace says `sendBuffer` and keeps the wire itself.
 */
public final class ServerReader {
    /** A request queue that only records that the reader became available (no Netty context). */
    private static final class QuietQueue extends PartitionRequestQueue {
        @Override
        void notifyReaderNonEmpty(NetworkSequenceViewReader reader) {}
    }

    private final CreditBasedSequenceNumberingViewReader reader;

    public ServerReader(
            InputChannelID receiver,
            int initialCredit,
            ResultPartitionProvider partitions,
            ResultPartitionID partition,
            ResultSubpartitionIndexSet subpartitions)
            throws IOException {
        reader = new CreditBasedSequenceNumberingViewReader(receiver, initialCredit, new QuietQueue());
        reader.requestSubpartitionViewOrRegisterListener(partitions, partition, subpartitions);
    }

    /** `getNextBuffer()` of the reader; null when nothing is available. */
    public BufferAndAvailability getNextBuffer() throws IOException {
        return reader.getNextBuffer();
    }

    /** `addCredit(k)` from an `AddCredit` message. */
    public void addCredit(int credit) {
        reader.addCredit(credit);
    }

    /**
     * `resumeConsumption()` from a `ResumeConsumption` message (`PartitionRequestQueue
     * .addCreditOrResumeConsumption`): the reader drops its credit when its initial credit is 0,
     * and the view's `resumeConsumption` unblocks the subpartition (`checkState(isBlocked)`).
     */
    public void resumeConsumption() {
        reader.resumeConsumption();
    }

    /** `numCreditsAvailable`. */
    public int credit() {
        return reader.getNumCreditsAvailable();
    }

    public void release() throws IOException {
        reader.releaseAllResources();
    }
}
