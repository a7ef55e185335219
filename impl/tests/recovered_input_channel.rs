//! Unit tests of `RecoveredInputChannel` conversion and of `SingleInputGate`.
#![cfg(not(loom))]

mod common;

use std::sync::Arc;

use common::{Fixture, data};
use recovery_impl::recoverable_input_channel::FutureStatus;
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::{ChannelSnapshot, InputChannelHandle};
use recovery_impl::{BufferId, BufferKind, ChannelError, DeclineReason};

fn recovered(fixture: &Fixture, kind: RecoveredChannelKind) -> Arc<RecoveredInputChannel> {
    let channel = RecoveredInputChannel::new(fixture.context(0, 2), kind);
    fixture
        .gate
        .set_input_channels(vec![InputChannelHandle::Recovered(Arc::clone(&channel))]);
    channel
}

fn read_two_buffers(channel: &RecoveredInputChannel) -> Vec<BufferId> {
    let mut ids = Vec::new();
    for payload in 0..2 {
        let buffer = channel
            .request_buffer_blocking()
            .unwrap()
            .fill(BufferKind::Data, payload);
        ids.push(buffer.id());
        channel.on_recovered_state_buffer(buffer).unwrap();
    }
    channel.finish_read_recovered_state().unwrap();
    ids
}

#[test]
fn conversion_with_recovery_pushes_every_buffer_then_the_sentinel() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    let ids = read_two_buffers(&channel);
    fixture.gate.request_partitions(true).unwrap();
    let ChannelSnapshot::Remote(remote) = &fixture.gate.snapshot().channels[0] else {
        panic!("expected a remote channel");
    };
    let queued: Vec<(BufferId, BufferKind)> = remote
        .received_buffers
        .iter()
        .map(|b| (b.buffer.id, b.buffer.kind))
        .collect();
    assert_eq!(
        queued,
        vec![
            (ids[0], BufferKind::Data),
            (ids[1], BufferKind::Data),
            (BufferId::UNPOOLED, BufferKind::EndOfFetchedChannelState)
        ]
    );
    assert!(remote.in_recovery && remote.partition_requested);
    assert!(channel.is_released());
    // Consume everything: the recovered buffers go back to the global pool, not to credit.
    let mut polled = Vec::new();
    while let Some(next) = fixture.gate.poll_next().unwrap() {
        polled.push(next.buffer.id());
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(polled, ids);
    assert!(fixture.gate.all_state_consumed());
    let ChannelSnapshot::Remote(remote) = &fixture.gate.snapshot().channels[0] else {
        unreachable!()
    };
    assert_eq!(
        remote.unannounced_credit, 2,
        "the new channel's exclusive buffers, announced once"
    );
    fixture.gate.close().unwrap();
    fixture.assert_all_buffers_returned(0);
}

#[test]
fn conversion_with_recovery_of_a_local_channel_hides_live_data_until_consumed() {
    let fixture = Fixture::new(8, 0);
    let partition = ResultSubpartition::new();
    let channel = recovered(
        &fixture,
        RecoveredChannelKind::Local {
            partition: Arc::clone(&partition),
        },
    );
    let ids = read_two_buffers(&channel);
    partition.add(data(50, 50)).unwrap();
    fixture.gate.request_partitions(true).unwrap();
    let mut polled = Vec::new();
    while let Some(next) = fixture.gate.poll_next().unwrap() {
        polled.push(next.buffer.id());
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(polled, vec![ids[0], ids[1], BufferId(50)]);
    fixture.gate.close().unwrap();
    fixture.assert_all_buffers_returned(0);
}

#[test]
fn conversion_without_recovery_requires_an_empty_queue() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    read_two_buffers(&channel);
    assert!(matches!(
        fixture.gate.request_partitions(false),
        Err(ChannelError::IllegalState(_))
    ));
    assert!(!channel.is_released());
}

#[test]
fn conversion_without_recovery_after_consuming_the_legacy_stream() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    read_two_buffers(&channel);
    while let Some(next) = fixture.gate.poll_next().unwrap() {
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(channel.state_consumed_future().status(), FutureStatus::Completed);
    channel.checkpoint_stopped(3);
    fixture.gate.request_partitions(false).unwrap();
    let ChannelSnapshot::Remote(remote) = &fixture.gate.snapshot().channels[0] else {
        unreachable!()
    };
    assert!(!remote.in_recovery);
    assert_eq!(remote.persister.last_seen_barrier, 3);
    assert!(remote.buffer_manager.notify_available);
}

#[test]
fn recovered_channel_declines_checkpoints_as_task_not_ready() {
    let fixture = Fixture::new(2, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    let reason = DeclineReason::TaskNotReady;
    assert_eq!(
        channel.checkpoint_started(1),
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id: 1,
            reason
        })
    );
}

#[test]
fn gate_snapshot_round_trips_through_json() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    read_two_buffers(&channel);
    fixture.gate.request_partitions(true).unwrap();
    let snapshot = fixture.gate.snapshot();
    let json = serde_json::to_string(&snapshot).unwrap();
    assert_eq!(
        serde_json::from_str::<recovery_impl::single_input_gate::SingleInputGateSnapshot>(&json).unwrap(),
        snapshot
    );
    let writer = fixture.writer.snapshot();
    let json = serde_json::to_string(&writer).unwrap();
    assert_eq!(
        serde_json::from_str::<recovery_impl::channel_state_persister::ChannelStateWriterSnapshot>(&json).unwrap(),
        writer
    );
}

