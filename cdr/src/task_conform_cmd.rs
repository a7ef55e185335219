//! The task-level branch of `cdr conform`, `cdr replay` and `cdr traces`: a task-level preset or
//! trace replays against impl/'s `StreamTask` in this process (`conformance::task_conform`).

use crate::conform_args::{ConformArgs, TraceFormat, TracesArgs, check_conform_outputs, check_output, usage_error};
use crate::junit;
use conformance::task_conform::{self, TaskConformReport, conform_task, read_trace, task_traces};
use conformance::task_driver::TaskImplDriver;
use std::path::Path;
use std::process::ExitCode;

/// `conform` of a task-level preset: impl/'s `StreamTask` in this process, one job.
pub fn conform(preset: &str, args: &ConformArgs) -> ExitCode {
    let not_here = [
        (args.driver_cmd.is_some(), "--driver-cmd"),
        (args.shard.is_some(), "--shard"),
        (!args.flink_fix.is_empty(), "--flink-fix"),
    ];
    if let Some((_, flag)) = not_here.iter().find(|(given, _)| *given) {
        return usage_error(format!(
            "{flag} is not available for the task level: its traces replay against impl/'s StreamTask in this process"
        ));
    }
    if args.random == Some(0) {
        return usage_error("--random needs at least one walk");
    }
    if let Err(e) = check_conform_outputs(args) {
        return usage_error(e);
    }
    match conform_task(preset, args.random, args.seed) {
        Ok(report) => {
            if let Some(path) = &args.junit {
                let case = junit::task_conform_case(&report, args.require_complete);
                if let Err(e) = junit::write(path, vec![junit::suite_of("conform", case)]) {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
            finish(&report, args.json, &args.save, args.require_complete)
        }
        Err(e) => {
            eprintln!("error: {e}\nno verdict: the harness failed, not the implementation");
            ExitCode::from(2)
        }
    }
}

/// `traces` of a task-level preset: one task-level trace file per line (`cdr replay` reads each).
pub fn traces(args: &TracesArgs) -> ExitCode {
    if args.format == TraceFormat::Itf {
        return usage_error("--format itf is not available for the task level: its traces are written as JSON lines");
    }
    if args.random == Some(0) {
        return usage_error("--random needs at least one walk");
    }
    if let Err(e) = check_output(&args.out, false) {
        return usage_error(e);
    }
    let traces = match task_traces(&args.preset, args.random, args.seed) {
        Ok(t) => t,
        Err(e) => return usage_error(e),
    };
    let lines: Vec<String> = traces
        .iter()
        .map(|t| serde_json::to_string(t).expect("a trace serializes"))
        .collect();
    if let Err(e) = std::fs::write(&args.out, lines.join("\n") + "\n") {
        return usage_error(format!("cannot write {}: {e}", args.out.display()));
    }
    println!("wrote {} traces to {}", traces.len(), args.out.display());
    ExitCode::SUCCESS
}

/// Prints `report` and saves its divergence to `save`; the exit code is the verdict.
fn finish(report: &TaskConformReport, json: bool, save: &Path, require_complete: bool) -> ExitCode {
    let complete = report.is_complete();
    if let Some(d) = &report.divergence {
        let text = serde_json::to_string_pretty(&d.trace).expect("serializes");
        if let Err(e) = std::fs::write(save, text) {
            eprintln!("warning: cannot save the diverging trace to {}: {e}", save.display());
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(report).expect("serializes"));
    } else {
        println!("model task-level / preset {} / impl StreamTask", report.preset);
        println!(
            "graph: {} states, {} edges; replayed {} traces, {} steps ({} of {} edges, {} of {} action kinds) in {:.2} s",
            report.states,
            report.edges,
            report.traces,
            report.steps,
            report.edges_replayed,
            report.edges,
            report.action_kinds_replayed.len(),
            report.action_kinds.len(),
            report.elapsed_s
        );
        match &report.divergence {
            None => println!("no divergence"),
            Some(d) => {
                println!(
                    "DIVERGENCE at step {} of a trace from shape `{}`: {}",
                    d.step, d.trace.shape_label, d.first_difference
                );
                for (i, step) in d.trace.steps.iter().enumerate() {
                    println!("  {:>3}. {:?}", i + 1, step.action);
                }
                println!("saved to {}", save.display());
            }
        }
    }
    if report.divergence.is_some() || (require_complete && !complete) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `cdr replay` of a task-level trace file against impl/'s `StreamTask`.
pub fn replay(path: &Path, json: bool) -> ExitCode {
    let (model, trace) = match read_trace(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let steps = trace.steps.len();
    let mut driver = TaskImplDriver::new(model.clone());
    match task_conform::replay(&model, &trace, &mut driver) {
        Err(e) => {
            eprintln!("error: {e}\nno verdict: the harness failed, not the implementation");
            ExitCode::from(2)
        }
        Ok(None) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"steps": steps, "diverged_at": null, "driver": "impl-task"})
                );
            } else {
                println!("replay {}: {} steps, no divergence\nPASSED", path.display(), steps);
            }
            ExitCode::SUCCESS
        }
        Ok(Some(d)) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"steps": steps, "diverged_at": d.step, "driver": "impl-task", "first_difference": d.first_difference})
                );
            } else {
                println!("DIVERGENCE at step {}: {}", d.step, d.first_difference);
            }
            ExitCode::from(1)
        }
    }
}
