//! Unit tests of `RemoteInputChannel` and the producer side (subpartition + credit-based reader).
#![cfg(not(loom))]

mod common;

use std::sync::Arc;

use common::{Fixture, data, deliver, event};
use recovery_impl::channel_state_persister::CheckpointStatus;
use recovery_impl::credit_based_sequence_numbering_view_reader::{
    CreditBasedSequenceNumberingViewReader, PartitionRequest,
};
use recovery_impl::recoverable_input_channel::FutureStatus;
use recovery_impl::remote_input_channel::RemoteInputChannel;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
use recovery_impl::{
    BufferId, BufferKind, ChannelError, DataType, DeclineReason, NetworkBuffer, RecoverableInputChannel,
};

struct Remote {
    fixture: Fixture,
    channel: Arc<RemoteInputChannel>,
}

fn remote(needs_recovery: bool, exclusive: usize) -> Remote {
    let fixture = Fixture::new(8, 1);
    let channel = RemoteInputChannel::new(fixture.context(0, exclusive), needs_recovery);
    fixture
        .gate
        .set_input_channels(vec![InputChannelHandle::Remote(Arc::clone(&channel))]);
    channel.setup().unwrap();
    Remote { fixture, channel }
}

fn kinds(channel: &RemoteInputChannel) -> Vec<BufferKind> {
    channel
        .snapshot()
        .received_buffers
        .iter()
        .map(|b| b.buffer.kind)
        .collect()
}

fn sentinel() -> NetworkBuffer {
    NetworkBuffer::event(BufferKind::EndOfFetchedChannelState)
}

#[test]
fn recovered_buffers_get_sequence_numbers_at_append() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    r.channel.on_recovered_state_buffer(data(101, 2)).unwrap();
    let snapshot = r.channel.snapshot();
    let numbers: Vec<i32> = snapshot.received_buffers.iter().map(|b| b.sequence_number).collect();
    assert_eq!(numbers, vec![i32::MIN, i32::MIN + 1]);
    assert_eq!(snapshot.recovery_sequence_number, i32::MIN + 2);
}

#[test]
fn upstream_events_are_stashed_during_recovery_and_replayed_after_the_sentinel() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    r.channel.on_buffer(event(200, BufferKind::Event), 0, 0).unwrap();
    r.channel.on_buffer(event(201, BufferKind::Event), 1, 0).unwrap();
    r.channel.on_recovered_state_buffer(sentinel()).unwrap();
    assert_eq!(r.channel.snapshot().recovery_event_stash.len(), 2);
    let mut polled = Vec::new();
    while let Some(next) = r.fixture.gate.poll_next().unwrap() {
        polled.push(next.buffer.id());
        next.buffer.recycle_buffer().unwrap();
    }
    assert_eq!(polled, vec![BufferId(100), BufferId(200), BufferId(201)]);
    let snapshot = r.channel.snapshot();
    assert!(!snapshot.in_recovery && snapshot.recovery_event_stash.is_empty());
    assert_eq!(snapshot.state_consumed, FutureStatus::Completed);
}

#[test]
fn priority_events_go_to_the_head_during_recovery() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    r.channel
        .on_buffer(event(200, BufferKind::CheckpointBarrier(3)), 0, 0)
        .unwrap();
    assert_eq!(
        kinds(&r.channel),
        vec![BufferKind::CheckpointBarrier(3), BufferKind::Data]
    );
    assert_eq!(r.channel.snapshot().num_priority_elements, 1);
    assert_eq!(r.fixture.gate.snapshot().channels_with_data.num_priority, 1);
}

#[test]
fn live_data_during_recovery_is_a_protocol_violation() {
    let r = remote(true, 2);
    let result = r.channel.on_buffer(data(200, 1), 0, 0);
    assert!(matches!(result, Err(ChannelError::ProtocolViolation(_))));
    assert!(r.channel.snapshot().received_buffers.is_empty());
    assert!(matches!(
        r.channel.get_next_buffer(),
        Err(ChannelError::ProtocolViolation(_))
    ));
}

#[test]
fn out_of_order_upstream_buffer_is_a_reordering_error() {
    let r = remote(false, 2);
    let result = r.channel.on_buffer(event(200, BufferKind::Event), 1, 0);
    assert_eq!(result, Err(ChannelError::BufferReordering { expected: 0, actual: 1 }));
}

