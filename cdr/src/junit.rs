//! JUnit XML for CI systems: one test case per property of a check, per bug-zoo variant, and
//! per preset of a conformance run. Written with `quick-junit`; `--junit FILE` on `check`,
//! `conform` and `variants --check`.

use conformance::conform::ConformReport;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use recovery_model::tooling::check::{CheckReport, Status};
use std::path::Path;
use std::time::Duration;

fn failure(message: &str, description: Option<String>) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(message);
    if let Some(d) = description {
        status.set_description(d);
    }
    status
}

/// One suite per check: a test case per property, failing when it is violated or its example
/// is missing (an example unreachable by design is skipped, with the reason).
pub fn check_suite(r: &CheckReport) -> TestSuite {
    let mut suite = TestSuite::new(format!("check {} / {}", r.preset, r.variant));
    suite.set_time(Duration::from_secs_f64(r.seconds.max(0.0)));
    for p in &r.properties {
        let status = match p.status {
            Status::Holds | Status::ExampleFound => TestCaseStatus::success(),
            Status::ExampleMissing if p.unreachable_by_design => {
                let mut s = TestCaseStatus::skipped();
                s.set_message("unreachable by design in this configuration");
                s
            }
            Status::ExampleMissing => failure("example missing", None),
            // A defect of the Flink version this configuration describes: known, reported with
            // its counterexample, not a failure of the protocol under check.
            Status::Violated if p.violated_by_design => {
                let mut s = TestCaseStatus::skipped();
                s.set_message("violated by design: a known defect of the Flink version this configuration describes");
                s
            }
            Status::Violated => failure("violated", p.trace.as_ref().map(|t| t.join("\n"))),
        };
        let mut case = TestCase::new(p.name, status);
        case.set_classname(format!("{}.{}", r.preset, p.expectation));
        suite.add_test_case(case);
    }
    suite
}

/// One test case for a conformance run of `preset`: failing on a divergence, and with
/// `require_complete` on coverage missing.
pub fn conform_case(preset: &str, r: &ConformReport, require_complete: bool) -> TestCase {
    let mut problems = Vec::new();
    if r.divergences > 0 {
        problems.push(format!("{} diverging traces", r.divergences));
    }
    if require_complete {
        problems.extend(r.incomplete());
    }
    let status = if problems.is_empty() {
        TestCaseStatus::success()
    } else {
        failure(&problems.join("; "), r.first_divergence.as_ref().map(|d| d.to_string()))
    };
    let mut case = TestCase::new(
        format!(
            "conform {preset}{}",
            r.shard.as_ref().map_or_else(String::new, |s| format!(" shard {s}"))
        ),
        status,
    );
    case.set_classname(format!("conform.{}", r.driver));
    case.set_time(Duration::from_secs_f64(r.seconds.max(0.0)));
    case.set_system_out(format!(
        "traces {} steps {} edges {}/{} states {}/{} action kinds {}/{}",
        r.traces,
        r.steps,
        r.edges_covered,
        r.edges_total.map_or_else(|| "?".into(), |t| t.to_string()),
        r.states_covered,
        r.states_total.map_or_else(|| "?".into(), |t| t.to_string()),
        r.action_kinds_covered,
        r.action_kinds_total
    ));
    case
}

/// The test case of a task-level conformance run: failing on a divergence, or (with
/// `require_complete`) on an edge or action kind not replayed.
pub fn task_conform_case(r: &conformance::task_conform::TaskConformReport, require_complete: bool) -> TestCase {
    let mut problems = Vec::new();
    if let Some(d) = &r.divergence {
        problems.push(format!("divergence at step {}: {}", d.step, d.first_difference));
    }
    if require_complete && !r.is_complete() {
        problems.push(format!(
            "{} of {} edges, {} of {} action kinds replayed",
            r.edges_replayed,
            r.edges,
            r.action_kinds_replayed.len(),
            r.action_kinds.len()
        ));
    }
    let status = match problems.is_empty() {
        true => TestCaseStatus::success(),
        false => failure(&problems.join("; "), None),
    };
    let mut case = TestCase::new(format!("conform {}", r.preset), status);
    case.set_classname("conform.impl-task");
    case.set_time(Duration::from_secs_f64(r.elapsed_s.max(0.0)));
    case.set_system_out(format!(
        "traces {} steps {} edges {}/{} action kinds {}/{}",
        r.traces,
        r.steps,
        r.edges_replayed,
        r.edges,
        r.action_kinds_replayed.len(),
        r.action_kinds.len()
    ));
    case
}

/// A suite holding one case.
pub fn suite_of(name: &str, case: TestCase) -> TestSuite {
    let mut suite = TestSuite::new(name);
    suite.add_test_case(case);
    suite
}

/// One test case per variant: whether its property found it.
pub fn variant_case(name: &str, preset: &str, property: &str, status: Status, seconds: f64) -> TestCase {
    let outcome = match status {
        Status::Violated => TestCaseStatus::success(),
        other => failure(
            &format!("\"{property}\" is {other:?}, not violated: the bug is not found"),
            None,
        ),
    };
    let mut case = TestCase::new(name, outcome);
    case.set_classname(format!("variants.{preset}"));
    case.set_time(Duration::from_secs_f64(seconds.max(0.0)));
    case
}

/// Writes `suites` as one JUnit report to `path`.
pub fn write(path: &Path, suites: Vec<TestSuite>) -> Result<(), String> {
    let mut report = Report::new("cdr");
    report.add_test_suites(suites);
    let xml = report
        .to_string()
        .map_err(|e| format!("cannot render JUnit XML: {e}"))?;
    std::fs::write(path, xml).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Fails early, before a long run, when `path` cannot be written (its directory must exist).
pub fn check_writable(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(format!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
