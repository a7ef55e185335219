//! The soak, validated by the model: small soak rounds (`impl/tests/soak_harness`: every thread
//! of a recovering gate, with its watchdog and its own asserts) on a configuration inside the
//! model's bounds, four channels, local and remote, record an event log that the model must
//! accept (`conformance::validate`). The long soak is not validated: the model's bounds (at
//! most 4 channels, 8 recovered and 8 upstream elements each, 4 checkpoints) are far below it,
//! and its producers write during the run, which the validation does not map.
//!
//! `SOAK_LOG_ROUNDS` (default 40) sets the rounds of each configuration.

#[path = "../../impl/tests/soak_harness/mod.rs"]
mod soak_harness;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use conformance::observation::Item;
use conformance::projection::{IdMap, item_of, payload_of};
use conformance::validate::{steps, validate};
use recovery_impl::BufferSnapshot;
use recovery_impl::event_log::{EventLog, Recorder};
use recovery_model::config::{
    ChannelConfig, ChannelKind, Delivery as ModelDelivery, ModelConfig, Upstream, local, remote,
};
use recovery_model::state::Payload;
use recovery_model::{RecoveryModel, Variant};
use soak_harness::{ChannelSpec, Checkpoints, Class, Delivery, Kind, Naming, Pools, Release, Rng, SoakConfig, Up};

use Upstream::{Data as D, EndOfOutputChannelState as O, Event as E};

/// Two local and two remote channels (one with a floating buffer), two checkpoints; with the
/// drainer, releases at random points.
fn config(delivery: ModelDelivery) -> ModelConfig {
    // A local channel in recovery (the drainer's, or a converted one still holding recovered
    // buffers) reads `hasPendingPriorityEvent`, which the producer sets and the task clears
    // outside any common lock, as in Flink: the model takes each as a step of its own, so that
    // it accepts the lost update (docs/findings.md).
    let local = |recovered, upstream| ChannelConfig {
        priority_notify_step: true,
        ..local(recovered, upstream)
    };
    ModelConfig {
        channels: vec![
            local(2, &[O, D, E, D]),
            remote(2, &[O, E, D, D], 1, 1),
            local(1, &[O, D]),
            remote(1, &[O, E, D], 1, 0),
        ],
        checkpoints: 2,
        delivery,
        insert_recovery_barriers: true,
        release: delivery == ModelDelivery::Drainer,
        faults: false,
        // A release is two parts in the implementation, as in Flink: the log shows polls between.
        release_step: delivery == ModelDelivery::Drainer,
        aligned_checkpoint_timeout: false,
        shared_pool: false,
        overlapping_checkpoints: false,
        flink_fixes: vec![],
    }
}

fn model_payload(c: u8, class: Class, i: u64) -> u64 {
    let i = i as u8;
    let item = match class {
        Class::Recovered => Item::Known(Payload::Recovered(i)),
        Class::Data => Item::Known(Payload::Data(i)),
        Class::Event => Item::Known(Payload::Event(i)),
    };
    payload_of(c, &item)
}

fn model_decode(c: u8, b: &BufferSnapshot) -> Option<(Class, u64)> {
    match item_of(c, b) {
        Item::Known(Payload::Recovered(i)) => Some((Class::Recovered, i as u64)),
        Item::Known(Payload::Data(i)) => Some((Class::Data, i as u64)),
        Item::Known(Payload::Event(i) | Payload::EndOfOutput(i)) => Some((Class::Event, i as u64)),
        _ => None,
    }
}

/// The conformance driver's segment ids, so that the log names the model's buffers.
fn first_segment(c: usize, s: &ChannelSpec) -> u32 {
    IdMap::new(c as u8, s.floating as u8, s.exclusive as u8).base
}

