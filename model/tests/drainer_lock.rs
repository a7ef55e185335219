//! The drainer's lock (master's `FetchedChannelStateDrainer`): the trigger holds it from its
//! first channel's `insertRecoveryCheckpointBarrierIfInRecovery` to its last, and the drainer
//! delivers each recovered buffer under it. In `tiny` the trigger is reached between two
//! insertions with a buffer taken and not yet delivered, and no delivery leaves such a state;
//! the other threads (Netty, the drainer's take and finish) still act there.

use std::collections::{HashSet, VecDeque};

use recovery_model::action::Action;
use recovery_model::presets::find_preset;
use recovery_model::state::{State, TaskPc};
use recovery_model::{RecoveryModel, Variant};
use stateright::Model;

fn between_insertions(s: &State) -> bool {
    matches!(s.task, TaskPc::Trigger { inserted: false, channel, .. } if channel > 0)
}

#[test]
fn no_recovered_buffer_is_delivered_between_two_insertions_of_the_trigger() {
    let m = RecoveryModel::new((find_preset("tiny").unwrap().config)(), Variant::Fixed);
    let (mut seen, mut queue) = (HashSet::new(), VecDeque::new());
    for s in m.init_states() {
        seen.insert(s.clone());
        queue.push_back(s);
    }
    let (mut held_with_buffer, mut others_act) = (0, 0);
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        actions.clear();
        m.actions(&s, &mut actions);
        if between_insertions(&s) {
            if s.io_buffer.is_some() {
                held_with_buffer += 1;
            }
            for a in &actions {
                assert!(
                    !matches!(a, Action::OnRecoveredStateBuffer { .. }),
                    "a delivery while the trigger holds the drainer's lock: {a:?} from {s:?}"
                );
                if !matches!(a, Action::InsertRecoveryCheckpointBarrier { .. }) {
                    others_act += 1;
                }
            }
        }
        for a in actions.drain(..) {
            if let Some(t) = m.next_state(&s, a)
                && seen.insert(t.clone())
            {
                queue.push_back(t);
            }
        }
    }
    assert!(
        held_with_buffer > 0,
        "no state where the lock keeps a filled buffer from its channel"
    );
    assert!(others_act > 0, "no other thread acts between two insertions");
}
