//! The driver protocol (docs/driver-protocol.md): JSON lines between `cdr` and an
//! implementation in another process. [`ProcessDriver`] is `cdr`'s end; [`serve`] puts any
//! in-process [`Driver`] on the other end (`cdr serve-driver` serves `impl/` that way).
//!
//! The messages carry the model's [`Action`] and [`ModelConfig`] and this crate's
//! [`Observation`] and [`Snapshot`], serialized by serde: the same values the in-process driver
//! returns.

use crate::driver::{Driver, DriverError, harness};
use crate::observation::{Observation, Snapshot};
use recovery_model::{Action, ModelConfig};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request from `cdr` to a driver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// First message: who are you, what can you do.
    Hello {
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
    },
    /// A fresh instance of `config` at the model's initial state.
    Reset {
        /// The configuration.
        config: ModelConfig,
    },
    /// Perform one model action.
    Apply {
        /// The action.
        action: Action,
    },
    /// The abstract state now.
    Snapshot,
    /// Release everything and exit.
    Bye,
}

/// What a driver can do, from its `hello` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capabilities {
    /// Shown in reports.
    pub name: String,
    /// The protocol version the driver speaks.
    pub protocol: u32,
    /// Action kinds it can perform (`Action::method` names).
    pub actions: Vec<String>,
    /// Configuration features it can build (`delivery:legacy`, `kind:remote`, `release`, ...).
    pub features: Vec<String>,
    /// Snapshot fields it cannot read, as JSON Pointers with `*` wildcards.
    #[serde(default)]
    pub unobserved: Vec<String>,
}

/// A driver's reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "reply", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Reply {
    /// To `hello`.
    Hello(Capabilities),
    /// To `reset`: the instance is ready.
    Ready,
    /// To `apply`.
    Observation {
        /// What a caller saw.
        observation: Observation,
    },
    /// To `snapshot`.
    Snapshot {
        /// The abstract state.
        snapshot: Snapshot,
    },
    /// The driver cannot realise this step or configuration.
    Unsupported {
        /// Why.
        reason: String,
    },
    /// The harness failed.
    Error {
        /// What happened.
        message: String,
    },
    /// To `bye`.
    Bye,
}

impl Reply {
    /// Parses one reply line. A snapshot is read from the parsed JSON directly: serde's
    /// buffering of internally tagged enums would refuse its numeric map keys (`persisted`).
    pub fn parse(line: &str) -> Result<Reply, serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_str(line)?;
        if value.get("reply").and_then(|r| r.as_str()) == Some("snapshot")
            && let Some(map) = value.as_object_mut()
        {
            {
                if map.len() != 2 {
                    return Err(serde::de::Error::custom(
                        "a snapshot reply has `reply` and `snapshot` only",
                    ));
                }
                let snapshot = map
                    .remove("snapshot")
                    .ok_or_else(|| serde::de::Error::missing_field("snapshot"))?;
                return Ok(Reply::Snapshot {
                    snapshot: serde_json::from_value(snapshot)?,
                });
            }
        }
        serde_json::from_value(value)
    }
}

/// The JSON Schema (draft 2020-12) of every protocol message, derived from the serde types
/// themselves: `docs/driver-protocol.schema.json` is this value, and a test keeps it so.
pub fn json_schema() -> serde_json::Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let request = generator.subschema_for::<Request>();
    let reply = generator.subschema_for::<Reply>();
    let definitions = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("cdr driver protocol, version {PROTOCOL_VERSION}"),
        "description": "One message per line: a request from cdr to a driver, or a driver's reply. See driver-protocol.md.",
        "oneOf": [request, reply],
        "$defs": definitions,
    })
}

/// The features a configuration needs, in the names of [`Capabilities::features`].
pub fn features_needed(cfg: &ModelConfig) -> Vec<String> {
    let mut f = vec![format!(
        "delivery:{}",
        serde_json::to_value(cfg.delivery)
            .expect("serializes")
            .as_str()
            .unwrap_or("?")
    )];
    for ch in &cfg.channels {
        let kind = format!(
            "kind:{}",
            serde_json::to_value(ch.kind)
                .expect("serializes")
                .as_str()
                .unwrap_or("?")
        );
        if !f.contains(&kind) {
            f.push(kind);
        }
        // Floating buffers in per-channel pools; the gate's one pool is `shared-pool`.
        if ch.floating > 0 && !cfg.shared_pool && !f.iter().any(|x| x == "floating") {
            f.push("floating".into());
        }
        if ch.late > 0 && !f.iter().any(|x| x == "late") {
            f.push("late".into());
        }
    }
    if cfg.release {
        f.push("release".into());
    }
    if cfg.faults {
        f.push("faults".into());
    }
    if cfg.release_step {
        f.push("release-step".into());
    }
    if cfg.aligned_checkpoint_timeout {
        f.push("aligned-checkpoint-timeout".into());
    }
    if cfg.shared_pool {
        f.push("shared-pool".into());
    }
    f
}

