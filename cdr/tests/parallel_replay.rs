//! Parallel, sharded, loaded and out-of-process replays give the single idle in-process run's
//! results: the counts add up, and no verdict depends on timing.

use conformance::conform::{ConformOptions, ConformReport, conform_edges, conform_random};
use conformance::driver::{Driver, ModelDriver};
use conformance::generate::Graph;
use conformance::impl_driver::ImplDriver;
use conformance::protocol::ProcessDriver;
use recovery_model::{ModelConfig, RecoveryModel, Variant, preset};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `tiny` with only its remote channel: the credit path, a few thousand edges.
fn small() -> RecoveryModel {
    let mut cfg: ModelConfig = preset("tiny").unwrap();
    cfg.channels.remove(0);
    cfg.validate().unwrap();
    RecoveryModel::new(cfg, Variant::Fixed)
}

fn edges(m: &RecoveryModel, jobs: usize, shard: Option<(usize, usize)>) -> ConformReport {
    let factory = || Ok(Box::new(ImplDriver::new(&m.cfg)) as Box<dyn Driver>);
    let opts = ConformOptions {
        jobs,
        shard,
        max_divergences: 1,
    };
    conform_edges(m, &factory, opts, &|| {}).expect("no harness error")
}

fn walks(m: &RecoveryModel, jobs: usize, n: usize) -> ConformReport {
    let factory = || Ok(Box::new(ImplDriver::new(&m.cfg)) as Box<dyn Driver>);
    let opts = ConformOptions {
        jobs,
        ..ConformOptions::default()
    };
    conform_random(m, &factory, n, 11, opts, &|| {}).expect("no harness error")
}

/// Everything but the time.
fn counts(r: &ConformReport) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v["steps_per_second"] = serde_json::Value::Null;
    v
}

#[test]
fn jobs_and_shards_add_up_to_the_single_run() {
    let m = small();
    let one = edges(&m, 1, None);
    assert_eq!(one.divergences, 0);
    assert!(one.incomplete().is_empty(), "{:?}", one.incomplete());
    assert_eq!(Some(one.edges_covered), one.edges_total);
    assert!(one.traces > 100, "a run worth splitting: {} traces", one.traces);
    assert_eq!(counts(&edges(&m, 3, None)), counts(&one), "three jobs, one report");

    let parts: Vec<ConformReport> = (1..=3).map(|k| edges(&m, 2, Some((k, 3)))).collect();
    let sum = |f: fn(&ConformReport) -> usize| parts.iter().map(f).sum::<usize>();
    assert_eq!(sum(|r| r.traces), one.traces);
    assert_eq!(sum(|r| r.steps), one.steps);
    assert_eq!(sum(|r| r.edges_covered), one.edges_covered);
    assert_eq!(Some(sum(|r| r.edges_share)), one.edges_total);
    for p in &parts {
        assert!(p.traces < one.traces && p.traces > 0);
        assert!(p.incomplete().is_empty(), "{:?}", p.incomplete());
    }
}

#[test]
fn an_unreplayed_edge_makes_the_run_incomplete() {
    let m = small();
    let mut r = edges(&m, 1, None);
    r.edges_covered -= 1;
    let expected = format!("1 of the {} edges of this run were not replayed", r.edges_share);
    assert_eq!(r.incomplete(), vec![expected]);
    let mut r = edges(&m, 1, None);
    r.kinds_missed.push("onBuffer");
    r.unsupported.insert("getNextBuffer", 2);
    assert_eq!(r.incomplete().len(), 2, "{:?}", r.incomplete());
}

/// Threads that spin until dropped.
struct Burners(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Burners {
    fn every_core_twice() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let n = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
        let handles = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                })
            })
            .collect();
        Burners(stop, handles)
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for h in self.1.drain(..) {
            let _ = h.join();
        }
    }
}

#[test]
fn a_replay_while_every_core_is_busy_gives_the_idle_result() {
    // Slow threads must not look blocked: whether a call blocked is told by the thread that
    // parks, never by a clock, so starving the workers of CPU changes nothing.
    let m = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let idle = walks(&m, 2, 150);
    assert_eq!(idle.divergences, 0, "{:?}", idle.first_divergence);
    let loaded = {
        let _burn = Burners::every_core_twice();
        walks(&m, 2, 150)
    };
    assert_eq!(counts(&loaded), counts(&idle));
    assert_eq!(loaded.divergences, 0, "{:?}", loaded.first_divergence);
}

