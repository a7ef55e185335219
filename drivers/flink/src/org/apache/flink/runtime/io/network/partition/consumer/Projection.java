package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferConsumer;
import org.apache.flink.runtime.io.network.buffer.BufferConsumerWithPartialRecordLength;
import org.apache.flink.runtime.io.network.buffer.LocalBufferPool;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.partition.PipelinedSubpartition;
import org.apache.flink.runtime.io.network.partition.PrioritizedDeque;
import org.apache.flink.runtime.io.network.partition.ResultSubpartition;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Field;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The abstract snapshot of a {@link FlinkSystem}, in the shape of the conformance suite's
 * `Snapshot` (conformance/src/observation.rs), read from Flink's own fields: getters where
 * there are some, package-private members from this package, private fields by reflection
 * (handles resolved once). Fields that 2.3.0 does not have are either facts about 2.3.0 (no
 * physical channel is ever in recovery, so no stash and `inRecovery` false; credit notification
 * is always on) or listed as unobserved in `hello` (upstreamReady, the recovery sequence
 * number of a physical channel).
 */
final class Projection {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    /** No 2.3.0 input channel has a recovery mode (`inRecovery`). */
    private static final boolean IN_RECOVERY = false;

    private static final Field BUFFER_QUEUE;
    private static final Field EXCLUSIVE;
    private static final Field FLOATING;
    private static final Field RECEIVED;
    private static final Field REMOTE_PERSISTER;
    private static final Field LOCAL_PERSISTER;
    private static final Field LOCAL_RELEASED;
    private static final Field PENDING_PRIORITY;
    private static final Field TO_BE_CONSUMED;
    private static final Field STATUS;
    private static final Field LAST_SEEN;
    private static final Field SEQUENCE_BUFFER;
    private static final Field SEQUENCE_NUMBER;
    private static final Field RECOVERED_BUFFERS;
    private static final Field RECOVERED_RELEASED;
    private static final Field RECOVERED_SEQ;
    private static final Field RECOVERED_BM;
    private static final Field SUB_BUFFERS;
    private static final Field SUB_BLOCKED;
    private static final Field UNRESTORED;
    private static final Field LOCAL_POOL_SEGMENTS;
    private static final Field GLOBAL_SEGMENTS;

