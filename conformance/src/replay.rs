//! Replay: perform a trace's actions on a [`Driver`], compare the observation and the snapshot
//! after every step with what the model predicts, and stop at the first [`Divergence`].

use crate::driver::{Driver, DriverError, ModelDriver};
use crate::observation::{Observation, Snapshot, diff_masked, snapshots_agree};
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
    /// Snapshot fields the driver cannot read, left out of the comparison.
    pub unobserved: Vec<String>,
}

/// Why a replay stopped before the end of its trace.
#[derive(Clone, Debug)]
pub enum ReplayError {
    /// The driver did something the model does not predict: a finding.
    Diverged(Box<Divergence>),
    /// The driver cannot perform this step: the rest of the trace is coverage lost.
    Unsupported {
        /// 1-based step number.
        step: usize,
        /// The action it could not perform.
        action: Action,
        /// Why.
        reason: String,
    },
    /// The harness failed at this step (never a divergence).
    Harness {
        /// 1-based step number (0: at reset).
        step: usize,
        /// What happened.
        message: String,
    },
}

impl ReplayError {
    fn at(step: usize, action: Option<Action>, e: DriverError) -> Self {
        match (e, action) {
            (DriverError::Unsupported { reason }, Some(action)) => ReplayError::Unsupported { step, action, reason },
            (DriverError::Unsupported { reason }, None) => ReplayError::Harness {
                step,
                message: format!("the driver refused to reset: {reason}"),
            },
            (DriverError::Harness { message }, _) => ReplayError::Harness { step, message },
        }
    }

    /// The divergence, if this is one.
    pub fn divergence(&self) -> Option<&Divergence> {
        match self {
            ReplayError::Diverged(d) => Some(d),
            _ => None,
        }
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Diverged(d) => d.fmt(f),
            ReplayError::Unsupported { step, action, reason } => {
                write!(
                    f,
                    "step {step} ({}) is not supported by the driver: {reason}",
                    action.method()
                )
            }
            ReplayError::Harness { step, message } => write!(f, "harness error at step {step}: {message}"),
        }
    }
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

    /// The snapshot diff headed `model` / `impl` (empty when only the observation differs),
    /// without the fields the driver cannot read.
    pub fn diff(&self) -> String {
        diff_masked(&self.expected_snapshot, &self.actual_snapshot, &self.unobserved, 3)
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
///
/// A driver that can send the trace ahead ([`Driver::send_ahead`]) gets it in one go. A trace
/// that stops early that way is replayed again one call at a time on a fresh start, and that
/// replay is the verdict: it has the snapshot of the step where it stopped, and a driver that
/// answers the same trace differently twice is a harness error.
pub fn lockstep(
    model: &mut ModelDriver,
    driver: &mut dyn Driver,
    actions: &[Action],
    compare: Compare,
) -> Result<usize, ReplayError> {
    let snapshots_from = match compare {
        Compare::Every => 0,
        Compare::From(k) => k,
    };
    if !driver
        .send_ahead(actions, snapshots_from)
        .map_err(|e| ReplayError::at(0, None, e))?
    {
        return lockstep_one_by_one(model, driver, actions, compare, false);
    }
    let discard = |driver: &mut dyn Driver| driver.discard_sent_ahead().map_err(|e| ReplayError::at(0, None, e));
    match lockstep_one_by_one(model, driver, actions, compare, true) {
        Err(ReplayError::Diverged(first)) => {
            discard(driver)?;
            match lockstep_one_by_one(model, driver, actions, compare, false) {
                Err(ReplayError::Diverged(again)) if again.step == first.step => Err(ReplayError::Diverged(again)),
                again => Err(ReplayError::Harness {
                    step: first.step,
                    message: format!(
                        "the {} driver answered one trace differently twice: sent ahead it diverged at step {}, \
                         one call at a time {}",
                        driver.name(),
                        first.step,
                        match again {
                            Ok(n) => format!("it performed all {n} steps"),
                            Err(ReplayError::Diverged(d)) => format!("it diverged at step {}", d.step),
                            Err(e) => e.to_string(),
                        }
                    ),
                }),
            }
        }
        Err(unsupported @ ReplayError::Unsupported { .. }) => {
            discard(driver)?;
            Err(unsupported)
        }
        done => done,
    }
}

/// The replay proper. `sent_ahead`: the driver has the trace's calls already, so a snapshot
/// it was not sent (after an observation that differs) cannot be asked for: the divergence is
/// returned without it, for [`lockstep`] to replay the trace again one call at a time.
fn lockstep_one_by_one(
    model: &mut ModelDriver,
    driver: &mut dyn Driver,
    actions: &[Action],
    compare: Compare,
    sent_ahead: bool,
) -> Result<usize, ReplayError> {
    model.restart();
    driver.reset().map_err(|e| ReplayError::at(0, None, e))?;
    for (i, a) in actions.iter().enumerate() {
        let expected = model.step(a);
        let actual = driver.apply(a).map_err(|e| ReplayError::at(i + 1, Some(*a), e))?;
        let check_snapshot = match compare {
            Compare::Every => true,
            Compare::From(k) => i >= k,
        };
        if expected != actual || check_snapshot {
            let expected_snapshot = model.predicted_snapshot();
            // Not sent ahead, this snapshot cannot be asked for: the observations differ, and the
            // divergence goes back without it (`lockstep` replays the trace again).
            let actual_snapshot = if sent_ahead && !check_snapshot {
                expected_snapshot.clone()
            } else {
                driver.snapshot().map_err(|e| ReplayError::at(i + 1, Some(*a), e))?
            };
            // After a typed error the model stops (the task fails); the implementation's clean-up
            // after the error is not modelled, so only the observation counts then.
            let errored = matches!(expected, Observation::Error { .. });
            if expected != actual
                || (!errored && !snapshots_agree(&expected_snapshot, &actual_snapshot, driver.unobserved()))
            {
                return Err(ReplayError::Diverged(Box::new(divergence(
                    model.model(),
                    driver,
                    &actions[..=i],
                    expected,
                    actual,
                    expected_snapshot,
                    actual_snapshot,
                ))));
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
        unobserved: driver.unobserved().to_vec(),
    }
}

/// Replays a trace file's steps on `driver` against the trace's recorded predictions.
pub fn replay(trace: &Trace, driver: &mut dyn Driver) -> Result<usize, ReplayError> {
    let m = trace.model().map_err(|e| ReplayError::Harness {
        step: 0,
        message: e.to_string(),
    })?;
    let actions = trace.actions();
    driver.reset().map_err(|e| ReplayError::at(0, None, e))?;
    for (i, step) in trace.steps.iter().enumerate() {
        let at = |e| ReplayError::at(i + 1, Some(step.action), e);
        let actual = driver.apply(&step.action).map_err(at)?;
        let actual_snapshot = driver.snapshot().map_err(at)?;
        let errored = matches!(step.observation, Observation::Error { .. });
        if actual != step.observation
            || (!errored && !snapshots_agree(&step.snapshot, &actual_snapshot, driver.unobserved()))
        {
            return Err(ReplayError::Diverged(Box::new(divergence(
                &m,
                driver,
                &actions[..=i],
                step.observation.clone(),
                actual,
                step.snapshot.clone(),
                actual_snapshot,
            ))));
        }
    }
    Ok(trace.steps.len())
}
