package org.apache.flink.runtime.io.network.partition.consumer;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The worker threads that stand for Flink's task, Netty client and recycler threads, for the
 * calls that can stop in the middle: at a pause point ({@link PausingCredit}), where the model's
 * next step of that thread begins, or in a real wait inside Flink.
 *
 * <p>How the driver learns what a call did, without wall-clock timeouts:
 * <ul>
 *   <li>the call returned: the job reports its result;
 *   <li>it reached a pause point: the pause hook reports it and waits on the worker's monitor;
 *   <li>it blocked: the thread is seen WAITING, TIMED_WAITING or BLOCKED on a monitor or lock
 *       that is not the worker's own (ThreadMXBean lock info), with the same stack on
 *       consecutive samples.
 * </ul>
 * A call that does none of these within {@link #WATCHDOG_NANOS} is a harness error naming every
 * worker's position.
 */
final class Workers {
    static final long WATCHDOG_NANOS = 60L * 1_000_000_000L;
    private static final ThreadLocal<Worker> CURRENT = new ThreadLocal<>();
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    /** A stop of a worker inside a call. */
    static final class Pause {
        final String at;
        final int channel;
        final int n;
        /** The floating buffer handed back to the pool (`return-floating`), else null. */
        final String buffer;

        Pause(String at, int channel, int n) {
            this(at, channel, n, null);
        }

        Pause(String at, int channel, int n, String buffer) {
            this.at = at;
            this.channel = channel;
            this.n = n;
            this.buffer = buffer;
        }
    }

    /** What the driver saw when it stopped waiting for a worker. */
    enum Outcome {
        RETURNED,
        PAUSED,
        BLOCKED
    }

    static final class HarnessError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HarnessError(String message) {
            super(message);
        }
    }

    static Worker current() {
        return CURRENT.get();
    }

    static final class Worker {
        final String name;
        private final Object monitor = new Object();
        private Thread thread;
        // Guarded by monitor.
        private Callable<Object> job;
        private boolean running;
        private Object result;
        private Throwable failure;
        private Pause pause;
        private boolean resume;
        /** The channel of the call in progress (or last). */
        int channel;
        /** The driver's view: idle, paused at `paused`, or blocked. */
        Outcome state = Outcome.RETURNED;

        Worker(String name) {
            this.name = name;
            spawn();
        }

        private void spawn() {
            thread = new Thread(this::loop, "conform-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        private void loop() {
            CURRENT.set(this);
            while (true) {
                Callable<Object> next;
                synchronized (monitor) {
                    while (job == null) {
                        try {
                            monitor.wait();
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                    next = job;
                }
                Object r = null;
                Throwable f = null;
                try {
                    r = next.call();
                } catch (Throwable t) {
                    f = t;
                }
                synchronized (monitor) {
                    job = null;
                    running = false;
                    result = r;
                    failure = f;
                    monitor.notifyAll();
                }
            }
        }

        /** On the worker thread: report `p` and wait until the driver resumes this call. */
        void pauseAt(Pause p) {
            synchronized (monitor) {
                pause = p;
                monitor.notifyAll();
                while (!resume) {
                    try {
                        monitor.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                resume = false;
                pause = null;
            }
        }

        boolean idle() {
            synchronized (monitor) {
                return !running;
            }
        }

        Pause paused() {
            synchronized (monitor) {
                return pause;
            }
        }

        /** Starts `call` on this worker and waits for its outcome. */
        Outcome start(int channel, Callable<Object> call) {
            synchronized (monitor) {
                if (running) {
                    throw new IllegalStateException("worker " + name + " is busy");
                }
                this.channel = channel;
                job = call;
                running = true;
                result = null;
                failure = null;
                monitor.notifyAll();
            }
            return await();
        }

        /** Resumes a paused call and waits for its next outcome. */
        Outcome resume() {
            synchronized (monitor) {
                if (pause == null) {
                    throw new IllegalStateException("worker " + name + " is not paused");
                }
                resume = true;
                monitor.notifyAll();
                // Wait until the worker has taken the resume before looking again.
                while (pause != null && resume) {
                    try {
                        monitor.wait(1);
                    } catch (InterruptedException e) {
                        throw new HarnessError("interrupted");
                    }
                }
            }
            return await();
        }

        /** The result of the call that returned last (rethrows its exception). */
        Object result() throws Exception {
            synchronized (monitor) {
                if (failure instanceof Exception) {
                    throw (Exception) failure;
                }
                if (failure != null) {
                    throw new RuntimeException(failure);
                }
                return result;
            }
        }

        private Outcome await() {
            long start = System.nanoTime();
            String lastBlockedAt = null;
            int sameBlocked = 0;
            while (true) {
                synchronized (monitor) {
                    if (!running) {
                        return state = Outcome.RETURNED;
                    }
                    if (pause != null && !resume) {
                        return state = Outcome.PAUSED;
                    }
                    try {
                        monitor.wait(0, 200_000);
                    } catch (InterruptedException e) {
                        throw new HarnessError("interrupted");
                    }
                    if (!running) {
                        return state = Outcome.RETURNED;
                    }
                    if (pause != null && !resume) {
                        return state = Outcome.PAUSED;
                    }
                }
                String blockedAt = blockedElsewhere();
                if (blockedAt != null && blockedAt.equals(lastBlockedAt)) {
                    if (++sameBlocked >= 3) {
                        if (System.getenv("FLINK_DRIVER_DEBUG") != null) {
                            System.err.println("flink driver: " + name + " blocked: " + blockedAt);
                        }
                        return state = Outcome.BLOCKED;
                    }
                } else {
                    sameBlocked = 0;
                }
                lastBlockedAt = blockedAt;
                if (System.nanoTime() - start > WATCHDOG_NANOS) {
                    throw new HarnessError("worker " + name + " neither returned, paused nor blocked within 60 s");
                }
            }
        }

        /**
         * Where the thread waits, if it waits on something that is not this worker's own monitor
         * (a Flink monitor, condition or latch); null when it runs or waits on the monitor.
         */
        private String blockedElsewhere() {
            Thread.State s = thread.getState();
            if (s != Thread.State.WAITING && s != Thread.State.TIMED_WAITING && s != Thread.State.BLOCKED) {
                return null;
            }
            ThreadInfo info = MX.getThreadInfo(thread.getId(), 3);
            if (info == null) {
                return null;
            }
            LockInfo lock = info.getLockInfo();
            if (lock == null || lock.getIdentityHashCode() == System.identityHashCode(monitor)) {
                // Running again by now, or waiting on (or entering) the worker's own monitor.
                return null;
            }
            StackTraceElement[] stack = info.getStackTrace();
            if (stack.length > 0 && stack[0].getClassName().startsWith(Workers.class.getName())) {
                return null;
            }
            return info.getThreadState() + " on " + lock + " at " + top(stack);
        }

        String position() {
            StackTraceElement[] stack = thread.getStackTrace();
            return name + " (" + thread.getState() + "): " + top(stack);
        }

        /** A blocked or lost worker is abandoned; a fresh thread takes its place. */
        void replace() {
            synchronized (monitor) {
                job = null;
                running = false;
                pause = null;
                resume = false;
            }
            spawn();
            state = Outcome.RETURNED;
        }
    }

    private static String top(StackTraceElement[] stack) {
        List<String> frames = new ArrayList<>();
        for (StackTraceElement e : stack) {
            String c = e.getClassName();
            if (c.startsWith("java.") || c.startsWith("jdk.") || c.startsWith("sun.")) {
                continue;
            }
            frames.add(c.substring(c.lastIndexOf('.') + 1) + "." + e.getMethodName() + ":" + e.getLineNumber());
            if (frames.size() == 3) {
                break;
            }
        }
        if (frames.isEmpty() && stack.length > 0) {
            frames.add(stack[0].toString());
        }
        return String.join(" < ", frames);
    }

    final Worker task = new Worker("task");
    final Worker nettyClient = new Worker("netty-client");
    final Worker recycler = new Worker("recycler");

    Worker of(String thread) {
        switch (thread) {
            case "task":
                return task;
            case "netty-client":
                return nettyClient;
            case "recycler":
                return recycler;
            default:
                return null;
        }
    }

    List<Worker> all() {
        return List.of(task, nettyClient, recycler);
    }

    String positions() {
        List<String> p = new ArrayList<>();
        for (Worker w : all()) {
            p.add(w.position());
        }
        return String.join("; ", p);
    }
}
