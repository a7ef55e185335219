//! `cdr simulate`: seeded random walks that evaluate every property, for configurations too
//! large to check exhaustively (`recovery_model::tooling::simulate`).

use crate::conform_args::check_output;
use crate::report;
use crate::setup::{Setup, load};
use clap::Args;
use conformance::trace::Trace;
use recovery_model::tooling::simulate::{SimStatus, SimulationOptions, SimulationReport, simulate as run};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `cdr simulate`.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Named configuration (see `cdr presets`). Default: `ci`, or for a variant the preset its
    /// bug-zoo row names.
    #[arg(long, conflicts_with = "config")]
    pub preset: Option<String>,
    /// JSON file with a full ModelConfig instead of a preset.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Switch one fix off (kebab-case variant name).
    #[arg(long, default_value = "fixed")]
    pub variant: String,
    /// Change Flink's code as a finding proposes (docs/findings.md): priority-from-view-head,
    /// wake-on-refused-buffer, announce-under-queue-lock, persist-only-upstream-data, or `all`.
    /// Repeatable. Without it the model is Flink as it is.
    #[arg(long = "flink-fix", value_name = "FIX")]
    pub flink_fix: Vec<String>,
    /// Seed of the run: the same seed gives the same walks and the same report.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Number of walks.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub walks: u64,
    /// Longest walk, in steps (a walk also ends where no action is enabled).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub steps: u64,
    /// Threads sharing the walks, 1 to 256 (default: the number of cores). The report does not
    /// depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// Print one JSON object instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Write the first violated property's shrunk counterexample as a trace file, for
    /// `cdr replay`.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// `cdr simulate`.
pub fn simulate(args: SimulateArgs) -> ExitCode {
    if crate::task_check::is_task_check(args.preset.as_deref(), &args.variant) {
        return usage_error(
            "simulation is for the channel model; the task level is checked exhaustively in well under a second: \
             cdr check --preset task [--variant NAME]",
        );
    }
    let setup = match load(args.preset.as_deref(), args.config.as_deref(), &args.variant)
        .and_then(|s| s.with_fixes(&crate::setup::parse_fixes(&args.flink_fix)?))
    {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if let Some(path) = &args.trace_out
        && let Err(e) = check_output(path, false)
    {
        return usage_error(e);
    }
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let opts = SimulationOptions {
        seed: args.seed,
        walks: args.walks as usize,
        max_steps: args.steps as usize,
        threads,
    };
    let report = run(&setup.model, opts);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        print_report(&setup, &args, &report);
    }
    if let Some(path) = &args.trace_out {
        match report.properties.iter().find(|p| p.status == SimStatus::Violated) {
            None => eprintln!("no property is violated: no counterexample to write"),
            Some(p) => {
                let actions = p.actions.as_deref().unwrap_or_default();
                let written = Trace::record(&setup.model, setup.preset, actions)
                    .map_err(|e| e.to_string())
                    .and_then(|mut trace| {
                        trace.reason = Some(format!(
                            "counterexample of \"{}\" shrunk from walk {} of `{}`",
                            p.name,
                            p.walk.unwrap_or_default(),
                            command(&setup, &args)
                        ));
                        trace.write(path).map_err(|e| e.to_string())
                    });
                match written {
                    Ok(()) => eprintln!("wrote the counterexample of \"{}\" to {}", p.name, path.display()),
                    Err(e) => return usage_error(format!("cannot write {}: {e}", path.display())),
                }
            }
        }
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The command that runs the same simulation again.
fn command(setup: &Setup, args: &SimulateArgs) -> String {
    format!(
        "{} --seed {} --walks {} --steps {}",
        setup.command("simulate"),
        args.seed,
        args.walks,
        args.steps
    )
}

fn print_report(setup: &Setup, args: &SimulateArgs, r: &SimulationReport) {
    println!(
        "model channel-recovery / {} / variant {} / seed {}",
        setup.label,
        setup.model.variant.name(),
        r.seed
    );
    println!(
        "walks {}  steps {}  distinct states {}  {:.2} s  ({:.0} steps/s)",
        r.walks,
        r.steps,
        r.distinct_states,
        r.seconds,
        r.steps as f64 / r.seconds.max(1e-9)
    );
    println!("a simulation refutes properties; it cannot prove one\n");
    for p in &r.properties {
        let mark = match (p.status, p.walk) {
            (SimStatus::NotRefuted, _) => "not refuted".to_string(),
            (SimStatus::Violated, Some(w)) => format!("VIOLATED (walk {w})"),
            (SimStatus::Violated, None) => "VIOLATED".to_string(),
            (SimStatus::ExampleFound, _) => "example found".to_string(),
            (SimStatus::ExampleNotSeen, _) => "example not seen".to_string(),
        };
        println!("  {:<10} {:<45} {}", p.expectation, p.name, mark);
    }
    for p in r.properties.iter().filter(|p| p.status == SimStatus::Violated) {
        if let Some(actions) = &p.actions {
            let how = format!(
                "shrunk from {} steps of walk {}",
                p.found_after.unwrap_or_default(),
                p.walk.unwrap_or_default()
            );
            println!();
            print!("{}", report::counterexample_found_by(setup, p.name, actions, &how));
        }
    }
    if !r.passed() {
        println!("\nreproduce: {}", command(setup, args));
    }
    println!("\n{}", if r.passed() { "NO VIOLATION FOUND" } else { "FAILED" });
}
