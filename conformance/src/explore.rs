//! The `explore` subcommand: serves stateright's Explorer for a configuration.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `cdr explore`.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Named configuration.
    #[arg(long)]
    pub preset: Option<String>,
    /// Bug-zoo variant.
    #[arg(long, default_value = "fixed")]
    pub variant: String,
    /// Port to listen on.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
}

/// `cdr explore`.
pub fn explore(_args: ExploreArgs) -> ExitCode {
    eprintln!("error: explore is not implemented yet");
    ExitCode::from(2)
}