#[test]
fn the_legacy_sentinel_completes_the_future_and_takes_no_sequence_number() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    read_two_buffers(&channel);
    let seqs: Vec<i32> = (0..2)
        .map(|_| {
            channel
                .get_next_buffer()
                .unwrap()
                .expect("a recovered buffer")
                .sequence_number
        })
        .collect();
    assert_eq!(seqs, vec![i32::MIN, i32::MIN + 1]);
    // Flink returns before `sequenceNumber++` for EndOfInputChannelStateEvent.
    assert!(channel.get_next_buffer().unwrap().is_none());
    let snapshot = channel.snapshot();
    assert_eq!(snapshot.sequence_number, i32::MIN + 2);
    assert_eq!(snapshot.state_consumed, FutureStatus::Completed);
}

// --- Flink 2.3.0, flag on: leftovers migrated into the physical channel ----------------------

#[test]
fn migration_needs_the_legacy_sentinel_appended_first() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    let buffer = channel.request_buffer_blocking().unwrap().fill(BufferKind::Data, 0);
    channel.on_recovered_state_buffer(buffer).unwrap();
    // bufferFilteringCompleteFuture completes in finishReadRecoveredState.
    assert!(matches!(
        fixture.gate.request_partitions_migrating(),
        Err(ChannelError::IllegalState(_))
    ));
    channel.release_all_resources().unwrap();
    fixture.gate.close().unwrap();
    fixture.assert_all_buffers_returned(0);
}

#[test]
fn migration_moves_the_leftovers_and_the_sentinel_into_the_remote_channel_renumbered() {
    let fixture = Fixture::new(8, 0);
    let channel = recovered(&fixture, RecoveredChannelKind::Remote);
    let ids = read_two_buffers(&channel);
    // The task polls the first buffer from the recovered channel: i32::MIN.
    let first = fixture.gate.poll_channel().unwrap();
    let recovery_impl::input_channels_with_data::ChannelPoll::Buffer { next, .. } = first else {
        panic!("expected a buffer, got {first:?}");
    };
    assert_eq!((next.buffer.id(), next.sequence_number), (ids[0], i32::MIN));
    next.buffer.recycle_buffer().unwrap();
    fixture.gate.request_partitions_migrating().unwrap();
    assert!(channel.is_released());
    let ChannelSnapshot::Remote(remote) = &fixture.gate.snapshot().channels[0] else {
        panic!("expected a remote channel");
    };
    let queued: Vec<(BufferId, BufferKind, i32)> = remote
        .received_buffers
        .iter()
        .map(|b| (b.buffer.id, b.buffer.kind, b.sequence_number))
        .collect();
    // The new channel numbers from i32::MIN again, the sentinel included.
    assert_eq!(
        queued,
        vec![
            (ids[1], BufferKind::Data, i32::MIN),
            (BufferId::UNPOOLED, BufferKind::EndOfInputChannelState, i32::MIN + 1)
        ]
    );
    assert!(!remote.in_recovery && remote.partition_requested && remote.buffer_manager.notify_available);
    assert_eq!(remote.state_consumed, FutureStatus::Completed);
    // The gate queued the new channel (buffers in use) and hands the sentinel out as an event.
    assert_eq!(fixture.gate.snapshot().channels_with_data.channels, vec![0]);
    let mut polled = Vec::new();
    while let Some(next) = fixture.gate.poll_next().unwrap() {
        polled.push(next.buffer.kind());
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(polled, vec![BufferKind::Data, BufferKind::EndOfInputChannelState]);
    fixture.gate.close().unwrap();
    fixture.assert_all_buffers_returned(0);
}

#[test]
fn a_migrated_local_buffer_is_persisted_twice_as_in_flink_2_3_0() {
    let fixture = Fixture::new(8, 0);
    let partition = ResultSubpartition::new();
    let channel = recovered(
        &fixture,
        RecoveredChannelKind::Local {
            partition: Arc::clone(&partition),
        },
    );
    let ids = read_two_buffers(&channel);
    fixture.gate.request_partitions_migrating().unwrap();
    let handle = fixture.gate.channel(0).unwrap();
    let ChannelSnapshot::Local(local) = &fixture.gate.snapshot().channels[0] else {
        panic!("expected a local channel");
    };
    assert_eq!(local.to_be_consumed_buffers.len(), 3);
    assert!(!local.in_recovery);
    // checkpointStarted writes the migrated data still queued and opens the window ...
    handle.checkpoint_started(1).unwrap();
    let info = channel.channel_info();
    assert_eq!(fixture.writer.persisted(1, info).len(), 2);
    // ... and polling it writes it again (maybePersist: FLINK-40016 is not fixed in 2.3.0).
    let next = handle.get_next_buffer().unwrap().expect("a migrated buffer");
    assert_eq!((next.buffer.id(), next.sequence_number), (ids[0], i32::MIN));
    next.buffer.recycle_buffer().unwrap();
    let persisted: Vec<BufferId> = fixture.writer.persisted(1, info).iter().map(|b| b.id).collect();
    assert_eq!(persisted, vec![ids[0], ids[1], ids[0]]);
    handle.release_all_resources().unwrap();
    fixture.gate.close().unwrap();
    fixture.assert_all_buffers_returned(0);
}
