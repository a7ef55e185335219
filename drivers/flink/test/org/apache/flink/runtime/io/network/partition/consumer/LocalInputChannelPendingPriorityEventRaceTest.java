package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointMetaData;
import org.apache.flink.runtime.checkpoint.CheckpointMetricsBuilder;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.event.AbstractEvent;
import org.apache.flink.runtime.io.network.TaskEventDispatcher;
import org.apache.flink.runtime.io.network.TaskEventPublisher;
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
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.jobgraph.tasks.CheckpointableTask;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.streaming.runtime.io.checkpointing.CheckpointBarrierTracker;
import org.apache.flink.streaming.runtime.io.checkpointing.CheckpointedInputGate;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;
import org.apache.flink.util.clock.SystemClock;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Flink 2.3.0: a lost update of {@code LocalInputChannel.hasPendingPriorityEvent}, on Flink's own
 * classes with a real producer thread: {@link PipelinedResultPartition} / {@link
 * PipelinedSubpartition} written by that thread; {@link SingleInputGate}, {@link LocalInputChannel},
 * {@link CheckpointedInputGate} and the task's mailbox ({@link TaskMailboxImpl}, {@link
 * MailboxExecutorImpl}) run by the test's thread, which is the task thread. Ours: the view wrapper
 * ({@link InterleavingPartitionManager}), which pauses the task right after the real poll of barrier
 * 1, and the barrier handler's sink ({@link RecordingTask} behind Flink's {@link
 * CheckpointBarrierTracker}), which only records which barriers reached the handler.
 *
 * <p>A local channel built with migrated recovered buffers (the constructor's {@code
 * ArrayDeque<Buffer>}, 2.3.0 lines 120-124) serves them first (getNextBuffer, line 275) unless
 * {@code hasPendingPriorityEvent} is set (getNextRecoveredBuffer, line 346). Its priority branch
 * polls the view (line 348) and then stores the polled element's next data type into the flag
 * (lines 358-361); that type was fixed by {@code PipelinedSubpartition.pollBuffer} under the
 * subpartition lock (lines 549-552). The producer's {@code PipelinedSubpartition.add} of barrier 2
 * inserts it under that lock (lines 178-194) and then announces it (line 196): {@code
 * LocalInputChannel.notifyPriorityEvent} stores {@code true} (line 439) and only then asks the gate
 * to queue the channel ({@code SingleInputGate.notifyPriorityEvent} line 1234, {@code queueChannel}
 * lines 1263-1290, {@code synchronized (inputChannelsWithData)} at line 1265). The task polls inside
 * {@code waitAndGetNextData}, which holds that same monitor from line 901 (bytecode offset 6) to its
 * return, so the producer's flag store lands inside the task's window while its queueing waits for
 * the task (BLOCKED on the monitor). The task's store at line 361 then overwrites the
 * producer's {@code true}; the producer, let in, queues the channel at the gate's priority head and
 * completes the priority-event future (lines 1279-1284). The task's next mail, {@code
 * CheckpointedInputGate.processPriorityEvents} (lines 109-123, scheduled by {@code
 * waitForPriorityEvents}, lines 126-140), polls the gate and gets a recovered buffer: {@code
 * checkState(bufferOrEvent.hasPriority(), "Should only poll priority events")} at line 117 throws
 * and the task fails.
 *
 * <p>In a job: checkpoint N is aborted and N+1 triggered while a migrated channel still holds
 * recovered buffers, so one upstream sends two unaligned barriers back to back (docs/findings.md).
 *
 * <p>Each interleaving also runs on {@link PendingPriorityEventFixedLocalInputChannel} (the fix,
 * in drivers/flink/fixes): the race does not reproduce there. {@link
 * #lateAnnouncementAfterTheBarrierWasPolled} shows why the fix also stops the producer's store:
 * a re-check after the poll alone turns a late announcement into a stale {@code true}.
 *
 * <p>No sleeps: the threads are ordered by latches and by polling {@link Thread#getState()}, each
 * with a {@link #TIMEOUT} that fails the test. {@link #lostUpdatesWithoutPause(Channel)} measures
 * how often the race shows without any pause; it runs only when asked for (see there).
 */
class LocalInputChannelPendingPriorityEventRaceTest {
    private static final int SEGMENT_SIZE = 4096;
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** Number of runs of {@link #lostUpdatesWithoutPause(Channel)}: system property or environment variable. */
    static final String RACE_RUNS_PROPERTY = "flink.priorityRace.runs";
    static final String RACE_RUNS_ENV = "FLINK_PRIORITY_RACE_RUNS";

    private static final Constructor<PipelinedSubpartition> PIPELINED_SUBPARTITION;
    private static final Field HAS_PENDING_PRIORITY_EVENT;
    private static final Field SUBPARTITION_BUFFERS;
    private static final Field INPUT_CHANNELS_WITH_DATA;

    static {
        try {
            // Package-private in another package (ResultPartitionFactory builds it in Flink).
            PIPELINED_SUBPARTITION = PipelinedSubpartition.class.getDeclaredConstructor(
                    int.class, int.class, int.class, ResultPartition.class);
            HAS_PENDING_PRIORITY_EVENT = LocalInputChannel.class.getDeclaredField("hasPendingPriorityEvent");
            SUBPARTITION_BUFFERS = PipelinedSubpartition.class.getDeclaredField("buffers");
            INPUT_CHANNELS_WITH_DATA = SingleInputGate.class.getDeclaredField("inputChannelsWithData");
            PIPELINED_SUBPARTITION.setAccessible(true);
            HAS_PENDING_PRIORITY_EVENT.setAccessible(true);
            SUBPARTITION_BUFFERS.setAccessible(true);
            INPUT_CHANNELS_WITH_DATA.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The channel the gate reads. */
    enum Channel {
        /** Flink 2.3.0's own class. */
        FLINK_2_3_0,
        /** {@link PendingPriorityEventFixedLocalInputChannel}. */
        FIXED;

        LocalInputChannel create(ChannelArgs args) {
            return this == FLINK_2_3_0
                    ? new LocalInputChannel(args.gate, 0, args.partitionId, args.subpartitions, args.partitionManager,
                            args.taskEvents, 0, 0, args.numBytesIn, args.numBuffersIn, ChannelStateWriter.NO_OP,
                            args.recovered)
                    : new PendingPriorityEventFixedLocalInputChannel(args.gate, 0, args.partitionId, args.subpartitions,
                            args.partitionManager, args.taskEvents, 0, 0, args.numBytesIn, args.numBuffersIn,
                            ChannelStateWriter.NO_OP, args.recovered);
        }
    }

    private NetworkBufferPool networkBufferPool;
    private NetworkBufferPool producerBufferPool;
    private InterleavingPartitionManager partitionManager;
    private PipelinedResultPartition partition;
    private PipelinedSubpartition subpartition;
    private SingleInputGate gate;
    private LocalInputChannel channel;
    private TaskMailboxImpl mailbox;
    private RecordingTask task;
    private CheckpointedInputGate checkpointedGate;
    private Producer producer;

    /** Builds the partition, the gate with one local channel (two migrated recovered buffers), the task's input. */
    private void setUp(Function<ChannelArgs, LocalInputChannel> channelFactory) throws Exception {
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
        channel = channelFactory.apply(new ChannelArgs(gate, partitionId, partitionManager,
                migratedRecoveredBuffers("recovered-0", "recovered-1"),
                (PrioritizedDeque<?>) SUBPARTITION_BUFFERS.get(subpartition)));
        gate.setInputChannels(channel);
        gate.setup();
        gate.requestPartitions();

        // The task's input: this thread is its mailbox thread; CheckpointedInputGate's constructor
        // registers processPriorityEvents on the gate's priority-event future (lines 126-140).
        mailbox = new TaskMailboxImpl(Thread.currentThread());
        task = new RecordingTask();
        checkpointedGate = new CheckpointedInputGate(
                gate,
                new CheckpointBarrierTracker(1, task, SystemClock.getInstance(), false),
                new MailboxExecutorImpl(mailbox, 0, StreamTaskActionExecutor.IMMEDIATE));
    }

    @AfterEach
    void tearDown() throws Exception {
        if (producer != null && producer.thread.isAlive()) {
            producer.thread.interrupt();
            producer.thread.join(TIMEOUT.toMillis());
        }
        producer = null;
        if (gate == null) {
            return;
        }
        gate.close();
        partition.release();
        networkBufferPool.destroyAllBufferPools();
        networkBufferPool.destroy();
        producerBufferPool.destroyAllBufferPools();
        producerBufferPool.destroy();
        gate = null;
    }

    /**
     * Barrier 2 added by the producer's thread between the task's poll of barrier 1 and its clear.
     * On 2.3.0 (expected to reproduce, passes while the bug is there): the flag is false while
     * barrier 2 heads the view and the channel heads the gate's priority section, and the task's
     * next mail fails in {@code processPriorityEvents} (line 117). On the fix: barrier 2 comes
     * first.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Channel.class)
    void barrierAddedByTheProducerThreadWhileTheTaskPollsBarrier1(Channel kind) throws Exception {
        setUp(kind::create);
        producer = new Producer();
        producer.start();
        await(producer.barrier1Added, "the producer adds barrier 1");
        assertTrue(gate.getPriorityEventAvailableFuture().isDone(), "the gate announces barrier 1");
        assertEquals(1, mailbox.size(), "processPriorityEvents waits in the task's mailbox");

        // The task's window: right after the real poll of barrier 1 (line 348), inside
        // waitAndGetNextData's monitor, before the store at line 361.
        AtomicBoolean taskHeldGateMonitor = new AtomicBoolean();
        AtomicBoolean flagWhileProducerBlocked = new AtomicBoolean();
        List<String> producerStack = new ArrayList<>();
        partitionManager.view().afterNextPoll(polled -> {
            assertEquals("barrier 1", describe(polled.buffer()), "the poll inside the window");
            assertEquals(Buffer.DataType.NONE, polled.getNextDataType(), "fixed at the poll");
            taskHeldGateMonitor.set(Thread.holdsLock(inputChannelsWithData()));
            producer.addBarrier2.countDown();
            producerStack.addAll(awaitBlockedOnGateMonitor(producer.thread));
            flagWhileProducerBlocked.set(hasPendingPriorityEvent());
        });

        takeMail().run(); // processPriorityEvents: barrier 1, with the producer's add inside
        assertFalse(partitionManager.view().armed(), "the interleaving ran");
        assertTrue(taskHeldGateMonitor.get(), "the task polled inside waitAndGetNextData's monitor");
        producer.join();
        assertEquals(List.of(1L), task.checkpoints, "barrier 1 reached the barrier handler");
        assertEquals(SingleInputGate.class.getName() + ".queueChannel", producerStack.get(0),
                "the producer was blocked on the gate's monitor in queueChannel");
        assertTrue(producerStack.contains(PipelinedSubpartition.class.getName() + ".add"), producerStack::toString);

        // What the two threads leave behind.
        assertEquals("barrier 2 (priority elements: 1)", headOfSubpartition(), "the view's head");
        assertTrue(channelAtGatePriorityHead(), "the producer queued the channel at the gate's priority head");
        assertTrue(gate.getPriorityEventAvailableFuture().isDone(), "the gate announces a priority event");
        assertEquals(1, mailbox.size(), "processPriorityEvents is scheduled again");
        Mail processPriorityEvents = takeMail();

        if (kind == Channel.FLINK_2_3_0) {
            assertTrue(flagWhileProducerBlocked.get(), "line 439 stored true before queueChannel blocked");
            assertFalse(hasPendingPriorityEvent(), "lost update: the task's store at line 361 overwrote it");

            // The gate's poll returns recovered-0 without priority (line 377): the task fails.
            IllegalStateException failure = assertThrows(IllegalStateException.class, processPriorityEvents::run);
            assertEquals("Should only poll priority events", failure.getMessage());
            assertTrue(thrownIn(failure, CheckpointedInputGate.class, "processPriorityEvents"), "line 117");
            assertEquals(List.of(1L), task.checkpoints);

            // Were the task to survive: barrier 2 only after all recovered data.
            assertEquals("recovered-1", pollTaskInput(false));
            assertEquals("barrier 2", pollTaskInput(true), "barrier 2 overtaken by all recovered data");
        } else {
            assertTrue(hasPendingPriorityEvent(), "the re-check after the poll set the flag again");
            processPriorityEvents.run();
            assertEquals(List.of(1L, 2L), task.checkpoints, "processPriorityEvents polled barrier 2");
            assertEquals("recovered-0", pollTaskInput(false));
            assertEquals("recovered-1", pollTaskInput(false));
        }
        assertEquals(List.of(1L, 2L), task.checkpoints);
    }

    /** Control: barrier 2 added after the task's clear is announced and polled ahead of the recovered data. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Channel.class)
    void barrierAddedAfterTheClearIsPolledBeforeRecoveredData(Channel kind) throws Exception {
        setUp(kind::create);
        producer = new Producer();
        producer.start();
        await(producer.barrier1Added, "the producer adds barrier 1");

        takeMail().run(); // processPriorityEvents: barrier 1
        assertEquals(List.of(1L), task.checkpoints);
        assertFalse(hasPendingPriorityEvent(), "nothing pending after barrier 1");
        assertFalse(gate.getPriorityEventAvailableFuture().isDone(), "no priority event left");
        assertEquals(0, mailbox.size());

        producer.addBarrier2.countDown();
        producer.join();
        // 2.3.0's producer stores true (line 439); the fix's producer leaves the flag to the task.
        assertEquals(kind == Channel.FLINK_2_3_0, hasPendingPriorityEvent());
        assertEquals("barrier 2 (priority elements: 1)", headOfSubpartition());
        assertTrue(channelAtGatePriorityHead());
        assertEquals(1, mailbox.size());

        takeMail().run(); // processPriorityEvents: barrier 2
        assertEquals(List.of(1L, 2L), task.checkpoints, "priority event ahead of recovered data");
        assertEquals("recovered-0", pollTaskInput(false));
        assertEquals("recovered-1", pollTaskInput(false));
    }

    /** A variant of the fix, or the fix, with a pause at the producer's announcement. */
    enum Recheck {
        /**
         * Only re-checks the view's head after {@code super.getNextBuffer()} and sets the flag
         * again; the producer still stores {@code true} (line 439). Expected to fail here.
         */
        AFTER_POLL_ONLY,
        /** {@link PendingPriorityEventFixedLocalInputChannel}. */
        FIXED;

        LocalInputChannel create(ChannelArgs args, AnnouncementPause pause) {
            return this == AFTER_POLL_ONLY
                    ? new RecheckAfterPollOnlyChannel(args, pause)
                    : new PausingFixedChannel(args, pause);
        }
    }

    /**
     * The producer preempted between {@code add}'s unlock (line 194) and its announcement (line
     * 196, then line 439): barrier 2 is already at the head. A re-check after the poll sees it and
     * the task polls barrier 2 before it is announced; the late announcement is then stale. The gate
     * drops it ({@code isOutdated}, lines 1268-1276), but 2.3.0's {@code notifyPriorityEvent} has
     * already stored {@code true} (line 439), and the next recovered poll fails its {@code
     * checkState} (lines 349-352). The fix stores nothing on the producer's thread: it passes. (2.3.0
     * itself cannot get here: it polls the view in recovery only after an announcement.)
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Recheck.class)
    void lateAnnouncementAfterTheBarrierWasPolled(Recheck variant) throws Exception {
        AnnouncementPause pause = new AnnouncementPause();
        setUp(args -> variant.create(args, pause));
        producer = new Producer();
        producer.start();
        await(producer.barrier1Added, "the producer adds barrier 1");
        takeMail().run(); // processPriorityEvents: barrier 1
        assertEquals(List.of(1L), task.checkpoints);

        pause.armed = true;
        producer.addBarrier2.countDown();
        await(pause.reached, "the producer added barrier 2 and stops before announcing it");
        assertEquals("barrier 2 (priority elements: 1)", headOfSubpartition());
        assertFalse(gate.getPriorityEventAvailableFuture().isDone(), "not announced yet");

        List<String> polled = List.of(pollTaskInput(), pollTaskInput());
        pause.resume.countDown();
        producer.join();
        assertEquals(List.of(1L, 2L), task.checkpoints, "barrier 2 was polled before its announcement");
        assertFalse(gate.getPriorityEventAvailableFuture().isDone(), "the gate dropped the late announcement");
        assertEquals(0, mailbox.size());
        assertEquals("empty", headOfSubpartition());

        if (variant == Recheck.AFTER_POLL_ONLY) {
            assertEquals(List.of("recovered-0", "barrier 2 (priority)"), polled);
            assertTrue(hasPendingPriorityEvent(), "the late announcement's store (line 439) is stale");
            IllegalStateException failure = assertThrows(IllegalStateException.class, checkpointedGate::pollNext);
            assertEquals("Expected priority event, but got null", failure.getMessage());
        } else {
            assertEquals(List.of("barrier 2 (priority)", "recovered-0"), polled);
            assertFalse(hasPendingPriorityEvent());
            assertEquals("recovered-1", pollTaskInput(false));
        }
    }

    /**
     * How often the race shows with real threads and no pause at all: the producer thread adds
     * barrier 2 while the task thread polls barrier 1 through {@link CheckpointedInputGate}, {@code
     * N} times, each on a fresh partition, gate and channel. Both threads spin on one volatile start
     * flag (no sleeps, no pause anywhere). After both are done the task polls again; a recovered
     * buffer there (while barrier 2 waits and the gate announces it) is what {@code
     * processPriorityEvents} rejects at line 117. On 2.3.0 that happens exactly when the flag was
     * lost; on the fix, never. Runs only with {@code -Dflink.priorityRace.runs=N} or
     * {@code FLINK_PRIORITY_RACE_RUNS=N}, e.g. {@code FLINK_PRIORITY_RACE_RUNS=10000
     * drivers/flink/junit --include-classname='.*LocalInputChannelPendingPriorityEventRaceTest'};
     * prints one line per channel.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Channel.class)
    @EnabledIf("raceRunsRequested")
    void lostUpdatesWithoutPause(Channel kind) throws Exception {
        int runs = raceRuns();
        int recoveredBeforeBarrier2 = 0;
        int lostFlag = 0;
        int addedBeforeThePoll = 0;
        long started = System.nanoTime();
        for (int run = 0; run < runs; run++) {
            setUp(kind::create);
            AtomicBoolean ready = new AtomicBoolean();
            AtomicBoolean go = new AtomicBoolean();
            AtomicReference<Throwable> producerFailure = new AtomicReference<>();
            Thread producerThread = new Thread(() -> {
                try {
                    emitUnalignedBarrier(1);
                    ready.set(true);
                    while (!go.get()) {
                        Thread.onSpinWait();
                    }
                    emitUnalignedBarrier(2);
                } catch (Throwable t) {
                    producerFailure.set(t);
                }
            }, "producer");
            producerThread.start();
            while (!ready.get()) {
                Thread.onSpinWait();
            }
            go.set(true);
            BufferOrEvent first = checkpointedGate.pollNext().orElseThrow();
            producerThread.join(TIMEOUT.toMillis());
            assertFalse(producerThread.isAlive(), "the producer finished");
            if (producerFailure.get() != null) {
                throw new AssertionError("the producer failed", producerFailure.get());
            }
            assertEquals("barrier 1", describe(first));
            assertTrue(gate.getPriorityEventAvailableFuture().isDone(), "barrier 2 is announced");
            // barrier 2 was queued when barrier 1 was polled: its next data type had priority
            boolean before = first.morePriorityEvents();
            boolean flagLost = !hasPendingPriorityEvent()
                    && "barrier 2 (priority elements: 1)".equals(headOfSubpartition());

            String second = pollTaskInput();
            if (second.equals("recovered-0")) {
                recoveredBeforeBarrier2++;
            } else {
                assertEquals("barrier 2 (priority)", second, "run " + run);
            }
            if (kind == Channel.FLINK_2_3_0) {
                assertEquals(flagLost, second.equals("recovered-0"),
                        "run " + run + ": lost flag <=> recovered data first");
                lostFlag += flagLost ? 1 : 0;
            }
            addedBeforeThePoll += before ? 1 : 0;
            tearDown();
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        System.out.printf(
                "lostUpdatesWithoutPause[%s]: N=%d recoveredBeforeBarrier2=%d lostFlag=%s"
                        + " addedBeforeThePoll=%d (%d ms, %d CPUs)%n",
                kind, runs, recoveredBeforeBarrier2, kind == Channel.FLINK_2_3_0 ? lostFlag : "n/a",
                addedBeforeThePoll, millis, Runtime.getRuntime().availableProcessors());
        if (kind == Channel.FIXED) {
            assertEquals(0, recoveredBeforeBarrier2, "the fix never serves recovered data ahead of barrier 2");
        }
    }

    static boolean raceRunsRequested() {
        return raceRuns() > 0;
    }

    private static int raceRuns() {
        String runs = System.getProperty(RACE_RUNS_PROPERTY, System.getenv(RACE_RUNS_ENV));
        return runs == null || runs.isBlank() ? 0 : Integer.parseInt(runs.trim());
    }

    // --- the producer -------------------------------------------------------------------------

    /** The upstream task's thread: barrier 1, then barrier 2 when the test says so. */
    private final class Producer {
        final CountDownLatch barrier1Added = new CountDownLatch(1);
        final CountDownLatch addBarrier2 = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread thread = new Thread(this::run, "producer");

        void start() {
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            try {
                emitUnalignedBarrier(1);
                barrier1Added.countDown();
                await(addBarrier2, "the test lets the producer add barrier 2");
                emitUnalignedBarrier(2);
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        void join() throws InterruptedException {
            thread.join(TIMEOUT.toMillis());
            assertFalse(thread.isAlive(), "the producer finished");
            if (failure.get() != null) {
                throw new AssertionError("the producer failed", failure.get());
            }
        }
    }

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

    /**
     * Polls the producer thread's state until it is BLOCKED on the gate's {@code
     * inputChannelsWithData} monitor, owned by this thread; returns its stack ("Class.method").
     */
    private List<String> awaitBlockedOnGateMonitor(Thread producerThread) {
        Object monitor = inputChannelsWithData();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (true) {
            if (producerThread.getState() == Thread.State.BLOCKED) {
                ThreadInfo info = ManagementFactory.getThreadMXBean().getThreadInfo(producerThread.getId(), 16);
                if (info != null
                        && info.getThreadState() == Thread.State.BLOCKED
                        && info.getLockInfo() != null
                        && info.getLockInfo().getIdentityHashCode() == System.identityHashCode(monitor)
                        && info.getLockOwnerId() == Thread.currentThread().getId()) {
                    return Arrays.stream(info.getStackTrace())
                            .map(frame -> frame.getClassName() + "." + frame.getMethodName())
                            .collect(Collectors.toList());
                }
            }
            if (!producerThread.isAlive() || System.nanoTime() > deadline) {
                fail("the producer is not BLOCKED on the gate's monitor but " + producerThread.getState() + " at "
                        + Arrays.toString(producerThread.getStackTrace()));
            }
            Thread.onSpinWait();
        }
    }

    private static void await(CountDownLatch latch, String what) {
        try {
            if (!latch.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError("timed out: " + what);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted: " + what, e);
        }
    }

    // --- the task -----------------------------------------------------------------------------

    private Mail takeMail() {
        return mailbox.tryTake(TaskMailbox.MIN_PRIORITY).orElseThrow(() -> new AssertionError("no mail"));
    }

    /** The task's input processing: CheckpointedInputGate.pollNext; describes what it got. */
    private String pollTaskInput(boolean expectPriority) throws Exception {
        BufferOrEvent next = checkpointedGate.pollNext().orElseThrow(() -> new AssertionError("no input"));
        assertEquals(expectPriority, next.hasPriority(), "priority of the task's next input");
        return describe(next);
    }

    /** As {@link #pollTaskInput(boolean)}, with " (priority)" appended to a priority event. */
    private String pollTaskInput() throws Exception {
        BufferOrEvent next = checkpointedGate.pollNext().orElseThrow(() -> new AssertionError("no input"));
        return describe(next) + (next.hasPriority() ? " (priority)" : "");
    }

    /** The barrier handler's task: records the checkpoints triggered on barriers. */
    static final class RecordingTask implements CheckpointableTask {
        final List<Long> checkpoints = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void triggerCheckpointOnBarrier(CheckpointMetaData metaData, CheckpointOptions options,
                CheckpointMetricsBuilder metrics) {
            checkpoints.add(metaData.getCheckpointId());
        }

        @Override
        public void abortCheckpointOnBarrier(long checkpointId, CheckpointException cause) {
            throw new AssertionError("checkpoint " + checkpointId + " aborted on a barrier", cause);
        }

        @Override
        public CompletableFuture<Boolean> triggerCheckpointAsync(
                CheckpointMetaData metaData, CheckpointOptions options) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Future<Void> notifyCheckpointCompleteAsync(long checkpointId) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Future<Void> notifyCheckpointAbortAsync(long checkpointId, long latestCompletedCheckpointId) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Future<Void> notifyCheckpointSubsumedAsync(long checkpointId) {
            throw new UnsupportedOperationException();
        }
    }

    // --- the channels of lateAnnouncementAfterTheBarrierWasPolled ------------------------------

    /** Stops the producer at the entry of the channel's notifyPriorityEvent once armed. */
    static final class AnnouncementPause {
        volatile boolean armed;
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);

        void atAnnouncement() {
            if (armed) {
                armed = false;
                reached.countDown();
                await(resume, "the test lets the producer announce barrier 2");
            }
        }
    }

    /** The constructor arguments of a channel. */
    static final class ChannelArgs {
        final SingleInputGate gate;
        final ResultPartitionID partitionId;
        final ResultSubpartitionIndexSet subpartitions = new ResultSubpartitionIndexSet(0);
        final ResultPartitionManager partitionManager;
        final TaskEventPublisher taskEvents = new TaskEventDispatcher();
        final Counter numBytesIn = new SimpleCounter();
        final Counter numBuffersIn = new SimpleCounter();
        final ArrayDeque<Buffer> recovered;
        /** The producer's subpartition's {@code buffers} (for {@link RecheckAfterPollOnlyChannel}). */
        final PrioritizedDeque<?> subpartitionBuffers;

        ChannelArgs(SingleInputGate gate, ResultPartitionID partitionId, ResultPartitionManager partitionManager,
                ArrayDeque<Buffer> recovered, PrioritizedDeque<?> subpartitionBuffers) {
            this.gate = gate;
            this.partitionId = partitionId;
            this.partitionManager = partitionManager;
            this.recovered = recovered;
            this.subpartitionBuffers = subpartitionBuffers;
        }
    }

    /**
     * The re-check alone: after {@code super.getNextBuffer()}, if the flag is false but the
     * subpartition's head has priority, set it again. The producer still stores {@code true}.
     */
    static final class RecheckAfterPollOnlyChannel extends LocalInputChannel {
        private final AnnouncementPause pause;
        private final PrioritizedDeque<?> subpartitionBuffers;

        RecheckAfterPollOnlyChannel(ChannelArgs args, AnnouncementPause pause) {
            super(args.gate, 0, args.partitionId, args.subpartitions, args.partitionManager, args.taskEvents, 0, 0,
                    args.numBytesIn, args.numBuffersIn, ChannelStateWriter.NO_OP, args.recovered);
            this.pause = pause;
            this.subpartitionBuffers = args.subpartitionBuffers;
        }

        @Override
        public Optional<BufferAndAvailability> getNextBuffer() throws IOException {
            Optional<BufferAndAvailability> next = super.getNextBuffer();
            try {
                if (!HAS_PENDING_PRIORITY_EVENT.getBoolean(this) && headHasPriority(subpartitionBuffers)) {
                    HAS_PENDING_PRIORITY_EVENT.setBoolean(this, true);
                }
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            return next;
        }

        private static boolean headHasPriority(PrioritizedDeque<?> buffers) {
            synchronized (buffers) {
                return buffers.getNumPriorityElements() > 0;
            }
        }

        @Override
        public void notifyPriorityEvent(int prioritySequenceNumber) {
            pause.atAnnouncement();
            super.notifyPriorityEvent(prioritySequenceNumber);
        }
    }

    /** The fix, with the same pause at the producer's announcement. */
    static final class PausingFixedChannel extends PendingPriorityEventFixedLocalInputChannel {
        private final AnnouncementPause pause;

        PausingFixedChannel(ChannelArgs args, AnnouncementPause pause) {
            super(args.gate, 0, args.partitionId, args.subpartitions, args.partitionManager, args.taskEvents, 0, 0,
                    args.numBytesIn, args.numBuffersIn, ChannelStateWriter.NO_OP, args.recovered);
            this.pause = pause;
        }

        @Override
        public void notifyPriorityEvent(int prioritySequenceNumber) {
            pause.atAnnouncement();
            super.notifyPriorityEvent(prioritySequenceNumber);
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

    @SuppressWarnings("unchecked")
    private PrioritizedDeque<InputChannel> inputChannelsWithData() {
        try {
            return (PrioritizedDeque<InputChannel>) INPUT_CHANNELS_WITH_DATA.get(gate);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether the channel is the only element of the gate's priority section (queueChannel's result). */
    private boolean channelAtGatePriorityHead() {
        PrioritizedDeque<InputChannel> queued = inputChannelsWithData();
        synchronized (queued) {
            return queued.getNumPriorityElements() == 1 && queued.peek() == channel;
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

    private static boolean thrownIn(Throwable failure, Class<?> type, String method) {
        return Arrays.stream(failure.getStackTrace())
                .anyMatch(frame -> frame.getClassName().equals(type.getName()) && frame.getMethodName().equals(method));
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
