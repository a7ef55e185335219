package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.event.AbstractEvent;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.NetworkClientHandler;
import org.apache.flink.runtime.io.network.PartitionRequestClient;
import org.apache.flink.runtime.io.network.TaskEventDispatcher;
import org.apache.flink.runtime.io.network.TaskEventPublisher;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.api.serialization.EventSerializer;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferPool;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.partition.PipelinedResultPartition;
import org.apache.flink.runtime.io.network.partition.PipelinedSubpartition;
import org.apache.flink.runtime.io.network.partition.ResultPartition;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultPartitionProvider;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.util.ExceptionUtils;
import org.apache.flink.util.clock.SystemClock;

import org.apache.flink.shaded.netty4.io.netty.channel.Channel;
import org.apache.flink.shaded.netty4.io.netty.channel.ChannelHandler;
import org.apache.flink.shaded.netty4.io.netty.channel.embedded.EmbeddedChannel;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * Flink 2.3.0, {@code taskmanager.network.memory.buffers-per-channel: 0}: a floating credit that
 * {@code BufferManager.notifyBufferAvailable(Buffer)} announces after the blocking event and the
 * resume is not backed by any buffer, so the producer sends one data buffer more than the consumer
 * can hold and the consumer fails with "The read buffer is null in credit-based input channel."
 *
 * <p>Everything is Flink's own 2.3.0 code: producer {@link PipelinedResultPartition} and {@link
 * PipelinedSubpartition}, the server pipeline of {@code NettyProtocol} (PartitionRequestQueue,
 * PartitionRequestServerHandler, CreditBasedSequenceNumberingViewReader), the client pipeline
 * (NettyMessageClientDecoderDelegate, CreditBasedPartitionRequestClientHandler) with a real
 * {@code NettyPartitionRequestClient}, the consumer {@link SingleInputGate}, {@link
 * RemoteInputChannel}, {@link BufferManager} and LocalBufferPool. The two Netty pipelines run on
 * {@link EmbeddedChannel}s; the test moves the bytes between them. The only code of ours is {@link
 * PausableRemoteInputChannel}: it holds the recycling thread at the entry of {@code
 * RemoteInputChannel.notifyBufferAvailable(int)}, i.e. at {@code BufferManager} 2.3.0 line 349,
 * after the {@code bufferQueue} monitor was released (lines 325-347). It then calls the real
 * method.
 *
 * <p>Steps (2.3.0 lines): (a) backlog 2 with one free floating buffer: the manager gets one and
 * registers as LocalBufferPool listener (BufferManager.tryRequestBuffers 191-193). (b) another
 * thread recycles a floating buffer: LocalBufferPool.recycle (605) calls the listener
 * BufferManager.notifyBufferAvailable(Buffer), which adds it (343) and leaves the lock (347); the
 * thread is held before line 349. (c) the blocking event (RECOVERY_COMPLETION, or an aligned
 * barrier) arrives with backlog 0: onBuffer (600-601) calls onBlockingUpstream (492):
 * releaseFloatingBuffers gives the buffer back. (d) the
 * task polls the event and resumes: RemoteInputChannel.resumeConsumption clears unannouncedCredit
 * (469) and sends ResumeConsumption (474); the server reader resets its credit to 0
 * (CreditBasedSequenceNumberingViewReader 163). (e) the held thread goes on: unannouncedCredit 0 to
 * 1 (453-454), AddCredit(1). (f) the server holds one credit more than the consumer has buffers;
 * the next data buffer finds none: NetworkBufferAllocator.allocatePooledNetworkBuffer (59) returns
 * null, NettyMessage.BufferResponse.readFrom (471-472) keeps null, BufferResponseDecoder skips the
 * bytes (88-89), CreditBasedPartitionRequestClientHandler.decodeBufferOrEvent throws (412) and
 * decodeMsg (298-299) hands it to RemoteInputChannel.onError.
 */
class RemoteInputChannelLateFloatingCreditRaceTest {
    private static final int SEGMENT_SIZE = 4096;
    private static final String NETTY = "org.apache.flink.runtime.io.network.netty.";
    private static final String READ_BUFFER_IS_NULL =
            "The read buffer is null in credit-based input channel.";

