//! Replays against the implementation: every edge of `tiny`, a deliberately broken driver, and
//! the bug zoo's counterexamples, which must not be reproducible on the fixed implementation.

mod common;

use common::StashAtHead;
use conformance::conform::{ConformOptions, conform_edges};
use conformance::driver::{Driver, ModelDriver};
use conformance::generate::{SplitMix64, random_walk};
use conformance::impl_driver::ImplDriver;
use conformance::observation::{Item, Observation, diff};
use conformance::replay::{Compare, lockstep};
use recovery_model::bug_zoo::VARIANTS;
use recovery_model::properties::PropertyId;
use recovery_model::state::Payload;
use recovery_model::tooling::check::shortest_counterexample;
use recovery_model::{Action, ChannelKind, RecoveryModel, Variant, preset};
use std::fmt::Write;

fn model(name: &str, variant: Variant) -> RecoveryModel {
    RecoveryModel::new(preset(name).unwrap(), variant)
}

/// Replays every edge of preset `name` and asserts full coverage and no divergence.
fn every_edge_without_divergence(name: &str) -> conformance::conform::ConformReport {
    let m = model(name, Variant::Fixed);
    let factory = || Ok(Box::new(ImplDriver::new(&m.cfg)) as Box<dyn Driver>);
    let r = conform_edges(&m, &factory, ConformOptions::default(), &|| {}).expect("no harness error");
    if let Some(d) = &r.first_divergence {
        panic!("{name}: {d}");
    }
    assert_eq!(
        (Some(r.edges_covered), Some(r.states_covered)),
        (r.edges_total, r.states_total)
    );
    assert_eq!(r.divergences, 0);
    r
}

