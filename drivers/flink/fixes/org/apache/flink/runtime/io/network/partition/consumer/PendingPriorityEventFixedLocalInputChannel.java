package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.io.network.TaskEventPublisher;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.partition.BufferWritingResultPartition;
import org.apache.flink.runtime.io.network.partition.PipelinedSubpartition;
import org.apache.flink.runtime.io.network.partition.PrioritizedDeque;
import org.apache.flink.runtime.io.network.partition.ResultPartition;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.Optional;

/**
 * Flink 2.3.0's {@link LocalInputChannel} without the lost update of {@code
 * hasPendingPriorityEvent} (docs/findings.md, "Lost update of {@code hasPendingPriorityEvent}"),
 * as a subclass: Flink's code runs unchanged through {@code super}; the private fields are reached
 * by reflection ({@link VarHandle}s).
 *
 * <p><b>The race in 2.3.0.</b> The flag has two writers on two threads with plain stores: the
 * producer's {@code notifyPriorityEvent} stores {@code true} (line 439) before it queues the
 * channel at the gate (line 440, {@code SingleInputGate.queueChannel}, lines 1263-1290, under the
 * gate's {@code inputChannelsWithData} monitor); the task's {@code getNextRecoveredBuffer} polls the
 * view (line 348) and then stores whether the polled element's next data type, fixed under the
 * subpartition lock by {@code PipelinedSubpartition.pollBuffer} (lines 549-552), has priority
 * (lines 358-361). A barrier added between that poll and that store ({@code
 * PipelinedSubpartition.add} under {@code synchronized (buffers)}, lines 178-194, then the
 * announcement, line 196) has its {@code true} overwritten. The gate's monitor does not order them:
 * the producer stores the flag before it asks for that monitor.
 *
 * <p><b>The fix.</b> The flag gets a single writer, the task thread, and its value is derived
 * from the state that both threads update under one lock, the subpartition's {@code buffers}:
 *
 * <ol>
 *   <li>{@link #notifyPriorityEvent} (producer) no longer stores the flag; it only announces the
 *       event to the gate, which is what {@code InputChannel.notifyPriorityEvent} does (2.3.0 line
 *       178, {@code inputGate.notifyPriorityEvent(this, prioritySequenceNumber)}; the channel is
 *       queued at the gate's priority head as before).
 *   <li>{@link #getNextBuffer} (task, under the gate's monitor) sets the flag to "the head of the
 *       subpartition is a priority element", read under {@code synchronized (buffers)}, right
 *       before {@code super.getNextBuffer()} reads it (line 346), and again right after {@code
 *       super} returns (the re-check), so between two calls the flag equals the head.
 * </ol>
 *
 * <p><b>Why the lost update cannot happen any more.</b> Nothing but the task thread writes the
 * flag, so no write can be lost. The producer's information is the deque itself: {@code add}
 * inserts the barrier under the {@code buffers} lock (lines 178-194) before it announces it (line
 * 196). Our re-check takes the same lock after {@code super}'s store at line 361, so every {@code
 * add} whose announcement that store could have overwritten in 2.3.0 (one that released the lock
 * after the poll of line 348) is seen by the re-check, which sets the flag again while that barrier
 * waits at the head. The check before {@code super} makes the flag exact where it is read: a
 * priority head seen under the lock stays the head until the task itself polls it (only the task
 * polls; {@code pollBuffer} takes the same lock), so {@code super}'s poll at line 348 returns it and
 * its {@code checkState} (lines 349-352) holds. An {@code add} that comes after the check is the
 * next call's: its announcement queues the channel at the gate's priority head (lines 1279-1284)
 * and the gate polls the channel again.
 *
 * <p><b>Why the producer stops writing.</b> The re-check alone, with the producer still storing
 * {@code true} at line 439, closes the lost update but opens its mirror image: when the producer is
 * preempted between {@code add}'s unlock (line 194) and line 439, the re-check already sees the
 * barrier, the task polls it, and the late store leaves {@code true} with no priority element at
 * the head (the gate drops the late announcement as outdated, lines 1268-1276); the next recovered
 * poll fails {@code checkState} at lines 349-352 ("Expected priority event, but got null"). {@code
 * LocalInputChannelPendingPriorityEventRaceTest} shows both. The check before {@code super} would
 * overwrite such a stale {@code true} too, except when it lands between that check and {@code
 * super}'s read at line 346; with no store on the producer's thread, no window is left.
 *
 * <p><b>Scope.</b> Only a channel on a single {@link PipelinedSubpartition} of a {@link
 * BufferWritingResultPartition} is handled (what a local pipelined channel of an unaligned
 * checkpoint reads); for anything else, and until {@link #requestSubpartitions} has found the
 * subpartition, the channel behaves exactly as 2.3.0's. The lock order is 2.3.0's (the task takes
 * {@code buffers} inside the gate's monitor, as {@code pollBuffer} does; the producer never holds
 * {@code buffers} while it asks for the gate's monitor). The cost is one uncontended lock and two
 * volatile stores per {@code getNextBuffer} while recovered buffers remain, none afterwards.
 */
public class PendingPriorityEventFixedLocalInputChannel extends LocalInputChannel {
    private static final VarHandle HAS_PENDING_PRIORITY_EVENT;
    private static final VarHandle TO_BE_CONSUMED_BUFFERS;
    private static final VarHandle PARTITION_MANAGER;
    private static final VarHandle REGISTERED_PARTITIONS;
    private static final VarHandle SUBPARTITION_BUFFERS;

