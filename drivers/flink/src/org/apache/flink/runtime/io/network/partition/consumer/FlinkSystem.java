package org.apache.flink.runtime.io.network.partition.consumer;

import conformance.flink.ModelEvent;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointFailureReason;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.execution.CancelTaskException;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.TaskEventDispatcher;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferConsumer;
import org.apache.flink.runtime.io.network.buffer.BufferPool;
import org.apache.flink.runtime.io.network.buffer.BufferRecycler;
import org.apache.flink.runtime.io.network.buffer.LocalBufferPool;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.metrics.InputChannelMetrics;
import org.apache.flink.runtime.io.network.netty.ServerReader;
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
import org.apache.flink.runtime.jobgraph.IntermediateResultPartitionID;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.streaming.runtime.io.checkpointing.UpstreamRecoveryTracker;
import org.apache.flink.util.CollectionUtil;
import org.apache.flink.util.clock.SystemClock;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One instance of a model configuration built from Flink 2.3.0's own classes with their
 * production constructors: a {@link SingleInputGate} over a {@link NetworkBufferPool} and the
 * gate's {@code LocalBufferPool}, one {@link LocalInputChannel} or {@link RemoteInputChannel}
 * per channel (flag off: a {@link LocalRecoveredInputChannel} / {@link RemoteRecoveredInputChannel}
 * that {@code requestPartitions} converts), and per channel a producer
 * {@link PipelinedResultPartition} with one {@link PipelinedSubpartition}, registered with a
 * {@link ResultPartitionManager}. Each model action is one method here making the calls the
 * Flink thread named by the action makes; the driver plays the Netty wire, the client's
 * {@code AddCredit} writes, the recovered-state reader and the task's checkpoint barrier handler.
 */
public final class FlinkSystem {
    static final int SEGMENT_SIZE = 4096;
    /** A `ResumeConsumption` message among the `AddCredit`s on the client-to-server wire. */
    static final int RESUME_CONSUMPTION = 0;

    /** One channel of the configuration. */
    public static final class ChannelConfig {
        public String kind;
        public int recovered;
        public List<String> upstream = new ArrayList<>();
        public int exclusive;
        public int floating;
        public int late;
    }

    /** The configuration (ModelConfig). */
    public static final class Config {
        public List<ChannelConfig> channels = new ArrayList<>();
        public int checkpoints;
        public String delivery = "drainer";
        public boolean insertRecoveryBarriers = true;
        public boolean release;
        public boolean faults;
        /** `shared_pool`: the gate's one LocalBufferPool holds every channel's floating buffers. */
        public boolean sharedPool;
    }

    /** What a step did, for the observation. */
    public static final class Obs {
        public final String kind;
        public final Object[] fields;

        Obs(String kind, Object... fields) {
            this.kind = kind;
            this.fields = fields;
        }
    }

    /** A BufferResponse on the wire, server to client. */
    static final class Wire {
        final Buffer buffer;
        final int seq;
        final int backlog;

        Wire(Buffer buffer, int seq, int backlog) {
            this.buffer = buffer;
            this.seq = seq;
            this.backlog = backlog;
        }
    }

    /** One channel with the driver's stand-ins around it. */
    static final class Chan {
        final int index;
        final ChannelConfig cfg;
        final boolean remote;
        InputChannel channel;
        /** Chosen by {@link #partitionIdsInChannelOrder}. */
        ResultPartitionID partitionId;
        PipelinedResultPartition partition;
        PipelinedSubpartition subpartition;
        ServerReader reader;
        final ArrayDeque<Wire> wire = new ArrayDeque<>();
        /**
         * Client-to-server messages on the wire, oldest first: `AddCredit(k)` as k,
         * `ResumeConsumption` as {@link #RESUME_CONSUMPTION} (an AddCredit never carries 0).
         */
        final ArrayDeque<Integer> addCreditInFlight = new ArrayDeque<>();
        long creditWrites;
        /** `resumeConsumption` calls of the client the Netty client has written (or dropped). */
        long resumeWrites;
        final List<Buffer> held = new ArrayList<>();
        /** What the gate handed on from this channel, in order (the sentinel excepted). */
        final List<String> delivered = new ArrayList<>();
        int pushed;
        int written;
        /** Netty client: between `onBuffer` and `onSenderBacklog`, with the response's backlog. */
        Integer pendingBacklog;
        /** Netty client: inside `onSenderBacklog`, before `notifyBufferAvailable(announce)`. */
        Integer announce;
        ConnectionID connection;

        Chan(int index, ChannelConfig cfg) {
            this.index = index;
            this.cfg = cfg;
            this.remote = "remote".equals(cfg.kind);
        }
    }

    private enum Cp {
        NOT_TRIGGERED,
        TRIGGERED,
        ENDED
    }

    // --- reflection, resolved once -----------------------------------------------------------

    private static final Method GET_CHANNEL;
    private static final Method QUEUE_CHANNEL_UNSAFE;
    private static final Method CHECK_UNAVAILABILITY;
    private static final Field LAST_PRIORITY_SEQ;
    private static final Field NEXT_DATA_TYPE;
    private static final Constructor<PipelinedSubpartition> SUBPARTITION;
    private static final Method ON_BLOCKING_UPSTREAM;
    private static final Field EXPECTED_SEQUENCE_NUMBER;