#[test]
fn credit_is_withheld_during_recovery_and_announced_once_after_consumption() {
    let r = remote(true, 2);
    r.channel.on_sender_backlog(3);
    let snapshot = r.channel.snapshot();
    assert_eq!(snapshot.unannounced_credit, 0);
    assert!(!snapshot.buffer_manager.notify_available);
    r.channel.on_recovered_state_buffer(sentinel()).unwrap();
    assert!(r.fixture.gate.poll_next().unwrap().is_none());
    let snapshot = r.channel.snapshot();
    // 2 exclusive + 1 floating requested for the backlog while disabled.
    assert_eq!(snapshot.unannounced_credit, 3);
    assert_eq!(snapshot.credit_notifications, 1);
    assert_eq!(r.channel.get_and_reset_unannounced_credit(), 3);
}

#[test]
fn checkpoint_in_recovery_skips_the_priority_head() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    r.channel.insert_recovery_checkpoint_barrier_if_in_recovery(4).unwrap();
    r.channel.on_recovered_state_buffer(data(101, 2)).unwrap();
    r.channel
        .on_buffer(event(200, BufferKind::CheckpointBarrier(4)), 0, 0)
        .unwrap();
    r.channel.checkpoint_started(4).unwrap();
    let persisted: Vec<BufferId> = r
        .fixture
        .writer
        .persisted(4, r.channel.channel_info())
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(persisted, vec![BufferId(100)]);
    assert_eq!(
        kinds(&r.channel),
        vec![BufferKind::CheckpointBarrier(4), BufferKind::Data, BufferKind::Data]
    );
}

#[test]
fn checkpoint_in_recovery_without_barrier_declines() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    let reason = DeclineReason::MissingRecoveryCheckpointBarrier;
    assert_eq!(
        r.channel.checkpoint_started(9),
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id: 9,
            reason
        })
    );
}

#[test]
fn older_checkpoint_after_a_newer_barrier_is_subsumed() {
    let r = remote(false, 2);
    r.channel.request_subpartitions().unwrap();
    r.channel
        .on_buffer(event(200, BufferKind::CheckpointBarrier(5)), 0, 0)
        .unwrap();
    assert_eq!(
        r.channel.checkpoint_started(4),
        Err(ChannelError::CheckpointSubsumed {
            checkpoint_id: 4,
            newer_checkpoint_id: 5
        })
    );
}

#[test]
fn live_data_before_the_barrier_is_persisted_after_recovery() {
    let r = remote(false, 2);
    r.channel.request_subpartitions().unwrap();
    r.channel.checkpoint_started(5).unwrap();
    let buffer = r.channel.request_buffer().unwrap().fill(BufferKind::Data, 7);
    let id = buffer.id();
    r.channel.on_buffer(buffer, 0, 0).unwrap();
    r.channel
        .on_buffer(event(200, BufferKind::CheckpointBarrier(5)), 1, 0)
        .unwrap();
    let snapshot = r.channel.snapshot();
    assert_eq!(snapshot.persister.checkpoint_status, CheckpointStatus::BarrierReceived);
    let persisted: Vec<BufferId> = r
        .fixture
        .writer
        .persisted(5, r.channel.channel_info())
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(persisted, vec![id]);
}

#[test]
fn finish_recovered_buffer_delivery_appends_the_sentinel_after_the_first_upstream_message() {
    let r = remote(true, 2);
    r.channel.on_buffer(event(200, BufferKind::Event), 0, 0).unwrap();
    r.channel.finish_recovered_buffer_delivery().unwrap();
    assert_eq!(kinds(&r.channel), vec![BufferKind::EndOfFetchedChannelState]);
    assert!(
        r.channel.snapshot().in_recovery,
        "finishing delivery neither unstashes nor leaves recovery"
    );
}

#[test]
fn release_drains_queue_and_stash_and_returns_every_buffer() {
    let r = remote(true, 2);
    r.channel.on_buffer(event(200, BufferKind::Event), 0, 0).unwrap();
    let recovery = r.channel.request_recovery_buffer_blocking().unwrap();
    r.channel
        .on_recovered_state_buffer(recovery.fill(BufferKind::Data, 1))
        .unwrap();
    r.channel.release_all_resources().unwrap();
    let snapshot = r.channel.snapshot();
    assert!(snapshot.received_buffers.is_empty() && snapshot.recovery_event_stash.is_empty());
    assert_eq!(
        snapshot.state_consumed,
        FutureStatus::Failed(recovery_impl::ChannelError::Released(
            "Input channel has already been released.".into()
        ))
    );
    r.fixture.assert_all_buffers_returned(1);
    assert!(matches!(r.channel.get_next_buffer(), Err(ChannelError::Released(_))));
}

