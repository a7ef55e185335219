//! The `explore` subcommand: serves stateright's Explorer for a configuration and prints a deep
//! link that opens Explorer on the last state of each counterexample.
//!
//! For a bug-zoo variant the counterexample is the shortest one of the property its row names
//! (found before serving, in seconds on the variant's preset); for `fixed` the whole
//! configuration is checked first and every violated property gets a link. The link is
//! `http://HOST:PORT/#/steps/` followed by the path's action indices (`Path::encode`).
//!
//! stateright's `serve` never returns and panics when it cannot bind, so the address is parsed
//! and bound here first: a bad address or a port in use is a usage error (exit 2).

use crate::report;
use crate::setup::{self, Setup};
use clap::Args;
use recovery_model::Action;
use recovery_model::tooling::check::{Status, shortest_counterexample};
use recovery_model::tooling::model::ExplorerModel;
use stateright::Model;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `cdr explore`.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Named configuration. Default: the variant's bug-zoo preset, or `ci`.
    #[arg(long, conflicts_with = "config")]
    pub preset: Option<String>,
    /// JSON file with a full ModelConfig instead of a preset.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Bug-zoo variant (kebab-case); Explorer opens on its counterexample.
    #[arg(long, default_value = "fixed")]
    pub variant: String,
    /// Change Flink's code as a finding proposes (docs/findings.md): priority-from-view-head,
    /// wake-on-refused-buffer, announce-under-queue-lock, persist-only-upstream-data, or `all`.
    /// Repeatable. Without it the model is Flink as it is.
    #[arg(long = "flink-fix", value_name = "FIX")]
    pub flink_fix: Vec<String>,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = report::DEFAULT_PORT)]
    pub port: u16,
    /// Address to bind (an IP address; 0.0.0.0 serves every interface).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Checker threads for the check that looks for counterexamples (`fixed` only).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// Parses `bind` and `port` and makes sure the address can be bound, by binding it and letting
/// it go. Port 0 becomes the free port the system picked.
pub fn reserve_address(bind: &str, port: u16) -> Result<SocketAddr, String> {
    let ip: IpAddr = bind
        .parse()
        .map_err(|_| format!("--bind {bind}: not an IP address (try 127.0.0.1 or 0.0.0.0)"))?;
    let listener = TcpListener::bind((ip, port)).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => format!("port {port} on {ip} is in use; choose another with --port"),
        std::io::ErrorKind::AddrNotAvailable => format!("--bind {ip}: not an address of this machine ({e})"),
        std::io::ErrorKind::PermissionDenied => format!("port {port} on {ip}: permission denied ({e})"),
        _ => format!("cannot listen on {ip}:{port}: {e}"),
    })?;
    listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {ip}:{port}: {e}"))
}

/// The URL people open for a server bound to `addr` (an unspecified address is reached
/// through the loopback one).
pub fn base_url(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}/", SocketAddr::new(host, addr.port()))
}

/// The counterexamples Explorer should open on: (property, shortest path).
fn counterexamples(setup: &Setup, threads: usize) -> Vec<(&'static str, Vec<Action>)> {
    if let Some(info) = setup.model.variant.info() {
        let bar = crate::progress::spinner(crate::progress::wanted(false));
        bar.set_message(format!("shortest counterexample of \"{}\"", info.property));
        let found = shortest_counterexample(&setup.model, info.property);
        bar.finish_and_clear();
        return found.map(|a| (info.property.name(), a)).into_iter().collect();
    }
    let report = crate::progress::check_with_progress(
        setup.model.clone(),
        &setup.label,
        &setup.unreachable,
        threads,
        false,
        crate::progress::wanted(false),
    );
    report
        .properties
        .into_iter()
        .filter(|p| p.status == Status::Violated)
        .filter_map(|p| Some((p.name, p.actions?)))
        .collect()
}

