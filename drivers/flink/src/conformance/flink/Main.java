package conformance.flink;

import org.apache.flink.runtime.io.network.partition.consumer.FlinkDriver;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * The protocol loop of docs/driver-protocol.md: one JSON object per line on stdin, one reply per
 * line on stdout, logs on stderr. Everything Flink-specific is in {@link FlinkDriver}.
 *
 * <p>Options: {@code --strict-request-partitions} makes `requestPartitions` always call the
 * gate's own `requestPartitions()`, also with a released channel; {@code
 * --strict-resume-consumption} lets the `UpstreamRecoveryTracker`'s resume loop fail at a
 * released channel as 2.3.0's does, where the model skips it; {@code --unobserve POINTER}
 * (repeatable) adds a snapshot field to the `unobserved` list of `hello`, to step over a known
 * difference (see docs/flink-conformance.md); the report lists it as not compared; {@code
 * --flink-fixes} builds the channels from our fixed subclasses of drivers/flink/fixes (remote:
 * `LateFloatingCreditAndMissedWakeupFixedRemoteInputChannel`, local:
 * `PendingPriorityEventFixedLocalInputChannel`; see `ChannelFactory`).
 */
public final class Main {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long WATCHDOG_MILLIS = 60_000;

    private static volatile long requestStarted = 0;
    private static volatile String request = "";
    private static final Object OUT_LOCK = new Object();
    private static BufferedWriter out;
    private static BufferedReader in;

    public static void main(String[] args) throws Exception {
        boolean strict = false;
        boolean strictResume = false;
        boolean flinkFixes = false;
        java.util.List<String> unobserve = new java.util.ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--strict-request-partitions")) {
                strict = true;
            } else if (a.equals("--strict-resume-consumption")) {
                strictResume = true;
            } else if (a.equals("--flink-fixes")) {
                flinkFixes = true;
            } else if (a.equals("--unobserve") && i + 1 < args.length) {
                unobserve.add(args[++i]);
            } else {
                System.err.println("flink driver: unknown option " + a);
                System.exit(2);
            }
        }
        out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        FlinkDriver driver = new FlinkDriver(strict, strictResume, unobserve, flinkFixes);
        Thread protocol = Thread.currentThread();
        startWatchdog(driver, protocol);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode reply;
            boolean bye = false;
            requestStarted = System.currentTimeMillis();
            request = line;
            try {
                JsonNode req = JSON.readTree(line);
                String op = req.path("op").asText();
                switch (op) {
                    case "hello":
                        reply = driver.hello(req.path("protocol").asInt(1));
                        break;
                    case "reset":
                        reply = driver.reset(req.get("config"));
                        break;
                    case "apply":
                        reply = driver.apply(req.get("action"));
                        break;
                    case "snapshot":
                        reply = driver.snapshot();
                        break;
                    case "bye":
                        driver.bye();
                        reply = JSON.createObjectNode().put("reply", "bye");
                        bye = true;
                        break;
                    default:
                        reply = error("unknown op `" + op + "`");
                }
            } catch (Throwable t) {
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                System.err.println("flink driver: " + trace);
                reply = error("driver failed on `" + line + "`: " + t + "; threads: " + driver.positions());
            }
            requestStarted = 0;
            write(reply);
            if (bye) {
                out.flush();
                System.exit(0);
            }
        }
        driver.bye();
    }

    private static ObjectNode error(String message) {
        return JSON.createObjectNode().put("reply", "error").put("message", message);
    }

    /**
     * Replies go out when no further request is waiting: cdr may send a whole trace at once, and
     * one write for its answers saves a system call and a wake-up per request.
     */
    private static void write(ObjectNode reply) throws Exception {
        synchronized (OUT_LOCK) {
            out.write(JSON.writeValueAsString(reply));
            out.write('\n');
            if (!in.ready()) {
                out.flush();
            }
        }
    }

    /** A request that neither returns nor is answered within 60 s is a harness error. */
    private static void startWatchdog(FlinkDriver driver, Thread protocol) {
        Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long started = requestStarted;
                if (started != 0 && System.currentTimeMillis() - started > WATCHDOG_MILLIS) {
                    StackTraceElement[] stack = protocol.getStackTrace();
                    StringBuilder where = new StringBuilder();
                    for (int i = 0; i < Math.min(6, stack.length); i++) {
                        where.append(i == 0 ? "" : " < ").append(stack[i]);
                    }
                    try {
                        write(error("hung for 60 s on `" + request + "`: protocol thread at " + where
                                + "; workers: " + driver.positions()));
                        synchronized (OUT_LOCK) {
                            out.flush();
                        }
                    } catch (Exception e) {
                        // stdout is gone
                    }
                    System.exit(3);
                }
            }
        }, "conform-watchdog");
        t.setDaemon(true);
        t.start();
    }
}