#[test]
fn reader_for_a_recovering_consumer_starts_without_credit_and_sends_events_only() {
    let subpartition = ResultSubpartition::new();
    let receiver = recovery_impl::InputChannelInfo {
        gate_idx: 0,
        input_channel_idx: 0,
    };
    let request = PartitionRequest {
        receiver,
        credit: 2,
        needs_recovery: true,
    };
    let mut reader = CreditBasedSequenceNumberingViewReader::new(&request, Arc::clone(&subpartition)).unwrap();
    assert_eq!(reader.num_credits_available(), 0);
    subpartition.add(event(1, BufferKind::Event)).unwrap();
    subpartition.add(data(2, 2)).unwrap();
    let first = reader.get_next_buffer().unwrap().unwrap();
    assert_eq!(
        (first.buffer.id(), first.sequence_number, first.next_data_type),
        (BufferId(1), 0, DataType::None)
    );
    assert!(reader.get_next_buffer().unwrap().is_none(), "data needs credit");
    reader.add_credit(1);
    let second = reader.get_next_buffer().unwrap().unwrap();
    assert_eq!((second.buffer.id(), second.sequence_number), (BufferId(2), 1));
    assert_eq!(reader.num_credits_available(), 0);
}

#[test]
fn reader_without_recovery_starts_with_the_initial_credit() {
    let subpartition = ResultSubpartition::new();
    let receiver = recovery_impl::InputChannelInfo {
        gate_idx: 0,
        input_channel_idx: 0,
    };
    let request = PartitionRequest {
        receiver,
        credit: 2,
        needs_recovery: false,
    };
    let reader = CreditBasedSequenceNumberingViewReader::new(&request, subpartition).unwrap();
    assert_eq!(reader.snapshot().num_credits_available, 2);
}

#[test]
fn remote_live_data_flows_only_after_recovery_and_in_order() {
    let r = remote(true, 2);
    r.channel.request_subpartitions().unwrap();
    let request = r.channel.partition_request().unwrap();
    assert!(request.needs_recovery);
    let subpartition = ResultSubpartition::new();
    let mut reader = CreditBasedSequenceNumberingViewReader::new(&request, Arc::clone(&subpartition)).unwrap();
    r.channel.on_recovered_state_buffer(data(100, 100)).unwrap();
    subpartition.add(event(300, BufferKind::Event)).unwrap();
    subpartition.add(data(301, 1)).unwrap();
    subpartition.add(data(302, 2)).unwrap();
    assert_eq!(
        deliver(&mut reader, &r.channel).unwrap(),
        1,
        "only the event passes without credit"
    );
    r.channel.finish_recovered_buffer_delivery().unwrap();
    let mut payloads = Vec::new();
    loop {
        while let Some(next) = r.fixture.gate.poll_next().unwrap() {
            payloads.push((next.buffer.kind(), next.buffer.payload()));
            next.buffer.recycle_buffer().unwrap();
        }
        if deliver(&mut reader, &r.channel).unwrap() == 0 {
            break;
        }
    }
    assert_eq!(
        payloads,
        vec![
            (BufferKind::Data, 100),
            (BufferKind::Event, 0),
            (BufferKind::Data, 1),
            (BufferKind::Data, 2)
        ]
    );
}

fn stash_kinds(channel: &RemoteInputChannel) -> Vec<(BufferKind, i32)> {
    let stash = channel.snapshot().recovery_event_stash;
    stash.iter().map(|b| (b.buffer.kind, b.sequence_number)).collect()
}

/// The finding "The alignment timeout fails the task when the announced barrier is in the
/// recovery event stash" (docs/findings.md): in recovery the timeoutable barrier is stashed
/// with the other events while its announcement goes to the priority head; the task polls the
/// announcement, and `convertToPriorityEvent` then looks for the barrier in `receivedBuffers`
/// only, and throws.
#[test]
fn an_aligned_barrier_stashed_in_recovery_cannot_be_converted_to_a_priority_event() {
    let r = remote(true, 2);
    r.channel.on_recovered_state_buffer(data(100, 1)).unwrap();
    r.channel.on_buffer(event(200, BufferKind::Event), 0, 0).unwrap();
    let barrier = BufferKind::TimeoutableAlignedCheckpointBarrier(1);
    r.channel.on_buffer(event(201, barrier), 1, 0).unwrap();
    assert_eq!(
        kinds(&r.channel),
        vec![BufferKind::EventAnnouncement(1), BufferKind::Data]
    );
    let snapshot = r.channel.snapshot();
    assert_eq!(snapshot.received_buffers[0].sequence_number, 1);
    assert_eq!(snapshot.num_priority_elements, 1);
    // checkForBarrier saw it: hasBarrierReceived() holds.
    assert_eq!(snapshot.persister.checkpoint_status, CheckpointStatus::BarrierReceived);
    assert_eq!(stash_kinds(&r.channel), vec![(BufferKind::Event, 0), (barrier, 1)]);
    assert_eq!(r.fixture.gate.snapshot().channels_with_data.num_priority, 1);

    // The task polls the announcement (processBarrierAnnouncement takes its sequence number).
    let announcement = r.fixture.gate.poll_next().unwrap().expect("the announcement");
    assert_eq!(announcement.buffer.kind(), BufferKind::EventAnnouncement(1));
    assert_eq!(announcement.sequence_number, 1);
    announcement.buffer.recycle_buffer().unwrap();

    // The alignment timer fires.
    let error = r.channel.convert_to_priority_event(1).unwrap_err();
    assert!(matches!(error, ChannelError::NoSuchElement(_)), "{error:?}");
    assert_eq!(kinds(&r.channel), vec![BufferKind::Data]);
    assert_eq!(stash_kinds(&r.channel), vec![(BufferKind::Event, 0), (barrier, 1)]);
}

