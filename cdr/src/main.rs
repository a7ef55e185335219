//! `cdr`: model-check, list presets and variants of the Flink channel-recovery model.

mod conform_args;
mod conform_cmd;
mod explore;
mod growth_cmd;
mod junit;
mod mermaid;
mod progress;
mod report;
mod setup;
mod simulate_cmd;
mod task_check;
mod task_conform_cmd;

use clap::{Args, Parser, Subcommand};
use conformance::trace::Trace;
use recovery_model::Action;
use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::PRESETS;
use recovery_model::task_level::bug_zoo::TASK_VARIANTS;
use recovery_model::tooling::check::{CheckOptions, CheckReport, Status};
use recovery_model::tooling::search::Frontier;
use setup::Setup;
use std::path::PathBuf;
use std::process::ExitCode;

// The checker allocates and frees a state for every transition; mimalloc halves what the
// system allocator costs there (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Seeded random walks that evaluate every property, for configurations too large to
    /// check exhaustively; a violation is shrunk and reproducible from its seed.
    Simulate(simulate_cmd::SimulateArgs),
    /// Replay model traces against the implementation and report the first divergence.
    Conform(conform_args::ConformArgs),
    /// Replay one trace file against the implementation.
    Replay(conform_args::ReplayArgs),
    /// Write a preset's edge-complete traces (or random walks) as JSON Lines or ITF, for replay
    /// outside cdr.
    Traces(conform_args::TracesArgs),
    /// Serve impl/ over the driver protocol on stdin and stdout (docs/driver-protocol.md).
    ServeDriver(conform_args::ServeArgs),
    /// Grow a preset one dimension at a time (channels, recovered buffers, live elements,
    /// checkpoints), checking every step, until a time or memory budget: where the frontier is.
    ///
    /// The dimensions, each grown from the base alone, one step at a time (step 0 is the base):
    /// `channels`, one more channel, copies of the base's channels in turn; `recovered`, one
    /// more recovered buffer on every channel; `live`, one more data buffer from every
    /// channel's upstream; `checkpoints`, one more checkpoint. A dimension ends at the first
    /// step over --budget or --max-memory, or at the bounds the model supports (4 channels, 8
    /// recovered and 8 upstream elements per channel, 4 checkpoints).
    ///
    /// Each step runs `cdr check --config FILE --json` as a child process, with the soundness
    /// check of the liveness verdicts (unless --no-acyclic) and the base preset's unreachable
    /// examples declared; its wall time and peak resident memory are the child's own. A step
    /// still running after --budget seconds is killed. Prints a Markdown table (or --json) and
    /// where each dimension ended; progress goes to stderr. Exit 0 when the table is complete,
    /// 2 on a usage error or a step that could not run.
    Growth(growth_cmd::GrowthArgs),
    /// Serve stateright's Explorer for a configuration, opening on a counterexample if any.
    Explore(explore::ExploreArgs),
    /// List the bug-zoo variants: the fix each switches off, the property that catches it;
    /// with --check, check each on its preset and exit 1 unless its property finds it.
    Variants(VariantsArgs),
    /// List the named configurations.
    Presets {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct VariantsArgs {
    /// Print JSON: [{"name", "bug", "property", "preset"}], with --check also "status" and
    /// "found" per variant.
    #[arg(long)]
    json: bool,
    /// Check every variant on its preset (exhaustive, without the acyclicity pass) and exit 1
    /// unless each is found by its property.
    #[arg(long)]
    check: bool,
    /// With --check: checker threads per variant (default: the number of cores).
    #[arg(long, requires = "check", value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    threads: Option<u16>,
    /// With --check: write JUnit XML, one test case per variant, to FILE.
    #[arg(long, value_name = "FILE", requires = "check")]
    junit: Option<PathBuf>,
    /// With --check: only these variants (names as listed, comma-separated or repeated).
    #[arg(long, value_name = "NAME", value_delimiter = ',', requires = "check")]
    only: Vec<String>,
}

/// The most checker threads `--threads` accepts.
const MAX_THREADS: i64 = 256;

fn default_threads(threads: Option<u16>) -> usize {
    threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    )
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
    /// Change Flink's code as a finding proposes (docs/findings.md): priority-from-view-head,
    /// wake-on-refused-buffer, announce-under-queue-lock, persist-only-upstream-data, or `all`.
    /// Repeatable. Without it the model is Flink as it is.
    #[arg(long = "flink-fix", value_name = "FIX")]
    flink_fix: Vec<String>,
    /// Checker threads, 1 to 256 (default: the number of cores). Counterexamples are the
    /// shortest whatever the number.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
    threads: Option<u16>,
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
    /// Write the counterexample as a conformance trace file (JSON) to FILE, for `cdr replay`;
    /// as Apalache's ITF when FILE ends in `.itf.json`.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Write JUnit XML, one test case per property, to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Stop (exit 2) when the search passes N unique states.
    #[arg(long, value_name = "N")]
    max_states: Option<usize>,
    /// Stop (exit 2) when this process's resident memory passes SIZE (bytes, or K, M, G, T).
    /// Default: three quarters of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = progress::parse_size)]
    max_memory: Option<u64>,
    /// Keep the states waiting to be searched encoded, a few bytes a field, and decode each
    /// when it is searched: a level of millions of states then takes a fraction of the memory,
    /// for some more time. The report gives the mean bytes of an encoded state.
    #[arg(long)]
    compact_frontier: bool,
    /// Keep the frontier encoded on disk, in one file of DIR per level (removed once the level
    /// is searched), TLC's way, and the parent links too: only the fingerprints of the seen
    /// states stay in memory, 8 bytes a slot. The paths of the discoveries are rebuilt from the
    /// links at the end; with more than one thread, which of several shortest paths is shown
    /// may vary from run to run.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Partial-order reduction: in each state follow only a stubborn set of the enabled
    /// actions (built from each action's reads and writes), which gives every property the
    /// verdict the full search gives, on fewer states. A counterexample is then one the
    /// reduced search found, not always a shortest one. The state counts are the reduced
    /// graph's. Channel level only.
    #[arg(long)]
    por: bool,
}

