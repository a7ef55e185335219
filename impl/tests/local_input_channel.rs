//! Unit tests of `LocalInputChannel` in and after recovery.
#![cfg(not(loom))]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{Fixture, data, event};
use recovery_impl::channel_state_persister::CheckpointStatus;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::recoverable_input_channel::FutureStatus;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
use recovery_impl::{
    BufferId, BufferKind, ChannelError, DataType, DeclineReason, NetworkBuffer, RecoverableInputChannel,
};

struct Local {
    fixture: Fixture,
    partition: Arc<ResultSubpartition>,
    channel: Arc<LocalInputChannel>,
}

fn local_in_recovery(recovered: &[u32]) -> Local {
    let fixture = Fixture::new(8, 0);
    let partition = ResultSubpartition::new();
    let channel = LocalInputChannel::new(fixture.context(0, 2), Arc::clone(&partition), true);
    fixture
        .gate
        .set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
    for id in recovered {
        channel.on_recovered_state_buffer(data(*id, u64::from(*id))).unwrap();
    }
    Local {
        fixture,
        partition,
        channel,
    }
}

fn poll_kinds(local: &Local) -> Vec<(BufferKind, BufferId, i32)> {
    let mut polled = Vec::new();
    while let Some(next) = local.fixture.gate.poll_next().unwrap() {
        polled.push((next.buffer.kind(), next.buffer.id(), next.sequence_number));
        next.buffer.recycle_buffer().unwrap();
    }
    polled
}

#[test]
fn recovered_data_precedes_live_data_and_the_sentinel_is_never_handed_out() {
    let local = local_in_recovery(&[1, 2]);
    local.channel.request_subpartitions().unwrap();
    local.partition.add(data(10, 10)).unwrap();
    local
        .channel
        .on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfFetchedChannelState))
        .unwrap();
    let polled = poll_kinds(&local);
    let ids: Vec<BufferId> = polled.iter().map(|p| p.1).collect();
    assert_eq!(ids, vec![BufferId(1), BufferId(2), BufferId(10)]);
    assert!(!local.channel.snapshot().in_recovery);
    assert_eq!(local.channel.state_consumed_future().status(), FutureStatus::Completed);
}

#[test]
fn recovery_sequence_numbers_are_assigned_at_consumption_and_count_the_sentinel() {
    let local = local_in_recovery(&[1]);
    local
        .channel
        .on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfFetchedChannelState))
        .unwrap();
    assert_eq!(local.channel.snapshot().recovery_sequence_number, i32::MIN);
    let first = local.channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(first.sequence_number, i32::MIN);
    assert_eq!(first.next_data_type, DataType::EventBuffer);
    let sentinel = local.channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(sentinel.sequence_number, i32::MIN + 1);
    assert_eq!(local.channel.snapshot().recovery_sequence_number, i32::MIN + 2);
}

#[test]
fn live_data_stays_hidden_during_recovery() {
    let local = local_in_recovery(&[]);
    local.channel.request_subpartitions().unwrap();
    local.partition.add(data(10, 10)).unwrap();
    assert!(local.channel.get_next_buffer().unwrap().is_none());
    assert_eq!(local.partition.snapshot().buffers.len(), 1);
}

#[test]
fn last_recovered_buffer_reports_no_next_data_in_recovery() {
    let local = local_in_recovery(&[1]);
    local.channel.request_subpartitions().unwrap();
    local.partition.add(data(10, 10)).unwrap();
    let next = local.channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(next.next_data_type, DataType::None);
}

#[test]
fn pending_priority_event_overtakes_recovered_buffers() {
    let local = local_in_recovery(&[1]);
    local.channel.request_subpartitions().unwrap();
    local.partition.add(data(10, 10)).unwrap();
    local
        .partition
        .add(event(20, BufferKind::CheckpointBarrier(7)))
        .unwrap();
    assert!(local.channel.snapshot().has_pending_priority_event);
    let barrier = local.channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(barrier.buffer.kind(), BufferKind::CheckpointBarrier(7));
    assert_eq!(barrier.sequence_number, 0);
    assert_eq!(barrier.next_data_type, DataType::DataBuffer);
    assert!(!local.channel.snapshot().has_pending_priority_event);
    assert_eq!(
        local.channel.get_next_buffer().unwrap().unwrap().buffer.id(),
        BufferId(1)
    );
}

