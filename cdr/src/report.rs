//! Counterexamples as a person reads them on a terminal: a step table (step, thread, action,
//! what changed), the state after the last step, and how to open the same path in Explorer.

use crate::setup::Setup;
use conformance::trace::deep_link;
use recovery_model::tooling::check::{AcyclicBy, CheckReport, Status};
use recovery_model::tooling::format;
use recovery_model::{Action, RecoveryModel};
use std::fmt::Write;

/// The port `explore` listens on unless `--port` says otherwise.
pub const DEFAULT_PORT: u16 = 3000;

/// The step table of `actions` from the initial state. Each change of a step gets its own
/// line, under the "what changed" column.
pub fn step_table(model: &RecoveryModel, actions: &[Action]) -> String {
    let (steps, _) = format::steps(model, actions);
    let action_w = steps
        .iter()
        .map(|s| s.channel.len() + 1 + s.call.len())
        .max()
        .unwrap_or(0)
        .clamp(6, 48);
    let mut out = format!(
        "{:>4}  {:<12}  {:<action_w$}  what changed\n",
        "step", "thread", "action"
    );
    for (i, s) in steps.iter().enumerate() {
        let action = format!("{} {}", s.channel, s.call);
        let mut changes = s.changes.iter();
        let _ = writeln!(
            out,
            "{:>4}  {:<12}  {:<action_w$}  {}",
            i + 1,
            s.thread.to_string(),
            action,
            changes.next().map_or("", String::as_str)
        );
        for c in changes {
            let _ = writeln!(out, "{:>4}  {:<12}  {:<action_w$}  {c}", "", "", "");
        }
    }
    out
}

/// One counterexample for the terminal: heading, step table, last state, Explorer hint.
pub fn counterexample(setup: &Setup, property: &str, actions: &[Action]) -> String {
    counterexample_found_by(setup, property, actions, "shortest")
}

/// [`counterexample`], saying how it was found (`shortest`, `shrunk from a random walk`).
pub fn counterexample_found_by(setup: &Setup, property: &str, actions: &[Action], how: &str) -> String {
    let model = &setup.model;
    let mut out = format!(
        "counterexample for \"{property}\" ({} step{}, {how}):\n",
        actions.len(),
        if actions.len() == 1 { "" } else { "s" }
    );
    out.push_str(&step_table(model, actions));
    let (_, last) = format::steps(model, actions);
    out.push_str("\nstate after the last step:\n");
    for line in format::state(model, &last).lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str(&explore_hint(setup, actions));
    out
}

/// "explore it: cdr explore ... then open http://127.0.0.1:3000/#/steps/...".
pub fn explore_hint(setup: &Setup, actions: &[Action]) -> String {
    let base = format!("http://127.0.0.1:{DEFAULT_PORT}/");
    match deep_link(&setup.model, actions, &base) {
        Ok(link) => format!(
            "\nexplore it:  {}\n             then open {link}\n",
            setup.command("explore")
        ),
        Err(e) => format!("\n(no Explorer link: {e})\n"),
    }
}

/// What `check` prints of a report after its states line: whether the graph is acyclic, then
/// one line per property (names padded to `name_width`).
pub fn print_verdicts(r: &CheckReport, name_width: usize) {
    match r.acyclic {
        Some(true) if r.acyclic_by == Some(AcyclicBy::Ranking) => {
            println!(
                "state graph acyclic: yes, every edge increases the progress measure (eventually verdicts are sound)"
            )
        }
        Some(true) => {
            println!("state graph acyclic: yes, no back edge in a depth-first search (eventually verdicts are sound)")
        }
        Some(false) => println!("state graph acyclic: NO (eventually verdicts may miss cycles)"),
        None => println!("state graph acyclic: not checked"),
    }
    println!();
    for p in &r.properties {
        let mark = match p.status {
            Status::Holds => "holds",
            Status::Violated if p.violated_by_design => "VIOLATED (by design: a defect of the Flink version modelled)",
            Status::Violated => "VIOLATED",
            Status::ExampleFound => "example found",
            Status::ExampleMissing if p.unreachable_by_design => "example missing (unreachable by design)",
            Status::ExampleMissing => "EXAMPLE MISSING",
        };
        println!("  {:<10} {:<name_width$} {}", p.expectation, p.name, mark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;

    #[test]
    fn step_table_has_one_numbered_row_per_step_and_says_what_changed() {
        let setup = crate::setup::load(None, None, "enable-notify-flag-before-count").unwrap();
        let actions = shortest_counterexample(&setup.model, PropertyId::CreditConservation).unwrap();
        let table = step_table(&setup.model, &actions);
        let numbered = table
            .lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .count();
        assert_eq!(numbered, actions.len());
        assert!(table.contains("recycle(x0)"), "{table}");
        assert!(
            table.contains("pending: recycler notifyBufferAvailable(1) on remote#1"),
            "{table}"
        );
        let text = counterexample(&setup, PropertyId::CreditConservation.name(), &actions);
        assert!(text.contains("cdr explore --preset tiny --variant enable-notify-flag-before-count"));
        assert!(text.contains("http://127.0.0.1:3000/#/steps/0/"), "{text}");
    }
}
