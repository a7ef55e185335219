//! Explorer in a real browser: `cdr explore --variant V` on a free loopback port, the deep link
//! it prints loaded in headless Chromium, and the rendered page checked for what a Flink
//! engineer needs to see: the path of the counterexample, its last step selected, and the
//! picture of the state naming the violated property. A screenshot is kept under target/.
//!
//! Skipped, with a message, only where no Chromium is installed; `.ci/run` installs Debian's
//! `chromium`, and with `CI=true` a missing browser fails the test instead.

mod common;

use recovery_model::bug_zoo::VARIANTS;
use recovery_model::presets::find_preset;
use recovery_model::tooling::check::shortest_counterexample;
use recovery_model::{RecoveryModel, Variant};
use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The variant whose counterexample the browser opens: a credit race with a short path.
const VARIANT: &str = "enable-notify-flag-before-count";

const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=4000",
];

/// A child process that is killed and reaped when dropped, also when the test panics.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs `cmd` to completion or kills it after `limit`; returns its stdout.
fn run(cmd: &mut Command, limit: Duration) -> String {
    let mut child = Reaped(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    let mut stdout = child.0.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    while child.0.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < limit, "{cmd:?} did not finish in {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// Starts `cdr explore` and returns it with the deep link it printed, once it accepts
/// connections.
fn start_explorer(variant: &str, port: u16) -> (Reaped, String) {
    let mut server = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cdr"))
            .args(["explore", "--variant", variant, "--port", &port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("cdr starts"),
    );
    let (tx, rx) = mpsc::channel();
    let stdout = server.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut link = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("cdr explore printed no `Explorer:` line (link so far: {link:?})"));
        println!("[explore] {line}");
        if let Some(l) = line.trim().strip_prefix("http://") {
            link.get_or_insert(format!("http://{l}"));
        }
        if line.starts_with("Explorer: ") {
            break;
        }
    }
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "Explorer never listened on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Explorer's own search, started with it, has decided every property: the page's
    // property list then shows the check's verdicts, not "Searching".
    while !common::explorer_status(port).is_some_and(|s| s["done"] == true) {
        assert!(Instant::now() < deadline, "Explorer's search did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, link.expect("a deep link before the Explorer line"))
}

fn chromium_cmd(chrome: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(chrome);
    cmd.args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The page's text: tags dropped, whitespace runs as one space.
fn page_text(dom: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `<li>` items of the "Path of Actions" list.
fn path_items(dom: &str) -> Vec<&str> {
    let start = dom.find("class=\"path-list\"").expect("the path list is rendered");
    let list = &dom[start..start + dom[start..].find("</ol>").expect("the path list ends")];
    list.split("<li").skip(1).collect()
}

#[test]
fn explorer_deep_link_opens_on_the_counterexamples_last_state_in_chromium() {
    let Some(chrome) = chromium() else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI must run the browser test: install Debian's chromium"
        );
        eprintln!("SKIPPED explorer browser test: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let info = VARIANTS.iter().find(|v| v.name == VARIANT).unwrap();
    let model = RecoveryModel::new((find_preset(info.preset).unwrap().config)(), info.variant);
    assert_ne!(model.variant, Variant::Fixed);
    let steps = shortest_counterexample(&model, info.property).unwrap().len();

    let port = free_port();
    let (_server, link) = start_explorer(VARIANT, port);
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/#/steps/0/")),
        "{link}"
    );
    assert_eq!(
        link.matches('/').count(),
        5 + steps,
        "one index per step after the init index: {link}"
    );

    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let profile = tmp.join(format!("chromium-profile-{}", std::process::id()));
    // Time for the page's scripts to fetch the status and the state.
    let dom = run(
        chromium_cmd(&chrome, &profile)
            .arg("--virtual-time-budget=8000")
            .arg("--dump-dom")
            .arg(&link),
        Duration::from_secs(90),
    );
    // The property list agrees with the check: the search done, the property violated, no
    // property still searching.
    let text = page_text(&dom);
    assert!(
        text.contains("Progress: Done"),
        "the status panel shows the search done"
    );
    let verdict = format!("Counterexample found: Always {}", info.property);
    assert!(text.contains(&verdict), "the property list says \"{verdict}\"");
    assert!(!text.contains("Searching"), "a property is still searching");

    assert!(dom.contains(info.property.name()), "property not on the page");
    assert!(
        dom.contains(&format!("violated: {}", info.property)),
        "the state picture names the violated property"
    );
    assert!(
        dom.contains("data-view=\"recovery-state\""),
        "the SVG state view is shown"
    );
    assert!(dom.contains("remote#1") && dom.contains("notify gate OPEN"));
    let items = path_items(&dom);
    assert_eq!(items.len(), steps + 2, "Pre-init, Init and one entry per step");
    assert!(
        items.last().unwrap().contains("is-selected-state"),
        "the last step is selected"
    );
    assert!(
        items.last().unwrap().contains("enableNotify"),
        "{}",
        items.last().unwrap()
    );

    let target = tmp.parent().expect("CARGO_TARGET_TMPDIR is inside target/");
    let shot = target.join(format!("explorer-{VARIANT}.png"));
    let _ = std::fs::remove_file(&shot);
    run(
        chromium_cmd(&chrome, &profile)
            .arg("--window-size=1600,1000")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(&link),
        Duration::from_secs(90),
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot {} has {size} bytes", shot.display());
    println!("screenshot: {}", shot.display());
    let _ = std::fs::remove_dir_all(&profile);
}
