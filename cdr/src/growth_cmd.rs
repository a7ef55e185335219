//! `cdr growth`: how the state space, the time and the memory of a check grow as a
//! configuration grows along one dimension at a time (`recovery_model::tooling::growth`), and where a
//! time or memory budget stops it: the frontier of exhaustive checking on this machine.
//!
//! Every point is a `cdr check --config FILE --json` of its own, a child process, so that its
//! wall time and its peak resident memory (the child's `ru_maxrss`, from `wait4`) are its own.

use crate::progress;
use clap::Args;
use recovery_model::presets::find_preset;
use recovery_model::tooling::format::grouped;
use recovery_model::tooling::growth::{Dimension, describe, grow};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `cdr growth`.
#[derive(Args, Debug)]
pub struct GrowthArgs {
    /// The base configuration (see `cdr presets`).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Only these dimensions: channels, recovered, live, checkpoints (comma-separated or
    /// repeated). Default: all four.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub dimension: Vec<String>,
    /// Wall-time budget of one step, in seconds: a step still running then is killed and ends
    /// its dimension.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub budget: u64,
    /// Memory budget of one step (bytes, or K, M, G, T), passed to the check as its
    /// --max-memory: a step that passes it stops and ends its dimension.
    #[arg(long, value_name = "SIZE", default_value = "20G", value_parser = progress::parse_size)]
    pub max_memory: u64,
    /// The last step to run in each dimension (default: until the budget or the model's bounds).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub max_step: Option<u32>,
    /// Checker threads of every step, 1 to 256 (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// Skip the acyclicity check that makes liveness verdicts sound, in every step.
    #[arg(long)]
    pub no_acyclic: bool,
    /// Check every step with `--compact-frontier`: the states waiting to be searched encoded.
    #[arg(long)]
    pub compact_frontier: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Outcome {
    /// The check ran to its end; `passed` says whether every verdict was as expected.
    Checked,
    /// Still running after the time budget: killed.
    OverBudget,
    /// Stopped by its --max-memory.
    OverMemory,
}

/// One step of one dimension.
#[derive(Debug, Serialize)]
struct Point {
    dimension: &'static str,
    step: u32,
    /// What the step has, e.g. "3 channels".
    grown: String,
    outcome: Outcome,
    /// Unique states (a checked step only).
    unique_states: Option<usize>,
    /// States generated, counting revisits (a checked step only).
    states: Option<usize>,
    /// Unique states when the memory budget stopped the step (the check's own figure).
    unique_states_reached: Option<usize>,
    /// The check's verdict: every property as expected (a checked step only).
    passed: Option<bool>,
    /// Wall time of the child process, from its start to its end.
    wall_seconds: f64,
    /// The child's peak resident memory.
    peak_mib: f64,
}

/// Where a dimension ended.
#[derive(Debug, Serialize)]
struct End {
    dimension: &'static str,
    /// "budget": a step passed the time or memory budget; "bound": the next step is past the
    /// model's bounds; "max-step": --max-step was reached.
    reason: &'static str,
    detail: String,
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// `cdr growth`.
pub fn growth(args: GrowthArgs) -> ExitCode {
    let Some(preset) = find_preset(&args.preset) else {
        return usage_error(format!(
            "unknown preset `{}`; known presets: {}",
            args.preset,
            recovery_model::presets::preset_names().join(", ")
        ));
    };
    let mut dimensions = Vec::new();
    for name in &args.dimension {
        match Dimension::from_name(name) {
            Some(d) if !dimensions.contains(&d) => dimensions.push(d),
            Some(_) => {}
            None => {
                let known: Vec<&str> = Dimension::ALL.iter().map(|d| d.name()).collect();
                return usage_error(format!(
                    "unknown dimension `{name}`; the dimensions are: {}",
                    known.join(", ")
                ));
            }
        }
    }
    if dimensions.is_empty() {
        dimensions = Dimension::ALL.to_vec();
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return usage_error(format!("cannot find the cdr executable: {e}")),
    };
    let dir = std::env::temp_dir().join(format!("cdr-growth-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return usage_error(format!("cannot create {}: {e}", dir.display()));
    }
    let threads = crate::default_threads(args.threads);
    let base = (preset.config)();
    let unreachable: Vec<&str> = preset.unreachable.iter().map(|p| p.name()).collect();
    let mut points = Vec::new();
    let mut ends = Vec::new();
    let result = (|| -> Result<(), String> {
        for &d in &dimensions {
            let mut step = 0;
            let end = loop {
                if args.max_step.is_some_and(|m| step > m) {
                    break End {
                        dimension: d.name(),
                        reason: "max-step",
                        detail: format!("--max-step {} reached", step - 1),
                    };
                }
                let cfg = match grow(&base, d, step) {
                    Ok(cfg) => cfg,
                    Err(e) => {
                        break End {
                            dimension: d.name(),
                            reason: "bound",
                            detail: format!("the model's bounds: {e}"),
                        };
                    }
                };
                let file = dir.join(format!("{}-{step}.json", d.name()));
                let json = serde_json::json!({ "config": cfg, "unreachable": unreachable });
                std::fs::write(&file, serde_json::to_string_pretty(&json).expect("serializes"))
                    .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
                let grown = describe(&base, d, step);
                eprintln!(
                    "growth: {} step {step} ({grown}): checking (budget {} s)...",
                    d.name(),
                    args.budget
                );
                let point = run_step(&exe, &file, &dir, &args, threads, d, step, grown)?;
                eprintln!("growth: {}", summary(&point));
                let over = point.outcome != Outcome::Checked;
                let detail = format!("step {step} ({}): {}", point.grown, summary_outcome(&point, &args));
                points.push(point);
                if over {
                    break End {
                        dimension: d.name(),
                        reason: "budget",
                        detail,
                    };
                }
                step += 1;
            };
            eprintln!("growth: {} ends: {}", d.name(), end.detail);
            ends.push(end);
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        return usage_error(e);
    }
    if args.json {
        let out = serde_json::json!({
            "preset": preset.name,
            "budget_seconds": args.budget,
            "max_memory_bytes": args.max_memory,
            "threads": threads,
            "acyclic": !args.no_acyclic,
            "compact_frontier": args.compact_frontier,
            "points": points,
            "ends": ends,
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("serializes"));
    } else {
        print!("{}", table(&points));
        println!();
        for e in &ends {
            println!("{}: {}", e.dimension, e.detail);
        }
    }
    ExitCode::SUCCESS
}

/// Runs one step as `cdr check --config FILE --json` and measures it.
#[allow(clippy::too_many_arguments)]
fn run_step(
    exe: &Path,
    file: &Path,
    dir: &Path,
    args: &GrowthArgs,
    threads: usize,
    d: Dimension,
    step: u32,
    grown: String,
) -> Result<Point, String> {
    let out_path: PathBuf = dir.join("stdout");
    let err_path: PathBuf = dir.join("stderr");
    let open = |p: &Path| std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    let mut cmd = Command::new(exe);
    cmd.arg("check")
        .arg("--config")
        .arg(file)
        .arg("--json")
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--max-memory")
        .arg(args.max_memory.to_string())
        .stdin(Stdio::null())
        .stdout(open(&out_path)?)
        .stderr(open(&err_path)?);
    if args.no_acyclic {
        cmd.arg("--no-acyclic");
    }
    if args.compact_frontier {
        cmd.arg("--compact-frontier");
    }
    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let budget = Duration::from_secs(args.budget);
    let mut killed = false;
    let (status, usage) = loop {
        let flags = if killed { 0 } else { libc::WNOHANG };
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet reaped (std's `Child` never waits for it).
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("waiting for the check: {e}"));
        }
        if start.elapsed() > budget {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
            continue;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let wall_seconds = start.elapsed().as_secs_f64();
    drop(child);
    // ru_maxrss is in KiB on Linux.
    let peak_mib = usage.ru_maxrss as f64 / 1024.0;
    let mut point = Point {
        dimension: d.name(),
        step,
        grown,
        outcome: Outcome::OverBudget,
        unique_states: None,
        states: None,
        unique_states_reached: None,
        passed: None,
        wall_seconds,
        peak_mib,
    };
    if killed {
        return Ok(point);
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    match code {
        Some(0 | 1) => {
            let out = std::fs::read_to_string(&out_path).map_err(|e| e.to_string())?;
            let report: serde_json::Value =
                serde_json::from_str(&out).map_err(|e| format!("the check's JSON report: {e}\n{stderr}"))?;
            let count = |k: &str| report[k].as_u64().and_then(|n| usize::try_from(n).ok());
            point.outcome = Outcome::Checked;
            point.unique_states = count("unique_states");
            point.states = count("states");
            point.passed = Some(code == Some(0));
        }
        Some(2) if stderr.contains("--max-memory") => {
            point.outcome = Outcome::OverMemory;
            // "... passed --max-memory N MiB (U unique states, depth D)".
            point.unique_states_reached = stderr
                .split(" unique states, depth")
                .next()
                .and_then(|s| s.rsplit('(').next())
                .and_then(|n| n.trim().parse().ok());
        }
        _ => {
            return Err(format!(
                "{} step {step}: the check ended with {}:\n{}",
                d.name(),
                code.map_or_else(|| "a signal".to_string(), |c| format!("exit code {c}")),
                stderr.trim_end()
            ));
        }
    }
    Ok(point)
}

fn summary_outcome(p: &Point, args: &GrowthArgs) -> String {
    match p.outcome {
        Outcome::Checked => format!(
            "{} unique states{}",
            grouped(p.unique_states.unwrap_or(0)),
            if p.passed == Some(true) { "" } else { ", FAILED" }
        ),
        Outcome::OverBudget => format!(
            "still running after the {} s budget (killed at {:.0} MiB)",
            args.budget, p.peak_mib
        ),
        Outcome::OverMemory => format!(
            "passed the {} MiB memory budget after {:.1} s{}",
            args.max_memory >> 20,
            p.wall_seconds,
            p.unique_states_reached
                .map_or_else(String::new, |n| format!(", at {} unique states", grouped(n)))
        ),
    }
}

fn summary(p: &Point) -> String {
    match p.outcome {
        Outcome::Checked => format!(
            "{} step {} ({}): {} unique, {} generated, {:.1} s, {:.0} MiB{}",
            p.dimension,
            p.step,
            p.grown,
            grouped(p.unique_states.unwrap_or(0)),
            grouped(p.states.unwrap_or(0)),
            p.wall_seconds,
            p.peak_mib,
            if p.passed == Some(true) { "" } else { ", FAILED" }
        ),
        Outcome::OverBudget => format!(
            "{} step {} ({}): over the time budget after {:.1} s, {:.0} MiB",
            p.dimension, p.step, p.grown, p.wall_seconds, p.peak_mib
        ),
        Outcome::OverMemory => format!(
            "{} step {} ({}): over the memory budget after {:.1} s, {:.0} MiB",
            p.dimension, p.step, p.grown, p.wall_seconds, p.peak_mib
        ),
    }
}

/// The Markdown table: one row per step, with the factor by which the unique states grew
/// over the step before.
fn table(points: &[Point]) -> String {
    let mut out = String::from(
        "| dimension | step | grown | unique | generated | × unique | wall s | peak MiB |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut prev: Option<(&str, usize)> = None;
    for p in points {
        let factor = match (prev, p.unique_states) {
            (Some((d, before)), Some(now)) if d == p.dimension && before > 0 => {
                format!("{:.1}", now as f64 / before as f64)
            }
            _ => "—".to_string(),
        };
        let (unique, generated) = match p.outcome {
            Outcome::Checked => (grouped(p.unique_states.unwrap_or(0)), grouped(p.states.unwrap_or(0))),
            Outcome::OverBudget => ("over time budget".to_string(), "—".to_string()),
            Outcome::OverMemory => ("over memory budget".to_string(), "—".to_string()),
        };
        let wall = if p.outcome == Outcome::OverBudget {
            format!("> {:.0}", p.wall_seconds.floor())
        } else {
            format!("{:.1}", p.wall_seconds)
        };
        out.push_str(&format!(
            "| {} | {} | {} | {unique} | {generated} | {factor} | {wall} | {} |\n",
            p.dimension,
            p.step,
            p.grown,
            grouped(p.peak_mib.round() as usize)
        ));
        prev = p.unique_states.map(|u| (p.dimension, u));
    }
    out
}
