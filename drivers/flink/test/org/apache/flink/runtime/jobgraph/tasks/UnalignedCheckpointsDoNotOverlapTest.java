package org.apache.flink.runtime.jobgraph.tasks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * The precondition of docs/findings.md's checkpoint findings: Flink 2.3.0 never runs two
 * unaligned checkpoints at once. {@code CheckpointCoordinatorConfiguration}'s constructor (line
 * 140) rejects {@code execution.checkpointing.max-concurrent-checkpoints} above 1 while unaligned
 * checkpoints are enabled, so a second checkpoint starts only once the first was aborted or
 * completed.
 */
class UnalignedCheckpointsDoNotOverlapTest {

    @Test
    void moreThanOneConcurrentUnalignedCheckpointIsRejected() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                CheckpointCoordinatorConfiguration.builder()
                                        .setUnalignedCheckpointsEnabled(true)
                                        .setMaxConcurrentCheckpoints(2)
                                        .build());
        assertEquals("maxConcurrentCheckpoints can't be > 1 if UnalignedCheckpoints enabled", e.getMessage());
    }

    @Test
    void oneUnalignedCheckpointAtATimeIsAccepted() {
        CheckpointCoordinatorConfiguration conf =
                CheckpointCoordinatorConfiguration.builder()
                        .setUnalignedCheckpointsEnabled(true)
                        .setMaxConcurrentCheckpoints(1)
                        .build();
        assertEquals(1, conf.getMaxConcurrentCheckpoints());
    }
}
