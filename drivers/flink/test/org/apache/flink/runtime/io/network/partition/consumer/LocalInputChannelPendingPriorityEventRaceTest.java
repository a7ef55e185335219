package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.event.AbstractEvent;
import org.apache.flink.runtime.io.network.TaskEventDispatcher;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.api.serialization.EventSerializer;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferConsumer;
import org.apache.flink.runtime.io.network.buffer.BufferConsumerWithPartialRecordLength;
import org.apache.flink.runtime.io.network.buffer.FreeingBufferRecycler;
import org.apache.flink.runtime.io.network.buffer.NetworkBuffer;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.partition.PipelinedResultPartition;
import org.apache.flink.runtime.io.network.partition.PipelinedSubpartition;
import org.apache.flink.runtime.io.network.partition.PrioritizedDeque;
import org.apache.flink.runtime.io.network.partition.ResultPartition;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.io.network.partition.consumer.InputChannel.BufferAndAvailability;
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.util.clock.SystemClock;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Flink 2.3.0: a lost update of {@code LocalInputChannel.hasPendingPriorityEvent}, on Flink's own
 * classes ({@link SingleInputGate}, {@link LocalInputChannel}, {@link PipelinedResultPartition},
 * {@link PipelinedSubpartition}); only the view wrapper ({@link InterleavingPartitionManager}) is
 * ours.
 *
 * <p>A local channel built with migrated recovered buffers (the constructor's
 * {@code ArrayDeque<Buffer>}, 2.3.0 lines 120-124) serves them first (getNextBuffer, line 275)
 * unless {@code hasPendingPriorityEvent} is set (getNextRecoveredBuffer, line 346). Its priority
 * branch polls the view (line 348) and then stores the polled element's next data type into the
 * flag (lines 358-361). That type was fixed by {@code PipelinedSubpartition.pollBuffer} under the
 * subpartition lock (lines 549-552). A second unaligned barrier added between the poll and the
 * store (producer: {@code PipelinedSubpartition.add}, lines 185 and 196-197, calling
 * {@code LocalInputChannel.notifyPriorityEvent}, line 439, which sets the flag) is lost: the flag
 * is cleared while the view's head is that barrier, and the recovered data overtakes it.
 *
 * <p>In a job: checkpoint N is aborted and N+1 triggered while a migrated channel still holds
 * recovered buffers, so one upstream sends two unaligned barriers back to back.
 */
class LocalInputChannelPendingPriorityEventRaceTest {
    private static final int SEGMENT_SIZE = 4096;

    private static final Constructor<PipelinedSubpartition> PIPELINED_SUBPARTITION;
    private static final Field HAS_PENDING_PRIORITY_EVENT;
    private static final Field SUBPARTITION_BUFFERS;

