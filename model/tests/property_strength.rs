//! The oracle of the model's mutation score (docs/model.md, "Property strength"): property
//! verdicts only. With every fix in place each preset of [`FIXED`] gets the verdicts it is meant
//! to get, and every bug-zoo variant is found by its property on its preset, at the depth the bug
//! zoo gives (a change that moves a bug's shortest counterexample changes what the property
//! sees of it), and each finding's counterexample has the length docs/findings.md gives. State
//! counts,
//! snapshots and frozen paths are left out on purpose: they would "catch" any change, also one
//! that no property notices. What it does assert beside the verdicts is that the search is
//! sound: no two distinct states of `tiny` and `floating` share a fingerprint, since the seen
//! set keeps fingerprints only and a collision would silently drop a state and all it leads
//! to. Ignored in `cargo test`; cargo-mutants runs it in release.

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::config::{Delivery, ModelConfig, Upstream, local, remote};
use recovery_model::presets::find_preset;
use recovery_model::properties::PropertyId;
use recovery_model::state::Payload;
use recovery_model::tooling::check::{check, shortest_counterexample, shortest_path};
use recovery_model::tooling::fingerprint::state_fingerprint;
use recovery_model::{RecoveryModel, State, Variant};
use stateright::Model;
use std::collections::HashMap;

/// The presets whose verdicts the oracle asserts: every preset that checks in a few seconds in
/// release, so that each part of the protocol (both channel kinds, the drainer, the conversion,
/// the flag-off path, 2.3.0's migration, releases, faults, late writes, stashes, the priority
/// split, the release split, aligned checkpoints with timeout on one channel and on two, a floating buffer released, a
/// channel living on the shared pool's floating buffers, the drainer borrowing from the pool and
/// waiting for it, the drainer parked until a recycle wakes it, floating credit arriving late) is under some property.
const FIXED: &[&str] = &[
    "tiny",
    "local-buffers",
    "stash-order",
    "priority-race",
    "aligned-timeout",
    "aligned-timeout-two-channels",
    "release-window-local",
    "release-window-remote",
    "no-trigger",
    "subsume",
    "conversion",
    "legacy",
    "no-recovery",
    "late",
    "migration",
    "faults",
    "floating",
    "release-floating",
    "shared-pool-floating-only",
    "shared-pool",
    "shared-pool-live",
    "pool-starvation",
    "drain-wakeup",
    "late-floating-credit",
    "recovery-buffer-wait",
    "borrow",
];

/// The findings' counterexamples (docs/findings.md, "Steps"; `model/tests/check_presets.rs`
/// asserts the same lengths): preset, property, length of the shortest counterexample.
const FINDINGS: &[(&str, PropertyId, usize)] = &[
    ("priority-race", PropertyId::PriorityHonoured, 8),
    ("drain-wakeup", PropertyId::RecoveryCompletes, 9),
    ("late-floating-credit", PropertyId::CreditConservation, 22),
    ("late-floating-credit", PropertyId::NoProtocolViolation, 27),
];

/// A remote channel with a floating buffer, released or closed at any point: the smallest
/// configuration in which the gate's close finds floating segments in its pool (no preset under
/// `ci` has both).
fn remote_floating_release() -> ModelConfig {
    ModelConfig {
        channels: vec![remote(1, &[Upstream::Event, Upstream::Data], 1, 1)],
        checkpoints: 1,
        delivery: Delivery::Drainer,
        insert_recovery_barriers: true,
        release: true,
        faults: false,
        release_step: false,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    }
}

/// A remote channel without exclusive buffers, living on one floating buffer, released in
/// Flink's two parts: between them the channel is released and still holds its floating buffer,
/// which its upstream's blocking event makes it give back (`onBlockingUpstream`).
fn remote_floating_only_release_step() -> ModelConfig {
    ModelConfig {
        channels: vec![remote(1, &[Upstream::EndOfOutputChannelState, Upstream::Data], 0, 1)],
        release_step: true,
        ..remote_floating_release()
    }
}

/// `preset` with two recovered buffers on its local channel (each preset's channels recover
/// one): on the flag-off path (`legacy`) the `RecoveredInputChannel`'s buffers are numbered one
/// by one; in 2.3.0's migration (`migration`) it delivers one, and the physical channel numbers
/// the one it takes over from `i32::MIN` again.
fn two_recovered(preset: &str) -> ModelConfig {
    let mut cfg = (find_preset(preset).unwrap().config)();
    cfg.channels[0].recovered = 2;
    cfg
}

/// A remote channel whose recovery ends at once and a local channel recovering one buffer, two
/// checkpoints: the coordinator aborts the first, the remote channel takes the second's barrier,
/// and the task's late trigger of the first is subsumed there while its recovery barrier stays
/// queued on the local channel, which the second's `collectPreRecoveryBarrier` walks past.
fn subsumed_leaves_recovery_barrier() -> ModelConfig {
    ModelConfig {
        channels: vec![
            remote(0, &[Upstream::EndOfOutputChannelState], 1, 0),
            local(1, &[Upstream::EndOfOutputChannelState]),
        ],
        checkpoints: 2,
        release: false,
        ..remote_floating_release()
    }
}

