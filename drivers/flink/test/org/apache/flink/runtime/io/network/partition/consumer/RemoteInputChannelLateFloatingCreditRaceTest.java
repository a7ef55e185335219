package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.NettyShuffleEnvironmentOptions;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointMetaData;
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
import org.apache.flink.runtime.io.network.api.CancelCheckpointMarker;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.buffer.Buffer;
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
import org.apache.flink.runtime.jobgraph.tasks.CheckpointableTask;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.taskmanager.NettyShuffleEnvironmentConfiguration;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.streaming.runtime.io.checkpointing.CheckpointedInputGate;
import org.apache.flink.streaming.runtime.io.checkpointing.SingleCheckpointBarrierHandler;
import org.apache.flink.util.ExceptionUtils;
import org.apache.flink.util.clock.SystemClock;

import org.apache.flink.shaded.netty4.io.netty.channel.Channel;
import org.apache.flink.shaded.netty4.io.netty.channel.ChannelHandler;
import org.apache.flink.shaded.netty4.io.netty.channel.embedded.EmbeddedChannel;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * Flink 2.3.0, remote channels without exclusive buffers ({@code
 * taskmanager.network.memory.read-buffer.required-per-gate.max} at most the number of channels,
 * see {@link InputGateZeroExclusiveBuffersConfigurationTest}), aligned checkpoints, no recovery: a
 * floating credit that {@code BufferManager.notifyBufferAvailable(Buffer)} announces after the
 * channel's blocking barrier and {@code resumeConsumption} is not backed by any buffer, so the
 * producer sends one data buffer more than the consumer can hold, and the consumer fails with "The
 * read buffer is null in credit-based input channel."
 *
 * <p><b>The job.</b> A task reads one gate of three remote channels, each from an upstream subtask
 * on another task manager (three TCP connections, three Netty client threads), sharing the gate's
 * {@code LocalBufferPool}: channel A (the victim), B, and C. The channels are created without
 * recovery: what {@code RemoteRecoveredInputChannel.toInputChannelInternal} (lines 73-89) makes for
 * a job without channel state, a {@link RemoteInputChannel} with no recovered buffer. The task's
 * input is Flink's {@link CheckpointedInputGate} with an aligned {@link
 * SingleCheckpointBarrierHandler}.
 *
 * <p><b>Which thread recycles the floating buffer.</b> The task thread recycles the buffers it
 * consumed, but it is also the thread that resumes, so it cannot be preempted across its own resume.
 * With aligned checkpoints no channel state is written, so the channel-state writer holds no
 * buffer. The thread is another channel's Netty client thread: when B's own aligned barrier
 * arrives, {@code RemoteInputChannel.onBuffer} (line 601) calls {@code onBlockingUpstream} (line
 * 492), whose {@code BufferManager.releaseFloatingBuffers} (lines 244-253) recycles B's unused
 * floating buffer outside B's lock; {@code LocalBufferPool.recycle} (line 605, outside the pool's
 * lock) hands it to the waiting listener, A's manager, and that thread runs A's {@code
 * notifyBufferAvailable(Buffer)}: queue under A's {@code bufferQueue} (lines 325-347), announce
 * after (line 349).
 *
 * <p><b>What resumes A meanwhile.</b> B's barrier is queued only after {@code onBlockingUpstream}
 * returns (onBuffer lines 631, 655), so while B's Netty thread is held the alignment cannot
 * complete: A is resumed by an abort. C's upstream declined checkpoint 1 and sent a {@link
 * CancelCheckpointMarker}; {@code SingleCheckpointBarrierHandler.processCancellationBarrier} (lines
 * 358-367) aborts (lines 375-395), {@code AbstractAlignedBarrierHandlerState.abort} (line 83) calls
 * {@code ChannelState.unblockAllChannels} (lines 75-79), which resumes A: {@code
 * RemoteInputChannel.resumeConsumption} drops the unannounced credit (line 469) and sends {@code
 * ResumeConsumption} (line 474), whose server side drops the reader's credit ({@code
 * CreditBasedSequenceNumberingViewReader.resumeConsumption}, line 163). A newer barrier on another channel
 * (subsumption, {@code cancelSubsumedCheckpoint}) aborts the same way. Then B's thread announces.
 *
 * <p><b>What is ours.</b> Everything else is Flink's 2.3.0 code: producer {@link
 * PipelinedResultPartition}s, the server pipelines of {@code NettyProtocol} (PartitionRequestQueue,
 * CreditBasedSequenceNumberingViewReader), the client pipelines with real {@code
 * NettyPartitionRequestClient}s, the gate, channels, managers and pool, the barrier handler. The
 * pipelines run on {@link EmbeddedChannel}s; the test moves their bytes, plays the upstream tasks
 * (records, barriers, the cancel marker) and runs each connection's client side on a thread of its
 * own ({@link Connection#netty}). The only intervention is {@link Hold}: A's {@code
 * notifyBufferAvailable(int)} holds B's Netty thread before running Flink's method, i.e. between
 * the manager's critical section and its announcement (BufferManager line 349), until the test
 * releases it. The test thread does nothing else to the channels.
 *
 * <p>{@code EndOfOutputChannelStateEvent} (RECOVERY_COMPLETION) is not a case here: a channel
 * holds floating buffers before it only when the upstream restores output state, the task resumes
 * only after every channel's event ({@code UpstreamRecoveryTrackerImpl.handleEndOfRecovery}, lines
 * 67-79, no abort), and a channel's event is queued only after its {@code onBlockingUpstream}, so
 * another channel's Netty thread held there also holds back the resume.
 */