fn usage_error(msg: String) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn print_report(setup: &Setup, r: &CheckReport) {
    match r.flink_fixes.as_slice() {
        [] => println!("model {} / preset {} / variant {}", r.model, r.preset, r.variant),
        fixes => println!(
            "model {} / preset {} / variant {} / findings' fixes: {}",
            r.model,
            r.preset,
            r.variant,
            fixes.join(", ")
        ),
    }
    println!(
        "states {}  unique {}  max depth {}  {:.2} s  ({:.0} states/s)",
        r.states,
        r.unique_states,
        r.max_depth,
        r.seconds,
        r.unique_states as f64 / r.seconds.max(1e-9)
    );
    if let Some(bytes) = r.encoded_bytes_per_state {
        println!("frontier encoded: {bytes:.0} bytes a state");
    }
    if r.partial_order_reduction {
        println!(
            "partial-order reduction: the counts are the reduced graph's; a counterexample may not be a shortest one"
        );
    }
    report::print_verdicts(r, 45);
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
    let own = setup.model.variant.info().map(|i| i.property.name());
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
        if path.to_string_lossy().ends_with(".itf.json") {
            let itf = conformance::itf::from_trace(&trace)?;
            std::fs::write(path, serde_json::to_string_pretty(&itf).expect("serializes") + "\n")
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        } else {
            trace.write(path).map_err(|e| e.to_string())?;
        }
        eprintln!("wrote the trace of \"{property}\" to {}", path.display());
    }
    Ok(())
}