    private NetworkBufferPool consumerGlobalPool;
    private NetworkBufferPool producerGlobalPool;
    private PipelinedResultPartition partition;
    private EmbeddedChannel server;
    private EmbeddedChannel client;
    private Object serverQueue;
    private SingleInputGate gate;
    private PausableRemoteInputChannel channel;
    private BufferPool gatePool;
    private Thread recycler;

    @BeforeEach
    void setUp() throws Exception {
        consumerGlobalPool = new NetworkBufferPool(4, SEGMENT_SIZE);
        producerGlobalPool = new NetworkBufferPool(8, SEGMENT_SIZE);
        ResultPartitionManager partitionManager = new ResultPartitionManager();
        ResultPartitionID partitionId = new ResultPartitionID();

        // The upstream task's partition: one pipelined subpartition, registered by setup().
        ResultSubpartition[] subpartitions = new ResultSubpartition[1];
        partition = new PipelinedResultPartition(
                "upstream", 0, partitionId, ResultPartitionType.PIPELINED_BOUNDED, subpartitions, 1,
                partitionManager, null, () -> producerGlobalPool.createBufferPool(4, 4, 1, 4, 0));
        Constructor<PipelinedSubpartition> subpartitionConstructor = PipelinedSubpartition.class
                .getDeclaredConstructor(int.class, int.class, int.class, ResultPartition.class);
        subpartitionConstructor.setAccessible(true);
        subpartitions[0] = subpartitionConstructor.newInstance(0, 0, SEGMENT_SIZE, partition);
        partition.setChannelStateWriter(ChannelStateWriter.NO_OP);
        partition.setup();

        // Both ends of one TCP connection, with the handlers NettyProtocol gives NettyServer/NettyClient.
        Object protocol = construct(NETTY + "NettyProtocol",
                new Class<?>[] {ResultPartitionProvider.class, TaskEventPublisher.class},
                partitionManager, new TaskEventDispatcher());
        ChannelHandler[] serverHandlers = (ChannelHandler[]) call(protocol, "getServerChannelHandlers");
        ChannelHandler[] clientHandlers = (ChannelHandler[]) call(protocol, "getClientChannelHandlers");
        server = new EmbeddedChannel(serverHandlers);
        client = new EmbeddedChannel(clientHandlers);
        serverQueue = find(serverHandlers, Class.forName(NETTY + "PartitionRequestQueue"));
        NetworkClientHandler clientHandler = (NetworkClientHandler) find(clientHandlers, NetworkClientHandler.class);

        ConnectionID connectionId = new ConnectionID(
                ResourceID.generate(), InetSocketAddress.createUnresolved("upstream-tm", 1), 0);
        Class<?> factoryClass = Class.forName(NETTY + "PartitionRequestClientFactory");
        Object factory = construct(NETTY + "PartitionRequestClientFactory",
                new Class<?>[] {Class.forName(NETTY + "NettyClient"), boolean.class}, null, false);
        PartitionRequestClient requestClient = (PartitionRequestClient) construct(NETTY + "NettyPartitionRequestClient",
                new Class<?>[] {Channel.class, NetworkClientHandler.class, ConnectionID.class, factoryClass},
                client, clientHandler, connectionId, factory);
        ConnectionManager connectionManager = new ConnectionManager() {
            @Override
            public int start() {
                return 0;
            }

            @Override
            public PartitionRequestClient createPartitionRequestClient(ConnectionID id) {
                return requestClient;
            }

            @Override
            public void closeOpenChannelConnections(ConnectionID id) {}

            @Override
            public int getNumberOfActiveConnections() {
                return 1;
            }

            @Override
            public void shutdown() {}
        };

        // The downstream gate: two floating buffers, and 0 exclusive buffers per channel.
        gate = new SingleInputGate(
                "downstream", 0, new IntermediateDataSetID(), ResultPartitionType.PIPELINED_BOUNDED, 1,
                (resultId, producerPartitionId, handle) -> {},
                () -> consumerGlobalPool.createBufferPool(2, 2),
                null, consumerGlobalPool, SEGMENT_SIZE,
                new ThroughputCalculator(SystemClock.getInstance()), null);
        channel = new PausableRemoteInputChannel(
                gate, 0, partitionId, new ResultSubpartitionIndexSet(0), connectionId, connectionManager,
                0, 0, 0, /* buffers-per-channel */ 0, new SimpleCounter(), new SimpleCounter(),
                ChannelStateWriter.NO_OP, new ArrayDeque<>());
        gate.setInputChannels(channel);
        gate.setup();
        gate.requestPartitions();
        gatePool = gate.getBufferPool();

        toServer(); // PartitionRequest(credit = initialCredit = 0)
        assertEquals(0, channel.getInitialCredit());
        assertEquals(0, serverCredit(), "the server reader starts with initialCredit = 0");
    }