/// The action kinds a preset cannot reach are exactly `expected` and the model-only ones (as
/// sets: a new action kind shows by name where it is missing).
fn assert_unreachable(r: &conformance::conform::ConformReport, expected: &[&str]) {
    use std::collections::BTreeSet;
    let unreachable: BTreeSet<&str> = r.kinds_unreachable.iter().copied().collect();
    let expected: BTreeSet<&str> = (expected.iter().chain(Action::MODEL_ONLY_KINDS)).copied().collect();
    assert_eq!(unreachable, expected);
    assert_eq!(r.action_kinds_covered, Action::KINDS.len() - expected.len());
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "0.6 M steps, slow in debug: the PR tier replays every edge of tiny in release (`cdr conform`)"
)]
fn every_edge_of_tiny_replays_on_the_implementation_without_divergence() {
    let r = every_edge_without_divergence("tiny");
    // tiny has no conversion, no aligned checkpoint (its barrier and alignment timer), no split
    // priority notification nor flag clear (`priority-race`), no channel without exclusive
    // buffers (the backlog announcement), no floating buffer,
    // one checkpoint (none aborted for a next), no upstream written during the run, no faults
    // and no release (nor its second part, nor gate close).
    assert_unreachable(
        &r,
        &[
            "convertRecoveredInputChannels",
            "notifyPriorityEvent",
            "pullPriorityFromSubpartitionView",
            "abortPendingCheckpoint",
            "processTimeoutableCheckpointBarrier",
            "alignedBarrierTimeout",
            "alignedCheckpointTimeout",
            "announceBacklog",
            "recycleFloatingBuffer",
            "add",
            "releasePartition",
            "onError",
            "releaseAllResources",
            "releaseQueuedBuffers",
            "close",
        ],
    );
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "0.4 M steps, slow in debug: the PR tier replays every edge of conversion in release (`cdr conform`)"
)]
fn every_edge_of_the_conversion_preset_replays_on_the_implementation_without_divergence() {
    let r = every_edge_without_divergence("conversion");
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
    let unreachable = &r.kinds_unreachable;
    assert!(
        !unreachable.contains(&"convertRecoveredInputChannels"),
        "{unreachable:?}"
    );
    // No drainer (its push, its wait for a buffer and its finish), no separate
    // requestPartitions, no aligned checkpoint, one checkpoint (none aborted for a next), no
    // split priority notification, no channel without exclusive buffers, no late writes, no
    // faults, no release (nor its second part) nor gate close.
    assert_unreachable(
        &r,
        &[
            "onRecoveredStateBuffer",
            "finishRecoveredBufferDelivery",
            "requestPartitions",
            "processTimeoutableCheckpointBarrier",
            "alignedBarrierTimeout",
            "alignedCheckpointTimeout",
            "notifyPriorityEvent",
            "pullPriorityFromSubpartitionView",
            "announceBacklog",
            "requestBufferBlocking",
            "abortPendingCheckpoint",
            "add",
            "releasePartition",
            "onError",
            "releaseAllResources",
            "releaseQueuedBuffers",
            "close",
        ],
    );
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "0.2 M steps, slow in debug: the PR tier replays every edge of subsume in release (`cdr conform`)"
)]
fn every_edge_of_the_subsume_preset_replays_on_the_implementation_without_divergence() {
    // Two checkpoints on channels out of recovery: barriers of either checkpoint overtaking
    // queued data, an obsolete barrier whose sequence number must be forgotten, and an older
    // checkpoint subsumed by a newer one, on master's branch of checkpointStarted.
    let r = every_edge_without_divergence("subsume");
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
#[ignore = "1.1 M steps, too slow in debug: the PR tier replays every edge of legacy in release (`cdr conform`)"]
fn every_edge_of_the_legacy_preset_replays_on_the_implementation_without_divergence() {
    // The flag off: RecoveredInputChannels filled by the IO thread and polled through the gate
    // (their legacy sentinel completing the future), released at any point, converted with
    // toInputChannel(false) once every future is complete.
    let r = every_edge_without_divergence("legacy");
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
#[ignore = "3.6 M steps, too slow in debug: the PR tier replays every edge of migration in release (`cdr conform`)"]
fn every_edge_of_the_migration_preset_replays_on_the_implementation_without_divergence() {
    // Flink 2.3.0 with the flag on: what the task has not polled from the RecoveredInputChannels
    // (the legacy sentinel included) migrates into the physical channels at the conversion.
    let r = every_edge_without_divergence("migration");
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
#[ignore = "2.7 M steps, too slow in debug: the PR tier replays every edge of faults in release (`cdr conform`)"]
fn every_edge_of_the_faults_preset_replays_on_the_implementation_without_divergence() {
    // Upstream failures: a connection error (onError keeps the cause and notifies the gate,
    // getNextBuffer rethrows it) and a subpartition released under its local reader (the next
    // poll finds the view released, or in recovery no pending priority event in it).
    let r = every_edge_without_divergence("faults");
    for kind in ["onError", "releasePartition"] {
        assert!(!r.kinds_unreachable.contains(&kind), "{kind}");
    }
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
fn every_edge_of_the_local_buffers_preset_replays_on_the_implementation_without_divergence() {
    // A local channel's recovery BufferManager lends its exclusive buffer to the drainer
    // (requestRecoveryBufferBlocking after upstreamReady): the second recovered buffer waits
    // for the first to be recycled; a release returns what the operator still holds to the
    // global pool.
    let r = every_edge_without_divergence("local-buffers");
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
#[ignore = "1.8 M steps, too slow in debug: the PR tier replays every edge of late in release (`cdr conform`)"]
fn every_edge_of_the_late_preset_replays_on_the_implementation_without_divergence() {
    // The local producer writes while the consumer runs: before the view exists, into an
    // empty subpartition (its listener told) and behind queued data (not told), during
    // recovery (hidden) and after.
    let r = every_edge_without_divergence("late");
    assert!(!r.kinds_unreachable.contains(&"add"));
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
fn every_edge_of_the_priority_race_preset_replays_on_the_implementation_without_divergence() {
    // add's priority notification and the task's flag clear as steps of their own: the
    // producer stops before `notifyPriorityEvent`, the task inside its turn before the clear,
    // and the other threads run between, the lost update of docs/findings.md included.
    let r = every_edge_without_divergence("priority-race");
    for kind in ["notifyPriorityEvent", "pullPriorityFromSubpartitionView"] {
        assert!(!r.kinds_unreachable.contains(&kind), "{kind}");
    }
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

#[test]
fn every_edge_of_the_aligned_timeout_preset_replays_on_the_implementation_without_divergence() {
    // The timeoutable barrier stashed in recovery or queued after it, its announcement polled,
    // the alignment timer converting it (or failing the task), the aligned checkpoint taken;
    // or the upstream's own timeout sending it unaligned during recovery.
    let r = every_edge_without_divergence("aligned-timeout");
    for kind in [
        "processTimeoutableCheckpointBarrier",
        "alignedCheckpointTimeout",
        "alignedBarrierTimeout",
    ] {
        assert!(!r.kinds_unreachable.contains(&kind), "{kind}");
    }
    assert!(r.kinds_missed.is_empty(), "{:?}", r.kinds_missed);
}

/// The shortest counterexample of `property` on preset `name`, as a trace the model records.
fn finding(name: &str, property: PropertyId) -> (RecoveryModel, conformance::trace::Trace) {
    let m = model(name, Variant::Fixed);
    let actions = shortest_counterexample(&m, property).expect("the finding is found");
    let trace = conformance::trace::Trace::record(&m, Some(name), &actions).unwrap();
    (m, trace)
}

/// docs/findings.md, the drainer's missed wake-up: the counterexample replays on impl/ step by
/// step; then the model has no step left, and impl/'s drainer stays parked in
/// `request_buffer_blocking`: the manager turned the recycled floating buffer down (a zero
/// backlog reset its requirement), so nothing wakes it.
#[test]
fn the_drain_wakeup_finding_replays_on_the_implementation_and_its_drainer_stays_parked() {
    use conformance::driver::DriverError;
    use conformance::replay::replay;
    use recovery_model::expectations::DRAINER_MISSES_WAKEUP;
    use stateright::Model;
    let (m, trace) = finding("drain-wakeup", DRAINER_MISSES_WAKEUP[0]);
    assert!(matches!(
        trace.steps[trace.steps.len() - 3].action,
        Action::RequestBufferBlocking { .. }
    ));
    let mut driver = ImplDriver::new(&m.cfg).with_watchdog(std::time::Duration::from_millis(500));
    match replay(&trace, &mut driver) {
        Ok(steps) => assert_eq!(steps, trace.steps.len()),
        Err(e) => panic!("{e}"),
    }
    let mut s = m.init_states().remove(0);
    for step in &trace.steps {
        s = m.next_state(&s, step.action).unwrap();
    }
    assert!(m.is_terminal(&s), "the model has no step left");
    let json = serde_json::to_value(driver.snapshot().unwrap()).unwrap();
    let credit = &json["channels"][0]["credit"];
    assert_eq!(credit["buffers"]["pool"], serde_json::json!(["f0"]), "{json}");
    assert_eq!(
        (&credit["waiting_for_floating"], &credit["required"]),
        (&serde_json::json!(false), &serde_json::json!(0)),
        "{json}"
    );
    // The parked drainer's push: it is never woken, and the watchdog names where it waits.
    match driver.apply(&Action::OnRecoveredStateBuffer { channel: 0 }) {
        Err(DriverError::Harness { message }) => {
            assert!(message.contains("neither returned nor parked"), "{message}");
        }
        other => panic!("the drainer was woken: {other:?}"),
    }
}

/// docs/findings.md, the lost update of `hasPendingPriorityEvent`: the counterexample replays
/// on impl/ step by step (the producer stopped before its notification, the task inside its
/// turn before the clear) and leaves the channel in the gate's priority section with the flag
/// false and barrier 2 at the view's head; then the drainer pushes `recovered-0`, the task
/// takes its steps of checkpoint 1, and the gate polls the channel from its priority section:
/// impl/ returns `recovered-0`, no priority event, as the model does.
#[test]
fn the_priority_race_finding_replays_on_the_implementation_and_its_next_poll_is_no_priority_event() {
    let (m, trace) = finding("priority-race", PropertyId::PriorityHonoured);
    let actions: Vec<Action> = trace.steps.iter().map(|s| s.action).collect();
    let mut reference = ModelDriver::new(m.clone());
    let mut driver = ImplDriver::new(&m.cfg);
    if let Err(e) = lockstep(&mut reference, &mut driver, &actions, Compare::Every) {
        panic!("{e}");
    }
    let json = serde_json::to_value(driver.snapshot().unwrap()).unwrap();
    assert_eq!(
        (&json["gate"]["queue"], &json["gate"]["priority"]),
        (&serde_json::json!([0]), &serde_json::json!(1)),
        "{json}"
    );
    let channel = &json["channels"][0];
    assert_eq!(channel["pending_priority"], serde_json::json!(false), "{json}");
    assert_eq!(channel["subpartition"][0], serde_json::json!("barrier2"), "{json}");
    // The drainer's push, the task's steps that come first (the recovery barrier of
    // checkpoint 1 behind it), then the poll.
    let poll = Action::GetNextBuffer { channel: 0 };
    let mut next = Action::OnRecoveredStateBuffer { channel: 0 };
    let mut last = None;
    for _ in 0..4 {
        let expected = reference.step(&next);
        let actual = driver.apply(&next).unwrap();
        assert_eq!(expected, actual, "{next:?}");
        last = Some(actual);
        if next == poll {
            break;
        }
        let enabled = reference.enabled();
        next = match enabled.contains(&poll) {
            true => poll,
            false => *(enabled.iter())
                .find(|a| m.thread(a) == recovery_model::Thread::Task)
                .expect("a task step"),
        };
    }
    assert!(
        matches!(
            last,
            Some(Observation::Polled {
                item: Item::Known(Payload::Recovered(0)),
                ..
            })
        ),
        "{last:?}"
    );
}

/// docs/findings.md, a floating credit announced after `resumeConsumption`: the counterexample
/// replays on impl/ step by step, the server ends up holding a credit the consumer has no
/// buffer for, and impl/'s `onBuffer` of the next data buffer fails as the model predicts.
#[test]
fn the_late_floating_credit_finding_replays_on_the_implementation_and_fails_the_next_data_buffer() {
    use conformance::observation::ErrorKind;
    use conformance::replay::replay;
    let (m, trace) = finding("late-floating-credit", PropertyId::NoProtocolViolation);
    let last = trace.steps.last().unwrap();
    assert!(matches!(last.action, Action::OnBuffer { .. }), "{:?}", last.action);
    assert_eq!(
        last.observation,
        Observation::Error {
            error: ErrorKind::NoBufferForData
        }
    );
    let mut driver = ImplDriver::new(&m.cfg);
    match replay(&trace, &mut driver) {
        Ok(steps) => assert_eq!(steps, trace.steps.len()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn random_walks_with_releases_floating_buffers_and_two_checkpoints_agree_with_the_implementation() {
    // `ci`, `floating` and `deep` are too large for every edge in a debug test; random walks to
    // a terminal state cover what `tiny` lacks: releases at any point (`ci`; a release ends most
    // walks early), floating buffers handed back (`floating`, no release), and a second
    // checkpoint whose recovery barrier can come first or subsume (`deep`), the drainer
    // borrowing a buffer from the pool (`borrow`, remote channel first), two exclusive
    // buffers of initial credit (`wide`), and channels created without recovery, with their
    // full initial credit in the partition request (`no-recovery`).
    let mut kinds = std::collections::BTreeSet::new();
    let mut rng = SplitMix64::new(7);
    for (name, walks) in [
        ("ci", 2000),
        ("floating", 300),
        ("deep", 500),
        ("borrow", 300),
        ("wide", 300),
        ("no-recovery", 500),
    ] {
        let m = model(name, Variant::Fixed);
        let mut reference = ModelDriver::new(m.clone());
        let mut driver = ImplDriver::new(&m.cfg);
        for _ in 0..walks {
            let (walk, _) = random_walk(&m, &mut rng, 200);
            if let Err(d) = lockstep(&mut reference, &mut driver, &walk, Compare::Every) {
                panic!("{name}: {d}");
            }
            kinds.extend(walk.iter().map(Action::method));
        }
    }
    // Every kind but the conversion, the faults, the late writes, the second part of a split
    // release (`release-window-*`), the split priority notification and flag clear
    // (`priority-race`), the model-only steps, the aligned checkpoints, the backlog
    // announcement (every channel here has exclusive buffers).
    let missed: std::collections::BTreeSet<&str> = (Action::KINDS.iter())
        .filter(|k| !kinds.contains(*k) && !Action::MODEL_ONLY_KINDS.contains(*k))
        .copied()
        .collect();
    assert_eq!(
        missed,
        std::collections::BTreeSet::from([
            "convertRecoveredInputChannels",
            "onError",
            "releasePartition",
            "add",
            "releaseQueuedBuffers",
            "notifyPriorityEvent",
            "pullPriorityFromSubpartitionView",
            "processTimeoutableCheckpointBarrier",
            "alignedBarrierTimeout",
            "alignedCheckpointTimeout",
            "announceBacklog",
        ]),
        "{kinds:?}"
    );
}

#[test]
fn finish_delivery_during_conversion_diverges_because_the_fixed_conversion_does_not_block() {
    let info = VARIANTS
        .iter()
        .find(|v| v.variant == Variant::FinishDeliveryDuringConversion)
        .unwrap();
    let m = model(info.preset, info.variant);
    let actions = shortest_counterexample(&m, info.property).unwrap();
    let mut reference = ModelDriver::new(m.clone());
    let mut driver = ImplDriver::new(&m.cfg);
    let e = lockstep(&mut reference, &mut driver, &actions, Compare::Every).expect_err("the fix is in");
    let d = e.divergence().expect("a divergence");
    assert_eq!(d.action(), Action::ConvertRecoveredInputChannels, "{d}");
    // Both calls return (the variant's task parks inside the mail), but the implementation
    // finished the conversion: nothing waits on upstreamReady, every channel is requested.
    assert_eq!(
        (&d.expected, &d.actual),
        (&Observation::Done, &Observation::Done),
        "{d}"
    );
    let report = d.to_string();
    assert!(report.contains("awaiting upstreamReady"), "{report}");
    assert!(
        d.actual_snapshot
            .channels
            .iter()
            .all(|ch| ch.upstream_ready || ch.kind == ChannelKind::Remote)
    );
    assert!(
        d.actual_snapshot
            .channels
            .iter()
            .all(|ch| ch.queue.last().map(|e| &e.item) == Some(&Item::Known(Payload::EndOfRecovery))),
        "{report}"
    );
}

#[test]
fn broken_driver_replaying_the_stash_at_the_head_is_reported_with_step_and_diff() {
    // The bug zoo's counterexample for the same bug, replayed against the fixed model.
    let buggy = model("tiny", Variant::StashReplayedAtHead);
    let actions = shortest_counterexample(&buggy, PropertyId::PriorityEventsFirst).expect("the variant is caught");
    let fixed = model("tiny", Variant::Fixed);
    let mut reference = ModelDriver::new(fixed.clone());
    let mut broken = StashAtHead::new(ImplDriver::new(&fixed.cfg));
    let e = lockstep(&mut reference, &mut broken, &actions, Compare::Every).expect_err("the broken driver diverges");
    let d = e.divergence().expect("a divergence");
    let consumed = actions
        .iter()
        .position(|a| *a == Action::OnRecoveredStateConsumed { channel: 1 })
        .unwrap();
    assert_eq!(d.step, consumed + 1, "{d}");
    assert!(matches!(d.action(), Action::OnRecoveredStateConsumed { channel: 1 }));
    let report = d.to_string();
    assert!(report.contains(&format!("at step {}", d.step)), "{report}");
    assert!(report.contains("--- model\n+++ impl"), "{report}");
    // The replayed event moved: behind the queued barrier in the model, ahead of it here.
    assert!(report.contains("+          \"item\": \"eoo0\""), "{report}");
    assert!(report.contains("-          \"item\": \"eoo0\""), "{report}");
}

#[test]
fn no_bug_zoo_counterexample_is_reproducible_on_the_fixed_implementation() {
    // The drain loop is not part of impl/'s replay: the trace's pushes are the driver's calls, so
    // a drainer that stops early is a shorter trace, and the recovered state it would keep is
    // the model's ghost. Nor is the checkpoint coordinator: the driver emits each barrier the
    // trace names.
    // And the barrier handler's trigger shows in no observation or snapshot: a counterexample
    // that ends at the alignment timeout triggering too early replays unchanged
    // (docs/conformance.md's bug-zoo table says so).
    const OUTSIDE_IMPL: &[&str] = &[
        "drainer-abandons-state-on-release",
        "concurrent-unaligned-checkpoints",
        "timeout-triggers-before-first-barrier",
    ];
    let mut pinned = String::new();
    for info in VARIANTS {
        let m = model(info.preset, info.variant);
        let actions = shortest_counterexample(&m, info.property).unwrap_or_else(|| panic!("{}: not caught", info.name));
        let mut reference = ModelDriver::new(m.clone());
        let mut driver = ImplDriver::for_model(&m);
        let result = lockstep(&mut reference, &mut driver, &actions, Compare::Every);
        if OUTSIDE_IMPL.contains(&info.name) {
            assert!(result.is_ok(), "{}: replays on impl/ without divergence", info.name);
            continue;
        }
        let e = result.expect_err(&format!("{}: the implementation reproduced the bug", info.name));
        let d = e.divergence().unwrap_or_else(|| panic!("{}: {e}", info.name));
        // Pinned whole: where the fixed implementation departs from the buggy model and how
        // (its error, its snapshot), so that its defensive checks are part of the oracle.
        let json = |o: &Observation| serde_json::to_string(o).expect("serializes");
        let _ = writeln!(
            pinned,
            "## {} ({} steps)\nstep {}: {}\nmodel: {}\nimpl:  {}\n{}",
            info.name,
            actions.len(),
            d.step,
            d.readable[d.step - 1],
            json(&d.expected),
            json(&d.actual),
            diff(&d.expected_snapshot, &d.actual_snapshot, 1)
        );
    }
    insta::assert_snapshot!("bug_zoo_divergences", pinned);
}

#[test]
fn the_presets_the_pr_tier_replays_edge_by_edge_reach_every_action_kind() {
    // .ci/run replays every edge of these presets with --require-complete, so every kind
    // reachable in one of them is replayed; together they must reach all.
    let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../.ci/run")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("PR_CONFORM_PRESETS=\""))
        .expect("PR_CONFORM_PRESETS in .ci/run");
    let mut kinds = std::collections::BTreeSet::new();
    for name in line.trim_end_matches('"').split_whitespace() {
        let graph = conformance::generate::Graph::explore(&model(name, Variant::Fixed));
        kinds.extend(graph.kinds.iter().copied());
    }
    let missing: Vec<_> = Action::KINDS
        .iter()
        .filter(|k| !kinds.contains(*k) && !Action::MODEL_ONLY_KINDS.contains(*k))
        .collect();
    assert!(missing.is_empty(), "no PR-tier preset reaches {missing:?}");
}