    static {
        try {
            GET_CHANNEL = SingleInputGate.class.getDeclaredMethod("getChannel", boolean.class);
            QUEUE_CHANNEL_UNSAFE =
                    SingleInputGate.class.getDeclaredMethod("queueChannelUnsafe", InputChannel.class, boolean.class);
            CHECK_UNAVAILABILITY = SingleInputGate.class.getDeclaredMethod("checkUnavailability");
            LAST_PRIORITY_SEQ = SingleInputGate.class.getDeclaredField("lastPrioritySequenceNumber");
            NEXT_DATA_TYPE = InputChannel.BufferAndAvailability.class.getDeclaredField("nextDataType");
            SUBPARTITION = PipelinedSubpartition.class.getDeclaredConstructor(
                    int.class, int.class, int.class, ResultPartition.class);
            ON_BLOCKING_UPSTREAM = RemoteInputChannel.class.getDeclaredMethod("onBlockingUpstream");
            EXPECTED_SEQUENCE_NUMBER = RemoteInputChannel.class.getDeclaredField("expectedSequenceNumber");
            for (java.lang.reflect.AccessibleObject o : new java.lang.reflect.AccessibleObject[] {
                GET_CHANNEL, QUEUE_CHANNEL_UNSAFE, CHECK_UNAVAILABILITY, LAST_PRIORITY_SEQ,
                NEXT_DATA_TYPE, SUBPARTITION, ON_BLOCKING_UPSTREAM, EXPECTED_SEQUENCE_NUMBER
            }) {
                o.setAccessible(true);
            }
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // --- the instance ------------------------------------------------------------------------

    final Config cfg;
    final Workers workers;
    /** Makes the channels: 2.3.0's, or our fixed subclasses. */
    final ChannelFactory channelFactory;
    final NetworkBufferPool global;
    final NetworkBufferPool producerPool;
    final SingleInputGate gate;
    final ResultPartitionManager partitions = new ResultPartitionManager();
    final TaskEventDispatcher taskEvents = new TaskEventDispatcher();
    final Stubs.Client client;
    final Stubs.Writer writer = new Stubs.Writer();
    final Stubs.OutputWriter outputWriter = new Stubs.OutputWriter();
    /**
     * The task's `UpstreamRecoveryTracker` for the gate, as `CheckpointedInputGate` has it
     * (`UpstreamRecoveryTracker.forInputGate(gate)`): `handleEndOfRecovery` of each channel's
     * `EndOfOutputChannelStateEvent`, and after the last one `resumeConsumption` of every channel.
     */
    final UpstreamRecoveryTracker upstreamRecovery;
    final Chan[] chans;
    /** The model's names of the gate's network segments: channel index and x0 / f0. */
    final Map<MemorySegment, String> segmentNames = new IdentityHashMap<>();
    final Map<MemorySegment, Integer> segmentChannels = new IdentityHashMap<>();
    final int totalSegments;
    /** The floating buffers of the gate's pool (the sum of the channels' `floating`). */
    final int floatingSegments;
    /** The owner recorded for a floating segment: every channel may borrow it. */
    static final int SHARED = -1;
    /** The gate pool's one segment, held by the driver: the model's pool is empty. */
    private Buffer reserved;
    private final Cp[] checkpoints;
    private final int[] barriersSeen;
    private boolean triggering;

    /** Why this configuration cannot be built, or null. */
    public static String unsupported(Config cfg) {
        if (!"no-recovery".equals(cfg.delivery) && !"legacy".equals(cfg.delivery)
                && !"migration".equals(cfg.delivery)) {
            return "delivery " + cfg.delivery + ": Flink 2.3.0 has no physical channel in recovery "
                    + "(no onRecoveredStateBuffer/finishRecoveredBufferDelivery/enableNotify on "
                    + "LocalInputChannel or RemoteInputChannel); only no-recovery, legacy and migration exist";
        }
        if (cfg.faults) {
            return "faults: upstream failures are not realised by this driver";
        }
        for (ChannelConfig c : cfg.channels) {
            if (c.floating > 0 && !cfg.sharedPool) {
                return "floating buffers per channel: the model gives each channel a pool of its own, "
                        + "Flink 2.3.0's gate has one LocalBufferPool for all its channels; use shared_pool "
                        + "(the model's gate-wide pool, which this driver realises)";
            }
            if (!"remote".equals(c.kind) && c.exclusive > 0) {
                return "a local channel with exclusive buffers (drainer only)";
            }
        }
        return null;
    }

    public FlinkSystem(Config cfg, Workers workers) throws Exception {
        this(cfg, workers, false);
    }

    /**
     * With {@code flinkFixes} (the driver's {@code --flink-fixes}) the channels are our fixed
     * subclasses of drivers/flink/fixes ({@link ChannelFactory}).
     */
    public FlinkSystem(Config cfg, Workers workers, boolean flinkFixes) throws Exception {
        this.cfg = cfg;
        this.workers = workers;
        this.channelFactory = new ChannelFactory(flinkFixes);
        int n = cfg.channels.size();
        int exclusive = 0;
        int floating = 0;
        for (ChannelConfig c : cfg.channels) {
            exclusive += "remote".equals(c.kind) ? c.exclusive : 0;
            floating += c.floating;
        }
        // The gate's LocalBufferPool holds the model's floating buffers (`shared_pool`: the sum of
        // the channels' `floating`). It needs at least one segment (2.3.0: `required > 0`); when
        // the model's pool has none to lend, the driver takes that one out below.
        floatingSegments = floating;
        int poolSize = Math.max(1, floating);
        totalSegments = exclusive + poolSize;
        global = new NetworkBufferPool(totalSegments, SEGMENT_SIZE);
        producerPool = new NetworkBufferPool(Math.max(1, n), SEGMENT_SIZE);
        client = new Stubs.Client(this::serve, n);
        gate = new SingleInputGate(
                "conformance-task",
                0,
                new IntermediateDataSetID(),
                ResultPartitionType.PIPELINED_BOUNDED,
                n,
                (resultId, partitionId, handle) -> {},
                () -> global.createBufferPool(poolSize, poolSize),
                null,
                global,
                SEGMENT_SIZE,
                new ThroughputCalculator(SystemClock.getInstance()),
                null);
        chans = new Chan[n];
        InputChannel[] channels = new InputChannel[n];
        // Flag off (legacy) and flag on (migration, 2.3.0's execution.checkpointing.during-recovery
        // .enabled): the gate starts with RecoveredInputChannels; flag on, requestPartitions
        // migrates what is still queued in them into the physical channels.
        ResultPartitionID[] partitionIds = partitionIdsInChannelOrder(n);
        boolean migration = "migration".equals(cfg.delivery);
        boolean legacy = "legacy".equals(cfg.delivery) || migration;
        gate.setCheckpointingDuringRecoveryEnabled(migration);
        for (int c = 0; c < n; c++) {
            ChannelConfig cc = cfg.channels.get(c);
            Chan ch = new Chan(c, cc);
            ch.partitionId = partitionIds[c];
            chans[c] = ch;
            buildProducer(ch);
            ResultSubpartitionIndexSet sub = new ResultSubpartitionIndexSet(0);
            ConnectionID connection = new ConnectionID(ResourceID.generate(), new InetSocketAddress("localhost", 1), c);
            ch.connection = connection;
            InputChannelMetrics metrics = new InputChannelMetrics(new UnregisteredMetricsGroup());
            if (legacy && ch.remote) {
                RecoveredInputChannel r = channelFactory.remoteRecovered(
                        gate, c, ch.partitionId, sub, connection, client, cc.exclusive, metrics);
                r.setChannelStateWriter(writer);
                ch.channel = r;
            } else if (legacy) {
                RecoveredInputChannel r = channelFactory.localRecovered(
                        gate, c, ch.partitionId, sub, partitions, taskEvents, metrics);
                r.setChannelStateWriter(writer);
                ch.channel = r;
            } else if (ch.remote) {
                ch.channel = channelFactory.remote(gate, c, ch.partitionId, sub, connection, client, cc.exclusive,
                        new SimpleCounter(), new SimpleCounter(), writer, new ArrayDeque<>());
            } else {
                ch.channel = channelFactory.local(gate, c, ch.partitionId, sub, partitions, taskEvents,
                        new SimpleCounter(), new SimpleCounter(), writer, new ArrayDeque<>());
            }
            channels[c] = ch.channel;
        }
        gate.setInputChannels(channels);
        upstreamRecovery = UpstreamRecoveryTracker.forInputGate(gate);
        if (!inChannelOrder(conversionOrder())) {
            throw new IllegalStateException("the gate converts its channels in the order " + conversionOrder());
        }
        gate.setup();
        if (floating == 0) {
            reserved = gate.getBufferPool().requestBuffer();
            if (reserved == null) {
                throw new IllegalStateException("the gate's pool has no segment to set aside");
            }
        } else {
            nameFloatingSegments(floating);
        }
        for (Chan ch : chans) {
            adopt(ch);
        }
        checkpoints = new Cp[cfg.checkpoints];
        java.util.Arrays.fill(checkpoints, Cp.NOT_TRIGGERED);
        barriersSeen = new int[cfg.checkpoints];
    }

    /**
     * The gate's pool takes its segments from the global pool one at a time, when it runs empty;
     * the model's pool holds all its floating buffers from the start. The driver requests every
     * segment of the pool once and recycles them (no listener is registered yet, so they stay in
     * the pool), then names them `f0`, `f1`, ... in the order of `availableMemorySegments`, the
     * order in which `requestBuffer` hands them out. The names are gate-wide: a floating buffer
     * can be lent to any channel.
     */
    private void nameFloatingSegments(int floating) {
        BufferPool pool = gate.getBufferPool();
        List<Buffer> taken = new ArrayList<>();
        for (int i = 0; i < floating; i++) {
            Buffer b = pool.requestBuffer();
            if (b == null) {
                throw new IllegalStateException("the gate's pool lends " + i + " of its " + floating + " segments");
            }
            taken.add(b);
        }
        taken.forEach(Buffer::recycleBuffer);
        int f = 0;
        for (MemorySegment s : Projection.poolSegments((LocalBufferPool) pool)) {
            segmentNames.put(s, "f" + f++);
            segmentChannels.put(s, SHARED);
        }
        if (f != floating) {
            throw new IllegalStateException("the gate's pool holds " + f + " of its " + floating + " segments");
        }
    }

    /**
     * Random partition ids whose order in the gate's `inputChannels` (a HashMap keyed by
     * `IntermediateResultPartitionID`) is the channel order. `convertRecoveredInputChannels`
     * converts in that map's order, and with the flag on each converted channel that has
     * migrated buffers is appended to `inputChannelsWithData`: with random ids the gate's queue
     * after the conversion would be in an arbitrary order, where the model converts in channel
     * order (docs/flink-conformance.md, divergence 3).
     */
    static ResultPartitionID[] partitionIdsInChannelOrder(int n) {
        for (int attempt = 0; attempt < 10_000; attempt++) {
            ResultPartitionID[] ids = new ResultPartitionID[n];
            // Built as `setInputChannels` builds `inputChannels`.
            Map<IntermediateResultPartitionID, Map<Integer, Integer>> byPartition =
                    CollectionUtil.newHashMapWithExpectedSize(n);
            for (int c = 0; c < n; c++) {
                ids[c] = new ResultPartitionID();
                byPartition.computeIfAbsent(ids[c].getPartitionId(), k -> new HashMap<>()).put(c, c);
            }
            List<Integer> order = new ArrayList<>();
            byPartition.values().forEach(m -> order.addAll(m.keySet()));
            if (inChannelOrder(order)) {
                return ids;
            }
        }
        throw new IllegalStateException("no partition ids in channel order");
    }

    private static boolean inChannelOrder(List<Integer> order) {
        for (int i = 0; i < order.size(); i++) {
            if (order.get(i) != i) {
                return false;
            }
        }
        return true;
    }

    /** The order in which `convertRecoveredInputChannels` visits the channels. */
    @SuppressWarnings("unchecked")
    private List<Integer> conversionOrder() throws ReflectiveOperationException {
        Field f = SingleInputGate.class.getDeclaredField("inputChannels");
        f.setAccessible(true);
        List<Integer> order = new ArrayList<>();
        for (Map<InputChannelInfo, InputChannel> m : ((Map<?, Map<InputChannelInfo, InputChannel>>) f.get(gate)).values()) {
            m.keySet().forEach(info -> order.add(info.getInputChannelIdx()));
        }
        return order;
    }

    /** The producer: a pipelined partition with one subpartition holding the early upstream. */
    private void buildProducer(Chan ch) throws Exception {
        ResultSubpartition[] subs = new ResultSubpartition[1];
        ch.partition = new PipelinedResultPartition(
                "producer-" + ch.index,
                ch.index,
                ch.partitionId,
                ResultPartitionType.PIPELINED_BOUNDED,
                subs,
                1,
                partitions,
                null,
                () -> producerPool.createBufferPool(1, 1, 1, 1, 0));
        ch.subpartition = SUBPARTITION.newInstance(0, ch.cfg.exclusive, SEGMENT_SIZE, ch.partition);
        subs[0] = ch.subpartition;
        ch.partition.setChannelStateWriter(outputWriter);
        ch.partition.setup();
        int early = ch.cfg.upstream.size() - ch.cfg.late;
        for (int i = 0; i < early; i++) {
            writeUpstream(ch);
        }
    }

    /**
     * The producer writes its next upstream element: a data buffer (one finished buffer per
     * element), Flink's own `EndOfOutputChannelStateEvent` by
     * `PipelinedResultPartition.finishReadRecoveredState(true)` (what an upstream task writes
     * first into every subpartition when it starts; `PipelinedSubpartition
     * .isSupportChannelStateRecover()` is true), or an ordinary event by `broadcastEvent`; then
     * `flushAll()`, as a producer with buffer timeout 0 does: the model's upstream elements are
     * available as soon as they are written.
     */
    private void writeUpstream(Chan ch) throws IOException {
        int i = ch.written++;
        String kind = ch.cfg.upstream.get(i);
        if ("data".equals(kind)) {
            BufferConsumer consumer = Items.dataConsumer(ch.index, "d" + i);
            ch.subpartition.add(consumer, 0);
        } else if (END_OF_OUTPUT.equals(kind)) {
            if (i != Items.END_OF_OUTPUT_INDEX) {
                throw new IllegalStateException("end-of-output-channel-state as element " + i + " of channel "
                        + ch.index + ": the model writes it first, and only there");
            }
            ch.partition.finishReadRecoveredState(true);
        } else {
            ch.partition.broadcastEvent(new ModelEvent(Items.tag(ch.index, "e" + i)), false);
        }
        ch.partition.flushAll();
    }

    /** The model's `Upstream::EndOfOutputChannelState`. */
    static final String END_OF_OUTPUT = "end-of-output-channel-state";

    /**
     * Takes over a physical channel the gate holds now: its buffer manager announces through the
     * driver's pause point ({@link AnnouncePause}), its exclusive segments get the model's names
     * x0, x1, ... in queue order.
     */
    private void adopt(Chan ch) throws Exception {
        ch.channel = gate.getChannel(ch.index);
        if (channelFactory.fixes && !ChannelFactory.isFixed(ch.channel)) {
            throw new IllegalStateException("--flink-fixes, but channel " + ch.index + " is a " + ch.channel.getClass());
        }
        if (!(ch.channel instanceof RemoteInputChannel)) {
            return;
        }
        RemoteInputChannel remote = (RemoteInputChannel) ch.channel;
        AnnouncePause.install(remote, ch.connection, client, writer);
        int x = 0;
        for (Buffer b : Projection.exclusive(remote.getBufferManager())) {
            MemorySegment s = b.getMemorySegment();
            if (!segmentNames.containsKey(s)) {
                segmentNames.put(s, "x" + x);
                segmentChannels.put(s, ch.index);
            }
            x++;
        }
    }

    /** The producer's Netty server answers a remote channel's PartitionRequest with a view reader. */
    private void serve(RemoteInputChannel channel, ResultPartitionID partition, ResultSubpartitionIndexSet subs)
            throws IOException {
        Chan ch = chans[channel.getChannelIndex()];
        if (ch.reader == null) {
            ch.reader = new ServerReader(channel.getInputChannelId(), channel.getInitialCredit(), partitions, partition, subs);
        }
    }

    // --- observations ------------------------------------------------------------------------

    static Obs done() {
        return new Obs("done");
    }

    static Obs unperformable(String reason) {
        return new Obs("unperformable", "reason", reason);
    }

    static Obs error(String kind) {
        return new Obs("error", "error", kind);
    }

    /** The observation's kind of an exception thrown by Flink; null when it has none. */
    static String errorKind(Throwable t) {
        while ((t instanceof InvocationTargetException || t instanceof java.util.concurrent.ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String name = t.getClass().getSimpleName();
        if (t instanceof CancelTaskException) {
            return "released";
        }
        if (name.equals("BufferReorderingException")) {
            return "buffer-reordering";
        }
        if (name.equals("RemoteTransportException")) {
            return "remote-transport";
        }
        if (t instanceof IllegalStateException || t instanceof IllegalArgumentException || t instanceof CheckpointException) {
            return "illegal-state";
        }
        return null;
    }

    static Obs failed(Throwable t) {
        String kind = errorKind(t);
        if (kind != null) {
            return error(kind);
        }
        while (t instanceof InvocationTargetException && t.getCause() != null) {
            t = t.getCause();
        }
        return unperformable("Flink threw an exception the model has no kind for: " + t);
    }

    /** What a worker's call came to. */
    private Obs outcome(Workers.Worker w) {
        switch (w.state) {
            case PAUSED:
                return done();
            case BLOCKED:
                return new Obs("blocked");
            default:
                try {
                    Object r = w.result();
                    return r instanceof Obs ? (Obs) r : done();
                } catch (Exception e) {
                    return failed(e);
                }
        }
    }

    private Chan ch(int c) {
        return chans[c];
    }

    // --- IO thread (flag off: the recovered-state reader) ------------------------------------

    public Obs onRecoveredStateBuffer(int c) {
        Chan ch = ch(c);
        if (!(ch.channel instanceof RecoveredInputChannel)) {
            return unperformable("channel " + c + " is not a RecoveredInputChannel");
        }
        // InputChannelRecoveredStateHandler would fill a buffer from requestBufferBlocking(); the
        // model has no names for the recovered channel's own segments: heap memory stands in.
        Buffer buffer = Items.heapData(c, "r" + ch.pushed++);
        ((RecoveredInputChannel) ch.channel).onRecoveredStateBuffer(buffer);
        return done();
    }

    public Obs finishRecoveredBufferDelivery(int c) {
        Chan ch = ch(c);
        if (!(ch.channel instanceof RecoveredInputChannel)) {
            return unperformable("finishRecoveredBufferDelivery on a physical channel: 2.3.0 has none");
        }
        try {
            ((RecoveredInputChannel) ch.channel).finishReadRecoveredState();
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    // --- task thread -------------------------------------------------------------------------

    /**
     * The `requestPartitions` mail: `SingleInputGate.requestPartitions()`, which flag off first
     * converts every `RecoveredInputChannel` (`convertRecoveredInputChannels`: `toInputChannel()`,
     * `setup()`, release of the recovered channel) and then requests every subpartition.
     */
    public Obs convertRecoveredInputChannels() {
        for (Chan ch : chans) {
            if (!(ch.channel instanceof RecoveredInputChannel)) {
                return unperformable("channel " + ch.index + " is not a RecoveredInputChannel");
            }
        }
        try {
            gate.requestPartitions();
            for (Chan ch : chans) {
                adopt(ch);
            }
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    /**
     * `requestPartitions()` of the gate. With a released channel the model requests each live
     * channel (see docs/flink-conformance.md: 2.3.0's `internalRequestPartitions` stops at a
     * released local channel); then the driver requests each live channel itself, unless
     * `strict` asks for the gate's own loop.
     */
    public Obs requestPartitions(boolean strict) {
        boolean anyReleased = false;
        for (Chan ch : chans) {
            anyReleased |= ch.channel.isReleased();
        }
        try {
            if (!anyReleased || strict) {
                gate.requestPartitions();
            } else {
                for (Chan ch : chans) {
                    if (!ch.channel.isReleased()) {
                        ch.channel.requestSubpartitions();
                    }
                }
            }
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    /**
     * One turn of the gate's polling loop (`waitAndGetNextData`, one iteration, under
     * `inputChannelsWithData`): `getChannel(false)` dequeues the head, which must be the channel
     * the model names; `readRecoveredOrNormalBuffer` polls it (`getNextBuffer`, re-queued with
     * `queueChannelUnsafe` on `moreAvailable`); `checkUnavailability`. The loop itself is not
     * used because it goes on to the next channel when one returns nothing, where the model
     * takes a step per channel.
     */
    public Obs getNextBuffer(int c) {
        PrioritizedDeque<InputChannel> queue = gate.getInputChannelsWithData();
        InputChannel.BufferAndAvailability got;
        try {
            synchronized (queue) {
                InputChannel head = queue.peek();
                if (head == null) {
                    return unperformable("the gate has no channel queued to poll " + c);
                }
                if (head.getChannelIndex() != c) {
                    return unperformable("the gate polls channel " + head.getChannelIndex() + ", not " + c);
                }
                @SuppressWarnings("unchecked")
                Optional<InputChannel> polled = (Optional<InputChannel>) GET_CHANNEL.invoke(gate, false);
                InputChannel channel = polled.orElseThrow();
                if (channel instanceof RecoveredInputChannel && !channel.isReleased()) {
                    got = readBufferFromInputChannel(channel);
                    if (((RecoveredInputChannel) channel).getStateConsumedFuture().isDone()) {
                        got = readBufferFromInputChannel(channel);
                    }
                } else {
                    got = readBufferFromInputChannel(channel);
                }
                CHECK_UNAVAILABILITY.invoke(gate);
            }
        } catch (Exception e) {
            return failed(e);
        }
        if (got == null) {
            return new Obs("nothing-polled");
        }
        Buffer buffer = got.buffer();
        String item = Items.name(c, buffer);
        Buffer.DataType next;
        try {
            next = (Buffer.DataType) NEXT_DATA_TYPE.get(got);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        if (segmentNames.containsKey(buffer.getMemorySegment())) {
            // The operator holds the network buffer until the recycler drops it.
            ch(c).held.add(buffer);
        } else {
            buffer.recycleBuffer();
        }
        if (!item.equals("EOR")) {
            // The gate hands everything on but the sentinel, which the network input consumes.
            ch(c).delivered.add(item);
        }
        if (item.startsWith("barrier")) {
            onBarrier(c, Integer.parseInt(item.substring("barrier".length())));
        }
        if (item.equals(Items.END_OF_OUTPUT_NAME)) {
            Obs failed = handleEndOfRecovery(c);
            if (failed != null) {
                return failed;
            }
        }
        return new Obs("polled", "item", item, "seq", got.getSequenceNumber(), "next", Items.dataType(next));
    }

    /**
     * Strict: a released channel makes the tracker's resume loop throw (see
     * {@link #handleEndOfRecovery}) as 2.3.0 does, instead of the model's skip.
     */
    boolean strictResumeConsumption;

    /**
     * `CheckpointedInputGate.handleEvent` of an `EndOfOutputChannelStateEvent` (2.3.0 lines
     * 188-190): the real `UpstreamRecoveryTrackerImpl.handleEndOfRecovery(channelInfo)`, which
     * after the last channel's event calls `SingleInputGate.resumeConsumption(info)` of every
     * channel in order: `LocalInputChannel.resumeConsumption` (the view's, then
     * `notifyChannelNonEmpty` if available) or `RemoteInputChannel.resumeConsumption` (a
     * `ResumeConsumption` queued on the client stand-in).
     *
     * <p>A released channel's `resumeConsumption` throws (`checkState(!isReleased, "Channel
     * released.")`, LocalInputChannel line 458, RemoteInputChannel line 460), which ends the
     * loop there and fails the task. The model skips a released channel and resumes the others
     * (a task manager releases a channel alone only when it is cancelled). Unless
     * `--strict-resume-consumption`, the driver then resumes the live channels after the
     * released one with the gate's own `resumeConsumption(info)`, as the model does. Returns the
     * observation of a failure, or null.
     */
    private Obs handleEndOfRecovery(int c) {
        try {
            upstreamRecovery.handleEndOfRecovery(ch(c).channel.getChannelInfo());
            return null;
        } catch (IllegalStateException e) {
            if (strictResumeConsumption || !"Channel released.".equals(e.getMessage())) {
                return failed(e);
            }
        } catch (Exception e) {
            return failed(e);
        }
        int first = -1;
        for (Chan ch : chans) {
            if (ch.channel.isReleased()) {
                first = ch.index;
                break;
            }
        }
        if (first < 0) {
            return unperformable("the tracker's resume loop met a released channel, but none is released");
        }
        for (int i = first + 1; i < chans.length; i++) {
            if (chans[i].channel.isReleased()) {
                continue;
            }
            try {
                gate.resumeConsumption(chans[i].channel.getChannelInfo());
            } catch (Exception e) {
                return failed(e);
            }
        }
        return null;
    }

    /** `SingleInputGate.readBufferFromInputChannel` without the tiered-storage branch. */
    private InputChannel.BufferAndAvailability readBufferFromInputChannel(InputChannel channel) throws Exception {
        Optional<InputChannel.BufferAndAvailability> next = channel.getNextBuffer();
        if (next.isEmpty()) {
            return null;
        }
        InputChannel.BufferAndAvailability b = next.get();
        if (b.moreAvailable()) {
            QUEUE_CHANNEL_UNSAFE.invoke(gate, channel, b.morePriorityEvents());
        }
        if (b.hasPriority()) {
            ((int[]) LAST_PRIORITY_SEQ.get(gate))[channel.getChannelIndex()] = b.getSequenceNumber();
        }
        return b;
    }

    /**
     * `insertRecoveryCheckpointBarrierIfInRecovery`: 2.3.0 has no such method and its trigger
     * makes no such call. In the configurations this driver builds no channel is in recovery,
     * where the model's step changes nothing; so does the driver's.
     */
    public Obs insertRecoveryCheckpointBarrier(int c, int cp) {
        return done();
    }

    /** `checkpointStarted(barrier)` on the channel, as `SingleCheckpointBarrierHandler` triggers it. */
    public Obs checkpointStarted(int c, int cp) {
        int before = writer.of(cp, c).size();
        try {
            ch(c).channel.checkpointStarted(barrier(cp));
        } catch (CheckpointException e) {
            String reason = e.getCheckpointFailureReason() == CheckpointFailureReason.CHECKPOINT_SUBSUMED
                    ? "subsumed"
                    : null;
            triggering = false;
            stopCheckpoint(cp);
            if (reason == null) {
                return unperformable("checkpointStarted declined: " + e.getCheckpointFailureReason());
            }
            return new Obs("refused", "checkpoint", cp, "reason", reason);
        } catch (Exception e) {
            return failed(e);
        }
        List<String> all = writer.of(cp, c);
        List<String> now = new ArrayList<>(all.subList(before, all.size()));
        if (c + 1 == chans.length) {
            triggering = false;
            maybeComplete(cp);
        }
        return new Obs("persisted", "checkpoint", cp, "buffers", now);
    }

    static CheckpointBarrier barrier(long cp) {
        return new CheckpointBarrier(
                cp, cp, CheckpointOptions.unaligned(CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault()));
    }

    // --- the barrier handler stand-in (SingleCheckpointBarrierHandler on the task) -----------

    private void onBarrier(int c, int cp) {
        int i = cp - 1;
        if (i < 0 || i >= checkpoints.length) {
            return;
        }
        barriersSeen[i] |= 1 << c;
        if (checkpoints[i] == Cp.NOT_TRIGGERED) {
            for (int old = 0; old < i; old++) {
                checkpoints[old] = Cp.ENDED;
            }
            checkpoints[i] = Cp.TRIGGERED;
            triggering = true;
        } else {
            maybeComplete(cp);
        }
    }

    private void maybeComplete(int cp) {
        int i = cp - 1;
        if (checkpoints[i] != Cp.TRIGGERED || triggering) {
            return;
        }
        int live = 0;
        for (Chan ch : chans) {
            if (!ch.channel.isReleased()) {
                live |= 1 << ch.index;
            }
        }
        if ((barriersSeen[i] & live) == live) {
            stopCheckpoint(cp);
        }
    }

    /** `abortInternal` / completion: `checkpointStopped` on every channel. */
    private void stopCheckpoint(int cp) {
        checkpoints[cp - 1] = Cp.ENDED;
        for (Chan ch : chans) {
            ch.channel.checkpointStopped(cp);
        }
    }

    // --- producer and Netty server -----------------------------------------------------------

    /** The producer takes checkpoint `cp`: `broadcastEvent(barrier, true)`, an unaligned priority barrier. */
    public Obs emitCheckpointBarrier(int c, int cp) {
        try {
            ch(c).partition.broadcastEvent(barrier(cp), true);
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    public Obs addBuffer(int c) {
        Chan ch = ch(c);
        if (ch.written >= ch.cfg.upstream.size()) {
            return unperformable("the producer of channel " + c + " has written everything");
        }
        try {
            writeUpstream(ch);
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    /** The view reader's `getNextBuffer()` onto the wire. */
    public Obs sendBuffer(int c) {
        Chan ch = ch(c);
        if (ch.reader == null) {
            return unperformable("no view reader: the partition was not requested");
        }
        InputChannel.BufferAndAvailability next;
        try {
            next = ch.reader.getNextBuffer();
        } catch (IllegalStateException e) {
            return error("send-without-credit");
        } catch (Exception e) {
            return failed(e);
        }
        if (next == null) {
            return new Obs("nothing-sent");
        }
        Wire w = new Wire(next.buffer(), next.getSequenceNumber(), next.buffersInBacklog());
        ch.wire.add(w);
        Buffer.DataType type;
        try {
            type = (Buffer.DataType) NEXT_DATA_TYPE.get(next);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        return new Obs("sent", "sent", wireElement(c, w), "next", Items.dataType(type));
    }

    static Object[] wireElement(int c, Wire w) {
        return new Object[] {"item", Items.name(c, w.buffer), "seq", w.seq, "backlog", w.backlog};
    }

    public Obs onAddCredit(int c) {
        Chan ch = ch(c);
        Integer credit = ch.addCreditInFlight.peek();
        if (credit == null || credit == RESUME_CONSUMPTION || ch.reader == null) {
            return unperformable("no AddCredit at the head of the client-to-server wire, or no reader");
        }
        ch.addCreditInFlight.poll();
        ch.reader.addCredit(credit);
        return done();
    }

    /**
     * The server's `PartitionRequestQueue.addCreditOrResumeConsumption(receiverId,
     * NetworkSequenceViewReader::resumeConsumption)` for the `ResumeConsumption` at the head of
     * the wire: the real `CreditBasedSequenceNumberingViewReader.resumeConsumption()` (credit to
     * 0 when the initial credit is 0; the view's `resumeConsumption`, which unblocks the
     * `PipelinedSubpartition` or throws "Should be blocked by checkpoint."). The
     * `enqueueAvailableReader` that follows only registers the reader and writes what is
     * available, which the driver does in `sendBuffer` steps; its `announceBacklog` branch needs
     * a reader with initial credit 0, which the presets replayed here do not have.
     */
    public Obs onResumeConsumption(int c) {
        Chan ch = ch(c);
        Integer head = ch.addCreditInFlight.peek();
        if (head == null || head != RESUME_CONSUMPTION || ch.reader == null) {
            return unperformable("no ResumeConsumption at the head of the client-to-server wire, or no reader");
        }
        ch.addCreditInFlight.poll();
        try {
            ch.reader.resumeConsumption();
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    // --- Netty client ------------------------------------------------------------------------

    /**
     * `CreditBasedPartitionRequestClientHandler.decodeMsg` for the head of the wire: a released
     * channel's response is dropped; a data buffer is copied into a buffer from
     * `requestBuffer()`, an event into heap memory; then `onBuffer(buffer, seq, -1, 0)`. The
     * backlog -1 makes `onBuffer` skip its final `onSenderBacklog(backlog)` call (2.3.0:
     * `if (backlog >= 0) onSenderBacklog(backlog)`), which the driver makes in the model's
     * separate `onSenderBacklog` step with the backlog the response carried.
     *
     * <p>A `RECOVERY_COMPLETION` buffer (`EndOfOutputChannelStateEvent`): 2.3.0's `onBuffer`
     * (lines 600-602) first calls `onBlockingUpstream()` and checks `backlog == 0`, which the
     * backlog -1 would fail. The driver makes those two calls itself, with the backlog the
     * response carried, and hands `onBuffer` the buffer typed `EVENT_BUFFER`, restoring
     * `RECOVERY_COMPLETION` once it is queued: the rest of `onBuffer` reads the type only for
     * `hasPriority` and `requiresAnnouncement`, false for both types. Same code, same thread,
     * same order.
     */
    public Obs onBuffer(int c) {
        Chan ch = ch(c);
        Wire w = ch.wire.poll();
        if (w == null) {
            return unperformable("nothing on the wire");
        }
        if (!(ch.channel instanceof RemoteInputChannel)) {
            w.buffer.recycleBuffer();
            return unperformable("not a remote channel");
        }
        RemoteInputChannel remote = (RemoteInputChannel) ch.channel;
        if (remote.isReleased()) {
            w.buffer.recycleBuffer();
            return done();
        }
        Buffer target;
        if (w.buffer.isBuffer()) {
            target = remote.requestBuffer();
            if (target == null) {
                w.buffer.recycleBuffer();
                return error("no-buffer-for-data");
            }
            Items.copyInto(w.buffer, target);
        } else {
            target = Items.heapCopy(w.buffer);
        }
        w.buffer.recycleBuffer();
        Buffer.DataType type = target.getDataType();
        boolean blocking = type.isBlockingUpstream();
        try {
            if (blocking && w.seq == (int) EXPECTED_SEQUENCE_NUMBER.get(remote)) {
                ON_BLOCKING_UPSTREAM.invoke(remote);
                if (w.backlog != 0) {
                    target.recycleBuffer();
                    return error("illegal-state");
                }
                target.setDataType(Buffer.DataType.EVENT_BUFFER);
            }
            remote.onBuffer(target, w.seq, -1, 0);
        } catch (Exception e) {
            return failed(e);
        } finally {
            target.setDataType(type);
        }
        if (!remote.isReleased()) {
            ch.pendingBacklog = w.backlog;
        }
        return done();
    }

    /**
     * `onSenderBacklog(backlog)`, which in 2.3.0 is the one statement
     * `notifyBufferAvailable(bufferManager.requestFloatingBuffers(backlog + initialCredit))`: the
     * driver makes its two calls in the model's two steps, `requestFloatingBuffers` here (the
     * Netty client then stops before announcing, when there is something to announce) and
     * `notifyBufferAvailable(n)` in the `notifyBufferAvailable` step.
     */
    public Obs onSenderBacklog(int c) {
        Chan ch = ch(c);
        Integer backlog = ch.pendingBacklog;
        if (backlog == null || !(ch.channel instanceof RemoteInputChannel)) {
            return unperformable("the Netty client is not between onBuffer and onSenderBacklog on channel " + c);
        }
        ch.pendingBacklog = null;
        RemoteInputChannel remote = (RemoteInputChannel) ch.channel;
        int n = remote.getBufferManager().requestFloatingBuffers(backlog + remote.getInitialCredit());
        if (n > 0) {
            ch.announce = n;
        }
        return done();
    }

    /** The client's `AddCredit(getAndResetUnannouncedCredit())` write, unless nothing or released. */
    public Obs sendAddCredit(int c) {
        Chan ch = ch(c);
        if (!(ch.channel instanceof RemoteInputChannel)) {
            return unperformable("not a remote channel");
        }
        RemoteInputChannel remote = (RemoteInputChannel) ch.channel;
        ch.creditWrites = client.creditNotifications[c];
        int credit = remote.getAndResetUnannouncedCredit();
        boolean sent = credit > 0 && !remote.isReleased();
        if (sent) {
            ch.addCreditInFlight.add(credit);
        }
        return new Obs("credit-sent", "credit", sent ? credit : null);
    }

    /**
     * The client's write of the `ResumeConsumptionMessage` the channel's `resumeConsumption`
     * queued (`CreditBasedPartitionRequestClientHandler.writeAndFlushNextMessageIfPossible`:
     * written unless the channel is released by then, 2.3.0 line 484), behind the `AddCredit`s
     * written before it.
     */
    public Obs sendResumeConsumption(int c) {
        Chan ch = ch(c);
        if (!(ch.channel instanceof RemoteInputChannel)) {
            return unperformable("not a remote channel");
        }
        if (client.resumeNotifications[c] <= ch.resumeWrites) {
            return unperformable("no ResumeConsumption queued on the Netty client for channel " + c);
        }
        ch.resumeWrites = client.resumeNotifications[c];
        if (!ch.channel.isReleased()) {
            ch.addCreditInFlight.add(RESUME_CONSUMPTION);
        }
        return done();
    }

    /**
     * The checkpoint coordinator's `abortPendingCheckpoint(cp)`: it lets the coordinator trigger
     * the next checkpoint (the model's upstreams may then emit its barrier); nothing of the
     * task's channels changes, and the task is not told here.
     */
    public Obs abortPendingCheckpoint(int cp) {
        return done();
    }

    /** The announcement a thread stopped before: `notifyBufferAvailable(n)` of the channel. */
    public Obs notifyBufferAvailable(String thread, int c) {
        if (thread.equals("netty-client")) {
            Chan ch = ch(c);
            if (ch.announce == null || !(ch.channel instanceof RemoteInputChannel)) {
                return unperformable("the Netty client is not about to announce credit on channel " + c);
            }
            int n = ch.announce;
            ch.announce = null;
            try {
                ((RemoteInputChannel) ch.channel).notifyBufferAvailable(n);
                return done();
            } catch (Exception e) {
                return failed(e);
            }
        }
        Workers.Worker w = workers.of(thread);
        if (w == null) {
            return unperformable("no " + thread + " worker");
        }
        Workers.Pause p = w.paused();
        if (w.state != Workers.Outcome.PAUSED || p == null || p.buffer != null || p.channel != c) {
            return unperformable("the " + thread + " thread is not paused before announcing on channel " + c);
        }
        w.resume();
        return outcome(w);
    }

    /**
     * `recycleFloatingBuffer`: the recycler, stopped in `BufferManager.recycle` of an exclusive
     * buffer before `releasedFloatingBuffer.recycleBuffer()`, goes on: `LocalBufferPool.recycle`
     * hands the floating buffer to the first registered listener (whose channel may be another
     * one, and which then stops before announcing its credit) or keeps it.
     */
    public Obs returnFloatingBuffer(int c, String name) {
        Workers.Worker w = workers.recycler;
        Workers.Pause p = w.paused();
        if (w.state != Workers.Outcome.PAUSED || p == null || p.buffer == null || p.channel != c
                || !p.buffer.equals(name)) {
            return unperformable("the recycler is not about to return " + name + " of channel " + c + " to the pool");
        }
        w.resume();
        return outcome(w);
    }

    /**
     * The recycler of the floating buffers in a manager's queue while the recycler thread
     * recycles an exclusive buffer of that channel. `BufferManager.recycle(segment)` adds the
     * exclusive buffer and, with more buffers than required, takes a floating one out
     * (`addExclusiveBuffer`) and recycles it after leaving the `bufferQueue` lock; the model
     * makes that recycle a step of its own (`recycleFloatingBuffer`). A floating buffer's
     * recycler is the gate's `LocalBufferPool`; `recycle` points the buffers in the queue at this
     * stand-in (`Buffer.setRecycler`), which stops the recycler thread there and then calls the
     * pool's `recycle(segment)`, as the buffer would have. On any other thread, or when the
     * recycled buffer came from the operator, it forwards at once.
     */
    private final BufferRecycler returnPause = new BufferRecycler() {
        @Override
        public void recycle(MemorySegment segment) {
            Workers.Worker w = Workers.current();
            if (w != null && w == workers.recycler && returning) {
                returning = false;
                w.pauseAt(new Workers.Pause("return-floating", w.channel, 0, segmentNames.get(segment)));
            }
            gate.getBufferPool().recycle(segment);
        }
    };

    /** The recycler thread is inside the recycle of an exclusive buffer. */
    private volatile boolean returning;

    // --- recycler and canceler ---------------------------------------------------------------

    public Obs recycle(int c, String name) {
        Chan ch = ch(c);
        Buffer held = null;
        for (Buffer b : ch.held) {
            if (name.equals(segmentNames.get(b.getMemorySegment()))) {
                held = b;
                break;
            }
        }
        if (held == null) {
            return unperformable("the consumer does not hold " + name);
        }
        if (!workers.recycler.idle()) {
            return unperformable("the recycler thread is busy");
        }
        ch.held.remove(held);
        Buffer b = held;
        boolean exclusive = name.startsWith("x");
        if (exclusive && ch.channel instanceof RemoteInputChannel) {
            for (Buffer f : Projection.floating(((RemoteInputChannel) ch.channel).getBufferManager())) {
                f.setRecycler(returnPause);
            }
        }
        workers.recycler.start(c, () -> {
            returning = exclusive;
            try {
                b.recycleBuffer();
            } finally {
                returning = false;
            }
            return done();
        });
        return outcome(workers.recycler);
    }

    public Obs releaseAllResources(int c) {
        try {
            ch(c).channel.releaseAllResources();
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    public Obs closeGate() {
        try {
            gate.close();
            return done();
        } catch (Exception e) {
            return failed(e);
        }
    }

    // --- teardown ----------------------------------------------------------------------------

    /**
     * Lets paused calls finish, releases everything, recycles every buffer the driver holds and
     * destroys the pools. Returns a description of leaked segments, or null.
     */
    public String destroy() {
        for (Workers.Worker w : workers.all()) {
            for (int i = 0; i < 16 && w.state == Workers.Outcome.PAUSED; i++) {
                w.resume();
            }
        }
        try {
            gate.close();
        } catch (Exception e) {
            // released anyway
        }
        if (reserved != null) {
            reserved.recycleBuffer();
            reserved = null;
        }
        for (Workers.Worker w : workers.all()) {
            if (w.state == Workers.Outcome.BLOCKED && !w.idle()) {
                w.replace();
            }
        }
        for (Chan ch : chans) {
            for (Buffer b : ch.held) {
                b.recycleBuffer();
            }
            ch.held.clear();
            for (Wire w : ch.wire) {
                w.buffer.recycleBuffer();
            }
            ch.wire.clear();
            try {
                if (ch.reader != null) {
                    ch.reader.release();
                }
            } catch (IOException e) {
                // ignore
            }
            ch.partition.release();
        }
        partitions.shutdown();
        int available = global.getNumberOfAvailableMemorySegments();
        String leak = available == totalSegments
                ? null
                : "leak: " + (totalSegments - available) + " of " + totalSegments
                        + " network segments not returned to the NetworkBufferPool";
        global.destroy();
        producerPool.destroy();
        return leak;
    }

    // --- reads for the projection -------------------------------------------------------------

    Collection<Chan> channels() {
        return List.of(chans);
    }
}
