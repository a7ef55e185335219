//! The `conform`, `replay`, `traces` and `serve-driver` subcommands of `cdr`: arguments, output
//! files, progress and reports around the library's `conformance::conform` and `replay`.

use crate::conform_args::{
    ConformArgs, ReplayArgs, ServeArgs, TraceFormat, TracesArgs, check_conform_outputs, check_output, usage_error,
};
use crate::task_conform_cmd;
use crate::{junit, progress};
use conformance::conform::{ConformOptions, ConformReport, conform_edges, conform_random};
use conformance::driver::{Driver, DriverError, ModelDriver};
use conformance::impl_driver::ImplDriver;
use conformance::protocol::{ProcessDriver, impl_capabilities, serve};
use conformance::replay::{Divergence, ReplayError, replay as replay_trace};
use conformance::trace::Trace;
use recovery_model::presets::preset_names;
use recovery_model::{Action, ModelConfig, RecoveryModel, Variant, preset};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// A driver of `cfg`: impl/ in this process, or the `--driver-cmd` process, with a watchdog
/// of `watchdog` seconds.
pub fn make_driver(cfg: &ModelConfig, driver_cmd: Option<&str>, watchdog: u64) -> Result<Box<dyn Driver>, DriverError> {
    let watchdog = Duration::from_secs(watchdog);
    match driver_cmd {
        None => Ok(Box::new(ImplDriver::new(cfg).with_watchdog(watchdog))),
        Some(cmd) => Ok(Box::new(ProcessDriver::spawn_with_watchdog(cmd, cfg, watchdog)?)),
    }
}

/// `cdr traces`: the edge-complete corpus (or random walks) of a preset as JSON Lines, each line
/// a full trace with the model's predicted observation and snapshot at every step, for replay
/// outside `cdr` (a JUnit test factory in Flink's tree, an ITF reader).
pub fn traces(args: TracesArgs) -> ExitCode {
    use std::io::Write;
    if recovery_model::task_level::presets::find_task_preset(&args.preset).is_some() {
        return task_conform_cmd::traces(&args);
    }
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
    if let Err(e) = check_output(&args.out, false) {
        return usage_error(e);
    }
    let file = match std::fs::File::create(&args.out) {
        Ok(f) => f,
        Err(e) => return usage_error(format!("cannot write {}: {e}", args.out.display())),
    };
    let mut out = std::io::BufWriter::new(file);
    let model = RecoveryModel::new(cfg, Variant::Fixed);
    let walks: Box<dyn Iterator<Item = Vec<Action>>> = match args.random {
        None => {
            let graph = conformance::generate::Graph::explore(&model);
            Box::new(graph.edge_cover().map(|t| t.actions).collect::<Vec<_>>().into_iter())
        }
        Some(n) => {
            let mut rng = conformance::generate::SplitMix64::new(args.seed);
            let m = model.clone();
            Box::new((0..n).map(move |_| conformance::generate::random_walk(&m, &mut rng, 10_000).0))
        }
    };
    let bar = progress::counter(progress::wanted(false), "traces written");
    let mut written = 0usize;
    for (i, actions) in walks.enumerate() {
        let mut trace = match Trace::record(&model, Some(&args.preset), &actions) {
            Ok(t) => t,
            Err(e) => return usage_error(format!("trace {i}: {e}")),
        };
        trace.seed = args.random.map(|_| args.seed);
        trace.reason = Some(match args.random {
            None => format!("edge-complete corpus of {}, trace {i}", args.preset),
            Some(_) => format!("random walk {i} of seed {}", args.seed),
        });
        let line = match args.format {
            TraceFormat::Jsonl => serde_json::to_string(&trace).expect("a trace serializes"),
            TraceFormat::Itf => match conformance::itf::from_trace(&trace) {
                Ok(v) => v.to_string(),
                Err(e) => return usage_error(e),
            },
        };
        if let Err(e) = writeln!(out, "{line}") {
            return usage_error(format!("cannot write {}: {e}", args.out.display()));
        }
        written += 1;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Err(e) = out.flush() {
        return usage_error(format!("cannot write {}: {e}", args.out.display()));
    }
    eprintln!("wrote {written} traces to {}", args.out.display());
    ExitCode::SUCCESS
}

/// `cdr serve-driver`: impl/ behind the driver protocol on stdin and stdout.
pub fn serve_driver(_args: ServeArgs) -> ExitCode {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    let make = |cfg: &ModelConfig| -> Result<Box<dyn Driver>, DriverError> {
        cfg.validate().map_err(|reason| DriverError::Unsupported { reason })?;
        Ok(Box::new(ImplDriver::new(cfg)))
    };
    match serve(impl_capabilities(), &make, stdin, stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: serve-driver: {e}");
            ExitCode::from(2)
        }
    }
}

