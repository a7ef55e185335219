//! One frozen path per `sometimes` property on the `ci` preset (on `faults` for the one that
//! needs upstream failures, on `aligned-timeout` for the one that needs aligned checkpoints, on
//! `shared-pool` for the one that needs the gate's one pool):
//! the shortest way to reach each interesting situation, so that a
//! model change that moves it shows up in review.

use recovery_model::presets::find_preset;
use recovery_model::properties::PropertyId;
use recovery_model::state::{NetBuf, Payload};
use recovery_model::tooling::check::{shortest_examples, shortest_path};
use recovery_model::tooling::format::counterexample;
use recovery_model::{Action, RecoveryModel, Variant};
use stateright::{Expectation, Model};

#[test]
fn every_sometimes_property_has_a_shortest_example_on_ci() {
    // Each property on the first of these presets whose configuration can reach it.
    let models: Vec<RecoveryModel> = ["ci", "faults", "aligned-timeout", "shared-pool"]
        .iter()
        .map(|p| RecoveryModel::new((find_preset(p).unwrap().config)(), Variant::Fixed))
        .collect();
    let sometimes: Vec<PropertyId> = PropertyId::with_expectation(Expectation::Sometimes).collect();
    let home = |p: PropertyId| {
        (models.iter())
            .position(|m| !m.cfg.unreachable_by_config().contains(&p))
            .unwrap_or_else(|| panic!("no preset here can reach {p}"))
    };
    // One search per model for all its examples (the same paths as one search each).
    let mut paths: Vec<_> = (0..models.len())
        .map(|i| {
            let here: Vec<PropertyId> = sometimes.iter().copied().filter(|&p| home(p) == i).collect();
            shortest_examples(&models[i], &here).into_iter()
        })
        .collect();
    for &p in &sometimes {
        let (i, name) = (home(p), p.name());
        let (model, path) = (&models[i], paths[i].next().unwrap());
        let path = path.unwrap_or_else(|| panic!("no example of {name}"));
        let snapshot_name = name.replace(' ', "-");
        insta::assert_snapshot!(
            snapshot_name,
            format!("example of: {name}\n\n{}", counterexample(model, &path))
        );
    }
}

#[test]
fn the_drainer_borrows_a_floating_buffer_from_the_pool_when_its_exclusive_one_is_lent() {
    // `requestBufferBlocking` falls back to the `LocalBufferPool` when the manager's queues are
    // empty: the recovered data then sits in a floating buffer that never was queued.
    let model = RecoveryModel::new((find_preset("borrow").unwrap().config)(), Variant::Fixed);
    let c = 0;
    let mut path = shortest_path(&model, |s| {
        let ch = s.ch(c);
        ch.upstream_ready
            && ch.in_recovery
            && ch.ghost_pushed == 1
            && ch.bm.available() == 0
            && !s.pool_of(c).available.is_empty()
    })
    .expect("the exclusive buffer is lent and the pool has one");
    let mut s = model.init_states().remove(0);
    for a in &path {
        s = model.next_state(&s, *a).unwrap();
    }
    // requestBufferBlocking takes the pool's buffer (it does not park), and the append queues
    // the recovered buffer in it.
    let take = Action::RequestBufferBlocking { channel: c };
    let mut enabled = Vec::new();
    model.actions(&s, &mut enabled);
    assert!(enabled.contains(&take), "the drainer cannot request: {enabled:?}");
    let taken = model.next_state(&s, take).unwrap();
    assert!(
        !taken.io_waiting,
        "the drainer parked instead of taking the pool's buffer"
    );
    assert_eq!(taken.io_buffer, Some((c, NetBuf::Floating(0))));
    let push = Action::OnRecoveredStateBuffer { channel: c };
    let borrowed = model.next_state(&taken, push).unwrap();
    let last = borrowed.ch(c).queue.last().copied().unwrap();
    assert_eq!(
        (last.payload, last.buffer),
        (Payload::Recovered(1), Some(NetBuf::Floating(0)))
    );
    path.extend([take, push]);
    insta::assert_snapshot!(
        "drainer-borrows-floating-buffer",
        format!(
            "example of: recovered data in a buffer borrowed from the pool\n\n{}",
            counterexample(&model, &path)
        )
    );
}