    @AfterEach
    void tearDown() throws Exception {
        channel.releaseHeldThread();
        if (recycler != null) {
            recycler.join(10_000);
        }
        gate.close();
        partition.release();
        client.finishAndReleaseAll();
        server.finishAndReleaseAll();
        consumerGlobalPool.destroyAllBufferPools();
        consumerGlobalPool.destroy();
        producerGlobalPool.destroyAllBufferPools();
        producerGlobalPool.destroy();
    }

    /** The two blocking events a task sees: end of recovered output (once), aligned barriers (each checkpoint). */
    enum BlockingEvent {
        RECOVERY_COMPLETION(EndOfOutputChannelStateEvent.INSTANCE),
        ALIGNED_CHECKPOINT_BARRIER(new CheckpointBarrier(1L, 1L, CheckpointOptions.alignedNoTimeout(
                CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault())));

        final AbstractEvent event;

        BlockingEvent(AbstractEvent event) {
            this.event = event;
        }
    }

    /** Expected to reproduce on 2.3.0: passes while the bug is there. */
    @ParameterizedTest
    @EnumSource(BlockingEvent.class)
    void lateFloatingCreditAfterResumeConsumptionReproduces(BlockingEvent blocking) throws Exception {
        Buffer heldElsewhere = upToBlockingEventInFlight(blocking);

        // (b) Another thread recycles a floating buffer; the channel's BufferManager accepts it under
        // bufferQueue and is held after the lock, before RemoteInputChannel.notifyBufferAvailable(1).
        recycler = channel.holdNextNotification(heldElsewhere::recycleBuffer);
        assertTrue(channel.awaitHeld(), "the recycling thread reached BufferManager line 349");
        assertEquals(1, channel.getNumberOfAvailableBuffers(), "the accepted floating buffer");
        assertFalse(channel.isWaitingForFloatingBuffers());
        assertEquals(0, channel.getUnannouncedCredit(), "not announced yet");

        // (c) The blocking event arrives (backlog 0): onBlockingUpstream releases the floating buffer.
        toClient();
        assertEquals(0, channel.getNumberOfAvailableBuffers(), "releaseFloatingBuffers took it back");
        assertEquals(0, channel.getNumberOfRequiredBuffers());

        // (d) The task consumes d1 and the event, and resumes consumption.
        resumeAfterBlockingEvent(blocking);
        assertEquals(0, serverCredit(), "resumeConsumption reset the reader's credit (initialCredit 0)");
        assertEquals(0, channel.getUnannouncedCredit());

        // (e) The held thread goes on and announces the buffer that the channel no longer has.
        channel.releaseHeldThread();
        recycler.join(10_000);
        assertFalse(recycler.isAlive());
        assertEquals(1, channel.getUnannouncedCredit(), "unannouncedCredit 0 -> 1 after the resume");
        assertEquals(0, channel.getNumberOfAvailableBuffers(), "but the channel holds no buffer");
        client.runPendingTasks();
        assertFalse(client.outboundMessages().isEmpty(), "notifyCreditAvailable: an AddCredit was written");
        assertEquals(0, channel.getUnannouncedCredit(), "the AddCredit carries it");
        toServer(); // AddCredit(1), after ResumeConsumption: the reader sends d3 on it

        // The backlog announcement sent on resume gets the consumer a floating buffer for d3, and
        // the consumer announces that buffer too.
        toClient();
        toServer();
        assertEquals("d3", take(gate.pollNext()));
        assertEquals(0, channel.getNumberOfAvailableBuffers(), "consumer: no free buffer");
        assertEquals(0, channel.getUnannouncedCredit(), "consumer: nothing unannounced");
        assertEquals(1, serverCredit(), "server: one credit for which the consumer has no buffer");
        assertNull(channel.requestBuffer(), "what the decoder would get for the next data buffer");
        channel.onSenderBacklog(0); // undo requestBuffer's --numRequiredBuffers (back to 0)

        // (f) ... but the next record is sent on the stale credit and the consumer has no buffer.
        emit("d4");
        partition.flushAll();
        toClient();
        IOException failure = assertThrows(IOException.class, () -> gate.pollNext());
        assertTrue(ExceptionUtils.findThrowableWithMessage(failure, READ_BUFFER_IS_NULL).isPresent(),
                () -> "channel error: " + ExceptionUtils.stringifyException(failure));
    }

