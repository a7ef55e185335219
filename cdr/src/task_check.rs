//! `cdr check` of the task-level model: the `task` preset family and the task-level bug
//! variants dispatch here, so the channel model's setup stays as it is. The report has the
//! channel model's shape (text, `--json`, `--junit`); exit codes are the same.

use crate::junit;
use recovery_model::task_level::bug_zoo::{TASK_VARIANTS, TaskVariantInfo};
use recovery_model::task_level::presets::{TASK_PRESETS, TaskPreset, find_task_preset};
use recovery_model::task_level::properties::TaskPropertyId;
use recovery_model::task_level::{TaskModel, TaskVariant};
use recovery_model::tooling::check::{CheckReport, Status};
use recovery_model::tooling::task_level::check::{check, shortest_counterexample};
use recovery_model::tooling::task_level::format;
use std::path::Path;
use std::process::ExitCode;

/// Whether `check` with this preset and variant is a task-level check.
pub fn is_task_check(preset: Option<&str>, variant: &str) -> bool {
    preset.is_some_and(|p| find_task_preset(p).is_some())
        || TaskVariant::from_name(variant).is_some_and(|v| v != TaskVariant::Fixed)
}

/// What `cdr check` passes on.
#[derive(Debug)]
pub struct TaskCheckArgs<'a> {
    /// `--preset`, if given.
    pub preset: Option<&'a str>,
    /// `--variant`.
    pub variant: &'a str,
    /// Checker threads.
    pub threads: usize,
    /// Run the acyclicity check.
    pub acyclic: bool,
    /// Print one JSON object.
    pub json: bool,
    /// `--junit FILE`.
    pub junit: Option<&'a Path>,
    /// An option of the channel model given (`--config`, `--mermaid`, `--trace-out`): refused.
    pub channel_only_option: Option<&'static str>,
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The model `check --preset P --variant V` runs and its preset, or a usage error.
pub fn load(preset: Option<&str>, variant: &str) -> Result<(TaskModel, &'static TaskPreset), String> {
    let variant = TaskVariant::from_name(variant).ok_or_else(|| {
        let known: Vec<&str> = TASK_VARIANTS.iter().map(|v| v.name).collect();
        format!(
            "`{variant}` is not a task-level variant; with a task preset the variants are: fixed, {}",
            known.join(", ")
        )
    })?;
    let name = match (preset, variant.info()) {
        (Some(p), _) => p,
        (None, Some(info)) => info.preset,
        (None, None) => "task",
    };
    let p = find_task_preset(name).ok_or_else(|| {
        let known: Vec<&str> = TASK_PRESETS.iter().map(|p| p.name).collect();
        format!(
            "task-level variant {} needs a task-level preset; they are: {}",
            variant.name(),
            known.join(", ")
        )
    })?;
    let shapes = (p.shapes)();
    for s in &shapes {
        s.validate().map_err(|e| format!("{name}: {e}"))?;
    }
    Ok((TaskModel::new(shapes, variant), p))
}

/// `cdr check` of a task-level preset or variant.
pub fn run(args: TaskCheckArgs) -> ExitCode {
    if let Some(option) = args.channel_only_option {
        return usage_error(format!("{option} is not available for the task-level model"));
    }
    let (model, p) = match load(args.preset, args.variant) {
        Ok(m) => m,
        Err(e) => return usage_error(e),
    };
    let preset = p.name;
    if let Some(path) = args.junit
        && let Err(e) = junit::check_writable(path)
    {
        return usage_error(e);
    }
    let report = check(&model, preset, p.unreachable, p.violated, args.threads, args.acyclic);
    if let Some(path) = args.junit
        && let Err(e) = junit::write(path, vec![junit::check_suite(&report)])
    {
        return usage_error(e);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
    } else {
        print_report(&model, preset, &report);
    }
    if let Some(info) = model.variant.info()
        && report
            .properties
            .iter()
            .any(|p| p.name == info.property.name() && p.status != Status::Violated)
    {
        eprintln!(
            "error: variant {} is not exposed by {preset}: \"{}\" holds, so this check says nothing about the bug",
            info.name, info.property
        );
        return ExitCode::from(2);
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn command(model: &TaskModel, preset: &str) -> String {
    let mut cmd = format!("cdr check --preset {preset}");
    if model.variant != TaskVariant::Fixed {
        cmd.push_str(&format!(" --variant {}", model.variant.name()));
    }
    cmd
}

fn print_report(model: &TaskModel, preset: &str, r: &CheckReport) {
    println!("model {} / preset {} / variant {}", r.model, r.preset, r.variant);
    println!(
        "states {}  unique {}  max depth {}  {:.2} s",
        r.states, r.unique_states, r.max_depth, r.seconds
    );
    crate::report::print_verdicts(r, 62);
    for p in r.properties.iter().filter(|p| p.status == Status::Violated) {
        println!("\nshortest counterexample of \"{}\":", p.name);
        if let Some(path) = TaskPropertyId::from_name(p.name).and_then(|id| shortest_counterexample(model, id)) {
            print!("{}", format::counterexample(model, &path));
        }
    }
    if !r.passed() {
        println!("\nreproduce: {}", command(model, preset));
    }
    println!("\n{}", if r.passed() { "PASSED" } else { "FAILED" });
}

/// `cdr presets`: the task-level presets' rows (name, summary).
pub fn preset_rows() -> impl Iterator<Item = (&'static str, &'static str)> {
    TASK_PRESETS.iter().map(|p| (p.name, p.summary))
}

/// `cdr presets --json`: the task-level presets, with their shapes.
pub fn presets_json() -> Vec<serde_json::Value> {
    TASK_PRESETS
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name, "summary": p.summary, "model": "task-level",
                "shapes": (p.shapes)(), "unreachable": p.unreachable, "violated": p.violated,
            })
        })
        .collect()
}

/// `cdr variants --check`: one task-level variant checked on its preset (exhaustive, without
/// the acyclicity pass); its property's status and the report.
pub fn check_variant(info: &TaskVariantInfo, threads: usize) -> (Status, CheckReport) {
    let (model, p) = load(Some(info.preset), info.name).expect("the table's presets exist");
    let report = check(&model, p.name, p.unreachable, p.violated, threads, false);
    let status = report
        .properties
        .iter()
        .find(|p| p.name == info.property.name())
        .map_or(Status::Holds, |p| p.status);
    (status, report)
}