#[test]
fn the_implementation_out_of_process_agrees_with_it_in_process_on_every_step() {
    let m = small();
    let mut local = ImplDriver::new(&m.cfg);
    let mut remote = ProcessDriver::spawn(&format!("{} serve-driver", env!("CARGO_BIN_EXE_cdr")), &m.cfg)
        .expect("cdr serve-driver starts");
    assert_eq!(remote.name(), "impl");
    let mut model = ModelDriver::new(m.clone());
    let graph = Graph::explore(&m);
    let (mut steps, mut traces) = (0, 0);
    for t in graph.edge_cover().step_by(3) {
        local.reset().unwrap();
        remote.reset().unwrap();
        model.restart();
        for a in &t.actions {
            let expected = model.step(a);
            let (x, y) = (local.apply(a).unwrap(), remote.apply(a).unwrap());
            assert_eq!(x, y, "observation of {a:?} in {:?}", t.actions);
            assert_eq!(x, expected);
            assert_eq!(
                local.snapshot().unwrap(),
                remote.snapshot().unwrap(),
                "snapshot after {a:?}"
            );
            steps += 1;
        }
        traces += 1;
    }
    assert!(traces > 20 && steps > 200, "{traces} traces, {steps} steps");
}

/// The driver process is sent each trace ahead of its answers; a trace that diverges is
/// replayed again one call at a time, so the report is the in-process one, whether the
/// divergence is in an observation or in a snapshot, and the driver goes on afterwards.
#[test]
fn a_divergence_sent_ahead_is_reported_as_in_process() {
    use conformance::replay::{Compare, ReplayError, lockstep};
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;
    let buggy = RecoveryModel::new(preset("tiny").unwrap(), Variant::NoEventStash);
    let actions = shortest_counterexample(&buggy, PropertyId::RecoveredDataPrecedesLiveData).unwrap();
    let mut reference = ModelDriver::new(buggy.clone());
    let mut local = ImplDriver::new(&buggy.cfg);
    let mut remote = ProcessDriver::spawn(&format!("{} serve-driver", env!("CARGO_BIN_EXE_cdr")), &buggy.cfg)
        .expect("cdr serve-driver starts");
    let mut kinds = Vec::new();
    for compare in [Compare::Every, Compare::From(actions.len() - 1)] {
        let here = lockstep(&mut reference, &mut local, &actions, compare);
        let there = lockstep(&mut reference, &mut remote, &actions, compare);
        let (Err(ReplayError::Diverged(here)), Err(ReplayError::Diverged(there))) = (here, there) else {
            panic!("both diverge");
        };
        assert_eq!(format!("{here:?}"), format!("{there:?}"));
        kinds.push(here.observation_differs());
        let fixed = RecoveryModel::new(buggy.cfg.clone(), Variant::Fixed);
        let mut fixed_reference = ModelDriver::new(fixed);
        let good = &actions[..3];
        assert_eq!(lockstep(&mut fixed_reference, &mut remote, good, compare).ok(), Some(3));
    }
    // Compared at every step, a snapshot differs first; at the last step only, its observation
    // (a step whose snapshot was not sent ahead).
    assert_eq!(kinds, [false, true]);
}

/// A driver that answers one trace differently when sent ahead and one call at a time is a
/// harness error, never a divergence or a pass.
#[test]
fn a_driver_that_answers_a_trace_differently_twice_is_a_harness_error() {
    use conformance::observation::{Observation, Snapshot};
    use conformance::replay::{Compare, ReplayError, lockstep};
    use recovery_model::Action;

    /// The model, answering wrongly at step 2 of the first trace sent ahead only.
    struct Fickle {
        inner: ModelDriver,
        sent_ahead: usize,
        step: usize,
    }
    impl Driver for Fickle {
        fn name(&self) -> &str {
            "fickle"
        }
        fn reset(&mut self) -> Result<(), conformance::driver::DriverError> {
            self.step = 0;
            self.inner.reset()
        }
        fn apply(&mut self, a: &Action) -> Result<Observation, conformance::driver::DriverError> {
            self.step += 1;
            let o = self.inner.apply(a)?;
            if self.sent_ahead == 1 && self.step == 2 {
                return Ok(Observation::Unperformable {
                    reason: "fickle".into(),
                });
            }
            Ok(o)
        }
        fn snapshot(&mut self) -> Result<Snapshot, conformance::driver::DriverError> {
            self.inner.snapshot()
        }
        fn send_ahead(&mut self, _: &[Action], _: usize) -> Result<bool, conformance::driver::DriverError> {
            self.sent_ahead += 1;
            Ok(true)
        }
        fn discard_sent_ahead(&mut self) -> Result<(), conformance::driver::DriverError> {
            self.sent_ahead += 1;
            Ok(())
        }
    }
    let m = small();
    let walk = Graph::explore(&m).edge_cover().next().unwrap().actions;
    let mut fickle = Fickle {
        inner: ModelDriver::new(m.clone()),
        sent_ahead: 0,
        step: 0,
    };
    let mut reference = ModelDriver::new(m.clone());
    match lockstep(&mut reference, &mut fickle, &walk, Compare::Every) {
        Err(ReplayError::Harness { message, .. }) => {
            assert!(message.contains("answered one trace differently twice"), "{message}");
            assert!(message.contains("it performed all"), "{message}");
        }
        other => panic!("a harness error, not {other:?}"),
    }
    // Answering the same both times, it passes.
    assert_eq!(
        lockstep(&mut reference, &mut fickle, &walk, Compare::Every).ok(),
        Some(walk.len())
    );
}
