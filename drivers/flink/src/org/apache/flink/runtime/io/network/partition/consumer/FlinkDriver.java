package org.apache.flink.runtime.io.network.partition.consumer;

import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The driver's side of the protocol: `hello`, `reset` (a fresh {@link FlinkSystem}), `apply` (the
 * dispatch table, one line per model action), `snapshot` ({@link Projection}), `bye`.
 */
public final class FlinkDriver {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    /** Action kinds this driver performs, by `Action::method`. */
    static final List<String> ACTIONS = List.of(
            "onRecoveredStateBuffer",
            "finishRecoveredBufferDelivery",
            "convertRecoveredInputChannels",
            "requestPartitions",
            "getNextBuffer",
            "insertRecoveryCheckpointBarrierIfInRecovery",
            "checkpointStarted",
            "notifyBufferAvailable",
            "emitCheckpointBarrier",
            "sendBuffer",
            "addCredit",
            "onBuffer",
            "onSenderBacklog",
            "sendAddCredit",
            "resumeConsumption",
            "sendResumeConsumption",
            "abortPendingCheckpoint",
            "recycle",
            "recycleFloatingBuffer",
            "add",
            "releaseAllResources",
            "close");

    /**
     * `shared-pool` (floating buffers in the gate's one LocalBufferPool, as Flink has it), not
     * `floating` (floating buffers in a pool per channel, which Flink does not have).
     */
    static final List<String> FEATURES = List.of(
            "delivery:no-recovery", "delivery:legacy", "delivery:migration", "kind:local", "kind:remote", "release",
            "late", "shared-pool");

    /** Snapshot fields 2.3.0 does not have (see docs/flink-conformance.md). */
    static final List<String> UNOBSERVED = List.of("/channels/*/upstream_ready");

    private final boolean strictRequestPartitions;
    private final boolean strictResumeConsumption;
    private final Workers workers = new Workers();
    private FlinkSystem system;
    private long leaks;
    private long resets;

    private final List<String> extraUnobserved;
    /** `--flink-fixes`: the channels are our fixed subclasses (drivers/flink/fixes). */
    private final boolean flinkFixes;

    public FlinkDriver(boolean strictRequestPartitions, boolean strictResumeConsumption, List<String> extraUnobserved) {
        this(strictRequestPartitions, strictResumeConsumption, extraUnobserved, false);
    }

    public FlinkDriver(
            boolean strictRequestPartitions,
            boolean strictResumeConsumption,
            List<String> extraUnobserved,
            boolean flinkFixes) {
        this.strictRequestPartitions = strictRequestPartitions;
        this.strictResumeConsumption = strictResumeConsumption;
        this.extraUnobserved = List.copyOf(extraUnobserved);
        this.flinkFixes = flinkFixes;
    }

    public ObjectNode hello(int protocol) {
        ObjectNode r = JSON.objectNode();
        r.put("reply", "hello");
        String version = EnvironmentInformation.getVersion();
        r.put("name", "flink-" + version + (flinkFixes ? "+fixes" : ""));
        r.put("protocol", 1);
        ArrayNode a = r.putArray("actions");
        ACTIONS.forEach(a::add);
        ArrayNode f = r.putArray("features");
        FEATURES.forEach(f::add);
        ArrayNode u = r.putArray("unobserved");
        UNOBSERVED.forEach(u::add);
        extraUnobserved.forEach(u::add);
        return r;
    }

    public ObjectNode reset(JsonNode config) throws Exception {
        FlinkSystem.Config cfg = parse(config);
        String why = FlinkSystem.unsupported(cfg);
        java.util.Set<String> fixes = new java.util.TreeSet<>();
        config.path("flink_fixes").forEach(f -> fixes.add(f.asText()));
        if (why == null) {
            why = unsupportedFixes(fixes, cfg);
        }
        teardown();
        if (why != null) {
            return JSON.objectNode().put("reply", "unsupported").put("reason", why);
        }
        // The configuration's fixes (`cdr conform --flink-fix`), or --flink-fixes whatever the
        // model says (to see what the fixed classes change).
        system = new FlinkSystem(cfg, workers, flinkFixes || !fixes.isEmpty());
        system.strictResumeConsumption = strictResumeConsumption;
        resets++;
        return JSON.objectNode().put("reply", "ready");
    }

    private void teardown() {
        if (system == null) {
            return;
        }
        String leak = system.destroy();
        system = null;
        if (leak != null) {
            leaks++;
            System.err.println("flink driver: after trace " + resets + ": " + leak);
        }
    }

    /** The fixes our subclasses of 2.3.0's classes carry, always together (drivers/flink/fixes). */
    private static final java.util.Set<String> FIXED_CLASSES = java.util.Set.of(
            "priority-from-view-head", "wake-on-refused-buffer", "announce-under-queue-lock");

    /** Why the driver cannot run a configuration with `fixes`, or null. */
    private static String unsupportedFixes(java.util.Set<String> fixes, FlinkSystem.Config cfg) {
        if (fixes.contains("persist-only-upstream-data") && cfg.delivery.equals("migration")) {
            return "persist-only-upstream-data changes LocalInputChannel.getBufferAndAvailability, which is private"
                    + " in 2.3.0: no subclass of ours can take it (it is checked on the model and impl/)";
        }
        java.util.Set<String> classes = new java.util.TreeSet<>(fixes);
        classes.retainAll(FIXED_CLASSES);
        if (!classes.isEmpty() && !classes.equals(FIXED_CLASSES)) {
            return "the driver's fixed channels carry " + FIXED_CLASSES + " together; the configuration has " + fixes;
        }
        return null;
    }