class RemoteInputChannelLateFloatingCreditRaceTest {
    private static final int SEGMENT_SIZE = 4096;
    private static final String NETTY = "org.apache.flink.runtime.io.network.netty.";
    private static final String READ_BUFFER_IS_NULL =
            "The read buffer is null in credit-based input channel.";
    private static final long CHECKPOINT = 1L;
    private static final CheckpointBarrier ALIGNED_BARRIER = new CheckpointBarrier(CHECKPOINT, 1L,
            CheckpointOptions.alignedNoTimeout(CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault()));

    private NetworkBufferPool consumerGlobalPool;
    private NetworkBufferPool producerGlobalPool;
    private ResultPartitionManager partitionManager;
    private SingleInputGate gate;
    private CheckpointedInputGate task;
    private final List<String> checkpointCalls = new ArrayList<>();
    private Connection a;
    private Connection b;
    private Connection c;
    private Hold hold;

    @AfterEach
    void tearDown() throws Exception {
        if (hold != null) {
            hold.release();
        }
        for (Connection conn : new Connection[] {a, b, c}) {
            if (conn != null) {
                conn.netty.shutdown();
                assertTrue(conn.netty.awaitTermination(10, TimeUnit.SECONDS));
            }
        }
        if (gate != null) {
            gate.close();
        }
        for (Connection conn : new Connection[] {a, b, c}) {
            if (conn != null) {
                conn.partition.release();
                conn.client.finishAndReleaseAll();
                conn.server.finishAndReleaseAll();
            }
        }
        if (consumerGlobalPool != null) {
            consumerGlobalPool.destroyAllBufferPools();
            consumerGlobalPool.destroy();
        }
        if (producerGlobalPool != null) {
            producerGlobalPool.destroyAllBufferPools();
            producerGlobalPool.destroy();
        }
    }

    /** Expected to reproduce on 2.3.0: passes while the bug is there. */
    @Test
    void lateFloatingCreditAfterAbortedAlignmentReproduces() throws Exception {
        setUp(false);
        upToTheRace();

        // B's Netty thread: B's barrier; releaseFloatingBuffers hands f1 to A's manager, which
        // queues it under its lock and is held before RemoteInputChannel.notifyBufferAvailable(1).
        hold = new Hold(b.nettyThread());
        a.pausable().arm(hold);
        Future<?> bBarrier = b.deliver();
        assertTrue(hold.awaitHeld(), "B's Netty thread reached BufferManager line 349");
        assertEquals(1, a.channel.getNumberOfAvailableBuffers(), "A's manager took f1");
        assertFalse(a.channel.isWaitingForFloatingBuffers());
        assertEquals(0, a.channel.getUnannouncedCredit(), "not announced yet");

        // A's Netty thread: A's barrier (backlog 0): onBlockingUpstream gives f1 back to the pool.
        a.deliver().get(10, TimeUnit.SECONDS);
        assertEquals(0, a.channel.getNumberOfAvailableBuffers(), "releaseFloatingBuffers took f1 back");

        // The task: A's barrier blocks A; C's cancel marker aborts checkpoint 1 and resumes A.
        assertEquals(List.of("dA1", "CheckpointBarrier"), pollUntilBarrierOf(a));
        declineAndAbort();
        a.toServer(); // ResumeConsumption: the reader's credit to 0, the subpartition unblocked
        assertEquals(0, a.serverCredit());
        assertEquals(0, a.channel.getUnannouncedCredit());

        // B's Netty thread goes on and announces the buffer that A no longer has.
        hold.release();
        bBarrier.get(10, TimeUnit.SECONDS);
        assertEquals(1, a.channel.getUnannouncedCredit(), "unannouncedCredit 0 -> 1 after the resume");
        assertEquals(0, a.channel.getNumberOfAvailableBuffers(), "but A holds no buffer");
        a.toServer(); // AddCredit(1), after ResumeConsumption: the reader sends dA3 on it

        // The backlog announcement sent on resume gets A a floating buffer for dA3, which A
        // announces as well: the server holds one credit more than A has buffers.
        a.toClient(); // BacklogAnnouncement(1), dA3
        a.toServer(); // AddCredit(1)
        assertEquals(0, a.channel.getNumberOfAvailableBuffers(), "consumer: no free buffer");
        assertEquals(0, a.channel.getUnannouncedCredit(), "consumer: nothing unannounced");
        assertEquals(1, a.serverCredit(), "server: one credit for which A has no buffer");

        // The next record is sent on that credit and A has no buffer for it.
        a.emit("dA4");
        a.toClient();
        IOException failure = assertThrows(IOException.class, this::drainTask);
        assertTrue(ExceptionUtils.findThrowableWithMessage(failure, READ_BUFFER_IS_NULL).isPresent(),
                () -> "channel error: " + ExceptionUtils.stringifyException(failure));
    }

