//! Unit tests of `RecoveredInputChannel` conversion and of `SingleInputGate`.
#![cfg(not(loom))]

mod common;

use std::sync::Arc;

use common::{Fixture, data};
use recovery_impl::recoverable_input_channel::{ChannelSnapshot, FutureStatus};
use recovery_impl::recovered_input_channel::{RecoveredChannelKind, RecoveredInputChannel};
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
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
