//! The bad-input table (docs/reliability.md): every row is a command that must end with a
//! clear first line and its exit code, never a panic. Exit 2 is a usage or input error.

use std::path::PathBuf;
use std::process::Command;

struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let d = std::env::temp_dir().join(format!("cdr-bad-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

/// A valid trace of `tiny` (the counterexample of a variant), as JSON.
fn valid_trace(dir: &Dir) -> serde_json::Value {
    let out = dir.path("valid.json");
    let status = Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args([
            "check",
            "--variant",
            "stash-replayed-at-head",
            "--no-acyclic",
            "--json",
            "--trace-out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Runs `cdr` with `args`; a last pair `<`, FILE gives it FILE on stdin, as a shell would.
fn run(args: &[&str]) -> (i32, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cdr"));
    match args {
        [args @ .., "<", file] => command.args(args).stdin(std::fs::File::open(file).unwrap()),
        _ => command.args(args),
    };
    let out = command.output().expect("cdr runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

#[test]
fn every_bad_input_gets_its_exit_code_and_a_clear_first_line() {
    let dir = Dir::new();
    let trace = valid_trace(&dir);
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut t = trace.clone();
        f(&mut t);
        t.to_string()
    };
    let channel7 = dir.file(
        "channel7.json",
        &with(&|t| t["steps"][2]["action"]["channel"] = 7.into()),
    );
    let cp200 = dir.file(
        "cp200.json",
        &with(&|t| {
            t["steps"][0]["action"] = serde_json::json!({"action": "checkpoint-started", "channel": 0, "cp": 200})
        }),
    );
    let buffer250 = dir.file(
        "buffer250.json",
        &with(&|t| {
            t["steps"][0]["action"] =
                serde_json::json!({"action": "recycle", "channel": 1, "buffer": {"kind": "exclusive", "id": 250}})
        }),
    );
    let version9 = dir.file("v9.json", &with(&|t| t["format_version"] = 9.into()));
    let other_model = dir.file("model.json", &with(&|t| t["model"] = "2pc".into()));
    let bad_variant = dir.file("variant.json", &with(&|t| t["variant"] = "nonsense".into()));
    let not_enabled = dir.file(
        "not-enabled.json",
        &with(&|t| t["steps"][0]["action"] = serde_json::json!({"action": "get-next-buffer", "channel": 0})),
    );
    let unknown_action = dir.file(
        "unknown-action.json",
        &with(&|t| t["steps"][0]["action"] = serde_json::json!({"action": "fly", "channel": 0})),
    );
    let big = dir.path("big.json");
    std::fs::File::create(&big).unwrap().set_len(65 << 20).unwrap();
    let big = big.display().to_string();
    let empty = dir.file("empty.json", "");
    let not_json = dir.file("not.json", "{ this is not json");
    let big_cfg = dir.path("big-cfg.json");
    std::fs::File::create(&big_cfg).unwrap().set_len(2 << 20).unwrap();
    let big_cfg = big_cfg.display().to_string();
    let cfg_field = dir.file("cfg-field.json", r#"{"channels": [], "checkpoints": 1, "bogus": 1}"#);
    let cfg_empty = dir.file("cfg-empty.json", r#"{"channels": [], "checkpoints": 1}"#);
    let cfg_unreachable = dir.file(
        "cfg-unreachable.json",
        r#"{"config": {"channels": [{"kind": "local", "recovered": 1, "upstream": ["data"]}], "checkpoints": 1}, "unreachable": ["no such example"]}"#,
    );
    let dirpath = dir.0.display().to_string();
    let nowhere = "/nonexistent-dir/out.json";

    #[rustfmt::skip]
    let table: Vec<(&str, Vec<&str>, i32, &str)> = vec![
        ("a trace whose action names channel 7 (of 2)", vec!["replay", &channel7], 2, "error: "),
        ("a trace whose action names checkpoint 200", vec!["replay", &cp200], 2, "error: "),
        ("a trace whose action names buffer 250", vec!["replay", &buffer250], 2, "error: "),
        ("a trace of format version 9", vec!["replay", &version9], 2, "error: "),
        ("a trace of another model", vec!["replay", &other_model], 2, "error: "),
        ("a trace naming an unknown variant", vec!["replay", &bad_variant], 2, "error: "),
        ("a trace with a step the model does not enable", vec!["replay", &not_enabled], 2, "error: "),
        ("a trace with an unknown action", vec!["replay", &unknown_action], 2, "error: "),
        ("a trace file over 64 MiB", vec!["replay", &big], 2, "error: "),
        // A device reports no size: the limit holds for what is read.
        ("an endless device as a trace file", vec!["replay", "/dev/zero"], 2, "error: "),
        ("an unknown Flink fix", vec!["check", "--preset", "tiny", "--flink-fix", "fixed"], 2, "error: "),
        ("an empty trace file", vec!["replay", &empty], 2, "error: "),
        ("a trace file that is not JSON", vec!["replay", &not_json], 2, "error: "),
        ("a missing trace file", vec!["replay", "/nonexistent-dir/trace.json"], 2, "error: "),
        ("a directory instead of a trace file", vec!["replay", &dirpath], 2, "error: "),
        ("a config with an unknown field", vec!["check", "--config", &cfg_field], 2, "error: "),
        ("a config without channels", vec!["check", "--config", &cfg_empty], 2, "error: "),
        ("a config declaring an unknown example unreachable", vec!["check", "--config", &cfg_unreachable], 2, "error: "),
        ("a missing config file", vec!["check", "--config", "/nonexistent-dir/cfg.json"], 2, "error: cannot read"),
        ("a config file over 1 MiB", vec!["check", "--config", &big_cfg], 2, "error: "),
        // Every command's --config is read by the same bounded reader.
        ("an endless device as a config file", vec!["check", "--config", "/dev/zero"], 2, "error: "),
        ("an endless device as a config file", vec!["simulate", "--config", "/dev/zero"], 2, "error: "),
        ("an endless device as a config file", vec!["conform", "--config", "/dev/zero"], 2, "error: "),
        ("an endless device as a config file", vec!["explore", "--config", "/dev/zero"], 2, "error: "),
        ("an unknown preset", vec!["check", "--preset", "nonsense"], 2, "error: unknown preset"),
        ("an unknown variant", vec!["check", "--variant", "nonsense"], 2, "error: unknown variant"),
        ("zero threads", vec!["check", "--threads", "0"], 2, "error: invalid value '0'"),
        ("more threads than the maximum", vec!["check", "--threads", "99999"], 2, "error: invalid value '99999'"),
        ("threads not a number", vec!["check", "--threads", "many"], 2, "error: invalid value 'many'"),
        ("a zero memory limit", vec!["check", "--max-memory", "0"], 2, "error: invalid value '0'"),
        ("a memory limit that is not a size", vec!["check", "--max-memory", "lots"], 2, "error: invalid value 'lots'"),
        ("a check reaching its state limit", vec!["check", "--preset", "ci", "--max-states", "1000"], 2, "error: check of ci stopped"),
        ("a trace output in a missing directory", vec!["check", "--preset", "tiny", "--trace-out", nowhere], 2, "error: cannot write"),
        ("a Mermaid output in a missing directory", vec!["check", "--preset", "tiny", "--mermaid", nowhere], 2, "error: cannot write"),
        ("a JUnit output in a missing directory", vec!["check", "--preset", "tiny", "--junit", nowhere], 2, "error: cannot write"),
        ("a variant whose bug the preset cannot reach", vec!["check", "--preset", "tiny", "--variant", "finish-delivery-during-conversion"], 2, "error: variant finish-delivery-during-conversion is not exposed"),
        ("an unknown preset", vec!["conform", "--preset", "nonsense"], 2, "error: unknown preset"),
        ("zero random traces", vec!["conform", "--random", "0"], 2, "error: --random needs"),
        ("shard 0", vec!["conform", "--shard", "0/3"], 2, "error: invalid value '0/3'"),
        ("a shard beyond the count", vec!["conform", "--shard", "4/3"], 2, "error: invalid value '4/3'"),
        ("zero jobs", vec!["conform", "--jobs", "0"], 2, "error: invalid value '0'"),
        ("a zero watchdog", vec!["conform", "--watchdog", "0"], 2, "error: invalid value '0'"),
        ("--require-complete with random traces", vec!["conform", "--random", "3", "--require-complete"], 2, "error: the argument"),
        ("a save file in a missing directory", vec!["conform", "--preset", "tiny", "--save", nowhere], 2, "error: cannot write"),
        ("a driver that does not exist", vec!["conform", "--preset", "tiny", "--driver-cmd", "/nonexistent-dir/driver"], 2, "error: harness error: cannot start"),
        ("a driver command with an unbalanced quote", vec!["conform", "--preset", "tiny", "--driver-cmd", "driver 'unbalanced"], 2, "error: harness error: unbalanced quote"),
        // A reply line is read up to 16 MiB and one byte, then refused.
        ("a driver writing one endless line", vec!["conform", "--preset", "tiny", "--jobs", "1", "--driver-cmd", "cat /dev/zero"], 2, "error: harness error: driver `cat /dev/zero` wrote a line longer than the cap of 16777216 bytes"),
        ("an endless request line to serve-driver", vec!["serve-driver", "<", "/dev/zero"], 2, "error: serve-driver: reading requests: a line longer than the cap"),
        ("a driver process for the task level", vec!["conform", "--preset", "task", "--driver-cmd", "driver"], 2, "error: --driver-cmd is not available for the task level"),
        ("a shard of the task level", vec!["conform", "--preset", "task", "--shard", "1/2"], 2, "error: --shard is not available for the task level"),
        ("a simulation of the task level", vec!["simulate", "--preset", "task"], 2, "error: simulation is for the channel model"),
        ("an unknown growth dimension", vec!["growth", "--dimension", "width"], 2, "error: unknown dimension `width`"),
        ("a growth budget of no time", vec!["growth", "--budget", "0"], 2, "error: invalid value '0' for '--budget"),
        ("ITF traces of the task level", vec!["traces", "--preset", "task", "--format", "itf", "--out", "x.jsonl"], 2, "error: --format itf is not available for the task level"),
        ("an output in a missing directory", vec!["traces", "--preset", "tiny", "--out", nowhere], 2, "error: cannot write"),
        ("an unknown preset", vec!["traces", "--preset", "nonsense", "--out", "x.jsonl"], 2, "error: unknown preset"),
        ("--junit without --check", vec!["variants", "--junit", "x.xml"], 2, "error: the following required arguments"),
        ("an unknown variant to check", vec!["variants", "--check", "--only", "nope"], 2, "error: unknown variant `nope`"),
        ("an unknown preset", vec!["explore", "--preset", "nonsense"], 2, "error: unknown preset"),
        ("an unknown subcommand", vec!["nonsense"], 2, "error: unrecognized subcommand"),
    ];
    assert!(table.len() >= 30);
    let mut failures = Vec::new();
    let mut doc_rows = Vec::new();
    for (input, args, code, first) in &table {
        let (got, stderr) = run(args);
        let line = stderr.lines().next().unwrap_or("");
        doc_rows.push(doc_row(&dir, input, args, got, line));
        if got != *code || !line.starts_with(first) || stderr.contains("panicked") {
            failures.push(format!(
                "cdr {}: exit {got}, first line {line:?} (want {code}, {first:?})",
                args.join(" ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    check_doc_table(&doc_rows);
}

/// One row of the table in docs/reliability.md: what the input is, the command (files of the
/// test by their names), the exit code and the first line as the tool printed them.
fn doc_row(dir: &Dir, input: &str, args: &[&str], code: i32, line: &str) -> String {
    let prefix = format!("{}/", dir.0.display());
    let shown: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix(&prefix) {
            Some(name) => name.to_string(),
            None if *a == dir.0.display().to_string() => "DIR".to_string(),
            None => a.to_string(),
        })
        .collect();
    let line = line.replace(&prefix, "").replace(&dir.0.display().to_string(), "DIR");
    let cell = |s: &str| s.replace('|', "\\|");
    format!(
        "| {} | `` cdr {} `` | {code} | `` {} `` |",
        cell(input),
        cell(&shown.join(" ")),
        cell(&steady(&line))
    )
}

/// A first line as the doc shows it: without the lists that grow with the project (known
/// presets, variants, actions, fields, enabled steps) and with the figures of a timed search
/// (seconds, states, depth) as letters.
fn steady(line: &str) -> String {
    let cut = ["; ", ", expected one of"]
        .iter()
        .filter_map(|m| line.find(m))
        .min()
        .map_or(line.to_string(), |at| format!("{} …", &line[..at]));
    let words: Vec<&str> = cut.split(' ').collect();
    let figure = |w: &str| {
        let digits = w.trim_start_matches('(');
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    (0..words.len())
        .map(|i| {
            let w = words[i];
            let before = if i > 0 { words[i - 1] } else { "" };
            let after = words.get(i + 1).copied().unwrap_or("");
            match () {
                _ if figure(w) && before == "after" => "T".to_string(),
                _ if figure(w) && after == "unique" => w.replace(|c: char| c.is_ascii_digit(), "").to_string() + "N",
                _ if figure(w.trim_end_matches(')')) && before == "depth" => "D)".to_string(),
                _ => w.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/reliability.md");
const BEGIN: &str = "<!-- bad-inputs: generated by cdr/tests/bad_inputs.rs -->";
const END: &str = "<!-- end bad-inputs -->";

/// The table in docs/reliability.md is these rows as they ran: a changed message or a new row
/// fails here until the doc is regenerated (`UPDATE_DOCS=1`).
fn check_doc_table(rows: &[String]) {
    let table = format!(
        "{BEGIN}\n| input | command | exit | first line of stderr |\n|---|---|---|---|\n{}\n{END}",
        rows.join("\n")
    );
    let doc = std::fs::read_to_string(DOC).expect("docs/reliability.md");
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/reliability.md lacks the markers {BEGIN} ... {END}");
    };
    let current = &doc[begin..end + END.len()];
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(DOC, doc.replace(current, &table)).unwrap();
        return;
    }
    assert_eq!(
        current, table,
        "docs/reliability.md's bad-input table is stale: UPDATE_DOCS=1 cargo test -p cdr --test bad_inputs"
    );
}

#[test]
fn output_piped_into_a_closed_reader_ends_quietly() {
    use std::io::Read;
    for args in [
        &["presets", "--json"][..],
        &["variants", "--json"],
        &["check", "--preset", "tiny", "--json"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cdr"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close the pipe, as `head -c 1` does.
        let mut out = child.stdout.take().unwrap();
        let mut one = [0u8; 1];
        out.read_exact(&mut one).unwrap();
        drop(out);
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "cdr {}: {err}", args.join(" "));
        // Ended by SIGPIPE (as `cat` would be) or, if everything fit in the pipe, success.
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.signal() == Some(13) || status.success(),
            "cdr {}: {status:?}",
            args.join(" ")
        );
    }
}
