//! `check` with a progress line: the same verdicts as [`recovery_model::check::check`], with
//! states, unique states, depth and states per second shown on a terminal while the search runs.
//!

use indicatif::{ProgressBar, ProgressStyle};
use recovery_model::RecoveryModel;
use recovery_model::check::CheckReport;
use std::time::{Duration, Instant};

/// Whether a progress line belongs on this stderr: only on a terminal, never with `--json`.
pub fn wanted(json: bool) -> bool {
    use std::io::IsTerminal;
    !json && std::io::stderr().is_terminal()
}

/// A spinner on stderr when `show`, else a hidden bar that draws nothing.
pub fn spinner(show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A counter of `what` with its rate on stderr when `show`, else a hidden bar.
pub fn counter(show: bool, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    let template = format!("{{spinner}} [{{elapsed}}] {{human_pos}} {what} ({{per_sec}})");
    bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// [`recovery_model::check::check`] with a progress line on stderr when `show`.
pub fn check_with_progress(
    model: RecoveryModel,
    label: &str,
    unreachable: &[&str],
    threads: usize,
    acyclic: bool,
    show: bool,
) -> CheckReport {
    let start = Instant::now();
    let bar = spinner(show);
    let report = recovery_model::check::check_with_progress(model, label, unreachable, threads, acyclic, &mut |p| {
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "breadth-first search: {} states, {} unique, depth {}, {:.0} states/s",
            p.states,
            p.unique_states,
            p.max_depth,
            p.states as f64 / secs
        ));
    });
    bar.finish_and_clear();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery_model::check::check;
    use recovery_model::{Variant, preset};

    fn without_time(r: &CheckReport) -> serde_json::Value {
        let mut v = serde_json::to_value(r).unwrap();
        v["seconds"] = serde_json::Value::Null;
        v
    }

    #[test]
    fn progress_check_gives_the_same_report_as_the_model_crates_check() {
        // A variant: violated, held, found and missing verdicts all occur.
        let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::EnableNotifyFlagBeforeCount);
        let plain = check(model.clone(), "tiny", &["recycle races enableNotify"], 1, true);
        let watched = check_with_progress(model, "tiny", &["recycle races enableNotify"], 1, true, false);
        assert_eq!(without_time(&plain), without_time(&watched));
        let actions = |r: &CheckReport| r.properties.iter().map(|p| p.actions.clone()).collect::<Vec<_>>();
        assert_eq!(actions(&plain), actions(&watched));
    }
}
