package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.event.AbstractEvent;
import org.apache.flink.runtime.execution.CancelTaskException;
import org.apache.flink.runtime.io.network.ConnectionID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.PartitionRequestClient;
import org.apache.flink.runtime.io.network.api.CheckpointBarrier;
import org.apache.flink.runtime.io.network.api.serialization.EventSerializer;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.BufferPool;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.io.network.partition.ResultSubpartitionIndexSet;
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.throughput.ThroughputCalculator;
import org.apache.flink.util.clock.SystemClock;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The mechanism behind a possible hang of the FLINK-38544 spill drainer, shown on Flink 2.3.0's
 * {@link BufferManager} and {@link RemoteInputChannel} without exclusive buffers.
 *
 * <p>In the series, {@code RemoteInputChannel.requestRecoveryBufferBlocking()} is {@code
 * upstreamReady.await(); return bufferManager.requestBufferBlocking();} on the channel's own
 * manager (apache/flink RemoteInputChannel @ b5b31713), and {@code FetchedChannelStateDrainer}
 * calls it for every buffer it fills. 2.3.0 has the same {@code requestBufferBlocking} (lines
 * 97-120: register as pool listener, {@code numRequiredBuffers = 1} at 124-127, {@code
 * bufferQueue.wait()} without timeout at 117) and the same rejecting {@code
 * notifyBufferAvailable(Buffer)} (338-340: no {@code notifyAll}). 2.3.0 has no production caller of
 * {@code requestBufferBlocking} on a remote channel's manager; this test calls it where the series'
 * drainer would.
 *
 * <p>While the waiter sleeps, the Netty thread's {@code onBuffer} for a zero-backlog buffer sets
 * {@code numRequiredBuffers} to 0: {@code onSenderBacklog(0 + initialCredit 0)} (583, 658-659), and
 * for a blocking event also {@code releaseFloatingBuffers} (492, 244-246). The next floating buffer
 * recycled into the gate's pool is then offered to the manager, rejected without {@code notifyAll},
 * and the manager is no longer a listener: the waiter sleeps while the pool has a free buffer.
 *
 * <p>The channel without exclusive buffers is what 2.3.0 makes with {@code
 * taskmanager.network.memory.read-buffer.required-per-gate.max} at most the number of channels
 * ({@link InputGateZeroExclusiveBuffersConfigurationTest}); 1.x's {@code buffers-per-channel} is
 * not an option of 2.x (removed in 2.0, FLINK-33750). With {@link LateFloatingCreditAndMissedWakeupFixedBufferManager} (its {@code
 * notifyAll} after a refused buffer) the waiter asks the pool again and gets the buffer.
 */
class RemoteInputChannelBlockingBufferRequestMissedWakeupTest {
    private static final int SEGMENT_SIZE = 4096;

    /** What reaches a recovering remote channel while its upstream is blocked: both with backlog 0. */
    enum ZeroBacklogBuffer {
        UNALIGNED_BARRIER, // a checkpoint during recovery: priority event
        RECOVERY_COMPLETION // EndOfOutputChannelStateEvent: blocking event
    }

    private NetworkBufferPool globalPool;
    private SingleInputGate gate;
    private RemoteInputChannel channel;
    private BufferPool gatePool;