/// The hello of impl/ served over the protocol: every action and feature, nothing unobserved.
pub fn impl_capabilities() -> Capabilities {
    Capabilities {
        name: "impl".into(),
        protocol: PROTOCOL_VERSION,
        actions: Action::KINDS.iter().map(|k| k.to_string()).collect(),
        features: all_features(),
        unobserved: Vec::new(),
    }
}

/// The features every configuration of this model can need, for a driver that has them all.
pub fn all_features() -> Vec<String> {
    let mut f: Vec<String> = ["no-recovery", "legacy", "drainer", "conversion"]
        .iter()
        .map(|d| format!("delivery:{d}"))
        .collect();
    f.extend(
        [
            "kind:local",
            "kind:remote",
            "floating",
            "late",
            "release",
            "faults",
            "release-step",
            "aligned-checkpoint-timeout",
            "shared-pool",
        ]
        .map(String::from),
    );
    f
}

/// `cdr`'s end: a child process speaking the protocol.
pub struct ProcessDriver {
    command: String,
    child: Child,
    /// Unbuffered: [`Self::send`] writes each batch at once, so nothing is left to flush when
    /// the driver is dropped (a flush then would write to a driver that may be gone).
    to: ChildStdin,
    /// Lines from the child's stdout, read by a thread of their own so that a silent driver
    /// meets the watchdog instead of hanging `cdr`.
    from: Receiver<std::io::Result<String>>,
    caps: Capabilities,
    config: ModelConfig,
    watchdog: Duration,
    /// Requests written ahead of their replies, oldest first ([`Driver::send_ahead`]).
    ahead: VecDeque<String>,
}

/// How long `cdr` waits for one reply before it reports the driver as hung (a harness error).
pub const DEFAULT_REPLY_WATCHDOG: Duration = Duration::from_secs(300);

/// The longest protocol line either end accepts, without its `\n`. The largest message is a
/// `reset` (a configuration, a few KB) or a snapshot of one state of it (tens of KB); the cap
/// leaves a driver's verbose output ample room while a peer writing one endless line (a stray
/// `cat /dev/zero`, a runaway loop) holds `cdr` to this much memory and ends in an error.
pub const MAX_LINE_BYTES: u64 = 16 << 20;

/// Sends each line of a driver's stdout, then the end (an empty line) or the error that ends it.
pub(crate) fn read_lines(from: impl std::io::Read, lines: Sender<std::io::Result<String>>) {
    let mut from = BufReader::new(from);
    loop {
        let read = crate::bounded::read_line(&mut from, MAX_LINE_BYTES);
        let end = !matches!(&read, Ok(line) if !line.is_empty());
        if lines.send(read).is_err() || end {
            return;
        }
    }
}

impl ProcessDriver {
    /// Starts `command` (split on whitespace; the first word is the program), says `hello`
    /// and checks that the driver can build `config`.
    pub fn spawn(command: &str, config: &ModelConfig) -> Result<Self, DriverError> {
        Self::spawn_with_watchdog(command, config, DEFAULT_REPLY_WATCHDOG)
    }

    /// [`ProcessDriver::spawn`] waiting at most `watchdog` for each reply.
    pub fn spawn_with_watchdog(command: &str, config: &ModelConfig, watchdog: Duration) -> Result<Self, DriverError> {
        let words = shell_words(command)?;
        let (program, args) = words.split_first().ok_or_else(|| harness("--driver-cmd is empty"))?;
        let mut command_line = Command::new(program);
        command_line
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Its own process group, so that stopping it stops what a wrapper script started (a
        // JVM behind `sh`), not only the wrapper.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command_line, 0);
        let mut child = command_line
            .spawn()
            .map_err(|e| harness(format!("cannot start `{command}`: {e}")))?;
        let to = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, from) = channel();
        std::thread::Builder::new()
            .name("driver-stdout".into())
            .spawn(move || read_lines(stdout, lines))
            .map_err(|e| harness(format!("cannot start a reader thread: {e}")))?;
        let mut driver = ProcessDriver {
            command: command.to_string(),
            child,
            to,
            from,
            caps: Capabilities::default(),
            config: config.clone(),
            watchdog,
            ahead: VecDeque::new(),
        };
        match driver.call(&Request::Hello {
            protocol: PROTOCOL_VERSION,
        })? {
            Reply::Hello(caps) => driver.caps = caps,
            other => return Err(harness(format!("`{command}` answered hello with {other:?}"))),
        }
        if driver.caps.protocol != PROTOCOL_VERSION {
            return Err(harness(format!(
                "`{command}` speaks driver protocol {}; this cdr speaks {PROTOCOL_VERSION}",
                driver.caps.protocol
            )));
        }
        let missing: Vec<String> = features_needed(config)
            .into_iter()
            .filter(|f| !driver.caps.features.contains(f))
            .collect();
        if !missing.is_empty() {
            return Err(DriverError::Unsupported {
                reason: format!(
                    "the {} driver cannot build this configuration: it lacks {} (it has {})",
                    driver.caps.name,
                    missing.join(", "),
                    driver.caps.features.join(", ")
                ),
            });
        }
        Ok(driver)
    }

