//! `cdr`: model-check, list presets and variants of the Flink channel-recovery model.

use clap::{Args, Parser, Subcommand};
use conformance::setup::{self, Setup};
use conformance::trace::Trace;
use conformance::{mermaid, progress, report};
use recovery_model::Action;
use recovery_model::check::{CheckReport, Status};
use recovery_model::config::PRESETS;
use recovery_model::variant::VARIANTS;
use std::path::PathBuf;
use std::process::ExitCode;

/// Model checker and conformance suite for Flink's input-channel recovery protocol
/// (FLINK-38544, checkpointing during recovery of unaligned checkpoint state).
///
/// Exit codes: 0 all properties hold and every example is found; 1 a property is violated
/// or an example is missing; 2 a usage or input error.
#[derive(Parser)]
#[command(name = "cdr", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every property of a configuration exhaustively (breadth-first).
    Check(CheckArgs),
    /// Replay model traces against the implementation and report the first divergence.
    Conform(conformance::cli::ConformArgs),
    /// Replay one trace file against the implementation.
    Replay(conformance::cli::ReplayArgs),
    /// Serve impl/ over the driver protocol on stdin and stdout (docs/driver-protocol.md).
    ServeDriver(conformance::cli::ServeArgs),
    /// Serve stateright's Explorer for a configuration, opening on a counterexample if any.
    Explore(conformance::explore::ExploreArgs),
    /// List the bug-zoo variants: the fix each switches off, the property that catches it.
    Variants {
        /// Print JSON: [{"name", "bug", "property", "preset"}].
        #[arg(long)]
        json: bool,
    },
    /// List the named configurations.
    Presets {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct CheckArgs {
    /// Named configuration to check (see `cdr presets`). Default: `ci`, or for a variant the
    /// preset its bug-zoo row names.
    #[arg(long, conflicts_with = "config")]
    preset: Option<String>,
    /// JSON file with a full ModelConfig instead of a preset.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Switch one fix off (kebab-case variant name).
    #[arg(long, default_value = "fixed")]
    variant: String,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Skip the acyclicity check that makes liveness verdicts sound.
    #[arg(long)]
    no_acyclic: bool,
    /// Print one JSON object instead of a report.
    #[arg(long)]
    json: bool,
    /// Write the counterexample as a Mermaid sequence diagram to FILE (fenced when FILE ends
    /// in .md). With several, the variant's own property, else the first violated.
    #[arg(long, value_name = "FILE")]
    mermaid: Option<PathBuf>,
    /// Write the counterexample as a conformance trace file (JSON) to FILE, for `cdr replay`.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn print_report(setup: &Setup, r: &CheckReport) {
    println!("model {} / preset {} / variant {}", r.model, r.preset, r.variant);
    println!(
        "states {}  unique {}  max depth {}  {:.2} s  ({:.0} states/s)",
        r.states,
        r.unique_states,
        r.max_depth,
        r.seconds,
        r.unique_states as f64 / r.seconds.max(1e-9)
    );
    match r.acyclic {
        Some(true) => println!("state graph acyclic: yes (eventually verdicts are sound)"),
        Some(false) => println!("state graph acyclic: NO (eventually verdicts may miss cycles)"),
        None => println!("state graph acyclic: not checked"),
    }
    println!();
    for p in &r.properties {
        let mark = match p.status {
            Status::Holds => "holds",
            Status::Violated => "VIOLATED",
            Status::ExampleFound => "example found",
            Status::ExampleMissing if p.unreachable_by_design => "example missing (unreachable by design)",
            Status::ExampleMissing => "EXAMPLE MISSING",
        };
        println!("  {:<10} {:<45} {}", p.expectation, p.name, mark);
    }
    for p in r.properties.iter().filter(|p| p.status == Status::Violated) {
        println!();
        match &p.actions {
            Some(actions) => print!("{}", report::counterexample(setup, p.name, actions)),
            None => println!("counterexample for \"{}\": none recorded", p.name),
        }
    }
    if !r.passed() {
        println!("\nreproduce: {}", setup.command("check"));
    }
    println!("\n{}", if r.passed() { "PASSED" } else { "FAILED" });
}

/// The counterexample that `--mermaid` and `--trace-out` write: the variant's own property if
/// it is violated, else the first violated one.
fn chosen_counterexample<'r>(setup: &Setup, r: &'r CheckReport) -> Option<(&'static str, &'r [Action])> {
    let own = setup.model.variant.info().map(|i| i.property);
    let violated = || r.properties.iter().filter(|p| p.status == Status::Violated);
    violated()
        .find(|p| Some(p.name) == own)
        .or_else(|| violated().next())
        .and_then(|p| Some((p.name, p.actions.as_deref()?)))
}

/// Writes `--mermaid` and `--trace-out`; messages go to stderr so that `--json` stays one object.
fn write_files(args: &CheckArgs, setup: &Setup, r: &CheckReport) -> Result<(), String> {
    if args.mermaid.is_none() && args.trace_out.is_none() {
        return Ok(());
    }
    let Some((property, actions)) = chosen_counterexample(setup, r) else {
        eprintln!("no property is violated: no counterexample to write");
        return Ok(());
    };
    if let Some(path) = &args.mermaid {
        let diagram = mermaid::sequence_diagram(&setup.model, actions, Some(property));
        std::fs::write(path, mermaid::file_content(&diagram, path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote the Mermaid diagram of \"{property}\" to {}", path.display());
    }
    if let Some(path) = &args.trace_out {
        let mut trace = Trace::record(&setup.model, setup.preset, actions).map_err(|e| e.to_string())?;
        trace.reason = Some(format!(
            "shortest counterexample of \"{property}\" found by `{}`",
            setup.command("check")
        ));
        trace.write(path).map_err(|e| e.to_string())?;
        eprintln!("wrote the trace of \"{property}\" to {}", path.display());
    }
    Ok(())
}

fn run_check(args: CheckArgs) -> ExitCode {
    let setup = match setup::load(args.preset.as_deref(), args.config.as_deref(), &args.variant) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let report = progress::check_with_progress(
        setup.model.clone(),
        &setup.label,
        setup.unreachable,
        args.threads,
        !args.no_acyclic,
        progress::wanted(args.json),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
    } else {
        print_report(&setup, &report);
    }
    if let Err(e) = write_files(&args, &setup, &report) {
        return usage_error(e);
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Check(args) => run_check(args),
        Command::Conform(args) => conformance::cli::conform(args),
        Command::Explore(args) => conformance::explore::explore(args),
        Command::Replay(args) => conformance::cli::replay(args),
        Command::ServeDriver(args) => conformance::cli::serve_driver(args),
        Command::Variants { json } => {
            if json {
                println!("{}", serde_json::to_string_pretty(VARIANTS).expect("serializes"));
            } else {
                for v in VARIANTS {
                    println!(
                        "{}\n    bug:      {}\n    property: {}\n    preset:   {}",
                        v.name, v.bug, v.property, v.preset
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Command::Presets { json } => {
            if json {
                let list: Vec<_> = PRESETS
                    .iter()
                    .map(|p| serde_json::json!({"name": p.name, "summary": p.summary, "config": (p.config)()}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list).expect("serializes"));
            } else {
                for p in PRESETS {
                    println!("{:<12} {}", p.name, p.summary);
                }
            }
            ExitCode::SUCCESS
        }
    }
}