/// `cdr explore`.
pub fn explore(args: ExploreArgs) -> ExitCode {
    let usage = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let setup = match setup::load(args.preset.as_deref(), args.config.as_deref(), &args.variant)
        .and_then(|s| s.with_fixes(&setup::parse_fixes(&args.flink_fix)?))
    {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let addr = match reserve_address(&args.bind, args.port) {
        Ok(a) => a,
        Err(e) => return usage(e),
    };
    let base = base_url(addr);
    println!("cdr explore: {} / variant {}", setup.label, setup.model.variant.name());
    let found = counterexamples(&setup, args.threads);
    // The picture of the initial state repeats what is printed here, linked.
    let mut notes = Vec::new();
    if found.is_empty() {
        println!(
            "no counterexample: every safety and liveness property holds on {}",
            setup.label
        );
        notes.push((
            format!(
                "no counterexample: every safety and liveness property holds on {}",
                setup.label
            ),
            None,
        ));
    }
    for (property, actions) in &found {
        println!(
            "counterexample for \"{property}\" ({} steps), its last state:",
            actions.len()
        );
        match conformance::trace::deep_link(&setup.model, actions, &base) {
            Ok(link) => {
                println!("  {link}");
                // Relative, so that it also works through a tunnel or another host name.
                let fragment = link.find('#').map(|i| link[i..].to_string());
                let text = format!(
                    "counterexample for \"{property}\" ({} steps): open its last state",
                    actions.len()
                );
                notes.push((text, fragment));
            }
            Err(e) => println!("  (no link: {e})"),
        }
    }
    notes.push((
        format!(
            "Explorer's own search runs as it starts, up to {} states; its verdicts and counts fill in as it goes. `cdr check` gives every verdict and the shortest counterexamples",
            recovery_model::tooling::format::grouped(EXPLORER_SEARCH_STATES)
        ),
        None,
    ));
    let model = ExplorerModel {
        model: setup.model.clone(),
        notes,
    };
    // The search may have taken a while: make sure the port is still ours to take.
    if let Err(e) = reserve_address(&addr.ip().to_string(), addr.port()) {
        return usage(e);
    }
    println!("Explorer: {base}  (Ctrl-C stops it)");
    let _ = std::io::stdout().flush();
    // Explorer's status panel shows what its own checker has searched: started at once, it
    // shows the state count and every property's verdict instead of one state, "Searching".
    std::thread::spawn(move || run_to_completion_when_up(addr));
    model.checker().target_state_count(EXPLORER_SEARCH_STATES).serve(addr);
    ExitCode::SUCCESS
}

/// How many states Explorer's own search visits at most (its memory grows with them; `cdr
/// check` searches larger presets with less).
const EXPLORER_SEARCH_STATES: usize = 500_000;

/// Asks the Explorer at `addr` to run its search to the end (`POST /.runtocompletion`, what its
/// "Run to completion" button does), once it accepts connections.
fn run_to_completion_when_up(addr: SocketAddr) {
    use std::io::{Read, Write};
    let target = SocketAddr::new(
        match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
            ip => ip,
        },
        addr.port(),
    );
    for _ in 0..200 {
        if let Ok(mut stream) = std::net::TcpStream::connect(target) {
            let request =
                "POST /.runtocompletion HTTP/1.1\r\nHost: explorer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            if stream.write_all(request.as_bytes()).is_ok() {
                let mut reply = Vec::new();
                let _ = stream.read_to_end(&mut reply);
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bind_address_and_busy_port_are_explained() {
        let e = reserve_address("localhost:80", 3000).unwrap_err();
        assert!(e.contains("not an IP address"), "{e}");
        let busy = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = busy.local_addr().unwrap().port();
        let e = reserve_address("127.0.0.1", port).unwrap_err();
        assert!(e.contains("in use"), "{e}");
        let e = reserve_address("192.0.2.1", 0).unwrap_err();
        assert!(e.contains("not an address of this machine"), "{e}");
    }

    #[test]
    fn port_zero_becomes_a_free_port_and_unspecified_binds_link_to_loopback() {
        let a = reserve_address("0.0.0.0", 0).unwrap();
        assert_ne!(a.port(), 0);
        assert_eq!(base_url(a), format!("http://127.0.0.1:{}/", a.port()));
    }
}
