//! The arguments of the `conform`, `replay`, `traces` and `serve-driver` subcommands, and the
//! checks of their output files, shared by the channel level (`conform_cmd`) and the task level
//! (`task_conform_cmd`).

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `cdr conform`.
#[derive(Args, Debug)]
pub struct ConformArgs {
    /// Named configuration whose traces are replayed (default: `ci`).
    #[arg(long, conflicts_with = "config")]
    pub preset: Option<String>,
    /// JSON file with a full ModelConfig (or `{"config": ..., "unreachable": [...]}`, as
    /// `check --config` reads) instead of a preset.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Change Flink's code as a finding proposes (docs/findings.md): priority-from-view-head,
    /// wake-on-refused-buffer, announce-under-queue-lock, persist-only-upstream-data, or `all`.
    /// Repeatable. Without it the model is Flink as it is.
    #[arg(long = "flink-fix", value_name = "FIX")]
    pub flink_fix: Vec<String>,
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
    /// Where the first diverging trace is saved (the directory must exist, except for the
    /// default's, which is created).
    #[arg(long, default_value = DEFAULT_SAVE)]
    pub save: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Workers replaying traces in parallel, each with its own implementation instance (or
    /// driver process). Default: the number of cores.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: Option<u16>,
    /// Replay only the K-th of N deterministic parts of the traces (1 <= K <= N), for a CI
    /// matrix. The parts' counts add up to the whole run's.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Exit 1 unless every edge of the run and every reachable action kind was replayed and no
    /// step was unsupported by the driver (edge-complete runs only).
    #[arg(long, conflicts_with = "random")]
    pub require_complete: bool,
    /// Replay against a driver process speaking the driver protocol (docs/driver-protocol.md)
    /// instead of impl/ in this process, e.g. `--driver-cmd "drivers/flink/driver"`.
    #[arg(long, value_name = "CMD")]
    pub driver_cmd: Option<String>,
    /// Seconds a call may neither return nor park (or a driver process stay silent) before the
    /// run stops with a harness error (exit 2). It never decides that a call blocked.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub watchdog: u64,
    /// Write JUnit XML, one test case for this preset's run, to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Where `conform` saves the first diverging trace unless `--save` says otherwise.
pub const DEFAULT_SAVE: &str = "target/conformance/divergence.json";

/// An output file must be creatable before a long run starts: its directory exists (`create`:
/// or is made) and the file can be opened for writing. Nothing is left behind.
pub fn check_output(path: &Path, create: bool) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if create {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        } else if !dir.is_dir() {
            return Err(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            ));
        }
    }
    crate::junit::check_writable(path)
}

/// `--save` (its default's directory is made) and `--junit` can be written.
pub(crate) fn check_conform_outputs(args: &ConformArgs) -> Result<(), String> {
    check_output(&args.save, args.save == Path::new(DEFAULT_SAVE))?;
    match &args.junit {
        Some(path) => check_output(path, false),
        None => Ok(()),
    }
}

/// Parses `K/N` with 1 <= K <= N.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (k, n) = s.split_once('/').ok_or_else(|| format!("`{s}` is not K/N"))?;
    let k: usize = k.trim().parse().map_err(|_| format!("`{k}` is not a number"))?;
    let n: usize = n.trim().parse().map_err(|_| format!("`{n}` is not a number"))?;
    if n == 0 || k == 0 || k > n {
        return Err(format!("shard {k}/{n}: need 1 <= K <= N"));
    }
    Ok((k, n))
}

/// Arguments of `cdr replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A trace file written by `cdr conform` or a generator.
    pub file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Replay against a driver process speaking the driver protocol instead of impl/.
    #[arg(long, value_name = "CMD")]
    pub driver_cmd: Option<String>,
    /// Seconds a call may neither return nor park before the replay stops with a harness error.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub watchdog: u64,
}

/// The file format of `cdr traces`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// One trace file (format of `cdr replay`) per line.
    Jsonl,
    /// One Apalache ITF trace per line.
    Itf,
}

/// Arguments of `cdr traces`.
#[derive(Args, Debug)]
pub struct TracesArgs {
    /// Named configuration whose traces are written.
    #[arg(long, default_value = "ci")]
    pub preset: String,
    /// The edge-complete set: every edge of the reachable graph in some trace (the default).
    #[arg(long, conflicts_with = "random")]
    pub edges: bool,
    /// N random walks instead.
    #[arg(long, value_name = "N")]
    pub random: Option<usize>,
    /// Seed of the random walks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write them (the directory must exist).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// `jsonl`: one `cdr replay` trace per line; `itf`: one ITF trace per line.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: TraceFormat,
}

/// Arguments of `cdr serve-driver`.
#[derive(Args, Debug)]
pub struct ServeArgs {}

/// A usage error (exit code 2), its message on stderr.
pub(crate) fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}