    /** Control: the same run without the hold. The announcement precedes the blocking event. */
    @ParameterizedTest
    @EnumSource(BlockingEvent.class)
    void floatingCreditAnnouncedBeforeBlockingEventIsConsistent(BlockingEvent blocking) throws Exception {
        Buffer heldElsewhere = upToBlockingEventInFlight(blocking);

        heldElsewhere.recycleBuffer(); // (b) without preemption: accepted and announced at once
        assertEquals(1, channel.getNumberOfAvailableBuffers());
        assertEquals(1, channel.getUnannouncedCredit());
        toServer(); // AddCredit(1) reaches the blocked reader
        assertEquals(1, serverCredit());

        toClient(); // (c) the blocking event: the announced floating buffer is released
        assertEquals(0, channel.getNumberOfAvailableBuffers());
        resumeAfterBlockingEvent(blocking); // (d) both sides back to 0
        assertEquals(0, serverCredit());
        assertEquals(0, channel.getUnannouncedCredit());

        toClient(); // backlog announcement: the consumer requests a floating buffer and announces it
        toServer();
        toClient(); // d3
        toServer();
        assertEquals(0, serverCredit(), "server credit matches the consumer's free buffers");
        assertEquals(0, channel.getNumberOfAvailableBuffers());

        emit("d4");
        partition.flushAll();
        toClient(); // backlog announcement
        toServer(); // AddCredit(1), backed by a floating buffer
        toClient(); // d4
        assertEquals("d3", take(gate.pollNext()));
        assertEquals("d4", take(gate.pollNext()));
    }

    /**
     * Common prefix: the producer queues d1, the blocking event, d3. With a backlog of 2 and one
     * free floating buffer the consumer gets one buffer, announces it and registers as a pool
     * listener (a); d1 arrives with backlog 1 and the reader sends the event next, which stays on
     * the wire. Returns the gate's other floating buffer, held elsewhere (another channel, say).
     */
    private Buffer upToBlockingEventInFlight(BlockingEvent blocking) throws Exception {
        Buffer heldElsewhere = gatePool.requestBuffer();
        assertNotNull(heldElsewhere);
        assertEquals(1, gatePool.getNumberOfAvailableMemorySegments());

        emit("d1");
        assertEquals(blocking.name(), Buffer.DataType.getDataType(blocking.event, false).name());
        assertTrue(Buffer.DataType.getDataType(blocking.event, false).isBlockingUpstream());
        partition.broadcastEvent(blocking.event, false);
        emit("d3");
        partition.flushAll();

        toClient(); // BacklogAnnouncement(2)
        assertTrue(channel.isWaitingForFloatingBuffers(), "(a) registered as LocalBufferPool listener");
        assertEquals(2, channel.getNumberOfRequiredBuffers());
        assertEquals(1, channel.getNumberOfAvailableBuffers());
        toServer(); // AddCredit(1)
        // The reader sends d1 on that credit and then, without credit, the event: both on the wire.
        // Deliver only d1.
        toClientUntil(() -> channel.getNumberOfQueuedBuffers() == 1);
        assertEquals(0, serverCredit());
        assertEquals(1, channel.getNumberOfRequiredBuffers(), "d1 came with backlog 1 (d3)");
        assertEquals(0, channel.getNumberOfAvailableBuffers());
        assertTrue(channel.isWaitingForFloatingBuffers());
        return heldElsewhere;
    }

    /**
     * The task: consumes d1 and the event, then resumes the channel (UpstreamRecoveryTracker for the
     * end of recovery, the barrier handler after alignment).
     */
    private void resumeAfterBlockingEvent(BlockingEvent blocking) throws Exception {
        assertEquals("d1", take(gate.pollNext()));
        BufferOrEvent event = gate.pollNext().orElseThrow();
        assertTrue(event.isEvent());
        assertEquals(blocking.event.getClass(), event.getEvent().getClass());
        gate.resumeConsumption(channel.getChannelInfo());
        toServer(); // ResumeConsumption
    }

    private void emit(String record) throws IOException {
        partition.emitRecord(ByteBuffer.wrap(record.getBytes(StandardCharsets.UTF_8)), 0);
    }