/// Whether a queue holds checkpoint 1's recovery barrier, then a recovered buffer, then
/// checkpoint 2's: the walk `subsumed_leaves_recovery_barrier` is there to load.
fn stale_barrier_before_a_buffer_and_the_next(s: &State) -> bool {
    const WALKED: [Payload; 3] = [
        Payload::RecoveryBarrier(1),
        Payload::Recovered(0),
        Payload::RecoveryBarrier(2),
    ];
    s.channels.iter().any(|ch| {
        let payloads: Vec<Payload> = ch.queue.iter().map(|e| e.payload).collect();
        payloads.windows(3).any(|w| w == WALKED)
    })
}

/// Asserts every verdict of `cfg` with every fix in place.
fn gets_its_verdicts(name: &str, cfg: ModelConfig, unreachable: &[PropertyId]) {
    let report = check(RecoveryModel::new(cfg, Variant::Fixed), name, unreachable, 1, true);
    assert_eq!(report.acyclic, Some(true), "{name}: the state graph has a cycle");
    for r in &report.properties {
        assert!(r.as_expected(), "{name}: {} is {:?}", r.name, r.status);
    }
}

/// Every reachable state of `cfg`, each kept whole under its fingerprint: two distinct states
/// with one fingerprint fail.
fn fingerprints_tell_states_apart(name: &str, cfg: ModelConfig) {
    let model = RecoveryModel::new(cfg, Variant::Fixed);
    let mut seen: HashMap<u64, State> = HashMap::new();
    let mut frontier = model.init_states();
    let mut actions = Vec::new();
    while let Some(state) = frontier.pop() {
        match seen.get(&state_fingerprint(&state)) {
            Some(other) => {
                assert_eq!(other, &state, "{name}: two states share fingerprint");
                continue;
            }
            None => {
                actions.clear();
                model.actions(&state, &mut actions);
                frontier.extend(actions.iter().filter_map(|&a| model.next_state(&state, a)));
                seen.insert(state_fingerprint(&state), state);
            }
        }
    }
}

#[test]
#[ignore = "the mutation oracle; run in release: cargo test --release -p recovery-model --test property_strength -- --ignored"]
fn every_preset_gets_its_verdicts_and_every_variant_is_found() {
    for name in FIXED {
        let p = find_preset(name).unwrap();
        gets_its_verdicts(name, (p.config)(), p.unreachable);
    }
    // The findings' presets with every fix of docs/findings.md, where no violation is excused:
    // a change in the code a finding touches cannot hide behind its declared violation.
    for name in ["priority-race", "drain-wakeup", "late-floating-credit", "migration"] {
        let p = find_preset(name).unwrap();
        let cfg = (p.config)().with_every_fix();
        assert!(cfg.violated_by_config().is_empty(), "{name}");
        gets_its_verdicts(&format!("{name} --flink-fix all"), cfg, p.unreachable);
    }
    gets_its_verdicts(
        "remote-floating-release",
        remote_floating_release(),
        &[PropertyId::StaleRecoveryBarrierPolled],
    );
    gets_its_verdicts(
        "remote-floating-only-release-step",
        remote_floating_only_release_step(),
        &[
            PropertyId::StaleRecoveryBarrierPolled,
            PropertyId::RecycleRacesEnableNotify,
        ],
    );
    gets_its_verdicts(
        "subsumed-leaves-recovery-barrier",
        subsumed_leaves_recovery_barrier(),
        &[
            PropertyId::CheckpointPersistsLiveData,
            PropertyId::RecycleRacesEnableNotify,
            PropertyId::CheckpointDeclinedForMissingBarrier,
            PropertyId::StaleRecoveryBarrierPolled,
        ],
    );
    assert!(
        shortest_path(
            &RecoveryModel::new(subsumed_leaves_recovery_barrier(), Variant::Fixed),
            stale_barrier_before_a_buffer_and_the_next
        )
        .is_some(),
        "subsumed-leaves-recovery-barrier: no queue holds a stale recovery barrier before a buffer and the next"
    );
    gets_its_verdicts(
        "legacy-two-recovered",
        two_recovered("legacy"),
        find_preset("legacy").unwrap().unreachable,
    );
    gets_its_verdicts(
        "migration-two-recovered",
        two_recovered("migration"),
        find_preset("migration").unwrap().unreachable,
    );
    for name in ["tiny", "floating"] {
        fingerprints_tell_states_apart(name, (find_preset(name).unwrap().config)());
    }
    for &(name, property, steps) in FINDINGS {
        let model = RecoveryModel::new((find_preset(name).unwrap().config)(), Variant::Fixed);
        let path = shortest_counterexample(&model, property).map(|p| p.len());
        assert_eq!(path, Some(steps), "{name}: the finding's {property} counterexample");
    }
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bug-zoo.md")).unwrap();
    for info in VARIANTS {
        let cfg = (find_preset(info.preset).unwrap().config)();
        let model = RecoveryModel::new(cfg, info.variant);
        let path = shortest_counterexample(&model, info.property);
        let steps = path.unwrap_or_else(|| panic!("{}: {} not violated on {}", info.name, info.property, info.preset));
        assert_eq!(
            steps.len(),
            zoo_steps(&docs, info.name),
            "{}: {} violated at another depth on {}",
            info.name,
            info.property,
            info.preset
        );
    }
}

/// The length of `variant`'s shortest counterexample in docs/bug-zoo.md's table (the last cell
/// of its row), which `model/tests/bug_zoo.rs` keeps equal to the model's.
fn zoo_steps(docs: &str, variant: &str) -> usize {
    let prefix = format!("| [{variant}](#");
    let row = docs
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no row for {variant} in docs/bug-zoo.md"));
    row.trim_end_matches(" |").rsplit("| ").next().unwrap().parse().unwrap()
}
