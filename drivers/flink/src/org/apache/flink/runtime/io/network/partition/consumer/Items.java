package org.apache.flink.runtime.io.network.partition.consumer;

import conformance.flink.ModelEvent;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.event.AbstractEvent;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.api.serialization.EventSerializer;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferBuilder;
import org.apache.flink.runtime.io.network.buffer.BufferConsumer;
import org.apache.flink.runtime.io.network.buffer.FreeingBufferRecycler;
import org.apache.flink.runtime.io.network.buffer.NetworkBuffer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The model's names of what a buffer carries. The driver writes the element's name into the
 * buffer it creates (`<channel>/<name>` as the bytes of a data buffer, or the tag of a
 * {@link ModelEvent}), and reads it back from whatever buffer Flink hands out: the names are
 * attached to the contents, not to Java objects, so a copy (Netty's decode) keeps its name.
 * Barriers, Flink's own sentinel and `EndOfOutputChannelStateEvent` are named by their type.
 */
final class Items {
    private Items() {}

    /**
     * Where the model puts `end-of-output-channel-state` in a channel's upstream: first, and only
     * there (its configuration check). Flink's `EndOfOutputChannelStateEvent` is a singleton with
     * nothing to carry a name, so its name is its position: `eoo0`.
     */
    static final int END_OF_OUTPUT_INDEX = 0;

    /** The model's name of `EndOfOutputChannelStateEvent`. */
    static final String END_OF_OUTPUT_NAME = "eoo" + END_OF_OUTPUT_INDEX;

    static String tag(int channel, String name) {
        return channel + "/" + name;
    }

    /** A finished buffer consumer holding data buffer `name` of `channel` (producer side). */
    static BufferConsumer dataConsumer(int channel, String name) {
        byte[] bytes = tag(channel, name).getBytes(StandardCharsets.UTF_8);
        MemorySegment segment = MemorySegmentFactory.allocateUnpooledSegment(bytes.length);
        BufferBuilder builder = new BufferBuilder(segment, FreeingBufferRecycler.INSTANCE);
        builder.appendAndCommit(ByteBuffer.wrap(bytes));
        builder.finish();
        BufferConsumer consumer = builder.createBufferConsumerFromBeginning();
        builder.close();
        return consumer;
    }

    /** A heap data buffer holding `name` of `channel` (the recovered-state reader's). */
    static Buffer heapData(int channel, String name) {
        byte[] bytes = tag(channel, name).getBytes(StandardCharsets.UTF_8);
        MemorySegment segment = MemorySegmentFactory.wrap(bytes);
        return new NetworkBuffer(segment, FreeingBufferRecycler.INSTANCE, Buffer.DataType.DATA_BUFFER, bytes.length);
    }

    /** A copy of `source` in a fresh heap buffer of the same type (what Netty decodes an event into). */
    static Buffer heapCopy(Buffer source) {
        ByteBuffer readable = source.getNioBufferReadable();
        byte[] bytes = new byte[readable.remaining()];
        readable.get(bytes);
        MemorySegment segment = MemorySegmentFactory.wrap(bytes);
        return new NetworkBuffer(segment, FreeingBufferRecycler.INSTANCE, source.getDataType(), bytes.length);
    }

    /** Copies the readable bytes of `source` into `target` (what Netty decodes data into). */
    static void copyInto(Buffer source, Buffer target) {
        ByteBuffer readable = source.getNioBufferReadable();
        int n = readable.remaining();
        target.getMemorySegment().put(target.getMemorySegmentOffset(), readable, n);
        target.setSize(n);
        target.setDataType(source.getDataType());
    }

    /** The model's name of what `buffer` carries, as channel `channel` should see it. */
    static String name(int channel, Buffer buffer) {
        try {
            if (buffer.isBuffer()) {
                ByteBuffer readable = buffer.getNioBufferReadable();
                byte[] bytes = new byte[readable.remaining()];
                readable.get(bytes);
                return fromTag(channel, new String(bytes, StandardCharsets.UTF_8));
            }
            AbstractEvent event =
                    EventSerializer.fromSerializedEvent(buffer.getNioBufferReadable(), Items.class.getClassLoader());
            return eventName(channel, event);
        } catch (Exception e) {
            return "?undecodable " + buffer.getDataType() + ": " + e;
        }
    }

    static String eventName(int channel, AbstractEvent event) {
        if (event instanceof ModelEvent) {
            return fromTag(channel, ((ModelEvent) event).tag());
        }
        if (event instanceof CheckpointBarrier) {
            return "barrier" + ((CheckpointBarrier) event).getId();
        }
        if (event instanceof EndOfOutputChannelStateEvent) {
            // The upstream's RECOVERY_COMPLETION, element 0 of every channel's upstream.
            return END_OF_OUTPUT_NAME;
        }
        if (event instanceof EndOfInputChannelStateEvent) {
            // The flag-off path's sentinel of the recovered stream; the model calls it EOR.
            return "EOR";
        }
        return "?" + event.getClass().getSimpleName();
    }

    private static String fromTag(int channel, String tag) {
        String prefix = channel + "/";
        return tag.startsWith(prefix) ? tag.substring(prefix.length()) : "?" + tag;
    }

    /** The observation's name of a `Buffer.DataType`. */
    static String dataType(Buffer.DataType type) {
        if (type == null || type == Buffer.DataType.NONE) {
            return "none";
        }
        if (type.isBuffer()) {
            return "data-buffer";
        }
        return type.hasPriority() ? "priority-event-buffer" : "event-buffer";
    }
}
