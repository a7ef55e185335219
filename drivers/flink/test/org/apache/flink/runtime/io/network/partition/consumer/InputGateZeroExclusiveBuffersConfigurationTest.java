package org.apache.flink.runtime.io.network.partition.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.NettyShuffleEnvironmentOptions;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.deployment.InputGateDeploymentDescriptor;
import org.apache.flink.runtime.deployment.TaskDeploymentDescriptorFactory.ShuffleDescriptorAndIndex;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.io.network.ConnectionManager;
import org.apache.flink.runtime.io.network.PartitionRequestClient;
import org.apache.flink.runtime.io.network.TaskEventDispatcher;
import org.apache.flink.runtime.io.network.buffer.NetworkBufferPool;
import org.apache.flink.runtime.io.network.metrics.InputChannelMetrics;
import org.apache.flink.runtime.io.network.partition.ResultPartitionID;
import org.apache.flink.runtime.io.network.partition.ResultPartitionManager;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.shuffle.NettyShuffleDescriptor;
import org.apache.flink.runtime.shuffle.ShuffleDescriptor;
import org.apache.flink.runtime.shuffle.ShuffleIOOwnerContext;
import org.apache.flink.runtime.taskmanager.NettyShuffleEnvironmentConfiguration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How a remote input channel of Flink 2.3.0 gets 0 exclusive buffers, the findings'
 * precondition, in the only form 2.x has (1.x set it with {@code buffers-per-channel: 0}).
 *
 * <p>Flink 2.0 removed {@code taskmanager.network.memory.buffers-per-channel} and {@code
 * floating-buffers-per-gate} (FLINK-33750): {@code NettyShuffleEnvironmentConfiguration
 * .fromConfiguration} (2.3.0 lines 325-326) fixes them at 2 and 8. What is left is {@code
 * taskmanager.network.memory.read-buffer.required-per-gate.max} ({@link
 * NettyShuffleEnvironmentOptions#NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE}, read at lines
 * 328-329, at least 1 at 365-370). {@code InputGateSpecUtils.createGateBuffersSpec} (lines 43-74)
 * takes {@code requiredBuffersPerGate = min(max, numChannels * 2 + 1)} (54-55, 117) and {@code
 * getExclusiveBuffersPerChannel} (108-110) returns {@code min(2, (requiredBuffersPerGate - 1) /
 * numChannels)}: 0 for any number of channels when the option is 1, and whenever it is at most
 * the number of channels. {@code SingleInputGateFactory.createInputChannelsAndTieredStorageService}
 * (line 254) passes that value to every channel ({@code RemoteRecoveredInputChannel}, line 362),
 * which {@code RemoteRecoveredInputChannel.toInputChannelInternal} (lines 73-89) turns into a
 * {@code RemoteInputChannel} with {@code initialCredit} 0.
 *
 * <p>The test builds the gate with Flink's own {@link SingleInputGateFactory} from a {@link
 * NettyShuffleEnvironmentConfiguration} made by {@code fromConfiguration}, lets the task's
 * recovery of a job without channel state run (no recovered buffer, the end-of-state event
 * only), converts the channels as {@code requestPartitions} does, and reads each channel's
 * initial credit and exclusive buffers.
 */
class InputGateZeroExclusiveBuffersConfigurationTest {
    private static final int CHANNELS = 3;

    private NetworkBufferPool networkBufferPool;
    private SingleInputGate gate;

    @AfterEach
    void tearDown() throws Exception {
        if (gate != null) {
            gate.close();
        }
        if (networkBufferPool != null) {
            networkBufferPool.destroyAllBufferPools();
            networkBufferPool.destroy();
        }
    }

    /** The option set to 1: every remote channel of the gate starts without exclusive buffers. */
    @Test
    void requiredPerGateMaxOfOneGivesRemoteChannelsNoExclusiveBuffers() throws Exception {
        Configuration configuration = new Configuration();
        configuration.set(NettyShuffleEnvironmentOptions.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE, 1);
        String key = NettyShuffleEnvironmentOptions.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE.key();
        System.out.println("InputGateZeroExclusiveBuffersConfigurationTest: " + key + ": 1, "
                + CHANNELS + " remote channels");
        assertEquals("taskmanager.network.memory.read-buffer.required-per-gate.max", key);

        GateBuffersSpec spec = createGate(configuration);
        assertEquals(0, spec.getEffectiveExclusiveBuffersPerChannel(), "min(2, (1 - 1) / 3)");
        assertEquals(1, spec.getRequiredFloatingBuffers());
        assertEquals(CHANNELS * 2 + 8, spec.getTotalFloatingBuffers());
        for (RemoteInputChannel channel : convertedRemoteChannels()) {
            assertEquals(0, channel.getInitialCredit(), "initial credit of " + channel);
            assertEquals(0, channel.getBufferManager().unsynchronizedGetAvailableExclusiveBuffers());
            assertEquals(0, channel.getNumberOfAvailableBuffers(), "no buffer until a backlog is announced");
        }
        assertEquals(1, gate.getBufferPool().getNumberOfRequiredMemorySegments());
        assertEquals(CHANNELS * 2 + 8, gate.getBufferPool().getMaxNumberOfMemorySegments());
    }

    /** The option set to the number of channels: still (3 - 1) / 3 = 0 exclusive buffers. */
    @Test
    void requiredPerGateMaxUpToTheChannelCountGivesNoExclusiveBuffers() throws Exception {
        Configuration configuration = new Configuration();
        configuration.set(NettyShuffleEnvironmentOptions.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE, CHANNELS);

        GateBuffersSpec spec = createGate(configuration);
        assertEquals(0, spec.getEffectiveExclusiveBuffersPerChannel(), "min(2, (3 - 1) / 3)");
        for (RemoteInputChannel channel : convertedRemoteChannels()) {
            assertEquals(0, channel.getInitialCredit());
            assertEquals(0, channel.getBufferManager().unsynchronizedGetAvailableExclusiveBuffers());
        }
    }

