//! `cdr explore` runs Explorer's own search as it starts: its status (what the page's status
//! panel shows) gives the state count and every property's verdict, not one state and
//! "Searching". Plain HTTP against the served Explorer; no browser needed.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process that is killed and reaped when dropped, also when the test panics.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn explorer_opened_on_a_finding_shows_its_search_done_and_the_violated_properties() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cdr"))
            .args([
                "explore",
                "--preset",
                "late-floating-credit",
                "--port",
                &port.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cdr explore starts"),
    );
    // Served once it prints its address.
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.starts_with("Explorer: "))),
        "cdr explore printed no address"
    );
    let start = Instant::now();
    let done = loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Explorer's search did not finish"
        );
        if let Some(s) = common::explorer_status(port).filter(|s| s["done"] == true) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The whole preset: as many unique states as `cdr check --preset late-floating-credit`.
    assert_eq!(done["unique_state_count"], 1455, "{done}");
    let verdict = |name: &str| {
        done["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[1] == name)
            .unwrap_or_else(|| panic!("no property {name}: {done}"))[2]
            .clone()
    };
    assert!(
        !verdict("credit conservation").is_null(),
        "a counterexample is found: {done}"
    );
    assert!(
        verdict("exactly-once delivery").is_null(),
        "and a property that holds has none: {done}"
    );
}