    /** Control: the same run, B's Netty thread not held. The announcement precedes A's barrier. */
    @Test
    void floatingCreditAnnouncedBeforeTheBarrierIsConsistent() throws Exception {
        setUp(false);
        upToTheRace();

        b.deliver().get(10, TimeUnit.SECONDS); // B's barrier: f1 to A, accepted and announced at once
        assertEquals(1, a.channel.getUnannouncedCredit());
        a.deliver().get(10, TimeUnit.SECONDS); // A's barrier: f1 back to the pool

        List<String> polled = pollUntilBarrierOf(a);
        assertTrue(polled.containsAll(List.of("dA1", "CheckpointBarrier")), polled.toString());
        declineAndAbort();
        assertEquals(0, a.channel.getUnannouncedCredit(), "resumeConsumption dropped it");

        assertEverythingDelivered();
    }

    /** The fix: the announcement is in A's critical section; A's barrier waits for it. */
    @Test
    void lateFloatingCreditIsGoneWithTheFixedBufferManager() throws Exception {
        setUp(true);
        upToTheRace();

        hold = new Hold(b.nettyThread());
        a.pausable().arm(hold);
        Future<?> bBarrier = b.deliver();
        assertTrue(hold.awaitHeld(), "B's Netty thread reached the announcement");
        Object monitor = ((LateFloatingCreditAndMissedWakeupFixedBufferManager) a.channel.getBufferManager()).monitor();

        // A's Netty thread: A's barrier now waits for A's bufferQueue, which B's thread holds.
        Future<?> aBarrier = a.deliver();
        ThreadInfo blocked = awaitBlockedOn(a.nettyThread(), monitor);
        assertEquals(b.nettyThread().getId(), blocked.getLockOwnerId(), "held by B's Netty thread");
        assertFalse(aBarrier.isDone());

        hold.release();
        bBarrier.get(10, TimeUnit.SECONDS);
        aBarrier.get(10, TimeUnit.SECONDS);
        assertEquals(0, a.channel.getNumberOfAvailableBuffers(), "releaseFloatingBuffers took f1 back");
        assertEquals(1, a.channel.getUnannouncedCredit(), "announced before A's barrier was queued");

        List<String> polled = pollUntilBarrierOf(a);
        assertTrue(polled.containsAll(List.of("dA1", "CheckpointBarrier")), polled.toString());
        declineAndAbort();
        assertEquals(0, a.channel.getUnannouncedCredit(), "resumeConsumption dropped it");

        assertEverythingDelivered();
    }