fn run_check(args: CheckArgs) -> ExitCode {
    if task_check::is_task_check(args.preset.as_deref(), &args.variant) {
        let channel_only_option = [
            (args.config.is_some(), "--config"),
            (args.mermaid.is_some(), "--mermaid"),
            (args.trace_out.is_some(), "--trace-out"),
            (!args.flink_fix.is_empty(), "--flink-fix"),
            (args.por, "--por"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name));
        return task_check::run(task_check::TaskCheckArgs {
            preset: args.preset.as_deref(),
            variant: &args.variant,
            threads: default_threads(args.threads),
            acyclic: !args.no_acyclic,
            json: args.json,
            junit: args.junit.as_deref(),
            channel_only_option,
        });
    }
    let setup = match setup::load(args.preset.as_deref(), args.config.as_deref(), &args.variant)
        .and_then(|s| s.with_fixes(&setup::parse_fixes(&args.flink_fix)?))
    {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    for path in [&args.junit, &args.mermaid, &args.trace_out].into_iter().flatten() {
        if let Err(e) = junit::check_writable(path) {
            return usage_error(e);
        }
    }
    let limits = progress::Limits {
        max_states: args.max_states,
        max_memory: args.max_memory.or_else(progress::default_max_memory),
    };
    let mut options = CheckOptions {
        threads: default_threads(args.threads),
        acyclic: !args.no_acyclic,
        frontier: Frontier::Whole,
        por: args.por,
    };
    if args.compact_frontier {
        options.frontier = Frontier::Encoded;
    }
    if let Some(dir) = &args.spill_dir {
        if !dir.is_dir() {
            return usage_error(format!("--spill-dir {}: not a directory", dir.display()));
        }
        options.frontier = Frontier::Spilled(dir.clone());
    }
    let report = progress::check_with_limits(
        setup.model.clone(),
        &setup.label,
        &setup.unreachable,
        &options,
        progress::wanted(args.json),
        limits,
    );
    if let Some(path) = &args.junit
        && let Err(e) = junit::write(path, vec![junit::check_suite(&report)])
    {
        return usage_error(e);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report_json(&report)).expect("report serializes")
        );
    } else {
        print_report(&setup, &report);
    }
    if let Err(e) = write_files(&args, &setup, &report) {
        return usage_error(e);
    }
    if let Some(warning) = unexposed_variant(&setup, &report) {
        eprintln!("error: {warning}");
        return ExitCode::from(2);
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The `--json` report: the checker's, with an example missing by design told apart from one
/// that is really missing (`example_missing_by_design`).
fn report_json(report: &CheckReport) -> serde_json::Value {
    let mut v = serde_json::to_value(report).expect("report serializes");
    if let Some(props) = v["properties"].as_array_mut() {
        for p in props {
            if p["status"] == "example_missing" && p["unreachable_by_design"] == true {
                p["status"] = "example_missing_by_design".into();
            }
        }
    }
    v
}

/// A variant checked where its property holds: the configuration cannot expose its bug, so
/// "PASSED" would say nothing. Its own bug-zoo preset does expose it.
fn unexposed_variant(setup: &Setup, report: &CheckReport) -> Option<String> {
    let info = setup.model.variant.info()?;
    let status = report
        .properties
        .iter()
        .find(|p| p.name == info.property.name())?
        .status;
    (status != Status::Violated).then(|| {
        format!(
            "variant {} is not exposed by {}: \"{}\" holds, so this check says nothing about the bug; \
             its bug-zoo preset `{}` exposes it (cdr check --variant {})",
            info.name, setup.label, info.property, info.preset, info.name
        )
    })
}

/// `variants --check`: every variant checked on its preset; found when its property is violated.
fn check_variants(args: VariantsArgs) -> ExitCode {
    if let Some(path) = &args.junit
        && let Err(e) = junit::check_writable(path)
    {
        return usage_error(e);
    }
    let names = || {
        VARIANTS
            .iter()
            .map(|v| v.name)
            .chain(TASK_VARIANTS.iter().map(|v| v.name))
    };
    if let Some(unknown) = args.only.iter().find(|n| !names().any(|k| k == n.as_str())) {
        return usage_error(format!(
            "unknown variant `{unknown}`; the variants are: {}",
            names().collect::<Vec<_>>().join(", ")
        ));
    }
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|n| n == name);
    let threads = default_threads(args.threads);
    let mut rows = Vec::new();
    let mut cases = Vec::new();
    let mut missed = 0;
    // One line, one JUnit case and one JSON row per variant, of either model.
    let mut record = |name: &str, bug: &str, property: &str, preset: &str, status: Status, report: &CheckReport| {
        let found = status == Status::Violated;
        missed += usize::from(!found);
        if !args.json {
            let mark = if found { "found" } else { "NOT FOUND" };
            println!(
                "{:<42} {:<10} {:<12} by \"{}\" ({} states, {:.1} s)",
                name, preset, mark, property, report.unique_states, report.seconds
            );
        }
        cases.push(junit::variant_case(name, preset, property, status, report.seconds));
        rows.push(serde_json::json!({
            "name": name, "bug": bug, "property": property, "preset": preset,
            "status": status, "found": found, "unique_states": report.unique_states,
        }));
    };
    for v in VARIANTS.iter().filter(|v| wanted(v.name)) {
        let setup = match setup::load(Some(v.preset), None, v.name) {
            Ok(s) => s,
            Err(e) => return usage_error(e),
        };
        let report = progress::check_with_progress(
            setup.model.clone(),
            &setup.label,
            &setup.unreachable,
            threads,
            false,
            progress::wanted(args.json),
        );
        let status = report
            .properties
            .iter()
            .find(|p| p.name == v.property.name())
            .map_or(Status::Holds, |p| p.status);
        record(v.name, v.bug, v.property.name(), v.preset, status, &report);
    }
    for v in TASK_VARIANTS.iter().filter(|v| wanted(v.name)) {
        let (status, report) = task_check::check_variant(v, threads);
        record(v.name, v.bug, v.property.name(), v.preset, status, &report);
    }
    let total = names().filter(|n| wanted(n)).count();
    if let Some(path) = &args.junit {
        let mut suite = quick_junit::TestSuite::new("variants");
        suite.add_test_cases(cases);
        if let Err(e) = junit::write(path, vec![suite]) {
            return usage_error(e);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows).expect("serializes"));
    } else {
        println!(
            "\n{}",
            if missed == 0 {
                format!("PASSED: all {total} variants found")
            } else {
                format!("FAILED: {missed} of {total} variants not found by their property")
            }
        );
    }
    if missed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    // Output piped into `head` ends quietly, as other command-line tools do: the default
    // SIGPIPE disposition ends the process (status 141 in a shell) instead of a panic in print.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // No transparent huge pages for this process: mimalloc asks for them on its arenas, and the
    // kernel then clears (and may first compact) 2 MiB at each fault, again each time the
    // allocator hands freed memory back and takes it again, which the search, freeing each
    // level as it builds the next, does all along (docs/performance.md).
    #[cfg(target_os = "linux")]
    // SAFETY: a flag of the process's memory map; it changes no memory.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
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
        Command::Conform(args) => conform_cmd::conform(args),
        Command::Simulate(args) => simulate_cmd::simulate(args),
        Command::Explore(args) => explore::explore(args),
        Command::Growth(args) => growth_cmd::growth(args),
        Command::Replay(args) => conform_cmd::replay(args),
        Command::Traces(args) => conform_cmd::traces(args),
        Command::ServeDriver(args) => conform_cmd::serve_driver(args),
        Command::Variants(args) if args.check => check_variants(args),
        Command::Variants(VariantsArgs { json, .. }) => {
            let mut rows = serde_json::to_value(VARIANTS).expect("serializes");
            let task_rows = serde_json::to_value(TASK_VARIANTS).expect("serializes");
            rows.as_array_mut()
                .expect("a list")
                .extend(task_rows.as_array().expect("a list").iter().cloned());
            if json {
                println!("{}", serde_json::to_string_pretty(&rows).expect("serializes"));
            } else {
                for v in rows.as_array().expect("a list") {
                    println!(
                        "{}\n    bug:      {}\n    property: {}\n    preset:   {}",
                        v["name"].as_str().unwrap_or_default(),
                        v["bug"].as_str().unwrap_or_default(),
                        v["property"].as_str().unwrap_or_default(),
                        v["preset"].as_str().unwrap_or_default()
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Command::Presets { json } => {
            if json {
                let mut list: Vec<_> = PRESETS
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "name": p.name, "summary": p.summary, "config": (p.config)(),
                            "unreachable": p.unreachable,
                        })
                    })
                    .collect();
                list.extend(task_check::presets_json());
                println!("{}", serde_json::to_string_pretty(&list).expect("serializes"));
            } else {
                for p in PRESETS {
                    println!("{:<12} {}", p.name, p.summary);
                }
                for (name, summary) in task_check::preset_rows() {
                    println!("{name:<12} {summary}");
                }
            }
            ExitCode::SUCCESS
        }
    }
}
