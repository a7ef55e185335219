//! `check` with a progress line: the same verdicts as [`recovery_model::tooling::check::check`], with
//! states, unique states, depth and states per second shown on a terminal while the search runs.
//!

use indicatif::{ProgressBar, ProgressStyle};
use recovery_model::RecoveryModel;
use recovery_model::tooling::check::{CheckOptions, CheckReport};
use std::time::{Duration, Instant};

/// Whether a progress line belongs on this stderr: only on a terminal, never with `--json`.
pub fn wanted(json: bool) -> bool {
    use std::io::IsTerminal;
    !json && std::io::stderr().is_terminal()
}

/// A spinner on stderr when `show`, else a hidden bar that draws nothing.
pub fn spinner(show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A counter of `what` with its rate on stderr when `show`, else a hidden bar.
pub fn counter(show: bool, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    let template = format!("{{spinner}} [{{elapsed}}] {{human_pos}} {what} ({{per_sec}})");
    bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Limits that stop a check before it exhausts the machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Unique states.
    pub max_states: Option<usize>,
    /// Resident memory of this process, in bytes.
    pub max_memory: Option<u64>,
}

/// The default `--max-memory`: three quarters of the machine's physical memory (none when
/// `/proc/meminfo` cannot be read).
pub fn default_max_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024 / 4 * 3)
}

/// Parses a size: bytes, or a number with `K`, `M`, `G` or `T` (binary units), e.g. `16G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M' | 'm')) => (&t[..i], 20),
        Some((i, 'G' | 'g')) => (&t[..i], 30),
        Some((i, 'T' | 't')) => (&t[..i], 40),
        _ => (t, 0),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size (bytes, or a number with K, M, G or T)"))?;
    if n == 0 {
        return Err("a size must be positive".into());
    }
    n.checked_mul(1 << shift).ok_or_else(|| format!("`{s}` is too large"))
}

/// Resident memory of this process, in bytes.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// [`recovery_model::tooling::check::check`] with a progress line on stderr when `show`. A check that
/// passes a limit is stopped: the process exits 2 with the states reached and a hint.
pub fn check_with_progress(
    model: RecoveryModel,
    label: &str,
    unreachable: &[recovery_model::properties::PropertyId],
    threads: usize,
    acyclic: bool,
    show: bool,
) -> CheckReport {
    let options = CheckOptions {
        threads,
        acyclic,
        ..Default::default()
    };
    check_with_limits(model, label, unreachable, &options, show, Limits::default())
}

/// [`check_with_progress`] with [`Limits`].
pub fn check_with_limits(
    model: RecoveryModel,
    label: &str,
    unreachable: &[recovery_model::properties::PropertyId],
    options: &CheckOptions,
    show: bool,
    limits: Limits,
) -> CheckReport {
    let start = Instant::now();
    let bar = spinner(show);
    let report = recovery_model::tooling::check::check_with_progress(model, label, unreachable, options, &mut |p| {
        let over = match (limits.max_states, limits.max_memory.zip(resident_bytes())) {
            (Some(max), _) if p.unique_states > max => {
                Some(format!("{} unique states passed --max-states {max}", p.unique_states))
            }
            (_, Some((max, rss))) if rss > max => Some(format!(
                "resident memory {} MiB passed --max-memory {} MiB",
                rss >> 20,
                max >> 20
            )),
            _ => None,
        };
        if let Some(why) = over {
            bar.finish_and_clear();
            eprintln!(
                "error: check of {label} stopped after {:.1} s: {why} ({} unique states, depth {})\n\
                 hint: check a smaller configuration (fewer channels, checkpoints or upstream elements), \
                 sample it with `cdr conform --random N`, or raise the limit",
                start.elapsed().as_secs_f64(),
                p.unique_states,
                p.max_depth
            );
            std::process::exit(2);
        }
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "breadth-first search: {} states, {} unique, depth {}, {:.0} states/s",
            p.states,
            p.unique_states,
            p.max_depth,
            p.states as f64 / secs
        ));
    });
    bar.finish_and_clear();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery_model::tooling::check::check;
    use recovery_model::{Variant, preset};

    fn without_time(r: &CheckReport) -> serde_json::Value {
        let mut v = serde_json::to_value(r).unwrap();
        v["seconds"] = serde_json::Value::Null;
        v
    }

    #[test]
    fn sizes_parse_in_binary_units_and_refuse_nonsense() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("16G"), Ok(16 << 30));
        for bad in ["", "G", "-1G", "1.5G", "0", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn progress_check_gives_the_same_report_as_the_model_crates_check() {
        // A variant: violated, held, found and missing verdicts all occur.
        let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::EnableNotifyFlagBeforeCount);
        let plain = check(
            model.clone(),
            "tiny",
            &[recovery_model::properties::PropertyId::RecycleRacesEnableNotify],
            1,
            true,
        );
        let watched = check_with_progress(
            model,
            "tiny",
            &[recovery_model::properties::PropertyId::RecycleRacesEnableNotify],
            1,
            true,
            false,
        );
        assert_eq!(without_time(&plain), without_time(&watched));
        let actions = |r: &CheckReport| r.properties.iter().map(|p| p.actions.clone()).collect::<Vec<_>>();
        assert_eq!(actions(&plain), actions(&watched));
    }
}