/// Outside recovery the barrier is queued in place behind what came before it, its
/// announcement at the priority head; once the announcement is polled, `convertToPriorityEvent`
/// moves the barrier, with its sequence number, to the priority head and queues the channel
/// with priority at the gate.
#[test]
fn an_aligned_barrier_received_outside_recovery_is_converted_to_a_priority_event() {
    let r = remote(false, 2);
    r.channel.on_buffer(event(200, BufferKind::Event), 0, 0).unwrap();
    let barrier = BufferKind::TimeoutableAlignedCheckpointBarrier(1);
    r.channel.on_buffer(event(201, barrier), 1, 0).unwrap();
    assert_eq!(
        kinds(&r.channel),
        vec![BufferKind::EventAnnouncement(1), BufferKind::Event, barrier]
    );
    assert!(stash_kinds(&r.channel).is_empty());
    let announcement = r.fixture.gate.poll_next().unwrap().expect("the announcement");
    assert_eq!(
        (announcement.buffer.kind(), announcement.sequence_number),
        (BufferKind::EventAnnouncement(1), 1)
    );
    announcement.buffer.recycle_buffer().unwrap();

    r.channel.convert_to_priority_event(1).unwrap();
    assert_eq!(
        kinds(&r.channel),
        vec![BufferKind::CheckpointBarrier(1), BufferKind::Event]
    );
    let snapshot = r.channel.snapshot();
    assert_eq!(snapshot.received_buffers[0].sequence_number, 1);
    assert_eq!(snapshot.num_priority_elements, 1);
    assert_eq!(r.fixture.gate.snapshot().channels_with_data.num_priority, 1);
    // The barrier overtakes the event it arrived behind.
    let next = r.fixture.gate.poll_next().unwrap().expect("the barrier");
    assert_eq!(
        (next.buffer.kind(), next.sequence_number),
        (BufferKind::CheckpointBarrier(1), 1)
    );
    next.buffer.recycle_buffer().unwrap();
    // A second timeout finds nothing to convert.
    let error = r.channel.convert_to_priority_event(1).unwrap_err();
    assert!(matches!(error, ChannelError::NoSuchElement(_)), "{error:?}");
}

/// The producer adds the timeoutable barrier like an ordinary event: at the tail, behind the
/// buffers queued before it (an unaligned barrier overtakes them).
#[test]
fn the_subpartition_adds_a_timeoutable_aligned_barrier_at_the_tail() {
    let subpartition = ResultSubpartition::new();
    subpartition.add(data(300, 1)).unwrap();
    let barrier = BufferKind::TimeoutableAlignedCheckpointBarrier(1);
    subpartition.add(event(301, barrier)).unwrap();
    let snapshot = subpartition.snapshot();
    let queued: Vec<BufferKind> = snapshot.buffers.iter().map(|b| b.kind).collect();
    assert_eq!(queued, vec![BufferKind::Data, barrier]);
    assert_eq!(snapshot.num_priority_elements, 0);
}

fn receiver() -> recovery_impl::InputChannelInfo {
    recovery_impl::InputChannelInfo {
        gate_idx: 0,
        input_channel_idx: 0,
    }
}

