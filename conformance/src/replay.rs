//! Replay: perform a trace's actions on a [`Driver`], compare the observation and the snapshot
//! after every step with what the model predicts, and stop at the first [`Divergence`].

use crate::driver::{Driver, ModelDriver};
use crate::observation::{Observation, Snapshot, diff};
use crate::trace::Trace;
use recovery_model::{Action, RecoveryModel};
use stateright::Model;
use std::fmt;

/// The first step where a driver did not do what the model predicts.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// 1-based step number.
    pub step: usize,
    /// Every action up to and including the diverging one.
    pub actions: Vec<Action>,
    /// The actions as the model prints them.
    pub readable: Vec<String>,
    /// The driver's name.
    pub driver: String,
    /// The model's prediction.
    pub expected: Observation,
    /// What the driver saw.
    pub actual: Observation,
    /// The model's snapshot after the step.
    pub expected_snapshot: Snapshot,
    /// The driver's snapshot after the step.
    pub actual_snapshot: Snapshot,
}

impl Divergence {
    /// The action that diverged.
    pub fn action(&self) -> Action {
        *self.actions.last().expect("a divergence has a step")
    }

    /// Whether the observations differ (else only the snapshots do).
    pub fn observation_differs(&self) -> bool {
        self.expected != self.actual
    }

    /// The snapshot diff headed `model` / `impl` (empty when only the observation differs).
    pub fn diff(&self) -> String {
        diff(&self.expected_snapshot, &self.actual_snapshot, 3)
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.observation_differs() {
            "observation"
        } else {
            "snapshot"
        };
        writeln!(
            f,
            "DIVERGENCE ({what}) at step {} of the {} driver: {}",
            self.step,
            self.driver,
            self.readable.last().map_or("", String::as_str)
        )?;
        writeln!(f, "steps:")?;
        for (i, a) in self.readable.iter().enumerate() {
            let mark = if i + 1 == self.step { "  <- here" } else { "" };
            writeln!(f, "  {:>3}. {a}{mark}", i + 1)?;
        }
        let json = |o: &Observation| serde_json::to_string(o).expect("serializes");
        writeln!(f, "expected (model): {}", json(&self.expected))?;
        writeln!(f, "actual   ({}): {}", self.driver, json(&self.actual))?;
        let d = self.diff();
        if d.is_empty() {
            writeln!(f, "snapshots agree")
        } else {
            writeln!(f, "snapshot diff:\n{d}")
        }
    }
}

/// Which steps get their snapshot compared (observations are compared at every step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Every step.
    Every,
    /// Steps from this 0-based index on (earlier ones were compared in an earlier trace).
    From(usize),
}

/// Replays `actions` on `driver` in lockstep with `model`, which must be at the same state
/// (both are reset first). Returns the number of steps performed.
pub fn lockstep(
    model: &mut ModelDriver,
    driver: &mut dyn Driver,
    actions: &[Action],
    compare: Compare,
) -> Result<usize, Box<Divergence>> {
    model.reset();
    driver.reset();
    for (i, a) in actions.iter().enumerate() {
        let expected = model.apply(a);
        let actual = driver.apply(a);
        let check_snapshot = match compare {
            Compare::Every => true,
            Compare::From(k) => i >= k,
        };
        if expected != actual || check_snapshot {
            let (expected_snapshot, actual_snapshot) = (model.snapshot(), driver.snapshot());
            // After a typed error the model stops (the task fails); the implementation's clean-up
            // after the error is not modelled, so only the observation counts then.
            let errored = matches!(expected, Observation::Error { .. });
            if expected != actual || (!errored && expected_snapshot != actual_snapshot) {
                return Err(Box::new(divergence(
                    model.model(),
                    driver,
                    &actions[..=i],
                    expected,
                    actual,
                    expected_snapshot,
                    actual_snapshot,
                )));
            }
        }
    }
    Ok(actions.len())
}

fn divergence(
    m: &RecoveryModel,
    driver: &dyn Driver,
    actions: &[Action],
    expected: Observation,
    actual: Observation,
    expected_snapshot: Snapshot,
    actual_snapshot: Snapshot,
) -> Divergence {
    Divergence {
        step: actions.len(),
        actions: actions.to_vec(),
        readable: actions.iter().map(|a| m.format_action(a)).collect(),
        driver: driver.name().to_string(),
        expected,
        actual,
        expected_snapshot,
        actual_snapshot,
    }
}

/// Replays a trace file's steps on `driver` against the trace's recorded predictions.
pub fn replay(trace: &Trace, driver: &mut dyn Driver) -> Result<usize, Box<Divergence>> {
    let m = trace.model().expect("a checked trace has a model");
    let actions = trace.actions();
    driver.reset();
    for (i, step) in trace.steps.iter().enumerate() {
        let actual = driver.apply(&step.action);
        let actual_snapshot = driver.snapshot();
        let errored = matches!(step.observation, Observation::Error { .. });
        if actual != step.observation || (!errored && actual_snapshot != step.snapshot) {
            return Err(Box::new(divergence(
                &m,
                driver,
                &actions[..=i],
                step.observation.clone(),
                actual,
                step.snapshot.clone(),
                actual_snapshot,
            )));
        }
    }
    Ok(trace.steps.len())
}