/// Saves the diverging prefix as a trace and returns the line that replays it.
fn save_divergence(
    model: &RecoveryModel,
    preset: Option<&str>,
    d: &Divergence,
    path: &Path,
    driver_cmd: Option<&str>,
) -> String {
    match Trace::record(model, preset, &d.actions) {
        Ok(mut trace) => {
            trace.reason = Some(format!("diverged at step {} in `cdr conform`", d.step));
            match trace.write(path) {
                Ok(()) => format!(
                    "saved to {}\nreproduce: cargo run --release -- replay {}{}",
                    path.display(),
                    path.display(),
                    driver_cmd.map_or_else(String::new, |c| format!(" --driver-cmd '{c}'"))
                ),
                Err(e) => format!("could not save the trace: {e}"),
            }
        }
        Err(e) => format!("could not record the trace: {e}"),
    }
}

fn print_report(args: &ConformArgs, label: &str, jobs: usize, r: &ConformReport) {
    let mode = match args.random {
        Some(n) => format!("{n} random walks, seed {}", args.seed),
        None => "edge-complete".to_string(),
    };
    let shard = r.shard.as_ref().map_or_else(String::new, |s| format!(" / shard {s}"));
    println!(
        "conform: {} {label} / variant fixed / {mode}{shard} / driver {} / {jobs} jobs",
        if args.config.is_some() { "config" } else { "preset" },
        r.driver
    );
    println!(
        "traces {}  steps {}  {:.1} s  ({:.0} steps/s)",
        r.traces, r.steps, r.seconds, r.steps_per_second
    );
    let total = |t: Option<usize>| t.map_or_else(|| "?".to_string(), |t| t.to_string());
    println!(
        "states {}/{}  edges {}/{}  action kinds {}/{}",
        r.states_covered,
        total(r.states_total),
        r.edges_covered,
        total(r.edges_total),
        r.action_kinds_covered,
        r.action_kinds_total
    );
    if !r.kinds_unreachable.is_empty() {
        println!("  not reachable in this preset: {}", r.kinds_unreachable.join(", "));
    }
    if !r.kinds_missed.is_empty() {
        println!("  reachable but never replayed: {}", r.kinds_missed.join(", "));
    }
    for (kind, n) in &r.unsupported {
        println!("  unsupported by the driver: {kind} ({n} traces cut there)");
    }
    if !r.unobserved.is_empty() {
        println!(
            "  not compared (the driver cannot read them): {}",
            r.unobserved.join(", ")
        );
    }
    println!("divergences {}", r.divergences);
}

