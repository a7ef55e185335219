//! The `conform` and `replay` subcommands of `cdr`.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `cdr conform`.
#[derive(Args, Debug)]
pub struct ConformArgs {
    /// Named configuration whose traces are replayed.
    #[arg(long, default_value = "ci")]
    pub preset: String,
    /// Replay one trace per edge of the reachable state graph.
    #[arg(long, conflicts_with = "random")]
    pub edges: bool,
    /// Replay N random walks.
    #[arg(long, value_name = "N")]
    pub random: Option<usize>,
    /// Seed of the random walks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `cdr replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A trace file written by `cdr check --trace-out` or a generator.
    pub file: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `cdr conform`.
pub fn conform(_args: ConformArgs) -> ExitCode {
    eprintln!("error: conform is not implemented yet");
    ExitCode::from(2)
}

/// `cdr replay FILE`.
pub fn replay(_args: ReplayArgs) -> ExitCode {
    eprintln!("error: replay is not implemented yet");
    ExitCode::from(2)
}