#[test]
fn checkpoint_started_persists_recovered_data_before_the_matching_barrier_and_keeps_it_queued() {
    let local = local_in_recovery(&[1, 2]);
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(5)
        .unwrap();
    local.channel.on_recovered_state_buffer(data(3, 3)).unwrap();
    local.channel.checkpoint_started(5).unwrap();
    let persisted: Vec<BufferId> = local
        .fixture
        .writer
        .persisted(5, local.channel.channel_info())
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(persisted, vec![BufferId(1), BufferId(2)]);
    let snapshot = local.channel.snapshot();
    let queued: Vec<BufferId> = snapshot.recovered_buffers.iter().map(|b| b.id).collect();
    assert_eq!(queued, vec![BufferId(1), BufferId(2), BufferId(3)]);
    assert_eq!(snapshot.persister.checkpoint_status, CheckpointStatus::BarrierPending);
}

#[test]
fn recovered_buffers_are_never_persisted_twice() {
    // FLINK-40016: polling the retained buffers while the barrier is pending must not persist.
    let local = local_in_recovery(&[1, 2]);
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(5)
        .unwrap();
    local.channel.checkpoint_started(5).unwrap();
    while let Some(next) = local.channel.get_next_buffer().unwrap() {
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(local.fixture.writer.persisted(5, local.channel.channel_info()).len(), 2);
}

#[test]
fn older_recovery_barriers_are_discarded_and_a_later_one_declines() {
    let local = local_in_recovery(&[1]);
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(3)
        .unwrap();
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(6)
        .unwrap();
    let declined = local.channel.checkpoint_started(5);
    let reason = DeclineReason::LaterRecoveryCheckpointBarrier { found: 6 };
    assert_eq!(
        declined,
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id: 5,
            reason
        })
    );
    let kinds: Vec<BufferKind> = local
        .channel
        .snapshot()
        .recovered_buffers
        .iter()
        .map(|b| b.kind)
        .collect();
    assert_eq!(kinds, vec![BufferKind::Data, BufferKind::RecoveryCheckpointBarrier(6)]);
}

#[test]
fn checkpoint_started_without_a_recovery_barrier_declines() {
    let local = local_in_recovery(&[1]);
    let reason = DeclineReason::MissingRecoveryCheckpointBarrier;
    assert_eq!(
        local.channel.checkpoint_started(4),
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id: 4,
            reason
        })
    );
    assert!(local.fixture.writer.snapshot().persisted.is_empty());
}

#[test]
fn live_data_after_recovery_is_persisted_while_the_barrier_is_pending() {
    let local = local_in_recovery(&[1]);
    local.channel.request_subpartitions().unwrap();
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(5)
        .unwrap();
    local
        .channel
        .on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfFetchedChannelState))
        .unwrap();
    local.channel.checkpoint_started(5).unwrap();
    local.partition.add(data(10, 10)).unwrap();
    local.partition.add(data(11, 11)).unwrap();
    poll_kinds(&local);
    let persisted: Vec<BufferId> = local
        .fixture
        .writer
        .persisted(5, local.channel.channel_info())
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(persisted, vec![BufferId(1), BufferId(10), BufferId(11)]);
}

#[test]
fn recovery_barrier_is_not_inserted_after_recovery() {
    let local = local_in_recovery(&[]);
    local.channel.request_subpartitions().unwrap();
    local
        .channel
        .on_recovered_state_buffer(NetworkBuffer::event(BufferKind::EndOfFetchedChannelState))
        .unwrap();
    poll_kinds(&local);
    local
        .channel
        .insert_recovery_checkpoint_barrier_if_in_recovery(5)
        .unwrap();
    assert!(local.channel.snapshot().recovered_buffers.is_empty());
}