    static {
        try {
            // Package-private in another package (ResultPartitionFactory builds it in Flink).
            PIPELINED_SUBPARTITION = PipelinedSubpartition.class.getDeclaredConstructor(
                    int.class, int.class, int.class, ResultPartition.class);
            HAS_PENDING_PRIORITY_EVENT = LocalInputChannel.class.getDeclaredField("hasPendingPriorityEvent");
            SUBPARTITION_BUFFERS = PipelinedSubpartition.class.getDeclaredField("buffers");
            PIPELINED_SUBPARTITION.setAccessible(true);
            HAS_PENDING_PRIORITY_EVENT.setAccessible(true);
            SUBPARTITION_BUFFERS.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private NetworkBufferPool networkBufferPool;
    private NetworkBufferPool producerBufferPool;
    private InterleavingPartitionManager partitionManager;
    private PipelinedResultPartition partition;
    private PipelinedSubpartition subpartition;
    private SingleInputGate gate;
    private LocalInputChannel channel;

    @BeforeEach
    void setUp() throws Exception {
        networkBufferPool = new NetworkBufferPool(4, SEGMENT_SIZE);
        producerBufferPool = new NetworkBufferPool(2, SEGMENT_SIZE);
        partitionManager = new InterleavingPartitionManager();
        ResultPartitionID partitionId = new ResultPartitionID();

        // The upstream task's partition: one pipelined subpartition, registered by setup().
        ResultSubpartition[] subpartitions = new ResultSubpartition[1];
        partition = new PipelinedResultPartition(
                "upstream", 0, partitionId, ResultPartitionType.PIPELINED_BOUNDED, subpartitions, 1,
                partitionManager, null, () -> producerBufferPool.createBufferPool(1, 1, 1, 1, 0));
        subpartition = PIPELINED_SUBPARTITION.newInstance(0, 0, SEGMENT_SIZE, partition);
        subpartitions[0] = subpartition;
        partition.setChannelStateWriter(ChannelStateWriter.NO_OP);
        partition.setup();

        // The downstream task's gate, with the local channel that replaced a recovered channel
        // after migration (execution.checkpointing.during-recovery.enabled).
        gate = new SingleInputGate(
                "downstream", 0, new IntermediateDataSetID(), ResultPartitionType.PIPELINED_BOUNDED, 1,
                (resultId, producerPartitionId, handle) -> {},
                () -> networkBufferPool.createBufferPool(1, 1),
                null, networkBufferPool, SEGMENT_SIZE,
                new ThroughputCalculator(SystemClock.getInstance()), null);
        channel = new LocalInputChannel(
                gate, 0, partitionId, new ResultSubpartitionIndexSet(0), partitionManager,
                new TaskEventDispatcher(), 0, 0, new SimpleCounter(), new SimpleCounter(),
                ChannelStateWriter.NO_OP, migratedRecoveredBuffers("recovered-0", "recovered-1"));
        gate.setInputChannels(channel);
        gate.setup();
        gate.requestPartitions();
    }

    @AfterEach
    void tearDown() throws Exception {
        gate.close();
        partition.release();
        networkBufferPool.destroyAllBufferPools();
        networkBufferPool.destroy();
        producerBufferPool.destroyAllBufferPools();
        producerBufferPool.destroy();
    }

    /** Expected to reproduce on 2.3.0: passes while the bug is there. */
    @Test
    void lostUpdateOfHasPendingPriorityEventReproduces() throws Exception {
        emitUnalignedBarrier(1);
        assertTrue(hasPendingPriorityEvent(), "barrier 1's notifyPriorityEvent sets the flag");

        // Between the poll of barrier 1 and the channel's store into the flag, the producer adds
        // barrier 2: add() under the subpartition lock, then notifyPriorityEvent sets the flag.
        List<Boolean> flagAfterBarrier2Notified = new ArrayList<>();
        partitionManager.view().afterNextPoll(polled -> {
            assertEquals("barrier 1", describe(polled.buffer()), "the poll inside the window");
            assertEquals(Buffer.DataType.NONE, polled.getNextDataType(), "fixed at the poll");
            emitUnalignedBarrier(2);
            flagAfterBarrier2Notified.add(hasPendingPriorityEvent());
        });

        assertEquals("barrier 1", take(channel.getNextBuffer()));
        assertFalse(partitionManager.view().armed(), "the interleaving ran");
        assertEquals(List.of(true), flagAfterBarrier2Notified, "barrier 2's notification set the flag");

        // The lost update: the channel's store (line 361) overwrote the producer's true.
        assertFalse(hasPendingPriorityEvent(), "hasPendingPriorityEvent after the channel's clear");
        assertEquals("barrier 2 (priority elements: 1)", headOfSubpartition(), "the view's head");

        // So the next poll serves migrated data (line 377) instead of barrier 2.
        assertEquals("recovered-0", take(channel.getNextBuffer()), "barrier 2 overtaken by recovered data");
        assertEquals("barrier 2 (priority elements: 1)", headOfSubpartition(), "barrier 2 still waits");
        assertEquals("recovered-1", take(channel.getNextBuffer()));
        assertEquals("barrier 2", take(channel.getNextBuffer()), "barrier 2 only after all recovered data");
    }

    /** Control: barrier 2 added after the clear is served first, ahead of the recovered data. */
    @Test
    void barrierAddedOutsideTheWindowIsReturnedBeforeRecoveredData() throws Exception {
        emitUnalignedBarrier(1);
        assertEquals("barrier 1", take(channel.getNextBuffer()));
        assertFalse(hasPendingPriorityEvent(), "nothing pending after barrier 1");

        emitUnalignedBarrier(2);
        assertTrue(hasPendingPriorityEvent(), "barrier 2's notifyPriorityEvent sets the flag");
        assertEquals("barrier 2", take(channel.getNextBuffer()), "priority event ahead of recovered data");
        assertEquals("recovered-0", take(channel.getNextBuffer()));
        assertEquals("recovered-1", take(channel.getNextBuffer()));
    }

    /**
     * Expected to reproduce on 2.3.0, at the gate: after the race the gate still announces a
     * priority event, but its next poll is recovered data. CheckpointedInputGate.processPriorityEvents
     * (2.3.0 lines 109-118) keeps polling while {@code morePriorityEvents()} and fails there with
     * "Should only poll priority events" (line 117).
     */
    @Test
    void gatePollsRecoveredDataWhileAnnouncingPriorityEventReproduces() throws Exception {
        emitUnalignedBarrier(1);
        assertTrue(gate.getPriorityEventAvailableFuture().isDone(), "the gate announces barrier 1");
        partitionManager.view().afterNextPoll(polled -> emitUnalignedBarrier(2));

        BufferOrEvent first = gate.pollNext().orElseThrow();
        assertEquals("barrier 1", describe(first));
        assertTrue(first.hasPriority());
        assertTrue(first.morePriorityEvents(), "the gate was told of barrier 2: processPriorityEvents polls on");

        BufferOrEvent second = gate.pollNext().orElseThrow();
        assertEquals("recovered-0", describe(second));
        assertFalse(second.hasPriority(), "processPriorityEvents' checkState(hasPriority()) would fail here");
    }

    // --- the producer -------------------------------------------------------------------------

    /** What the upstream task's RecordWriter does for an unaligned checkpoint: a priority broadcast. */
    private void emitUnalignedBarrier(long checkpointId) {
        CheckpointBarrier barrier = new CheckpointBarrier(checkpointId, checkpointId,
                CheckpointOptions.unaligned(CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault()));
        try {
            partition.broadcastEvent(barrier, true);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // --- observations -------------------------------------------------------------------------

    private boolean hasPendingPriorityEvent() {
        try {
            return HAS_PENDING_PRIORITY_EVENT.getBoolean(channel);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The element at the head of the real subpartition (the view's next), read without polling it. */
    @SuppressWarnings("unchecked")
    private String headOfSubpartition() throws Exception {
        PrioritizedDeque<BufferConsumerWithPartialRecordLength> buffers =
                (PrioritizedDeque<BufferConsumerWithPartialRecordLength>) SUBPARTITION_BUFFERS.get(subpartition);
        synchronized (buffers) {
            BufferConsumerWithPartialRecordLength head = buffers.peek();
            if (head == null) {
                return "empty";
            }
            try (BufferConsumer copy = head.getBufferConsumer().copy()) {
                return describe(copy.build()) + " (priority elements: " + buffers.getNumPriorityElements() + ")";
            }
        }
    }

    /** The description of a buffer the channel handed out; recycles it. */
    private static String take(Optional<BufferAndAvailability> next) {
        Buffer buffer = next.orElseThrow(() -> new AssertionError("the channel returned nothing")).buffer();
        try {
            return describe(buffer);
        } finally {
            buffer.recycleBuffer();
        }
    }

    private static String describe(BufferOrEvent bufferOrEvent) {
        if (bufferOrEvent.isEvent()) {
            return describe(bufferOrEvent.getEvent());
        }
        try {
            return describe(bufferOrEvent.getBuffer());
        } finally {
            bufferOrEvent.getBuffer().recycleBuffer();
        }
    }

    /** "barrier N" for a checkpoint barrier, the text of a data buffer. */
    private static String describe(Buffer buffer) {
        ByteBuffer readable = buffer.getNioBufferReadable();
        if (buffer.isBuffer()) {
            byte[] bytes = new byte[readable.remaining()];
            readable.get(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        }
        try {
            return describe(EventSerializer.fromSerializedEvent(readable, LocalInputChannel.class.getClassLoader()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String describe(AbstractEvent event) {
        return event instanceof CheckpointBarrier
                ? "barrier " + ((CheckpointBarrier) event).getId()
                : event.getClass().getSimpleName();
    }

    /** Recovered data buffers as RecoveredInputChannel hands them to the physical channel. */
    private static ArrayDeque<Buffer> migratedRecoveredBuffers(String... contents) {
        ArrayDeque<Buffer> buffers = new ArrayDeque<>();
        for (String content : contents) {
            byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
            buffers.add(new NetworkBuffer(MemorySegmentFactory.wrap(bytes), FreeingBufferRecycler.INSTANCE,
                    Buffer.DataType.DATA_BUFFER, bytes.length));
        }
        return buffers;
    }
}