    static {
        try {
            MethodHandles.Lookup channel =
                    MethodHandles.privateLookupIn(LocalInputChannel.class, MethodHandles.lookup());
            HAS_PENDING_PRIORITY_EVENT =
                    channel.findVarHandle(LocalInputChannel.class, "hasPendingPriorityEvent", boolean.class);
            TO_BE_CONSUMED_BUFFERS =
                    channel.findVarHandle(LocalInputChannel.class, "toBeConsumedBuffers", Deque.class);
            PARTITION_MANAGER =
                    channel.findVarHandle(LocalInputChannel.class, "partitionManager", ResultPartitionManager.class);
            REGISTERED_PARTITIONS =
                    MethodHandles.privateLookupIn(ResultPartitionManager.class, MethodHandles.lookup())
                            .findVarHandle(ResultPartitionManager.class, "registeredPartitions", Map.class);
            SUBPARTITION_BUFFERS =
                    MethodHandles.privateLookupIn(PipelinedSubpartition.class, MethodHandles.lookup())
                            .findVarHandle(PipelinedSubpartition.class, "buffers", PrioritizedDeque.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The subpartition's {@code buffers} (its lock and its deque); null until found. */
    private volatile PrioritizedDeque<?> subpartitionBuffers;

    public PendingPriorityEventFixedLocalInputChannel(
            SingleInputGate inputGate,
            int channelIndex,
            ResultPartitionID partitionId,
            ResultSubpartitionIndexSet consumedSubpartitionIndexSet,
            ResultPartitionManager partitionManager,
            TaskEventPublisher taskEventPublisher,
            int initialBackoff,
            int maxBackoff,
            Counter numBytesIn,
            Counter numBuffersIn,
            ChannelStateWriter stateWriter,
            ArrayDeque<Buffer> recoveredBuffers) {
        super(inputGate, channelIndex, partitionId, consumedSubpartitionIndexSet, partitionManager,
                taskEventPublisher, initialBackoff, maxBackoff, numBytesIn, numBuffersIn, stateWriter,
                recoveredBuffers);
    }

    /** 2.3.0's request, then finds the subpartition the view reads (the view may be wrapped). */
    @Override
    protected void requestSubpartitions() throws IOException {
        super.requestSubpartitions();
        if (subpartitionBuffers == null && getSubpartitionView() != null) {
            subpartitionBuffers = findSubpartitionBuffers();
        }
    }

    @Override
    public Optional<BufferAndAvailability> getNextBuffer() throws IOException {
        PrioritizedDeque<?> buffers = subpartitionBuffers;
        if (buffers == null) {
            return super.getNextBuffer();
        }
        setFlagFromHead(buffers); // what super reads at line 346
        Optional<BufferAndAvailability> next = super.getNextBuffer();
        setFlagFromHead(buffers); // the re-check after super's store at line 361
        return next;
    }

    /** The producer's announcement, without 2.3.0's store into the flag (line 439). */
    @Override
    public void notifyPriorityEvent(int prioritySequenceNumber) {
        if (subpartitionBuffers == null) {
            super.notifyPriorityEvent(prioritySequenceNumber);
            return;
        }
        inputGate.notifyPriorityEvent(this, prioritySequenceNumber);
    }

    /** Whether the flag is set (for tests). */
    boolean hasPendingPriorityEvent() {
        return (boolean) HAS_PENDING_PRIORITY_EVENT.getVolatile((LocalInputChannel) this);
    }

    private void setFlagFromHead(PrioritizedDeque<?> buffers) {
        // The flag is read only while recovered (or split) buffers wait (getNextBuffer, line 275).
        if (((Deque<?>) TO_BE_CONSUMED_BUFFERS.get((LocalInputChannel) this)).isEmpty()) {
            return;
        }
        boolean headHasPriority;
        synchronized (buffers) {
            // Priority elements are the deque's head (PrioritizedDeque.addPriorityElement).
            headHasPriority = buffers.getNumPriorityElements() > 0;
        }
        HAS_PENDING_PRIORITY_EVENT.setVolatile((LocalInputChannel) this, headHasPriority);
    }

    /** The {@code buffers} of the one pipelined subpartition this channel reads, or null. */
    private PrioritizedDeque<?> findSubpartitionBuffers() {
        ResultSubpartitionIndexSet indexes = consumedSubpartitionIndexSet;
        if (indexes.size() != 1) {
            return null;
        }
        ResultPartitionManager manager =
                (ResultPartitionManager) PARTITION_MANAGER.get((LocalInputChannel) this);
        Map<?, ?> registered = (Map<?, ?>) REGISTERED_PARTITIONS.get(manager);
        ResultPartition partition;
        synchronized (registered) { // as ResultPartitionManager.createSubpartitionView does
            partition = (ResultPartition) registered.get(partitionId);
        }
        if (!(partition instanceof BufferWritingResultPartition)) {
            return null;
        }
        ResultSubpartition subpartition =
                ((BufferWritingResultPartition) partition).getAllPartitions()[indexes.getStartIndex()];
        if (!(subpartition instanceof PipelinedSubpartition)) {
            return null;
        }
        return (PrioritizedDeque<?>) SUBPARTITION_BUFFERS.get((PipelinedSubpartition) subpartition);
    }
}