#[test]
fn recovered_state_consumed_twice_is_an_illegal_state() {
    let local = local_in_recovery(&[]);
    local.channel.on_recovered_state_consumed().unwrap();
    assert!(matches!(
        local.channel.on_recovered_state_consumed(),
        Err(ChannelError::IllegalState(_))
    ));
}

#[test]
fn push_after_recovery_is_an_illegal_state() {
    let local = local_in_recovery(&[]);
    local.channel.on_recovered_state_consumed().unwrap();
    assert!(matches!(
        local.channel.on_recovered_state_buffer(data(1, 1)),
        Err(ChannelError::IllegalState(_))
    ));
}

#[test]
fn second_end_of_fetched_sentinel_is_rejected() {
    let local = local_in_recovery(&[]);
    let sentinel = || NetworkBuffer::event(BufferKind::EndOfFetchedChannelState);
    local.channel.on_recovered_state_buffer(sentinel()).unwrap();
    assert!(matches!(
        local.channel.on_recovered_state_buffer(sentinel()),
        Err(ChannelError::IllegalState(_))
    ));
}

#[test]
fn finish_recovered_buffer_delivery_waits_for_the_subpartition_view() {
    let local = local_in_recovery(&[1]);
    let channel = Arc::clone(&local.channel);
    let finisher = thread::spawn(move || channel.finish_recovered_buffer_delivery());
    thread::sleep(Duration::from_millis(20));
    assert_eq!(local.channel.snapshot().recovered_buffers.len(), 1);
    local.channel.request_subpartitions().unwrap();
    finisher.join().unwrap().unwrap();
    let kinds: Vec<BufferKind> = local
        .channel
        .snapshot()
        .recovered_buffers
        .iter()
        .map(|b| b.kind)
        .collect();
    assert_eq!(kinds, vec![BufferKind::Data, BufferKind::EndOfFetchedChannelState]);
}

#[test]
fn recovery_buffers_are_lent_from_the_exclusive_buffers() {
    let local = local_in_recovery(&[]);
    local.channel.setup().unwrap();
    local.channel.complete_upstream_ready_for_test();
    let buffer = local.channel.request_recovery_buffer_blocking().unwrap();
    assert!(buffer.is_pooled());
    local
        .channel
        .on_recovered_state_buffer(buffer.fill(BufferKind::Data, 42))
        .unwrap();
    let polled = local.channel.get_next_buffer().unwrap().unwrap();
    assert_eq!(polled.buffer.payload(), 42);
    polled.buffer.recycle_buffer().unwrap();
    assert_eq!(local.channel.snapshot().buffer_manager.unwrap().exclusive.len(), 2);
}

#[test]
fn release_recycles_recovered_buffers_and_cancels_the_future() {
    let local = local_in_recovery(&[]);
    local.channel.setup().unwrap();
    local.channel.complete_upstream_ready_for_test();
    let buffer = local.channel.request_recovery_buffer_blocking().unwrap();
    local
        .channel
        .on_recovered_state_buffer(buffer.fill(BufferKind::Data, 1))
        .unwrap();
    local.channel.release_all_resources().unwrap();
    assert_eq!(
        local.channel.state_consumed_future().status(),
        FutureStatus::Failed(recovery_impl::ChannelError::Released(
            "Input channel has already been released.".into()
        ))
    );
    local.fixture.assert_all_buffers_returned(0);
    // A push after release is recycled, not queued.
    local.channel.on_recovered_state_buffer(data(5, 5)).unwrap();
    assert!(local.channel.snapshot().recovered_buffers.is_empty());
    assert!(matches!(
        local.channel.request_recovery_buffer_blocking(),
        Err(ChannelError::Released(_))
    ));
}

#[test]
fn channel_without_recovery_reads_live_data_directly() {
    let fixture = Fixture::new(2, 0);
    let partition = ResultSubpartition::new();
    let channel = LocalInputChannel::new(fixture.context(0, 2), Arc::clone(&partition), false);
    assert_eq!(channel.state_consumed_future().status(), FutureStatus::Completed);
    assert!(channel.snapshot().buffer_manager.is_none());
    assert!(matches!(channel.get_next_buffer(), Err(ChannelError::IllegalState(_))));
    channel.request_subpartitions().unwrap();
    partition.add(data(1, 1)).unwrap();
    let next = channel.get_next_buffer().unwrap().unwrap();
    assert_eq!((next.buffer.id(), next.sequence_number), (BufferId(1), 0));
}