    /**
     * How often the race shows without the hold: B's barrier and A's barrier delivered at the same
     * time on their Netty threads, the task polling and aborting on the test thread. Runs only with
     * {@code -Dlate.floating.credit.race.runs=N} (e.g. {@code JAVA_TOOL_OPTIONS}); at most {@code
     * late.floating.credit.race.seconds} (default 120) seconds.
     */
    @Test
    @EnabledIfSystemProperty(named = "late.floating.credit.race.runs", matches = "\\d+")
    void lateFloatingCreditRaceFrequencyWithoutHold() throws Exception {
        int runs = Integer.getInteger("late.floating.credit.race.runs");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(
                Integer.getInteger("late.floating.credit.race.seconds", 120));
        int done = 0;
        int lateCredits = 0;
        int acceptedBeforeRelease = 0;
        long started = System.nanoTime();
        for (; done < runs && System.nanoTime() < deadline; done++) {
            setUp(false);
            upToTheRace();
            PausableRemoteInputChannel victim = (PausableRemoteInputChannel) a.channel;
            victim.observed = b.nettyThread();
            CountDownLatch go = new CountDownLatch(1);
            Future<?> bBarrier = b.deliverAfter(go);
            Future<?> aBarrier = a.deliverAfter(go);
            go.countDown();
            aBarrier.get(10, TimeUnit.SECONDS);
            pollUntilBarrierOf(a);
            declineAndAbort();
            bBarrier.get(10, TimeUnit.SECONDS);
            if (victim.observedAnnouncements.get() > 0) {
                acceptedBeforeRelease++; // B's recycle reached A's manager before A's release
            }
            if (a.channel.getUnannouncedCredit() > 0 && a.channel.getNumberOfAvailableBuffers() == 0) {
                lateCredits++;
            }
            tearDown();
            gate = null;
            a = b = c = null;
            checkpointCalls.clear();
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf("late floating credit without hold: %d of %d runs (B's recycle accepted by A in %d;"
                        + " %.1f s, %d cores)%n",
                lateCredits, done, acceptedBeforeRelease, seconds, Runtime.getRuntime().availableProcessors());
    }

    // --- the scenario -----------------------------------------------------------------------------

    /**
     * Up to the race. B: dB1, its barrier, dB3; A: dA1, its barrier, dA3. B announces backlog 2
     * and gets both floating buffers f0 and f1 of the pool, the server sends dB1 and the barrier; B
     * receives dB1 (its barrier stays on the wire), the task consumes dB1 and recycles f0. A
     * announces backlog 2, gets f0 and registers as the pool's listener for the other; the server
     * sends dA1 and the barrier; A receives dA1 (backlog 1: A still waits). Both barriers are on the
     * wire; f1 lies unused in B's queue; the pool is empty; A's dA1 is not consumed yet.
     */
    private void upToTheRace() throws Exception {
        b.emit("dB1");
        b.partition.broadcastEvent(ALIGNED_BARRIER, false);
        b.emit("dB3");
        b.partition.flushAll();
        b.toClient(); // BacklogAnnouncement(2)
        assertEquals(2, b.channel.getNumberOfAvailableBuffers(), "B took f0 and f1");
        b.toServer(); // AddCredit(2)
        b.toClientUntil(() -> b.channel.getNumberOfQueuedBuffers() == 1); // dB1; the barrier waits
        assertEquals(1, b.channel.getNumberOfAvailableBuffers(), "f1 unused in B's queue");
        assertEquals(List.of("dB1"), pollUntil(x -> x.equals("dB1")));
        assertEquals(1, gate.getBufferPool().getNumberOfAvailableMemorySegments(), "f0 back in the pool");

        a.emit("dA1");
        assertEquals(Buffer.DataType.ALIGNED_CHECKPOINT_BARRIER, Buffer.DataType.getDataType(ALIGNED_BARRIER, false));
        assertTrue(Buffer.DataType.ALIGNED_CHECKPOINT_BARRIER.isBlockingUpstream());
        a.partition.broadcastEvent(ALIGNED_BARRIER, false);
        a.emit("dA3");
        a.partition.flushAll();
        a.toClient(); // BacklogAnnouncement(2)
        assertTrue(a.channel.isWaitingForFloatingBuffers(), "A registered as the pool's listener");
        assertEquals(1, a.channel.getNumberOfAvailableBuffers(), "A took f0");
        a.toServer(); // AddCredit(1)
        a.toClientUntil(() -> a.channel.getNumberOfQueuedBuffers() == 1); // dA1; the barrier waits
        assertEquals(1, a.channel.getNumberOfRequiredBuffers(), "dA1 came with backlog 1 (dA3)");
        assertEquals(0, a.channel.getNumberOfAvailableBuffers());
        assertTrue(a.channel.isWaitingForFloatingBuffers(), "backpressure: A waits for a floating buffer");
        assertEquals(0, gate.getBufferPool().getNumberOfAvailableMemorySegments(), "the pool is empty");
        assertEquals(0, a.serverCredit());
    }

    /** C's upstream declined checkpoint 1: its cancel marker reaches the task, which aborts. */
    private void declineAndAbort() throws Exception {
        c.partition.broadcastEvent(new CancelCheckpointMarker(CHECKPOINT), false);
        c.partition.flushAll();
        c.toClient();
        pollUntil(x -> x.equals("CancelCheckpointMarker"));
        assertTrue(checkpointCalls.contains("abort 1"), checkpointCalls.toString());
    }

    /** After the resume: credit and buffers agree, and A's records all arrive. */
    private void assertEverythingDelivered() throws Exception {
        a.toServer(); // (AddCredit, dropped by the reset: nothing to send,) ResumeConsumption
        assertEquals(0, a.serverCredit());
        a.toClient(); // BacklogAnnouncement(1): A takes a floating buffer and announces it
        a.toServer(); // AddCredit(1)
        a.toClient(); // dA3
        a.toServer();
        assertEquals(0, a.serverCredit(), "server credit matches A's free buffers");
        assertEquals(0, a.channel.getNumberOfAvailableBuffers());

        a.emit("dA4");
        a.toClient(); // BacklogAnnouncement(1)
        a.toServer(); // AddCredit(1), backed by a floating buffer
        a.toClient(); // dA4
        List<String> rest = drainTask();
        assertTrue(rest.containsAll(List.of("dA3", "dA4")), rest.toString());
    }

    // --- the task ---------------------------------------------------------------------------------

    /** The task's input loop until it has handled A's barrier. */
    private List<String> pollUntilBarrierOf(Connection conn) throws Exception {
        List<String> polled = new ArrayList<>();
        while (true) {
            BufferOrEvent next = task.pollNext().orElseThrow(() -> new AssertionError("nothing to poll: " + polled));
            polled.add(take(next));
            if (next.isEvent() && next.getEvent() instanceof CheckpointBarrier
                    && next.getChannelInfo().equals(conn.channel.getChannelInfo())) {
                return polled;
            }
        }
    }

    private List<String> pollUntil(Predicate<String> last) throws Exception {
        List<String> polled = new ArrayList<>();
        while (true) {
            Optional<BufferOrEvent> next = task.pollNext();
            assertTrue(next.isPresent(), () -> "nothing to poll after " + polled);
            String item = take(next.get());
            polled.add(item);
            if (last.test(item)) {
                return polled;
            }
        }
    }

    /** Everything the task can poll now. */
    private List<String> drainTask() throws Exception {
        List<String> polled = new ArrayList<>();
        Optional<BufferOrEvent> next;
        while ((next = task.pollNext()).isPresent()) {
            polled.add(take(next.get()));
        }
        return polled;
    }

    private static String take(BufferOrEvent boe) {
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

    // --- set-up -----------------------------------------------------------------------------------

    /**
     * The gate as Flink's configuration makes it with {@code read-buffer.required-per-gate.max: 1}:
     * 0 exclusive buffers per channel, a LocalBufferPool of 1 to 14 floating buffers; the task
     * manager's network memory holds 2 of them (the pool is exhausted: backpressure).
     */
    private void setUp(boolean fixed) throws Exception {
        Configuration configuration = new Configuration();
        configuration.set(NettyShuffleEnvironmentOptions.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE, 1);
        NettyShuffleEnvironmentConfiguration shuffle = NettyShuffleEnvironmentConfiguration.fromConfiguration(
                configuration, MemorySize.parse("4m"), false, InetAddress.getLoopbackAddress());
        GateBuffersSpec spec = InputGateSpecUtils.createGateBuffersSpec(
                shuffle.maxRequiredBuffersPerGate(), shuffle.networkBuffersPerChannel(),
                shuffle.floatingNetworkBuffersPerGate(), ResultPartitionType.PIPELINED_BOUNDED, 3, false);
        assertEquals(0, spec.getEffectiveExclusiveBuffersPerChannel());

        consumerGlobalPool = new NetworkBufferPool(2, SEGMENT_SIZE);
        producerGlobalPool = new NetworkBufferPool(24, SEGMENT_SIZE);
        partitionManager = new ResultPartitionManager();
        gate = new SingleInputGate(
                "consumer", 0, new IntermediateDataSetID(), ResultPartitionType.PIPELINED_BOUNDED, 3,
                (resultId, producerPartitionId, handle) -> {},
                () -> consumerGlobalPool.createBufferPool(spec.getRequiredFloatingBuffers(), spec.getTotalFloatingBuffers()),
                null, consumerGlobalPool, SEGMENT_SIZE,
                new ThroughputCalculator(SystemClock.getInstance()), null);
        a = new Connection(0, "A", fixed, spec.getEffectiveExclusiveBuffersPerChannel(), true);
        b = new Connection(1, "B", fixed, spec.getEffectiveExclusiveBuffersPerChannel(), false);
        c = new Connection(2, "C", fixed, spec.getEffectiveExclusiveBuffersPerChannel(), false);
        gate.setInputChannels(a.channel, b.channel, c.channel);
        gate.setup();

        CheckpointableTask toNotify = (CheckpointableTask) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {CheckpointableTask.class}, (proxy, method, args) -> {
                    if (method.getName().equals("abortCheckpointOnBarrier")) {
                        checkpointCalls.add("abort " + args[0]);
                    } else if (method.getName().equals("triggerCheckpointOnBarrier")) {
                        checkpointCalls.add("trigger " + ((CheckpointMetaData) args[0]).getCheckpointId());
                    }
                    return null;
                });
        SingleCheckpointBarrierHandler handler = SingleCheckpointBarrierHandler.aligned(
                "consumer", toNotify, SystemClock.getInstance(), 3,
                (callable, delay) -> () -> {}, false, gate);
        task = new CheckpointedInputGate(gate, handler, new DirectMailbox());

        gate.requestPartitions();
        for (Connection conn : new Connection[] {a, b, c}) {
            conn.toServer(); // PartitionRequest(credit = initialCredit = 0)
            assertEquals(0, conn.channel.getInitialCredit());
            assertEquals(0, conn.serverCredit());
        }
    }

    /** One upstream subtask on a task manager of its own, and the TCP connection to it. */
    final class Connection {
        final String name;
        final PipelinedResultPartition partition;
        final EmbeddedChannel server;
        final EmbeddedChannel client;
        final Object serverQueue;
        final RemoteInputChannel channel;
        /** The connection's Netty client thread; runs everything on the client pipeline. */
        final ExecutorService netty;
        private final Thread[] nettyThread = new Thread[1];
        /**
         * The client event loop's task queue. Netty's takes tasks from any thread; EmbeddedChannel's
         * does not, so the {@code NettyPartitionRequestClient} calls that 2.3.0 makes from other
         * threads (notifyCreditAvailable and resumeConsumption: {@code eventLoop().execute}) are
         * queued here and run on {@link #netty} when the test moves the connection's bytes.
         */
        private final ConcurrentLinkedQueue<Runnable> eventLoopTasks = new ConcurrentLinkedQueue<>();

        Connection(int index, String name, boolean fixed, int buffersPerChannel, boolean pausable) throws Exception {
            this.name = name;
            ResultPartitionID partitionId = new ResultPartitionID();
            ResultSubpartition[] subpartitions = new ResultSubpartition[1];
            partition = new PipelinedResultPartition(
                    "upstream-" + name, 0, partitionId, ResultPartitionType.PIPELINED_BOUNDED, subpartitions, 1,
                    partitionManager, null, () -> producerGlobalPool.createBufferPool(8, 8, 1, 8, 0));
            Constructor<PipelinedSubpartition> subpartitionConstructor = PipelinedSubpartition.class
                    .getDeclaredConstructor(int.class, int.class, int.class, ResultPartition.class);
            subpartitionConstructor.setAccessible(true);
            subpartitions[0] = subpartitionConstructor.newInstance(0, 0, SEGMENT_SIZE, partition);
            partition.setChannelStateWriter(ChannelStateWriter.NO_OP);
            partition.setup();

            Object protocol = construct(NETTY + "NettyProtocol",
                    new Class<?>[] {ResultPartitionProvider.class, TaskEventPublisher.class},
                    partitionManager, new TaskEventDispatcher());
            ChannelHandler[] serverHandlers = (ChannelHandler[]) call(protocol, "getServerChannelHandlers");
            ChannelHandler[] clientHandlers = (ChannelHandler[]) call(protocol, "getClientChannelHandlers");
            server = new EmbeddedChannel(serverHandlers);
            client = new EmbeddedChannel(clientHandlers);
            serverQueue = find(serverHandlers, Class.forName(NETTY + "PartitionRequestQueue"));
            NetworkClientHandler clientHandler = (NetworkClientHandler) find(clientHandlers, NetworkClientHandler.class);
            netty = Executors.newSingleThreadExecutor(r -> nettyThread[0] = new Thread(r, "netty-client-" + name));
            netty.submit(() -> {}).get(10, TimeUnit.SECONDS); // the thread, started once

            ConnectionID connectionId = new ConnectionID(
                    ResourceID.generate(), InetSocketAddress.createUnresolved("upstream-tm-" + name, 1), 0);
            Class<?> factoryClass = Class.forName(NETTY + "PartitionRequestClientFactory");
            Object factory = construct(NETTY + "PartitionRequestClientFactory",
                    new Class<?>[] {Class.forName(NETTY + "NettyClient"), boolean.class}, null, false);
            PartitionRequestClient real = (PartitionRequestClient) construct(NETTY + "NettyPartitionRequestClient",
                    new Class<?>[] {Channel.class, NetworkClientHandler.class, ConnectionID.class, factoryClass},
                    client, clientHandler, connectionId, factory);
            PartitionRequestClient onEventLoop = (PartitionRequestClient) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {PartitionRequestClient.class},
                    (proxy, method, args) -> {
                        eventLoopTasks.add(() -> invoke(method, real, args));
                        return null;
                    });
            ConnectionManager connectionManager = (ConnectionManager) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {ConnectionManager.class},
                    (proxy, method, args) -> method.getName().equals("createPartitionRequestClient") ? onEventLoop
                            : method.getReturnType() == int.class ? 0 : null);

            Object[] args = {gate, index, partitionId, new ResultSubpartitionIndexSet(0), connectionId,
                connectionManager, 0, 0, 0, buffersPerChannel, new SimpleCounter(), new SimpleCounter(),
                ChannelStateWriter.NO_OP, new ArrayDeque<Buffer>()};
            channel = pausable
                    ? (fixed ? new PausableFixedRemoteInputChannel(args) : new PausableRemoteInputChannel(args))
                    : (fixed ? new LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel(
                            gate, index, partitionId, new ResultSubpartitionIndexSet(0), connectionId,
                            connectionManager, 0, 0, 0, buffersPerChannel, new SimpleCounter(),
                            new SimpleCounter(), ChannelStateWriter.NO_OP, new ArrayDeque<>())
                            : new RemoteInputChannel(gate, index, partitionId, new ResultSubpartitionIndexSet(0),
                                    connectionId, connectionManager, 0, 0, 0, buffersPerChannel,
                                    new SimpleCounter(), new SimpleCounter(), ChannelStateWriter.NO_OP,
                                    new ArrayDeque<>()));
        }

