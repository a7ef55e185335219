//! Figures the docs quote that the code can produce, checked so that they cannot go stale.
//! The `ci` check takes about a minute in release, so it runs in the full CI tier
//! (`cargo test --release -p conformance --test docs_figures -- --ignored`).

use recovery_model::check::check;
use recovery_model::{RecoveryModel, Variant, preset};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// `n` with thousands separators, as the docs write it.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
#[ignore = "a minute in release: the full CI tier runs it"]
fn the_readme_gives_the_state_count_of_the_ci_preset() {
    let model = RecoveryModel::new(preset("ci").unwrap(), Variant::Fixed);
    let report = check(model, "ci", &[], 2, false);
    let figure = format!("`ci`, {} states", grouped(report.unique_states));
    assert!(readme().contains(&figure), "README should say {figure}");
}

#[test]
fn the_readme_names_every_subcommand_of_cdr() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cdr"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 8, "{commands:?}");
    let readme = readme();
    for c in commands {
        assert!(readme.contains(&format!("| `{c}")), "the README's table lacks `{c}`");
    }
}

/// The rows of docs/performance.md's size table: (preset, states, unique).
fn size_table() -> Vec<(String, usize, usize)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md")).unwrap();
    let number = |s: &str| s.trim().replace(',', "").parse::<usize>().unwrap();
    doc.lines()
        .skip_while(|l| !l.starts_with("| preset | states | unique |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_string(),
                number(cells[2]),
                number(cells[3]),
            )
        })
        .collect()
}

fn check_rows(rows: &[(String, usize, usize)]) {
    for (name, states, unique) in rows {
        let model = RecoveryModel::new(preset(name).unwrap(), Variant::Fixed);
        let report = check(model, name, &[], 2, false);
        assert_eq!(
            (report.states, report.unique_states),
            (*states, *unique),
            "docs/performance.md's row for `{name}` is stale"
        );
    }
}

#[test]
fn the_size_table_lists_every_preset_and_its_small_rows_are_current() {
    let rows = size_table();
    let mut named: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let mut presets = recovery_model::config::preset_names();
    named.sort_unstable();
    presets.sort_unstable();
    assert_eq!(
        named, presets,
        "docs/performance.md's size table and the presets differ"
    );
    let small: Vec<_> = rows.into_iter().filter(|r| r.2 < 50_000).collect();
    assert!(small.len() >= 5);
    check_rows(&small);
}

#[test]
#[ignore = "minutes in release: the full CI tier runs it"]
fn every_row_of_the_size_table_is_current() {
    check_rows(&size_table());
}