/// Two live local channels whose upstreams each wrote `EndOfOutputChannelStateEvent` and one
/// data buffer.
fn blocked_pair() -> (Fixture, Vec<Arc<ResultSubpartition>>, Vec<Arc<LocalInputChannel>>) {
    let fixture = Fixture::new(8, 0);
    let (mut partitions, mut channels) = (Vec::new(), Vec::new());
    for c in 0..2 {
        let partition = ResultSubpartition::new();
        partition
            .add(event(50 + c, BufferKind::EndOfOutputChannelState))
            .unwrap();
        partition.add(data(60 + c, u64::from(60 + c))).unwrap();
        let channel = LocalInputChannel::new(fixture.context(c, 0), Arc::clone(&partition), false);
        partitions.push(partition);
        channels.push(channel);
    }
    let handles = channels.iter().map(|ch| InputChannelHandle::Local(Arc::clone(ch)));
    fixture.gate.set_input_channels(handles.collect());
    for channel in &channels {
        channel.request_subpartitions().unwrap();
    }
    (fixture, partitions, channels)
}

/// The local poll of `EndOfOutputChannelStateEvent` blocks the view: the data behind it stays
/// hidden, and the channel leaves the gate's queue; `resumeConsumption` unblocks the view and
/// queues the channel again because it has data.
#[test]
fn resume_consumption_unblocks_the_view_and_notifies_the_gate_when_data_waits() {
    let (fixture, partitions, channels) = blocked_pair();
    let first = fixture.gate.poll_next().unwrap().unwrap();
    assert_eq!(first.buffer.kind(), BufferKind::EndOfOutputChannelState);
    assert_eq!(first.next_data_type, DataType::None);
    let second = fixture.gate.poll_next().unwrap().unwrap();
    assert_eq!(second.buffer.kind(), BufferKind::EndOfOutputChannelState);
    assert!(fixture.gate.poll_next().unwrap().is_none(), "both views are blocked");
    assert!(partitions.iter().all(|p| p.is_blocked()));
    channels[1].resume_consumption().unwrap();
    assert_eq!(fixture.gate.channels_with_data().snapshot().channels, vec![1]);
    let next = fixture.gate.poll_next().unwrap().unwrap();
    assert_eq!(next.buffer.id(), BufferId(61));
    assert!(partitions[0].is_blocked(), "only the resumed channel goes on");
    assert!(matches!(
        channels[1].resume_consumption(),
        Err(ChannelError::IllegalState(message)) if message == "Should be blocked by checkpoint."
    ));
    channels[0].release_all_resources().unwrap();
    assert!(matches!(
        channels[0].resume_consumption(),
        Err(ChannelError::IllegalState(message)) if message == "Channel released."
    ));
}

/// `CheckpointedInputGate.pollNext` as the task calls it: each end-of-output event goes to the
/// gate's `UpstreamRecoveryTracker`, never to the task, and the data behind them comes once
/// the last one resumed every channel.
#[test]
fn the_task_s_poll_hands_end_of_output_events_to_the_tracker_which_resumes_every_channel() {
    use recovery_impl::input_gate::{IndexedInputGate, InputElementKind};
    let (fixture, partitions, _channels) = blocked_pair();
    let gate: &dyn IndexedInputGate = fixture.gate.as_ref();
    let mut records = Vec::new();
    while let Some(element) = gate.poll_next().unwrap() {
        records.push((element.channel_info.input_channel_idx, element.kind));
    }
    assert_eq!(
        records,
        vec![(0, InputElementKind::Record), (1, InputElementKind::Record)]
    );
    assert!(partitions.iter().all(|p| !p.is_blocked()));
    assert!(fixture.gate.upstream_recovery_tracker().all_channels_recovered());
}
