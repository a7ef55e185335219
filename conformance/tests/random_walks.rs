//! Random walks: the model as proptest's reference state machine, the implementation as the
//! system under test (observation and snapshot compared after every step); a failing walk
//! shrinks to a minimal trace. And a quickcheck property over generated traces.

mod common;

use common::StashAtHead;
use conformance::driver::{Driver, ModelDriver};
use conformance::impl_driver::ImplDriver;
use conformance::replay::{Compare, lockstep};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use quickcheck::{Arbitrary, Gen, QuickCheck};
use recovery_model::{Action, RecoveryModel, State, Variant, preset};
use stateright::Model;
use std::sync::OnceLock;

fn tiny() -> &'static RecoveryModel {
    static MODEL: OnceLock<RecoveryModel> = OnceLock::new();
    MODEL.get_or_init(|| RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed))
}

fn enabled(s: &State) -> Vec<Action> {
    let mut out = Vec::new();
    tiny().actions(s, &mut out);
    out
}

/// The model of `tiny` as a reference state machine; `None` once nothing is enabled.
struct ChannelRecovery;

impl ReferenceStateMachine for ChannelRecovery {
    type State = State;
    type Transition = Option<Action>;

    fn init_state() -> BoxedStrategy<State> {
        Just(tiny().init_states().remove(0)).boxed()
    }

    fn transitions(state: &State) -> BoxedStrategy<Option<Action>> {
        let actions = enabled(state);
        if actions.is_empty() {
            return Just(None).boxed();
        }
        proptest::sample::select(actions).prop_map(Some).boxed()
    }

    fn apply(state: State, transition: &Option<Action>) -> State {
        match transition {
            Some(a) => tiny().next_state(&state, *a).expect("enabled"),
            None => state,
        }
    }

    fn preconditions(state: &State, transition: &Option<Action>) -> bool {
        transition.is_none_or(|a| enabled(state).contains(&a))
    }
}

/// The implementation, in lockstep with its own copy of the model.
struct Lockstep {
    model: ModelDriver,
    imp: ImplDriver,
    actions: Vec<Action>,
}

impl StateMachineTest for Lockstep {
    type SystemUnderTest = Lockstep;
    type Reference = ChannelRecovery;

    fn init_test(_: &State) -> Lockstep {
        Lockstep {
            model: ModelDriver::new(tiny().clone()),
            imp: ImplDriver::new(&tiny().cfg),
            actions: Vec::new(),
        }
    }

    fn apply(mut sut: Lockstep, _: &State, transition: Option<Action>) -> Lockstep {
        let Some(a) = transition else { return sut };
        sut.actions.push(a);
        let (expected, actual) = (sut.model.step(&a), sut.imp.apply(&a).expect("no harness error"));
        assert_eq!(expected, actual, "observation after {:?}", sut.actions);
        let (expected, actual) = (
            sut.model.predicted_snapshot(),
            sut.imp.snapshot().expect("no harness error"),
        );
        assert!(
            expected == actual,
            "snapshot after {:?}:\n{}",
            sut.actions,
            conformance::observation::diff(&expected, &actual, 3)
        );
        sut
    }
}

prop_state_machine! {
    #![proptest_config(Config { cases: 24, failure_persistence: None, ..Config::default() })]
    #[test]
    fn random_walks_of_tiny_agree_with_the_implementation(sequential 1..48 => Lockstep);
}

#[test]
fn a_failing_random_walk_shrinks_to_a_minimal_trace() {
    // The broken driver shows only where a barrier is queued when the stash is replayed (live
    // data comes after the resume, when the stash is long gone): a few walks in a thousand.
    let config = Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    };
    // A fixed seed: which walks are generated, and so whether one finds the bug, is the same
    // on every run.
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let broken = |transitions: &[Option<Action>]| {
        let actions: Vec<Action> = transitions.iter().flatten().copied().collect();
        let mut model = ModelDriver::new(tiny().clone());
        let mut driver = StashAtHead::new(ImplDriver::new(&tiny().cfg));
        lockstep(&mut model, &mut driver, &actions, Compare::Every)
            .map(|_| ())
            .map_err(|e| e.divergence().expect("a divergence, not a harness error").step)
    };
    let result = runner.run(
        &ChannelRecovery::sequential_strategy(1..48),
        |(_, transitions, seen)| {
            let outcome = broken(&transitions);
            // Tell the shrinker how many transitions ran (it drops the ones after a failure).
            if let Some(seen) = seen {
                let ran = match outcome {
                    Ok(()) => transitions.len(),
                    Err(step) => {
                        transitions
                            .iter()
                            .scan(0, |n, t| {
                                *n += t.is_some() as usize;
                                Some(*n)
                            })
                            .take_while(|n| *n < step)
                            .count()
                            + 1
                    }
                };
                seen.fetch_add(ran, std::sync::atomic::Ordering::SeqCst);
            }
            prop_assert!(outcome.is_ok());
            Ok(())
        },
    );
    let Err(TestError::Fail(_, (_, minimal, _))) = result else {
        panic!("no walk found the broken driver: {result:?}");
    };
    let minimal: Vec<Option<Action>> = minimal.into_iter().flatten().map(Some).collect();
    let steps = broken(&minimal).expect_err("the minimal walk still diverges");
    // The divergence is the last step: nothing after it is kept.
    assert_eq!(steps, minimal.len(), "{minimal:?}");
    // Minimal: without any one of its steps, the walk is either not a walk of the model any
    // more or no longer exposes the broken driver.
    for i in 0..minimal.len() {
        let mut shorter = minimal.clone();
        shorter.remove(i);
        let actions: Vec<Action> = shorter.iter().flatten().copied().collect();
        if conformance::trace::to_path(tiny(), &actions).is_ok() {
            assert!(broken(&shorter).is_ok(), "step {} is not needed: {minimal:?}", i + 1);
        }
    }
}

/// A random walk of `tiny`, generated by quickcheck; shrinks to its prefixes.
#[derive(Clone, Debug)]
struct Walk(Vec<Action>);

impl Arbitrary for Walk {
    fn arbitrary(g: &mut Gen) -> Walk {
        let mut state = tiny().init_states().remove(0);
        let mut walk = Vec::new();
        loop {
            let actions = enabled(&state);
            if actions.is_empty() {
                return Walk(walk);
            }
            let a = *g.choose(&actions).expect("non-empty");
            state = tiny().next_state(&state, a).expect("enabled");
            walk.push(a);
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Walk>> {
        let walk = self.0.clone();
        Box::new((0..walk.len()).rev().map(move |n| Walk(walk[..n].to_vec())))
    }
}

#[test]
fn generated_traces_replay_on_the_implementation_without_divergence() {
    fn agrees(walk: Walk) -> bool {
        let mut model = ModelDriver::new(tiny().clone());
        let mut driver = ImplDriver::new(&tiny().cfg);
        lockstep(&mut model, &mut driver, &walk.0, Compare::Every).is_ok()
    }
    QuickCheck::new().tests(24).quickcheck(agrees as fn(Walk) -> bool);
}
