//! `RecoveryCheckpointTrigger`'s three phases, each against a checkpoint that starts then.
#![cfg(not(loom))]

mod common;

use std::sync::Arc;

use common::{Fixture, data};
use recovery_impl::fetched_channel_state_drainer::FetchedChannelStateDrainer;
use recovery_impl::local_input_channel::LocalInputChannel;
use recovery_impl::recovery_checkpoint_trigger::RecoveryCheckpointTrigger;
use recovery_impl::result_subpartition::ResultSubpartition;
use recovery_impl::single_input_gate::InputChannelHandle;
use recovery_impl::{BufferKind, ChannelError, DeclineReason, RecoverableInputChannel};

/// A local channel in recovery whose state holds three recovered buffers, the first delivered.
fn one_of_three_delivered() -> (Fixture, Arc<LocalInputChannel>, FetchedChannelStateDrainer) {
    let fixture = Fixture::new(8, 0);
    let channel = LocalInputChannel::new(fixture.context(0, 0), ResultSubpartition::new(), true);
    fixture
        .gate
        .set_input_channels(vec![InputChannelHandle::Local(Arc::clone(&channel))]);
    let drainer = FetchedChannelStateDrainer::new(vec![3]);
    drainer.deliver(0, &*channel, data(1, 1)).unwrap();
    (fixture, channel, drainer)
}

fn queued_kinds(channel: &LocalInputChannel) -> Vec<BufferKind> {
    channel.snapshot().recovered_buffers.iter().map(|b| b.kind).collect()
}

#[test]
fn not_ready_declines_the_checkpoint_as_task_not_ready_and_inserts_nothing() {
    let (_fixture, channel, _drainer) = one_of_three_delivered();
    let refs: [&dyn RecoverableInputChannel; 1] = [&*channel];
    let declined = RecoveryCheckpointTrigger::NotReady.snapshot_and_insert_barriers(&refs, 4);
    assert_eq!(
        declined,
        Err(ChannelError::CheckpointDeclined {
            checkpoint_id: 4,
            reason: DeclineReason::TaskNotReady
        })
    );
    assert_eq!(queued_kinds(&channel), [BufferKind::Data]);
}

#[test]
fn the_drainer_inserts_the_barrier_and_snapshots_what_it_has_not_delivered() {
    let (_fixture, channel, drainer) = one_of_three_delivered();
    let refs: [&dyn RecoverableInputChannel; 1] = [&*channel];
    let trigger = RecoveryCheckpointTrigger::Drainer(drainer);
    let slices = trigger.snapshot_and_insert_barriers(&refs, 4).unwrap();
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0], 1..3, "the second and third buffers are not delivered");
    assert_eq!(
        queued_kinds(&channel),
        [BufferKind::Data, BufferKind::RecoveryCheckpointBarrier(4)]
    );
}

#[test]
fn no_op_inserts_nothing_and_spills_nothing() {
    let (_fixture, channel, _drainer) = one_of_three_delivered();
    let refs: [&dyn RecoverableInputChannel; 1] = [&*channel];
    let slices = RecoveryCheckpointTrigger::NoOp
        .snapshot_and_insert_barriers(&refs, 4)
        .unwrap();
    assert_eq!(slices.len(), 1);
    assert!(slices[0].is_empty(), "nothing to spill");
    assert_eq!(queued_kinds(&channel), [BufferKind::Data]);
}