    /// What the driver said in `hello`.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn call(&mut self, request: &Request) -> Result<Reply, DriverError> {
        let text = serde_json::to_string(request).expect("a request serializes");
        if self.ahead.front() == Some(&text) {
            self.ahead.pop_front();
            return self.receive(&text);
        }
        // A call out of the order sent ahead: what was sent ahead is void.
        self.discard_sent_ahead()?;
        self.send(std::slice::from_ref(&text))?;
        self.receive(&text)
    }

    /// Writes `requests`, one per line, and flushes once. A driver that closed its stdin makes
    /// this fail (`EPIPE`) rather than end `cdr`, whose SIGPIPE is left at its default for the
    /// sake of its own output (see [`without_sigpipe`]).
    fn send(&mut self, requests: &[String]) -> Result<(), DriverError> {
        let mut batch = String::new();
        for text in requests {
            batch.push_str(text);
            batch.push('\n');
        }
        let to = &mut self.to;
        let sent = without_sigpipe(|| to.write_all(batch.as_bytes()));
        sent.map_err(|e| self.died(&format!("writing to it failed ({e})")))
    }

    /// Reads the reply to `text`.
    fn receive(&mut self, text: &str) -> Result<Reply, DriverError> {
        let line = match self.from.recv_timeout(self.watchdog) {
            Ok(Ok(line)) if line.is_empty() => return Err(self.died("it closed its stdout")),
            Ok(Ok(line)) => line,
            // A line over the cap, or not UTF-8: the driver is alive and writing, so it is stopped.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                stop(&mut self.child);
                return Err(harness(format!("driver `{}` wrote {e}", self.command)));
            }
            Ok(Err(e)) => return Err(self.died(&format!("reading from it failed ({e})"))),
            Err(RecvTimeoutError::Timeout) => {
                stop(&mut self.child);
                return Err(harness(format!(
                    "driver `{}` did not answer {} within {} s (watchdog); it was stopped",
                    self.command,
                    text.chars().take(200).collect::<String>(),
                    self.watchdog.as_secs_f64()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => return Err(self.died("it closed its stdout")),
        };
        match Reply::parse(&line) {
            Ok(Reply::Error { message }) => Err(harness(format!("{} reported: {message}", self.caps.name))),
            Ok(reply) => Ok(reply),
            Err(e) => Err(harness(format!(
                "`{}` wrote a line that is not a reply ({e}): {}",
                self.command,
                line.trim_end().chars().take(300).collect::<String>()
            ))),
        }
    }

    fn died(&mut self, what: &str) -> DriverError {
        // Give a dying process a moment to be reaped, for its exit status.
        std::thread::sleep(Duration::from_millis(20));
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!(", exit status {s}"),
            _ => String::new(),
        };
        harness(format!("driver `{}`: {what}{status}", self.command))
    }
}

/// Splits a command line on whitespace, keeping single- or double-quoted words whole.
fn shell_words(command: &str) -> Result<Vec<String>, DriverError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in command.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            None => word.push(c),
        }
    }
    if quote.is_some() {
        return Err(harness(format!("unbalanced quote in --driver-cmd `{command}`")));
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

impl Driver for ProcessDriver {
    fn name(&self) -> &str {
        &self.caps.name
    }

    fn reset(&mut self) -> Result<(), DriverError> {
        let config = self.config.clone();
        match self.call(&Request::Reset { config })? {
            Reply::Ready => Ok(()),
            Reply::Unsupported { reason } => Err(DriverError::Unsupported { reason }),
            other => Err(harness(format!("unexpected reply to reset: {other:?}"))),
        }
    }

    fn apply(&mut self, action: &Action) -> Result<Observation, DriverError> {
        if !self.caps.actions.iter().any(|k| k == action.method()) {
            return Err(DriverError::Unsupported {
                reason: format!("{} does not list {} in hello", self.caps.name, action.method()),
            });
        }
        match self.call(&Request::Apply { action: *action })? {
            Reply::Observation { observation } => Ok(observation),
            Reply::Unsupported { reason } => Err(DriverError::Unsupported { reason }),
            other => Err(harness(format!("unexpected reply to apply: {other:?}"))),
        }
    }

    fn snapshot(&mut self) -> Result<Snapshot, DriverError> {
        match self.call(&Request::Snapshot)? {
            Reply::Snapshot { snapshot } => Ok(snapshot),
            other => Err(harness(format!("unexpected reply to snapshot: {other:?}"))),
        }
    }

    fn unobserved(&self) -> &[String] {
        &self.caps.unobserved
    }

    /// Writes the whole trace at once: the driver answers each request in turn, while `cdr`
    /// sends the next request without waiting for the answer to the one before (a round trip
    /// through two processes per call otherwise dominates the replay).
    fn send_ahead(&mut self, actions: &[Action], snapshots_from: usize) -> Result<bool, DriverError> {
        if !actions
            .iter()
            .all(|a| self.caps.actions.iter().any(|k| k == a.method()))
        {
            return Ok(false);
        }
        let json = |r: &Request| serde_json::to_string(r).expect("a request serializes");
        let mut requests = vec![json(&Request::Reset {
            config: self.config.clone(),
        })];
        for (i, action) in actions.iter().enumerate() {
            requests.push(json(&Request::Apply { action: *action }));
            if i >= snapshots_from {
                requests.push(json(&Request::Snapshot));
            }
        }
        self.discard_sent_ahead()?;
        self.send(&requests)?;
        self.ahead.extend(requests);
        Ok(true)
    }

    /// The steps sent ahead of where a trace stopped may leave the implementation anywhere,
    /// even in a call that never returns: the driver process is replaced by a fresh one.
    fn discard_sent_ahead(&mut self) -> Result<(), DriverError> {
        if self.ahead.is_empty() {
            return Ok(());
        }
        stop(&mut self.child);
        let _ = self.child.wait();
        // Void: not to be stopped again once reaped, nor matched by a later call.
        self.ahead.clear();
        *self = ProcessDriver::spawn_with_watchdog(&self.command, &self.config, self.watchdog)?;
        Ok(())
    }
}

/// Runs `write` with SIGPIPE blocked in this thread. A write to a pipe whose reader is gone
/// raises SIGPIPE in the writing thread; blocked, it stays pending and the write returns
/// `EPIPE`, and the pending signal is taken before the mask is restored. The process-wide
/// disposition is not touched: other threads (and `cdr`'s own output, piped into `head`) keep
/// the default.
fn without_sigpipe<T>(write: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    #[cfg(unix)]
    // SAFETY: sigset_t is plain data initialised by sigemptyset; the calls change only this
    // thread's mask and take only a signal this thread's write raised.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut before);
        let result = write();
        // Take the SIGPIPE this write raised, if it did (sigpending and sigwait, as every unix
        // has them): once the mask is restored it would end the process.
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        if libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1 {
            let mut taken = 0;
            libc::sigwait(&pipe, &mut taken);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        result
    }
    #[cfg(not(unix))]
    write()
}

/// Kills the driver's process group (see `spawn_with_watchdog`), then the driver itself.
fn stop(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(group) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; it touches no memory.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

impl Drop for ProcessDriver {
    fn drop(&mut self) {
        if !self.ahead.is_empty() {
            stop(&mut self.child);
            let _ = self.child.wait();
        }
        if self.child.try_wait().ok().flatten().is_none() {
            self.watchdog = self.watchdog.min(Duration::from_secs(5));
            let _ = self.call(&Request::Bye);
            // A driver that does not leave after `bye` is stopped.
            if self.child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if self.child.try_wait().ok().flatten().is_none() {
                    stop(&mut self.child);
                }
            }
            let _ = self.child.wait();
        }
    }
}

/// Makes a driver for a configuration (the serving end of the protocol).
pub type MakeDriver = dyn Fn(&ModelConfig) -> Result<Box<dyn Driver>, DriverError>;

/// Serves the protocol on `input`/`output` with drivers from `make` (one per configuration):
/// the other end of [`ProcessDriver`]. Returns when `bye` arrives or `input` ends.
pub fn serve(
    caps: Capabilities,
    make: &MakeDriver,
    mut input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut current: Option<(ModelConfig, Box<dyn Driver>)> = None;
    loop {
        let line = crate::bounded::read_line(&mut input, MAX_LINE_BYTES)
            .map_err(|e| std::io::Error::new(e.kind(), format!("reading requests: {e}")))?;
        if line.is_empty() {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Request>(&line) {
            Err(e) => Reply::Error {
                message: format!("not a request ({e})"),
            },
            Ok(Request::Hello { .. }) => Reply::Hello(caps.clone()),
            Ok(Request::Bye) => {
                drop(current.take());
                writeln!(output, "{}", serde_json::to_string(&Reply::Bye).expect("serializes"))?;
                output.flush()?;
                return Ok(());
            }
            Ok(Request::Reset { config }) => {
                let reused = matches!(&current, Some((c, _)) if *c == config);
                let made = if reused {
                    Ok(())
                } else {
                    make(&config).map(|d| current = Some((config, d)))
                };
                match made.and_then(|()| current.as_mut().expect("a driver").1.reset()) {
                    Ok(()) => Reply::Ready,
                    Err(e) => error_reply(e),
                }
            }
            Ok(Request::Apply { action }) => match current.as_mut() {
                None => Reply::Error {
                    message: "apply before reset".into(),
                },
                Some((_, d)) => match d.apply(&action) {
                    Ok(observation) => Reply::Observation { observation },
                    Err(e) => error_reply(e),
                },
            },
            Ok(Request::Snapshot) => match current.as_mut() {
                None => Reply::Error {
                    message: "snapshot before reset".into(),
                },
                Some((_, d)) => match d.snapshot() {
                    Ok(snapshot) => Reply::Snapshot { snapshot },
                    Err(e) => error_reply(e),
                },
            },
        };
        writeln!(output, "{}", serde_json::to_string(&reply).expect("a reply serializes"))?;
        output.flush()?;
    }
    Ok(())
}

fn error_reply(e: DriverError) -> Reply {
    match e {
        DriverError::Unsupported { reason } => Reply::Unsupported { reason },
        DriverError::Harness { message } => Reply::Error { message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver writing one endless line: its reader sends one error and stops, having held at
    /// most the protocol's cap.
    #[test]
    fn an_endless_reply_line_ends_the_driver_s_reader() {
        let started = std::time::Instant::now();
        let (lines, from) = std::sync::mpsc::channel();
        read_lines(std::io::repeat(b'x'), lines);
        let e = from.recv().unwrap().unwrap_err();
        let cap = MAX_LINE_BYTES;
        assert_eq!(e.to_string(), format!("a line longer than the cap of {cap} bytes"));
        assert!(from.recv().is_err(), "the reader goes on after the error");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    /// `cdr serve-driver` given one endless request line.
    #[test]
    fn an_endless_request_line_ends_serve() {
        use crate::driver::{Driver, DriverError};
        let make = |_: &recovery_model::ModelConfig| -> Result<Box<dyn Driver>, DriverError> {
            Err(DriverError::Unsupported {
                reason: "no driver".into(),
            })
        };
        let endless = std::io::BufReader::new(std::io::repeat(b'x'));
        let e = serve(Default::default(), &make, endless, std::io::sink()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("reading requests: a line longer than the cap"),
            "{e}"
        );
    }

    #[test]
    fn requests_and_replies_have_the_documented_shape() {
        let apply = Request::Apply {
            action: Action::GetNextBuffer { channel: 0 },
        };
        assert_eq!(
            serde_json::to_string(&apply).unwrap(),
            r#"{"op":"apply","action":{"action":"get-next-buffer","channel":0}}"#
        );
        assert_eq!(
            serde_json::to_string(&Request::Snapshot).unwrap(),
            r#"{"op":"snapshot"}"#
        );
        let reply: Reply = serde_json::from_str(r#"{"reply":"observation","observation":{"kind":"done"}}"#).unwrap();
        assert_eq!(
            reply,
            Reply::Observation {
                observation: Observation::Done
            }
        );
        assert!(Reply::parse(r#"{"reply":"observation"}"#).is_err());
        assert!(Reply::parse(r#"{"reply":"bogus"}"#).is_err());
        assert!(Reply::parse(r#"{"reply":"snapshot"}"#).is_err());
    }

    #[test]
    fn command_lines_split_like_a_shell_for_plain_quotes() {
        assert_eq!(
            shell_words(r#"java -cp "a b:c" Main"#).unwrap(),
            vec!["java", "-cp", "a b:c", "Main"]
        );
        assert_eq!(shell_words("x ''").unwrap(), vec!["x", ""]);
        assert!(shell_words("x 'y").is_err());
    }
}