        Pausable pausable() {
            return (Pausable) channel;
        }

        Thread nettyThread() {
            return nettyThread[0];
        }

        void emit(String record) throws IOException {
            partition.emitRecord(ByteBuffer.wrap(record.getBytes(StandardCharsets.UTF_8)), 0);
            partition.flushAll();
        }

        /** The client's writes (its event loop's tasks first) reach the server, which handles them. */
        void toServer() throws Exception {
            List<Object> messages = onNetty(() -> {
                runEventLoopTasks();
                List<Object> out = new ArrayList<>();
                Object message;
                while ((message = client.readOutbound()) != null) {
                    out.add(message);
                }
                return out;
            });
            for (Object message : messages) {
                server.writeInbound(message);
            }
            server.runPendingTasks();
        }

        /** Everything the server wrote reaches the client, on the connection's Netty thread. */
        void toClient() throws Exception {
            deliver().get(10, TimeUnit.SECONDS);
        }

        /** The server's writes so far, delivered on the Netty thread; returns at once. */
        Future<?> deliver() {
            return deliverAfter(new CountDownLatch(0));
        }

        /** The server's writes so far, delivered on the Netty thread once {@code go} opens. */
        Future<?> deliverAfter(CountDownLatch go) {
            List<Object> messages = serverWrites();
            return netty.submit(() -> {
                go.await();
                runEventLoopTasks();
                for (Object message : messages) {
                    client.writeInbound(message);
                }
                return null;
            });
        }