/// The producer side of a blocking `EndOfOutputChannelStateEvent`: it goes out with backlog 0,
/// then only a priority element does (whatever the credit); `resumeConsumption` drops the
/// credit of a reader whose initial credit is 0 and unblocks the subpartition.
#[test]
fn the_reader_sends_nothing_but_barriers_until_it_resumes_and_drops_its_credit_without_an_initial_one() {
    for initial in [0, 2] {
        let subpartition = ResultSubpartition::new();
        let request = PartitionRequest {
            receiver: receiver(),
            credit: initial,
            needs_recovery: false,
        };
        let mut reader = CreditBasedSequenceNumberingViewReader::new(&request, Arc::clone(&subpartition)).unwrap();
        reader.add_credit(1);
        subpartition.add(event(1, BufferKind::EndOfOutputChannelState)).unwrap();
        subpartition.add(data(2, 2)).unwrap();
        let eoo = reader.get_next_buffer().unwrap().unwrap();
        assert_eq!(
            (eoo.buffer.id(), eoo.backlog, eoo.next_data_type),
            (BufferId(1), 0, DataType::None)
        );
        assert!(reader.get_next_buffer().unwrap().is_none(), "blocked, credit or not");
        assert_eq!(reader.get_availability_and_backlog(), (false, 0));
        subpartition
            .add(NetworkBuffer::event(BufferKind::CheckpointBarrier(1)))
            .unwrap();
        let barrier = reader.get_next_buffer().unwrap().unwrap();
        assert_eq!(barrier.buffer.kind(), BufferKind::CheckpointBarrier(1));
        reader.resume_consumption().unwrap();
        assert!(!subpartition.is_blocked());
        let credit = initial + 1 - i32::from(initial == 0);
        assert_eq!(reader.num_credits_available(), credit, "initial credit {initial}");
        assert_eq!(reader.get_next_buffer().unwrap().is_some(), credit > 0);
    }
}

/// `onBlockingUpstream`: a channel without exclusive buffers gives its floating buffers back
/// to the pool when the blocking event arrives (the sender announces no backlog until it
/// resumes); one with exclusive buffers keeps them. A backlog on it is illegal.
#[test]
fn a_blocking_event_gives_the_floating_buffers_back_only_without_exclusive_buffers() {
    for exclusive in [0, 1] {
        let r = remote(false, exclusive);
        r.channel.on_sender_backlog(1);
        assert_eq!(r.channel.snapshot().buffer_manager.floating.len(), 1);
        assert!(r.fixture.local_pool.snapshot().available.is_empty());
        r.channel
            .on_buffer(event(1, BufferKind::EndOfOutputChannelState), 0, 0)
            .unwrap();
        let manager = r.channel.snapshot().buffer_manager;
        let pool = r.fixture.local_pool.snapshot().available.len();
        match exclusive {
            0 => assert_eq!((manager.floating.len(), manager.num_required_buffers, pool), (0, 0, 1)),
            _ => assert_eq!((manager.floating.len(), pool), (1, 0)),
        }
        assert_eq!(kinds(&r.channel), vec![BufferKind::EndOfOutputChannelState]);
        let error = r
            .channel
            .on_buffer(event(2, BufferKind::EndOfOutputChannelState), 1, 3)
            .unwrap_err();
        assert!(matches!(error, ChannelError::IllegalState(_)), "{error:?}");
    }
}

/// `resumeConsumption` queues one `ResumeConsumption` for the Netty client, dropping the
/// unannounced credit where the initial credit is 0; the client writes it once, and drops it
/// for a channel released meanwhile.
#[test]
fn resume_consumption_queues_one_message_and_resets_the_credit_without_exclusive_buffers() {
    for exclusive in [0, 1] {
        let r = remote(false, exclusive);
        assert!(matches!(
            r.channel.resume_consumption(),
            Err(ChannelError::IllegalState(_))
        ));
        r.channel.request_subpartitions().unwrap();
        r.channel.on_sender_backlog(1);
        let unannounced = r.channel.unannounced_credit();
        assert!(unannounced > 0);
        r.channel.resume_consumption().unwrap();
        let expected = if exclusive == 0 { 0 } else { unannounced };
        assert_eq!(r.channel.unannounced_credit(), expected);
        assert!(r.channel.resume_consumption_queued());
        let message = r.channel.take_resume_consumption().unwrap();
        assert_eq!(message.receiver, receiver());
        assert!(r.channel.take_resume_consumption().is_none(), "written once");
        r.channel.resume_consumption().unwrap();
        r.channel.release_all_resources().unwrap();
        assert!(
            r.channel.take_resume_consumption().is_none(),
            "a released channel's is dropped"
        );
        assert!(!r.channel.resume_consumption_queued());
        assert!(matches!(
            r.channel.resume_consumption(),
            Err(ChannelError::IllegalState(message)) if message == "Channel released."
        ));
    }
}