    private static String take(java.util.Optional<BufferOrEvent> next) throws IOException {
        BufferOrEvent boe = next.orElseThrow(() -> new AssertionError("the gate returned nothing"));
        if (boe.isEvent()) {
            AbstractEvent event = boe.getEvent();
            return event.getClass().getSimpleName();
        }
        Buffer buffer = boe.getBuffer();
        try {
            ByteBuffer readable = buffer.getNioBufferReadable();
            byte[] bytes = new byte[readable.remaining()];
            readable.get(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        } finally {
            buffer.recycleBuffer();
        }
    }

    // --- moving bytes between the two pipelines ------------------------------------------------

    private void toServer() {
        client.runPendingTasks();
        Object message;
        while ((message = client.readOutbound()) != null) {
            server.writeInbound(message);
        }
        server.runPendingTasks();
    }

    private void toClient() {
        server.runPendingTasks();
        Object message;
        while ((message = server.readOutbound()) != null) {
            client.writeInbound(message);
        }
    }

    private void toClientUntil(BooleanSupplier done) {
        server.runPendingTasks();
        while (!done.getAsBoolean()) {
            Object message = server.readOutbound();
            assertNotNull(message, "the server sent nothing more");
            client.writeInbound(message);
        }
    }

    private int serverCredit() throws Exception {
        Field allReaders = serverQueue.getClass().getDeclaredField("allReaders");
        allReaders.setAccessible(true);
        Object reader = ((Map<?, ?>) allReaders.get(serverQueue)).get(channel.getInputChannelId());
        assertNotNull(reader, "no reader on the server");
        return (Integer) call(reader, "getNumCreditsAvailable");
    }

    // --- reflection ------------------------------------------------------------------------------

    private static Object construct(String className, Class<?>[] types, Object... args) throws Exception {
        Constructor<?> constructor = Class.forName(className).getDeclaredConstructor(types);
        constructor.setAccessible(true);
        return constructor.newInstance(args);
    }

    private static Object call(Object target, String method) throws Exception {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(method) && m.getParameterCount() == 0) {
                    m.setAccessible(true);
                    return m.invoke(target);
                }
            }
        }
        throw new NoSuchMethodException(method);
    }

    private static Object find(ChannelHandler[] handlers, Class<?> type) {
        for (ChannelHandler handler : handlers) {
            if (type.isInstance(handler)) {
                return handler;
            }
        }
        throw new AssertionError("no " + type.getName());
    }

    /**
     * A real RemoteInputChannel whose {@code notifyBufferAvailable(int)} can hold one chosen thread
     * before running Flink's method. BufferManager calls it after leaving {@code bufferQueue}.
     */
    static final class PausableRemoteInputChannel extends RemoteInputChannel {
        private final AtomicReference<Thread> toHold = new AtomicReference<>();
        private final CountDownLatch held = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);

        PausableRemoteInputChannel(
                SingleInputGate gate, int index, ResultPartitionID partitionId,
                ResultSubpartitionIndexSet subpartitions, ConnectionID connectionId,
                ConnectionManager connectionManager, int initialBackoff, int maxBackoff,
                int partitionRequestListenerTimeout, int buffersPerChannel, SimpleCounter bytesIn,
                SimpleCounter buffersIn, ChannelStateWriter stateWriter, ArrayDeque<Buffer> migrated) {
            super(gate, index, partitionId, subpartitions, connectionId, connectionManager, initialBackoff,
                    maxBackoff, partitionRequestListenerTimeout, buffersPerChannel, bytesIn, buffersIn,
                    stateWriter, migrated);
        }

        /** Starts a thread that runs {@code action} and is held in the next notification it makes. */
        Thread holdNextNotification(Runnable action) {
            Thread thread = new Thread(action, "recycler");
            toHold.set(thread);
            thread.start();
            return thread;
        }

        boolean awaitHeld() throws InterruptedException {
            return held.await(10, TimeUnit.SECONDS);
        }

        void releaseHeldThread() {
            release.countDown();
        }

        @Override
        public void notifyBufferAvailable(int numAvailableBuffers) throws IOException {
            if (toHold.compareAndSet(Thread.currentThread(), null)) {
                held.countDown();
                try {
                    if (!release.await(10, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("never released");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(e);
                }
            }
            super.notifyBufferAvailable(numAvailableBuffers);
        }
    }
}