/// `cdr conform`.
pub fn conform(args: ConformArgs) -> ExitCode {
    if let Some(preset) = args
        .preset
        .as_deref()
        .filter(|p| recovery_model::task_level::presets::find_task_preset(p).is_some())
    {
        return task_conform_cmd::conform(preset, &args);
    }
    // The same resolution and validation as `check`: a preset, or a config file.
    let setup = match crate::setup::load(
        Some(args.preset.as_deref().unwrap_or("ci")).filter(|_| args.config.is_none()),
        args.config.as_deref(),
        "fixed",
    )
    .and_then(|s| s.with_fixes(&crate::setup::parse_fixes(&args.flink_fix)?))
    {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if args.random == Some(0) {
        return usage_error("--random needs at least one walk");
    }
    let label = setup.label.clone();
    let model = setup.model;
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    // A driver process that cannot start or cannot build this configuration is found before
    // the traces are generated.
    if let Some(cmd) = &args.driver_cmd
        && let Err(e) = ProcessDriver::spawn_with_watchdog(cmd, &model.cfg, Duration::from_secs(args.watchdog))
    {
        return usage_error(e);
    }
    if let Err(e) = check_conform_outputs(&args) {
        return usage_error(e);
    }
    let opts = ConformOptions {
        jobs,
        shard: args.shard,
        max_divergences: args.max_divergences.max(1),
    };
    let factory = |cmd: Option<&str>| {
        let cfg = model.cfg.clone();
        let cmd = cmd.map(str::to_string);
        move || make_driver(&cfg, cmd.as_deref(), args.watchdog)
    };
    let factory = factory(args.driver_cmd.as_deref());
    let bar = progress::counter(progress::wanted(args.json), "traces");
    let on_trace = || bar.inc(1);
    let result = match args.random {
        Some(n) => conform_random(&model, &factory, n, args.seed, opts, &on_trace),
        None => conform_edges(&model, &factory, opts, &on_trace),
    };
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(failure) => {
            eprintln!("error: {failure}\nno verdict: the harness failed, not the implementation");
            return ExitCode::from(2);
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        print_report(&args, &label, jobs, &report);
    }
    if let Some(d) = &report.first_divergence {
        let saved = save_divergence(&model, setup.preset, d, &args.save, args.driver_cmd.as_deref());
        // The details go to stderr so that `--json` stays one object on stdout.
        eprintln!("\n{d}\n{saved}");
    }
    let incomplete = if args.require_complete {
        report.incomplete()
    } else {
        Vec::new()
    };
    for what in &incomplete {
        eprintln!("incomplete: {what}");
    }
    if let Some(path) = &args.junit {
        let case = junit::conform_case(&label, &report, args.require_complete);
        if let Err(e) = junit::write(path, vec![junit::suite_of("conform", case)]) {
            return usage_error(e);
        }
    }
    if report.divergences > 0 || !incomplete.is_empty() {
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
        Err(conformance::trace::TraceError::WrongModel { found })
            if found == conformance::task_conform::TASK_MODEL_NAME =>
        {
            if args.driver_cmd.is_some() {
                return usage_error(
                    "--driver-cmd is not available for the task level: its traces replay against impl/'s StreamTask in this process",
                );
            }
            return task_conform_cmd::replay(&args.file, args.json);
        }
        Err(e) => return usage_error(format!("{}: {e}", args.file.display())),
    };
    let model = match trace.model() {
        Ok(m) => m,
        Err(e) => return usage_error(format!("{}: {e}", args.file.display())),
    };
    // The recorded predictions must be the model's own.
    let mut reference = ModelDriver::new(model.clone());
    if let Err(d) = replay_trace(&trace, &mut reference) {
        let Some(d) = d.divergence() else {
            return usage_error(d);
        };
        if args.json {
            println!(
                "{}",
                serde_json::json!({"steps": trace.steps.len(), "diverged_at": d.step, "driver": "model"})
            );
        }
        eprintln!("the trace's recorded predictions are not the model's:\n{d}");
        return ExitCode::from(1);
    }
    let mut driver = match make_driver(&model.cfg, args.driver_cmd.as_deref(), args.watchdog) {
        Ok(d) => d,
        Err(e) => return usage_error(e),
    };
    let result = replay_trace(&trace, driver.as_mut());
    let name = driver.name().to_string();
    match result {
        Ok(n) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"steps": trace.steps.len(), "diverged_at": null, "driver": name})
                );
            } else {
                println!("replay {}: {n} steps, no divergence\nPASSED", args.file.display());
            }
            ExitCode::SUCCESS
        }
        Err(ReplayError::Diverged(d)) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"steps": trace.steps.len(), "diverged_at": d.step, "driver": name})
                );
            }
            eprintln!("{d}");
            ExitCode::from(1)
        }
        Err(ReplayError::Unsupported { step, action, reason }) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"steps": trace.steps.len(), "diverged_at": null, "unsupported_at": step, "driver": name})
                );
            }
            eprintln!("step {step} ({}) is not supported by {name}: {reason}", action.method());
            ExitCode::from(2)
        }
        Err(e @ ReplayError::Harness { .. }) => {
            eprintln!("error: {e}\nno verdict: the harness failed, not the implementation");
            ExitCode::from(2)
        }
    }
}