    /** Control: the default (the option unset, 2.3.0's stream default Integer.MAX_VALUE) gives 2. */
    @Test
    void defaultConfigurationGivesTwoExclusiveBuffersPerRemoteChannel() throws Exception {
        Configuration configuration = new Configuration();
        assertFalse(configuration.getOptional(NettyShuffleEnvironmentOptions.NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE)
                .isPresent());

        GateBuffersSpec spec = createGate(configuration);
        assertEquals(2, spec.getEffectiveExclusiveBuffersPerChannel());
        for (RemoteInputChannel channel : convertedRemoteChannels()) {
            assertEquals(2, channel.getInitialCredit(), "initial credit of " + channel);
            assertEquals(2, channel.getBufferManager().unsynchronizedGetAvailableExclusiveBuffers());
            assertEquals(2, channel.getNumberOfAvailableBuffers());
        }
    }

    /**
     * Builds the gate of a task consuming {@link #CHANNELS} pipelined partitions produced on another
     * task manager, with Flink's factory and the shuffle configuration {@code fromConfiguration}
     * derives. Returns the spec the factory computed, from the same inputs.
     */
    private GateBuffersSpec createGate(Configuration configuration) throws Exception {
        NettyShuffleEnvironmentConfiguration shuffle = NettyShuffleEnvironmentConfiguration.fromConfiguration(
                configuration, MemorySize.parse("4m"), false, InetAddress.getLoopbackAddress());
        assertEquals(2, shuffle.networkBuffersPerChannel(), "fixed in 2.3.0 (fromConfiguration line 325)");
        assertEquals(8, shuffle.floatingNetworkBuffersPerGate(), "fixed in 2.3.0 (fromConfiguration line 326)");
        networkBufferPool = new NetworkBufferPool(shuffle.numNetworkBuffers(), shuffle.networkBufferSize());

        PartitionRequestClient client = (PartitionRequestClient) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {PartitionRequestClient.class},
                (proxy, method, args) -> null);
        ConnectionManager connectionManager = (ConnectionManager) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {ConnectionManager.class},
                (proxy, method, args) -> method.getName().equals("createPartitionRequestClient") ? client
                        : method.getReturnType() == int.class ? 0 : null);
        ResourceID consumerTaskManager = ResourceID.generate();
        SingleInputGateFactory factory = new SingleInputGateFactory(
                consumerTaskManager, shuffle, connectionManager, new ResultPartitionManager(),
                new TaskEventDispatcher(), networkBufferPool, null, null);

        // Each partition on a task manager of its own: NettyShuffleDescriptor.isLocalTo is false,
        // so createKnownInputChannel makes RemoteRecoveredInputChannels.
        ShuffleDescriptorAndIndex[] descriptors = new ShuffleDescriptorAndIndex[CHANNELS];
        for (int i = 0; i < CHANNELS; i++) {
            ShuffleDescriptor descriptor = new NettyShuffleDescriptor(
                    ResourceID.generate(),
                    new NettyShuffleDescriptor.NetworkPartitionConnectionInfo(
                            InetSocketAddress.createUnresolved("upstream-tm-" + i, 1), 0),
                    new ResultPartitionID());
            descriptors[i] = new ShuffleDescriptorAndIndex(descriptor, i);
        }
        InputGateDeploymentDescriptor deployment = new InputGateDeploymentDescriptor(
                new IntermediateDataSetID(), ResultPartitionType.PIPELINED_BOUNDED, 0, descriptors);
        UnregisteredMetricsGroup metrics = new UnregisteredMetricsGroup();
        gate = factory.create(
                new ShuffleIOOwnerContext("consumer", ExecutionAttemptID.randomId(), metrics, metrics, metrics),
                0, deployment, (resultId, partitionId, handle) -> {}, new InputChannelMetrics(metrics));

        for (int i = 0; i < CHANNELS; i++) {
            assertInstanceOf(RemoteRecoveredInputChannel.class, gate.getChannel(i));
        }
        return InputGateSpecUtils.createGateBuffersSpec(
                shuffle.maxRequiredBuffersPerGate(), shuffle.networkBuffersPerChannel(),
                shuffle.floatingNetworkBuffersPerGate(), ResultPartitionType.PIPELINED_BOUNDED, CHANNELS, false);
    }

    /**
     * What a task of a job without channel state does with the gate before it reads records: sets it
     * up, finishes reading the (empty) recovered state, consumes the end-of-state events, and
     * requests the partitions, which converts every RecoveredInputChannel (SingleInputGate
     * .convertRecoveredInputChannels) and sets the new channels up.
     */
    private List<RemoteInputChannel> convertedRemoteChannels() throws Exception {
        gate.setChannelStateWriter(ChannelStateWriter.NO_OP); // the task's, before setup
        gate.setup();
        gate.finishReadRecoveredState();
        for (int polls = 0; !gate.getStateConsumedFuture().isDone(); polls++) {
            assertTrue(polls < 100, "the recovered channels' end-of-state events were not consumed");
            Optional<BufferOrEvent> next = gate.pollNext();
            assertFalse(next.isPresent() && next.get().isBuffer(), "no recovered buffer: " + next);
        }
        gate.requestPartitions();
        List<RemoteInputChannel> channels = new ArrayList<>();
        for (int i = 0; i < CHANNELS; i++) {
            channels.add(assertInstanceOf(RemoteInputChannel.class, gate.getChannel(i)));
        }
        return channels;
    }
}