    /** 2.3.0's channel, or the one with {@link LateFloatingCreditAndMissedWakeupFixedBufferManager}. */
    private void setUp(boolean fixed) throws Exception {
        globalPool = new NetworkBufferPool(2, SEGMENT_SIZE);
        PartitionRequestClient client = (PartitionRequestClient) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {PartitionRequestClient.class},
                (proxy, method, args) -> null);
        ConnectionManager connectionManager = (ConnectionManager) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {ConnectionManager.class},
                (proxy, method, args) -> method.getName().equals("createPartitionRequestClient") ? client
                        : method.getReturnType() == int.class ? 0 : null);
        gate = new SingleInputGate(
                "downstream", 0, new IntermediateDataSetID(), ResultPartitionType.PIPELINED_BOUNDED, 1,
                (resultId, producerPartitionId, handle) -> {},
                () -> globalPool.createBufferPool(1, 1),
                null, globalPool, SEGMENT_SIZE,
                new ThroughputCalculator(SystemClock.getInstance()), null);
        ConnectionID connectionId =
                new ConnectionID(ResourceID.generate(), InetSocketAddress.createUnresolved("upstream-tm", 1), 0);
        channel = fixed
                ? new LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel(
                        gate, 0, new ResultPartitionID(), new ResultSubpartitionIndexSet(0), connectionId,
                        connectionManager, 0, 0, 0, /* exclusive buffers */ 0, new SimpleCounter(),
                        new SimpleCounter(), ChannelStateWriter.NO_OP, new ArrayDeque<>())
                : new RemoteInputChannel(
                        gate, 0, new ResultPartitionID(), new ResultSubpartitionIndexSet(0), connectionId,
                        connectionManager, 0, 0, 0, /* exclusive buffers */ 0, new SimpleCounter(),
                        new SimpleCounter(), ChannelStateWriter.NO_OP, new ArrayDeque<>());
        gate.setInputChannels(channel);
        gate.setup();
        gate.requestPartitions();
        gatePool = gate.getBufferPool();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (gate == null) {
            return;
        }
        gate.close();
        globalPool.destroyAllBufferPools();
        globalPool.destroy();
    }

    /** Expected to reproduce on 2.3.0's classes: passes while the missed wake-up is there. */
    @ParameterizedTest
    @EnumSource(ZeroBacklogBuffer.class)
    void blockingBufferRequestMissesWakeupAfterZeroBacklogReproduces(ZeroBacklogBuffer zeroBacklog)
            throws Exception {
        setUp(false);
        Buffer heldByTask = gatePool.requestBuffer(); // the gate's only floating buffer is in use
        assertNotNull(heldByTask);
        AtomicReference<Object> drainerResult = new AtomicReference<>();
        Thread drainer = startBlockingRequest(drainerResult);
        awaitWaiting(drainer);
        assertEquals(1, channel.getNumberOfRequiredBuffers(), "shouldContinueRequest: numRequiredBuffers = 1");
        assertTrue(channel.isWaitingForFloatingBuffers(), "registered as LocalBufferPool listener");

        // The Netty thread: a zero-backlog buffer from the blocked upstream.
        channel.onBuffer(zeroBacklogBuffer(zeroBacklog), 0, 0, 0);
        assertEquals(0, channel.getNumberOfRequiredBuffers(), "onSenderBacklog(0): numRequiredBuffers = 0");
        assertTrue(channel.isWaitingForFloatingBuffers(), "still registered");

        // The task recycles the floating buffer: offered to the manager, rejected without notifyAll.
        heldByTask.recycleBuffer();
        assertFalse(channel.isWaitingForFloatingBuffers(), "no longer a listener");
        assertEquals(1, gatePool.getNumberOfAvailableMemorySegments(), "the pool has a free buffer");
        drainer.join(1_000);
        assertEquals(Thread.State.WAITING, drainer.getState(), "the drainer still sleeps in bufferQueue.wait()");
        assertNull(drainerResult.get());

        // Only the release (task cancellation) wakes it: releaseAllBuffers' notifyAll.
        gate.close();
        drainer.join(10_000);
        assertTrue(drainerResult.get() instanceof CancelTaskException, String.valueOf(drainerResult.get()));
    }

    /**
     * The fix: the same run on {@link LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel}. The
     * refused buffer wakes the waiter, which asks the pool again and gets it.
     */
    @ParameterizedTest
    @EnumSource(ZeroBacklogBuffer.class)
    void blockingBufferRequestGetsTheBufferWithTheFixedBufferManager(ZeroBacklogBuffer zeroBacklog)
            throws Exception {
        setUp(true);
        Buffer heldByTask = gatePool.requestBuffer();
        assertNotNull(heldByTask);
        AtomicReference<Object> drainerResult = new AtomicReference<>();
        Thread drainer = startBlockingRequest(drainerResult);
        awaitWaiting(drainer);
        assertEquals(1, channel.getNumberOfRequiredBuffers());

        channel.onBuffer(zeroBacklogBuffer(zeroBacklog), 0, 0, 0);
        assertEquals(0, channel.getNumberOfRequiredBuffers(), "onSenderBacklog(0): numRequiredBuffers = 0");

        heldByTask.recycleBuffer(); // refused (0 >= 0), but the waiter is woken
        drainer.join(10_000);
        assertFalse(drainer.isAlive(), "the drainer still waits: " + drainer.getState());
        Object result = drainerResult.get();
        assertTrue(result instanceof Buffer, String.valueOf(result));
        assertEquals(0, gatePool.getNumberOfAvailableMemorySegments(), "the drainer has the pool's buffer");
        ((Buffer) result).recycleBuffer();
    }

    /** Control: without the zero-backlog buffer the recycled floating buffer wakes the drainer. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void blockingBufferRequestIsWokenByRecycledFloatingBuffer(boolean fixed) throws Exception {
        setUp(fixed);
        Buffer heldByTask = gatePool.requestBuffer();
        AtomicReference<Object> drainerResult = new AtomicReference<>();
        Thread drainer = startBlockingRequest(drainerResult);
        awaitWaiting(drainer);

        heldByTask.recycleBuffer(); // accepted (0 < 1): addFloatingBuffer + notifyAll
        drainer.join(10_000);
        assertFalse(drainer.isAlive());
        Object result = drainerResult.get();
        assertTrue(result instanceof Buffer, String.valueOf(result));
        ((Buffer) result).recycleBuffer();
    }

    private Thread startBlockingRequest(AtomicReference<Object> result) {
        Thread thread = new Thread(() -> {
            try {
                // What RemoteInputChannel.requestRecoveryBufferBlocking does after upstreamReady.
                result.set(channel.getBufferManager().requestBufferBlocking());
            } catch (Throwable t) {
                result.set(t);
            }
        }, "drainer");
        thread.start();
        return thread;
    }

    private void awaitWaiting(Thread drainer) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!(drainer.getState() == Thread.State.WAITING && channel.isWaitingForFloatingBuffers())) {
            assertTrue(System.nanoTime() < deadline, "the drainer did not start waiting");
            Thread.sleep(1);
        }
    }

    private static Buffer zeroBacklogBuffer(ZeroBacklogBuffer kind) throws Exception {
        AbstractEvent event = kind == ZeroBacklogBuffer.UNALIGNED_BARRIER
                ? new CheckpointBarrier(1L, 1L, CheckpointOptions.unaligned(
                        CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault()))
                : EndOfOutputChannelStateEvent.INSTANCE;
        Buffer buffer = EventSerializer.toBuffer(event, kind == ZeroBacklogBuffer.UNALIGNED_BARRIER);
        assertEquals(kind == ZeroBacklogBuffer.UNALIGNED_BARRIER ? Buffer.DataType.PRIORITIZED_EVENT_BUFFER
                : Buffer.DataType.RECOVERY_COMPLETION, buffer.getDataType());
        return buffer;
    }
}
