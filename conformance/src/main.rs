//! `cdr`: model-check, list presets and variants of the Flink channel-recovery model.

use clap::{Args, Parser, Subcommand};
use recovery_model::check::{CheckReport, Status, check};
use recovery_model::config::find_preset;
use recovery_model::config::{PRESETS, preset_names};
use recovery_model::variant::VARIANTS;
use recovery_model::{ModelConfig, RecoveryModel, Variant};
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
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn parse_variant(name: &str) -> Result<Variant, String> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        format!("unknown variant `{name}`; known variants: fixed, {}", known.join(", "))
    })
}

/// The configuration to check: (label, config, sometimes-properties unreachable by design).
fn load_config(args: &CheckArgs, variant: Variant) -> Result<(String, ModelConfig, &'static [&'static str]), String> {
    let (label, cfg, unreachable) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let cfg: ModelConfig = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not a valid ModelConfig: {e}", path.display()))?;
            (path.display().to_string(), cfg, &[][..])
        }
        None => {
            let name = match (&args.preset, variant.info()) {
                (Some(p), _) => p.as_str(),
                (None, Some(info)) => info.preset,
                (None, None) => "ci",
            };
            let p = find_preset(name)
                .ok_or_else(|| format!("unknown preset `{name}`; known presets: {}", preset_names().join(", ")))?;
            (name.to_string(), (p.config)(), p.unreachable)
        }
    };
    cfg.validate().map_err(|e| format!("{label}: {e}"))?;
    Ok((label, cfg, unreachable))
}

fn print_report(r: &CheckReport) {
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
        println!(
            "\ncounterexample for \"{}\" ({} steps):",
            p.name,
            p.trace.as_ref().map_or(0, Vec::len)
        );
        for (i, step) in p.trace.iter().flatten().enumerate() {
            println!("  {:>3}. {step}", i + 1);
        }
    }
    println!("\n{}", if r.passed() { "PASSED" } else { "FAILED" });
}

fn run_check(args: CheckArgs) -> ExitCode {
    let variant = match parse_variant(&args.variant) {
        Ok(v) => v,
        Err(e) => return usage_error(e),
    };
    let (label, cfg, unreachable) = match load_config(&args, variant) {
        Ok(x) => x,
        Err(e) => return usage_error(e),
    };
    let model = RecoveryModel::new(cfg, variant);
    let report = check(model, &label, unreachable, args.threads, !args.no_acyclic);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
    } else {
        print_report(&report);
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