    private static FlinkSystem.Config parse(JsonNode j) {
        FlinkSystem.Config cfg = new FlinkSystem.Config();
        for (JsonNode c : j.path("channels")) {
            FlinkSystem.ChannelConfig cc = new FlinkSystem.ChannelConfig();
            cc.kind = c.path("kind").asText();
            cc.recovered = c.path("recovered").asInt();
            for (JsonNode u : c.path("upstream")) {
                cc.upstream.add(u.asText());
            }
            cc.exclusive = c.path("exclusive").asInt(0);
            cc.floating = c.path("floating").asInt(0);
            cc.late = c.path("late").asInt(0);
            cfg.channels.add(cc);
        }
        cfg.checkpoints = j.path("checkpoints").asInt();
        cfg.delivery = j.path("delivery").asText("drainer");
        cfg.insertRecoveryBarriers = j.path("insert_recovery_barriers").asBoolean(true);
        cfg.release = j.path("release").asBoolean(false);
        cfg.faults = j.path("faults").asBoolean(false);
        cfg.sharedPool = j.path("shared_pool").asBoolean(false);
        return cfg;
    }

    /** The dispatch table: one line per model action. */
    public ObjectNode apply(JsonNode a) {
        if (system == null) {
            return JSON.objectNode().put("reply", "error").put("message", "apply before a successful reset");
        }
        String action = a.path("action").asText();
        int c = a.path("channel").asInt(-1);
        int cp = a.path("cp").asInt(0);
        FlinkSystem s = system;
        FlinkSystem.Obs o;
        switch (action) {
            case "on-recovered-state-buffer": o = s.onRecoveredStateBuffer(c); break;
            case "finish-recovered-buffer-delivery": o = s.finishRecoveredBufferDelivery(c); break;
            case "convert-recovered-input-channels": o = s.convertRecoveredInputChannels(); break;
            case "request-partitions": o = s.requestPartitions(strictRequestPartitions); break;
            case "get-next-buffer": o = s.getNextBuffer(c); break;
            case "insert-recovery-checkpoint-barrier": o = s.insertRecoveryCheckpointBarrier(c, cp); break;
            case "checkpoint-started": o = s.checkpointStarted(c, cp); break;
            case "notify-buffer-available": o = s.notifyBufferAvailable(a.path("thread").asText(), c); break;
            case "emit-checkpoint-barrier": o = s.emitCheckpointBarrier(c, cp); break;
            case "send-buffer": o = s.sendBuffer(c); break;
            case "on-add-credit": o = s.onAddCredit(c); break;
            case "on-buffer": o = s.onBuffer(c); break;
            case "on-sender-backlog": o = s.onSenderBacklog(c); break;
            case "send-add-credit": o = s.sendAddCredit(c); break;
            case "on-resume-consumption": o = s.onResumeConsumption(c); break;
            case "send-resume-consumption": o = s.sendResumeConsumption(c); break;
            case "abort-pending-checkpoint": o = s.abortPendingCheckpoint(cp); break;
            case "recycle": o = s.recycle(c, bufferName(a.path("buffer"))); break;
            case "return-floating-buffer": o = s.returnFloatingBuffer(c, bufferName(a.path("buffer"))); break;
            case "add-buffer": o = s.addBuffer(c); break;
            case "release-all-resources": o = s.releaseAllResources(c); break;
            case "close-gate": o = s.closeGate(); break;
            default:
                return JSON.objectNode()
                        .put("reply", "unsupported")
                        .put("reason", "`" + action + "` has no counterpart in Flink 2.3.0's channels or is not realised by this driver");
        }
        ObjectNode r = JSON.objectNode();
        r.put("reply", "observation");
        r.set("observation", observation(o));
        return r;
    }

    private static String bufferName(JsonNode b) {
        String kind = b.path("kind").asText();
        return (kind.equals("floating") ? "f" : "x") + b.path("id").asInt();
    }

    private static ObjectNode observation(FlinkSystem.Obs o) {
        ObjectNode n = JSON.objectNode();
        n.put("kind", o.kind);
        for (int i = 0; i < o.fields.length; i += 2) {
            n.set((String) o.fields[i], value(o.fields[i + 1]));
        }
        return n;
    }

    private static JsonNode value(Object v) {
        if (v == null) {
            return JSON.nullNode();
        }
        if (v instanceof Integer) {
            return JSON.numberNode((Integer) v);
        }
        if (v instanceof Long) {
            return JSON.numberNode((Long) v);
        }
        if (v instanceof Boolean) {
            return JSON.booleanNode((Boolean) v);
        }
        if (v instanceof List) {
            ArrayNode a = JSON.arrayNode();
            for (Object e : (List<?>) v) {
                a.add(value(e));
            }
            return a;
        }
        if (v instanceof Object[]) {
            Object[] f = (Object[]) v;
            ObjectNode o = JSON.objectNode();
            for (int i = 0; i < f.length; i += 2) {
                o.set((String) f[i], value(f[i + 1]));
            }
            return o;
        }
        return JSON.textNode(v.toString());
    }

    public ObjectNode snapshot() {
        if (system == null) {
            return JSON.objectNode().put("reply", "error").put("message", "snapshot before a successful reset");
        }
        ObjectNode r = JSON.objectNode();
        r.put("reply", "snapshot");
        r.set("snapshot", Projection.snapshot(system));
        return r;
    }

    public void bye() {
        teardown();
        if (leaks > 0) {
            System.err.println("flink driver: " + leaks + " of " + resets + " traces leaked network segments");
        }
    }

    public String positions() {
        return workers.positions();
    }
}
