//! The `conform` and `replay` subcommands of `cdr`.

use crate::conform::{ConformReport, conform_edges, conform_random};
use crate::driver::ModelDriver;
use crate::impl_driver::ImplDriver;
use crate::replay::{Divergence, replay as replay_trace};
use crate::trace::Trace;
use clap::Args;
use recovery_model::config::preset_names;
use recovery_model::{RecoveryModel, Variant, preset};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `cdr conform`.
#[derive(Args, Debug)]
pub struct ConformArgs {
    /// Named configuration whose traces are replayed.
    #[arg(long, default_value = "ci")]
    pub preset: String,
    /// Replay one trace per edge of the reachable state graph (the default).
    #[arg(long, conflicts_with = "random")]
    pub edges: bool,
    /// Replay N random walks.
    #[arg(long, value_name = "N")]
    pub random: Option<usize>,
    /// Seed of the random walks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop after this many diverging traces.
    #[arg(long, default_value_t = 1)]
    pub max_divergences: usize,
    /// Where the first diverging trace is saved.
    #[arg(long, default_value = "target/conformance/divergence.json")]
    pub save: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cdr replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A trace file written by `cdr conform` or a generator.
    pub file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Saves the diverging prefix as a trace and returns the line that replays it.
fn save_divergence(model: &RecoveryModel, preset: &str, d: &Divergence, path: &Path) -> String {
    match Trace::record(model, Some(preset), &d.actions) {
        Ok(mut trace) => {
            trace.reason = Some(format!("diverged at step {} in `cdr conform`", d.step));
            match trace.write(path) {
                Ok(()) => format!(
                    "saved to {}\nreproduce: cargo run --release -- replay {}",
                    path.display(),
                    path.display()
                ),
                Err(e) => format!("could not save the trace: {e}"),
            }
        }
        Err(e) => format!("could not record the trace: {e}"),
    }
}

fn print_report(args: &ConformArgs, r: &ConformReport) {
    let mode = match args.random {
        Some(n) => format!("{n} random walks, seed {}", args.seed),
        None => "edge-complete".to_string(),
    };
    println!("conform: preset {} / variant fixed / {mode}", args.preset);
    println!(
        "traces {}  steps {}  {:.1} s  ({:.0} steps/s)",
        r.traces, r.steps, r.seconds, r.steps_per_second
    );
    println!(
        "states {}/{}  edges {}/{}  action kinds {}/{}",
        r.states_covered, r.states_total, r.edges_covered, r.edges_total, r.action_kinds_covered, r.action_kinds_total
    );
    if !r.kinds_unreachable.is_empty() {
        println!("  not reachable in this preset: {}", r.kinds_unreachable.join(", "));
    }
    if !r.kinds_missed.is_empty() {
        println!("  reachable but never replayed: {}", r.kinds_missed.join(", "));
    }
    println!("divergences {}", r.divergences);
}

/// `cdr conform`.
pub fn conform(args: ConformArgs) -> ExitCode {
    let Some(cfg) = preset(&args.preset) else {
        return usage_error(format!(
            "unknown preset `{}`; known presets: {}",
            args.preset,
            preset_names().join(", ")
        ));
    };
    if args.random == Some(0) {
        return usage_error("--random needs at least one walk");
    }
    let model = RecoveryModel::new(cfg, Variant::Fixed);
    let mut driver = ImplDriver::new(&model.cfg);
    let max = args.max_divergences.max(1);
    let report = match args.random {
        Some(n) => conform_random(&model, &mut driver, n, args.seed, max),
        None => conform_edges(&model, &mut driver, max),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        print_report(&args, &report);
    }
    if let Some(d) = &report.first_divergence {
        let saved = save_divergence(&model, &args.preset, d, &args.save);
        // The details go to stderr so that `--json` stays one object on stdout.
        eprintln!("\n{d}\n{saved}");
    }
    if report.divergences > 0 {
        ExitCode::from(1)
    } else {
        if !args.json {
            println!("\nPASSED ({} steps)", report.steps);
        }
        ExitCode::SUCCESS
    }
}

/// `cdr replay FILE`.
pub fn replay(args: ReplayArgs) -> ExitCode {
    let trace = match Trace::read(&args.file) {
        Ok(t) => t,
        Err(e) => return usage_error(format!("{}: {e}", args.file.display())),
    };
    let model = match trace.model() {
        Ok(m) => m,
        Err(e) => return usage_error(format!("{}: {e}", args.file.display())),
    };
    // The recorded predictions must be the model's own.
    let mut reference = ModelDriver::new(model.clone());
    if let Err(d) = replay_trace(&trace, &mut reference) {
        if args.json {
            println!(
                "{}",
                serde_json::json!({"steps": trace.steps.len(), "diverged_at": d.step, "driver": "model"})
            );
        }
        eprintln!("the trace's recorded predictions are not the model's:\n{d}");
        return ExitCode::from(1);
    }
    let mut driver = ImplDriver::new(&model.cfg);
    let result = replay_trace(&trace, &mut driver);
    if args.json {
        let diverged = result.as_ref().err().map(|d| d.step);
        println!(
            "{}",
            serde_json::json!({"steps": trace.steps.len(), "diverged_at": diverged, "driver": "impl"})
        );
    }
    match result {
        Ok(n) => {
            if !args.json {
                println!("replay {}: {n} steps, no divergence\nPASSED", args.file.display());
            }
            ExitCode::SUCCESS
        }
        Err(d) => {
            eprintln!("{d}");
            ExitCode::from(1)
        }
    }
}