/// The soak round of `cfg` with `seed`: one thread per model thread, every pause random.
fn soak_round(cfg: &ModelConfig, seed: u64, recorder: Arc<dyn Recorder>) -> SoakConfig {
    let channels: Vec<ChannelSpec> = (cfg.channels.iter())
        .map(|cc| ChannelSpec {
            kind: match cc.kind {
                ChannelKind::Local => Kind::Local,
                ChannelKind::Remote => Kind::Remote,
            },
            recovered: cc.recovered as u64,
            upstream: (cc.upstream.iter())
                .map(|u| match u {
                    Upstream::Data => Up::Data,
                    Upstream::Event => Up::Event,
                    Upstream::EndOfOutputChannelState => Up::EndOfOutputChannelState,
                })
                .collect(),
            exclusive: cc.exclusive as usize,
            floating: cc.floating as usize,
            // The validation maps only barriers to the producer's steps during a run.
            late: 0,
        })
        .collect();
    let total: u64 = channels.iter().map(ChannelSpec::total).sum();
    let mut rng = Rng::new(seed ^ 0x1065);
    let of_kind = |kind| channels.iter().position(|s| s.kind == kind).unwrap();
    let release = match (cfg.release, rng.below(6)) {
        (false, _) | (true, 3..) => Release::None,
        (true, 0) => Release::Channels(vec![of_kind(Kind::Remote)]),
        (true, 1) => Release::Channels(vec![of_kind(Kind::Local)]),
        (true, _) => Release::Channels(vec![of_kind(Kind::Local), of_kind(Kind::Remote)]),
    };
    SoakConfig {
        delivery: match cfg.delivery {
            ModelDelivery::Drainer => Delivery::Drainer,
            ModelDelivery::Conversion => Delivery::Conversion,
            other => panic!("the soak runs the drainer and the conversion, not {other:?}"),
        },
        checkpoints: Checkpoints::Fixed(cfg.checkpoints as u64),
        release,
        release_after: rng.below(total),
        seed,
        producers: 1,
        recyclers: 1,
        pools: Pools::PerChannel(first_segment),
        naming: Naming {
            payload: model_payload,
            decode: model_decode,
        },
        recorder: Some(recorder),
        stall: Duration::from_secs(10),
        backlog_cap: i32::MAX,
        heavy_jitter: true,
        channels,
    }
}

/// Runs `rounds` soak rounds of `cfg`; the model must accept every log. Returns the action
/// kinds the logs contained, and how many runs released a channel.
fn accept_soak_rounds(cfg: ModelConfig, rounds: u64) -> (BTreeMap<&'static str, usize>, usize) {
    let m = RecoveryModel::new(cfg, Variant::Fixed);
    m.cfg.validate().expect("inside the model's bounds");
    let (mut kinds, mut released) = (BTreeMap::new(), 0);
    for seed in 0..rounds {
        let log = EventLog::new();
        let report = soak_harness::run(soak_round(&m.cfg, seed, Arc::clone(&log) as Arc<dyn Recorder>));
        released += usize::from(report.channels.iter().any(|(_, r)| *r));
        let steps = steps(&m, &log.events(), &report.subpartitions).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        validate(&m, &steps, 1)
            .or_else(|_| validate(&m, &steps, 4))
            .unwrap_or_else(|rejection| {
                let listing: String = (steps.iter().enumerate())
                    .map(|(i, s)| format!("  {:>3}. {s}\n", i + 1))
                    .collect();
                panic!("seed {seed}: {rejection}\nlog:\n{listing}")
            });
        for s in &steps {
            *kinds.entry(s.action.method()).or_insert(0) += 1;
        }
    }
    println!("{rounds} soak rounds accepted by the model; released in {released}; kinds: {kinds:?}");
    (kinds, released)
}

fn rounds() -> u64 {
    std::env::var("SOAK_LOG_ROUNDS").map_or(40, |r| r.parse().expect("a number"))
}

#[test]
fn logs_of_soak_rounds_with_the_drainer_and_releases_are_accepted_by_the_model() {
    let (kinds, released) = accept_soak_rounds(config(ModelDelivery::Drainer), rounds());
    assert!(released > 0, "no round released a channel");
    for kind in [
        "onRecoveredStateBuffer",
        "finishRecoveredBufferDelivery",
        "insertRecoveryCheckpointBarrierIfInRecovery",
        "checkpointStarted",
        "onRecoveredStateConsumed",
        "releaseAllResources",
        "releaseQueuedBuffers",
        "onBuffer",
        "sendAddCredit",
        "recycle",
    ] {
        assert!(kinds.contains_key(kind), "{kind} missing: {kinds:?}");
    }
}

#[test]
fn logs_of_soak_rounds_with_the_conversion_are_accepted_by_the_model() {
    let (kinds, _) = accept_soak_rounds(config(ModelDelivery::Conversion), rounds());
    for kind in ["convertRecoveredInputChannels", "checkpointStarted", "onBuffer"] {
        assert!(kinds.contains_key(kind), "{kind} missing: {kinds:?}");
    }
}