    static {
        try {
            BUFFER_QUEUE = field(BufferManager.class, "bufferQueue");
            Class<?> q = BUFFER_QUEUE.getType();
            EXCLUSIVE = field(q, "exclusiveBuffers");
            FLOATING = field(q, "floatingBuffers");
            RECEIVED = field(RemoteInputChannel.class, "receivedBuffers");
            REMOTE_PERSISTER = field(RemoteInputChannel.class, "channelStatePersister");
            LOCAL_PERSISTER = field(LocalInputChannel.class, "channelStatePersister");
            LOCAL_RELEASED = field(LocalInputChannel.class, "isReleased");
            PENDING_PRIORITY = field(LocalInputChannel.class, "hasPendingPriorityEvent");
            TO_BE_CONSUMED = field(LocalInputChannel.class, "toBeConsumedBuffers");
            STATUS = field(ChannelStatePersister.class, "checkpointStatus");
            LAST_SEEN = field(ChannelStatePersister.class, "lastSeenBarrier");
            Class<?> sb = Class.forName(RemoteInputChannel.class.getName() + "$SequenceBuffer");
            SEQUENCE_BUFFER = field(sb, "buffer");
            SEQUENCE_NUMBER = field(sb, "sequenceNumber");
            RECOVERED_BUFFERS = field(RecoveredInputChannel.class, "receivedBuffers");
            RECOVERED_RELEASED = field(RecoveredInputChannel.class, "isReleased");
            RECOVERED_SEQ = field(RecoveredInputChannel.class, "sequenceNumber");
            RECOVERED_BM = field(RecoveredInputChannel.class, "bufferManager");
            SUB_BUFFERS = field(PipelinedSubpartition.class, "buffers");
            SUB_BLOCKED = field(PipelinedSubpartition.class, "isBlocked");
            UNRESTORED = field(
                    Class.forName("org.apache.flink.streaming.runtime.io.checkpointing.UpstreamRecoveryTrackerImpl"),
                    "numUnrestoredChannels");
            LOCAL_POOL_SEGMENTS = field(LocalBufferPool.class, "availableMemorySegments");
            GLOBAL_SEGMENTS = field(NetworkBufferPool.class, "availableMemorySegments");
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Field field(Class<?> c, String name) throws NoSuchFieldException {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    private static Object get(Field f, Object o) {
        try {
            return f.get(o);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private Projection() {}

    @SuppressWarnings("unchecked")
    static Collection<Buffer> exclusive(BufferManager bm) {
        Object q = get(BUFFER_QUEUE, bm);
        synchronized (q) {
            return new ArrayList<>((ArrayDeque<Buffer>) get(EXCLUSIVE, q));
        }
    }

    /** The free segments of a `LocalBufferPool`, head first. */
    @SuppressWarnings("unchecked")
    static List<MemorySegment> poolSegments(LocalBufferPool pool) {
        ArrayDeque<MemorySegment> segments = (ArrayDeque<MemorySegment>) get(LOCAL_POOL_SEGMENTS, pool);
        synchronized (segments) {
            return new ArrayList<>(segments);
        }
    }

    @SuppressWarnings("unchecked")
    static Collection<Buffer> floating(BufferManager bm) {
        Object q = get(BUFFER_QUEUE, bm);
        synchronized (q) {
            return new ArrayList<>((ArrayDeque<Buffer>) get(FLOATING, q));
        }
    }

    static ObjectNode snapshot(FlinkSystem sys) {
        ObjectNode snap = JSON.objectNode();
        ArrayNode channels = snap.putArray("channels");
        for (FlinkSystem.Chan ch : sys.channels()) {
            channels.add(channel(sys, ch));
        }
        ObjectNode gate = snap.putObject("gate");
        PrioritizedDeque<InputChannel> queue = sys.gate.getInputChannelsWithData();
        ArrayNode q = gate.putArray("queue");
        synchronized (queue) {
            for (InputChannel c : queue) {
                q.add(c.getChannelIndex());
            }
            gate.put("priority", queue.getNumPriorityElements());
        }
        gate.put("state_consumed", sys.gate.getStateConsumedFuture().isDone());
        // The task's UpstreamRecoveryTrackerImpl: channels whose EndOfOutputChannelStateEvent
        // it has not handled.
        gate.put("unrestored_channels", (int) get(UNRESTORED, sys.upstreamRecovery));
        snap.set("task", pending(null));
        ObjectNode client = pending(null);
        for (FlinkSystem.Chan ch : sys.channels()) {
            if (ch.pendingBacklog != null) {
                client = JSON.objectNode().put("at", "sender-backlog").put("channel", ch.index);
            } else if (ch.announce != null) {
                client = pending(new Workers.Pause("announce", ch.index, ch.announce));
            }
        }
        snap.set("netty_client", client);
        Workers.Pause recycler = sys.workers.recycler.state == Workers.Outcome.PAUSED
                ? sys.workers.recycler.paused()
                : null;
        snap.set("recycler", pending(recycler));
        return snap;
    }

    private static ObjectNode pending(Workers.Pause p) {
        ObjectNode o = JSON.objectNode();
        if (p == null) {
            return o.put("at", "idle");
        }
        if (p.buffer != null) {
            return o.put("at", "return-floating").put("channel", p.channel).put("buffer", p.buffer);
        }
        return o.put("at", "announce").put("channel", p.channel).put("n", p.n);
    }

    private static ObjectNode channel(FlinkSystem sys, FlinkSystem.Chan ch) {
        ObjectNode v = JSON.objectNode();
        int c = ch.index;
        InputChannel channel = ch.channel;
        v.put("kind", ch.cfg.kind);
        // 2.3.0 has no physical channel in recovery; flag off, the recovered channel stands for
        // one created without recovery, as the model's does.
        v.put("in_recovery", IN_RECOVERY);
        boolean released;
        ChannelStatePersister persister = null;
        ArrayNode queue = JSON.arrayNode();
        int priority = 0;
        boolean stateConsumed = true;
        int recoverySeq = Integer.MIN_VALUE;
        boolean pendingPriority = false;
        if (channel instanceof RecoveredInputChannel) {
            RecoveredInputChannel r = (RecoveredInputChannel) channel;
            released = (boolean) get(RECOVERED_RELEASED, r);
            stateConsumed = r.getStateConsumedFuture().isDone();
            recoverySeq = (int) get(RECOVERED_SEQ, r);
            @SuppressWarnings("unchecked")
            ArrayDeque<Buffer> received = (ArrayDeque<Buffer>) get(RECOVERED_BUFFERS, r);
            synchronized (received) {
                for (Buffer b : received) {
                    queue.add(element(sys, c, b, null));
                }
            }
        } else if (channel instanceof RemoteInputChannel) {
            RemoteInputChannel r = (RemoteInputChannel) channel;
            released = r.isReleased();
            persister = (ChannelStatePersister) get(REMOTE_PERSISTER, r);
            @SuppressWarnings("unchecked")
            PrioritizedDeque<Object> received = (PrioritizedDeque<Object>) get(RECEIVED, r);
            synchronized (received) {
                for (Object sb : received) {
                    queue.add(element(sys, c, (Buffer) get(SEQUENCE_BUFFER, sb), (Integer) get(SEQUENCE_NUMBER, sb)));
                }
                priority = received.getNumPriorityElements();
            }
        } else {
            LocalInputChannel l = (LocalInputChannel) channel;
            released = (boolean) get(LOCAL_RELEASED, l);
            persister = (ChannelStatePersister) get(LOCAL_PERSISTER, l);
            // Shown only in recovery and unreleased, where it decides what getNextBuffer returns
            // (the suite's projection rule); a 2.3.0 channel is never in recovery.
            pendingPriority = (boolean) get(PENDING_PRIORITY, l) && IN_RECOVERY && !released;
            // Flag on: the buffers a RecoveredInputChannel migrated (numbered, but the model's
            // local queue carries no numbers). Task thread only; read while it is idle.
            @SuppressWarnings("unchecked")
            java.util.Deque<ResultSubpartition.BufferAndBacklog> toBeConsumed =
                    (java.util.Deque<ResultSubpartition.BufferAndBacklog>) get(TO_BE_CONSUMED, l);
            for (ResultSubpartition.BufferAndBacklog b : toBeConsumed) {
                queue.add(element(sys, c, b.buffer(), null));
            }
        }
        v.put("released", released);
        if (channel.hasError()) {
            v.put("error", true);
        }
        if (ch.subpartition.isReleased()) {
            v.put("partition_released", true);
        }
        // upstream_ready: no such latch in 2.3.0 (unobserved); a placeholder the suite removes.
        v.put("upstream_ready", false);
        v.put("state_consumed", stateConsumed);
        v.put("recovery_seq", recoverySeq);
        v.set("queue", queue);
        v.put("priority_len", priority);
        v.putArray("stash");
        v.put("pending_priority", pendingPriority);
        if (persister != null) {
            Object status = get(STATUS, persister);
            v.put("persist_status", persistStatus(status.toString()));
            v.put("last_seen_barrier", (long) get(LAST_SEEN, persister));
        } else {
            v.put("persist_status", "completed");
            v.put("last_seen_barrier", -1L);
        }
        ObjectNode persisted = v.putObject("persisted");
        for (Map.Entry<Long, Map<Integer, List<String>>> e : sys.writer.persisted.entrySet()) {
            List<String> names = e.getValue().get(c);
            if (names != null && !names.isEmpty()) {
                ArrayNode a = persisted.putArray(Long.toString(e.getKey()));
                names.forEach(a::add);
            }
        }
        ArrayNode delivered = v.putArray("delivered");
        ch.delivered.forEach(delivered::add);
        v.set("subpartition", subpartition(ch));
        v.put("subpartition_blocked", subpartitionBlocked(ch));
        if (ch.remote) {
            v.set("credit", credit(sys, ch, released));
        }
        return v;
    }

    private static String persistStatus(String status) {
        switch (status) {
            case "BARRIER_PENDING":
                return "barrier-pending";
            case "BARRIER_RECEIVED":
                return "barrier-received";
            default:
                return "completed";
        }
    }

    private static ObjectNode element(FlinkSystem sys, int c, Buffer b, Integer seq) {
        ObjectNode e = JSON.objectNode();
        e.put("item", Items.name(c, b));
        if (seq != null) {
            e.put("seq", seq);
        }
        String name = name(sys, c, b.getMemorySegment());
        if (name != null) {
            e.put("buffer", name);
        }
        return e;
    }

    private static String name(FlinkSystem sys, int c, MemorySegment s) {
        // Exclusive segments are named per channel (x0 of each); the gate pool's floating ones
        // gate-wide (f0 is the same buffer whichever channel it is lent to).
        Integer owner = sys.segmentChannels.get(s);
        return owner != null && (owner == c || owner == FlinkSystem.SHARED) ? sys.segmentNames.get(s) : null;
    }

    private static ArrayNode subpartition(FlinkSystem.Chan ch) {
        ArrayNode a = JSON.arrayNode();
        @SuppressWarnings("unchecked")
        PrioritizedDeque<BufferConsumerWithPartialRecordLength> buffers =
                (PrioritizedDeque<BufferConsumerWithPartialRecordLength>) get(SUB_BUFFERS, ch.subpartition);
        synchronized (buffers) {
            for (BufferConsumerWithPartialRecordLength b : buffers) {
                BufferConsumer copy = b.getBufferConsumer().copy();
                Buffer built = copy.build();
                a.add(Items.name(ch.index, built));
                built.recycleBuffer();
                copy.close();
            }
        }
        return a;
    }

    /** `PipelinedSubpartition.isBlocked`, read under the subpartition's lock (`buffers`). */
    private static boolean subpartitionBlocked(FlinkSystem.Chan ch) {
        Object buffers = get(SUB_BUFFERS, ch.subpartition);
        synchronized (buffers) {
            return (boolean) get(SUB_BLOCKED, ch.subpartition);
        }
    }

    @SuppressWarnings("unchecked")
    private static ObjectNode credit(FlinkSystem sys, FlinkSystem.Chan ch, boolean released) {
        ObjectNode cr = JSON.objectNode();
        int c = ch.index;
        ArrayNode exclusive = JSON.arrayNode();
        ArrayNode floating = JSON.arrayNode();
        if (ch.channel instanceof RemoteInputChannel) {
            RemoteInputChannel r = (RemoteInputChannel) ch.channel;
            BufferManager bm = r.getBufferManager();
            // 2.3.0 announces credit whenever it has some: there is no notifyAvailable gate.
            cr.put("notify_available", true);
            cr.put("waiting_for_floating", bm.unsynchronizedIsWaitingForFloatingBuffers());
            cr.put("required", bm.unsynchronizedGetNumberOfRequiredBuffers());
            cr.put("unannounced", r.getUnannouncedCredit());
            for (Buffer b : exclusive(bm)) {
                addName(exclusive, sys, c, b.getMemorySegment());
            }
            for (Buffer b : floating(bm)) {
                addName(floating, sys, c, b.getMemorySegment());
            }
        } else {
            // Not converted yet: stands for the physical channel created at conversion, with
            // its exclusive buffers assigned (the model's channel has them from the start).
            BufferManager bm = (BufferManager) get(RECOVERED_BM, ch.channel);
            cr.put("notify_available", true);
            cr.put("waiting_for_floating", bm.unsynchronizedIsWaitingForFloatingBuffers());
            cr.put("required", bm.unsynchronizedGetNumberOfRequiredBuffers());
            cr.put("unannounced", 0);
            for (int i = 0; i < ch.cfg.exclusive; i++) {
                exclusive.add("x" + i);
            }
        }
        long notifications = sys.client.creditNotifications[c];
        cr.put("add_credit_queued", notifications > ch.creditWrites && !released);
        // resumeConsumption queued a ResumeConsumption on the client stand-in, not yet written.
        cr.put("resume_queued", sys.client.resumeNotifications[c] > ch.resumeWrites);
        ArrayNode inFlight = cr.putArray("add_credit_in_flight");
        ch.addCreditInFlight.forEach(inFlight::add);
        if (ch.reader != null) {
            cr.put("reader_credit", ch.reader.credit());
        } else {
            cr.putNull("reader_credit");
        }
        ArrayNode wire = cr.putArray("wire");
        for (FlinkSystem.Wire w : ch.wire) {
            Object[] f = FlinkSystem.wireElement(c, w);
            wire.addObject().put("item", (String) f[1]).put("seq", (int) f[3]).put("backlog", (int) f[5]);
        }
        ObjectNode buffers = cr.putObject("buffers");
        buffers.set("exclusive", exclusive);
        buffers.set("floating", floating);
        ArrayNode pool = buffers.putArray("pool");
        LocalBufferPool gatePool = (LocalBufferPool) sys.gate.getBufferPool();
        if (gatePool != null) {
            for (MemorySegment s : poolSegments(gatePool)) {
                addName(pool, sys, c, s);
            }
        }
        ArrayNode global = buffers.putArray("global");
        ArrayDeque<MemorySegment> segments = (ArrayDeque<MemorySegment>) get(GLOBAL_SEGMENTS, sys.global);
        synchronized (segments) {
            for (MemorySegment s : segments) {
                addName(global, sys, c, s);
            }
        }
        ArrayNode held = buffers.putArray("held");
        for (Buffer b : ch.held) {
            addName(held, sys, c, b.getMemorySegment());
        }
        return cr;
    }

    private static void addName(ArrayNode a, FlinkSystem sys, int c, MemorySegment s) {
        String name = name(sys, c, s);
        if (name != null) {
            a.add(name);
        }
    }
}