        private List<Object> serverWrites() {
            server.runPendingTasks();
            List<Object> out = new ArrayList<>();
            Object message;
            while ((message = server.readOutbound()) != null) {
                out.add(message);
            }
            return out;
        }

        void toClientUntil(java.util.function.BooleanSupplier done) throws Exception {
            server.runPendingTasks();
            while (!done.getAsBoolean()) {
                Object message = server.readOutbound();
                assertNotNull(message, "the server sent nothing more");
                onNetty(() -> {
                    client.writeInbound(message);
                    return null;
                });
            }
        }

        private void runEventLoopTasks() {
            Runnable task;
            while ((task = eventLoopTasks.poll()) != null) {
                task.run();
            }
            client.runPendingTasks();
        }

        private <T> T onNetty(java.util.concurrent.Callable<T> call) throws Exception {
            try {
                return netty.submit(call).get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
            }
        }

        int serverCredit() throws Exception {
            Field allReaders = serverQueue.getClass().getDeclaredField("allReaders");
            allReaders.setAccessible(true);
            Object reader = ((Map<?, ?>) allReaders.get(serverQueue)).get(channel.getInputChannelId());
            assertNotNull(reader, "no reader on the server of " + name);
            return (Integer) call(reader, "getNumCreditsAvailable");
        }
    }

    // --- the hold ---------------------------------------------------------------------------------

    /** Holds one chosen thread once, at the entry of A's {@code notifyBufferAvailable(int)}. */
    static final class Hold {
        private final Thread thread;
        private final CountDownLatch held = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);
        private boolean used;

        Hold(Thread thread) {
            this.thread = thread;
        }

        synchronized boolean claim() {
            if (used || Thread.currentThread() != thread) {
                return false;
            }
            used = true;
            return true;
        }

        void holdHere() throws IOException {
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

        boolean awaitHeld() throws InterruptedException {
            return held.await(10, TimeUnit.SECONDS);
        }

        void release() {
            release.countDown();
        }
    }

    interface Pausable {
        void arm(Hold hold);
    }

    /** 2.3.0's RemoteInputChannel whose {@code notifyBufferAvailable(int)} can hold one thread first. */
    static final class PausableRemoteInputChannel extends RemoteInputChannel implements Pausable {
        private volatile Hold hold;
        /** Announcements made on another thread than the channel's own Netty thread and the task's. */
        volatile Thread observed;
        final java.util.concurrent.atomic.AtomicInteger observedAnnouncements = new java.util.concurrent.atomic.AtomicInteger();

        PausableRemoteInputChannel(Object[] a) {
            super((SingleInputGate) a[0], (Integer) a[1], (ResultPartitionID) a[2], (ResultSubpartitionIndexSet) a[3],
                    (ConnectionID) a[4], (ConnectionManager) a[5], (Integer) a[6], (Integer) a[7], (Integer) a[8],
                    (Integer) a[9], (SimpleCounter) a[10], (SimpleCounter) a[11], (ChannelStateWriter) a[12],
                    castDeque(a[13]));
        }

        @Override
        public void arm(Hold hold) {
            this.hold = hold;
        }

        @Override
        public void notifyBufferAvailable(int numAvailableBuffers) throws IOException {
            Hold h = hold;
            if (h != null && h.claim()) {
                h.holdHere();
            }
            if (Thread.currentThread() == observed) {
                observedAnnouncements.incrementAndGet();
            }
            super.notifyBufferAvailable(numAvailableBuffers);
        }
    }

    /** The same hold on the fixed channel (where the announcement runs inside the manager's lock). */
    static final class PausableFixedRemoteInputChannel extends LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel
            implements Pausable {
        private volatile Hold hold;

        PausableFixedRemoteInputChannel(Object[] a) {
            super((SingleInputGate) a[0], (Integer) a[1], (ResultPartitionID) a[2], (ResultSubpartitionIndexSet) a[3],
                    (ConnectionID) a[4], (ConnectionManager) a[5], (Integer) a[6], (Integer) a[7], (Integer) a[8],
                    (Integer) a[9], (SimpleCounter) a[10], (SimpleCounter) a[11], (ChannelStateWriter) a[12],
                    castDeque(a[13]));
        }

        @Override
        public void arm(Hold hold) {
            this.hold = hold;
        }

        @Override
        public void notifyBufferAvailable(int numAvailableBuffers) throws IOException {
            Hold h = hold;
            if (h != null && h.claim()) {
                h.holdHere();
            }
            super.notifyBufferAvailable(numAvailableBuffers);
        }
    }

    @SuppressWarnings("unchecked")
    private static ArrayDeque<Buffer> castDeque(Object o) {
        return (ArrayDeque<Buffer>) o;
    }

    /** The task's mailbox, running mails at once (the priority-event mail of CheckpointedInputGate). */
    private static final class DirectMailbox implements MailboxExecutor {
        @Override
        public void execute(MailOptions options, org.apache.flink.util.function.ThrowingRunnable<? extends Exception> command,
                String descriptionFormat, Object... descriptionArgs) {
            try {
                command.run();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void yield() {}

        @Override
        public boolean tryYield() {
            return false;
        }

        @Override
        public boolean shouldInterrupt() {
            return false;
        }
    }

    // --- helpers ----------------------------------------------------------------------------------

    private static ThreadInfo awaitBlockedOn(Thread thread, Object monitor) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            ThreadInfo info = ManagementFactory.getThreadMXBean().getThreadInfo(thread.getId());
            if (info != null && info.getThreadState() == Thread.State.BLOCKED && info.getLockInfo() != null
                    && info.getLockInfo().getIdentityHashCode() == System.identityHashCode(monitor)) {
                return info;
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException(thread.getName() + " did not block on the monitor: " + info);
            }
            Thread.sleep(1);
        }
    }

    private static void invoke(Method method, Object target, Object[] args) {
        try {
            method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object construct(String className, Class<?>[] types, Object... args) throws Exception {
        Constructor<?> constructor = Class.forName(className).getDeclaredConstructor(types);
        constructor.setAccessible(true);
        return constructor.newInstance(args);
    }

    private static Object call(Object target, String method) throws Exception {
        for (Class<?> k = target.getClass(); k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
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
}
