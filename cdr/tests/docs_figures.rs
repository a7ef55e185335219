//! Figures the docs quote that the code can produce, checked so that they cannot go stale.
//! The `ci` check takes about a minute in release, so it runs in the full CI tier
//! (`cargo test --release -p cdr --test docs_figures -- --ignored`).

// The broken driver the conformance tests share.
#[path = "../../conformance/tests/common/mod.rs"]
mod common;

use recovery_model::tooling::check::check;
use recovery_model::tooling::format::grouped;
use recovery_model::{RecoveryModel, Variant, preset};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
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
    let mut presets = recovery_model::presets::preset_names();
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

fn conformance_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance.md")).unwrap()
}

/// The lines of the first fenced block of `doc` that follows the line starting with `after`.
fn fenced_block_after<'a>(doc: &'a str, after: &str) -> Vec<&'a str> {
    doc.lines()
        .skip_while(|l| !l.starts_with(after))
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect()
}

/// The rows of the table whose header line starts with `header`, as trimmed cells (the
/// separator row skipped).
fn table_rows(doc: &str, header: &str) -> Vec<Vec<String>> {
    doc.lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            cells[1..cells.len() - 1].iter().map(|c| c.trim().to_string()).collect()
        })
        .collect()
}

/// docs/conformance.md's bug-zoo table: one row per variant of `cdr variants`, with the length
/// of its shortest counterexample, the step at which the fixed implementation departs from the
/// variant's model, that step's action and whether the observation or only the snapshot differs.
#[test]
fn the_bug_zoo_table_of_conformance_md_is_what_the_replays_give() {
    use conformance::driver::ModelDriver;
    use conformance::impl_driver::ImplDriver;
    use conformance::replay::{Compare, lockstep};
    use recovery_model::bug_zoo::VARIANTS;
    use recovery_model::tooling::check::shortest_counterexample;

    let rows = table_rows(
        &conformance_md(),
        "| Variant | Steps | Diverges at step | Action | Differs |",
    );
    let mut named: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let mut variants: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
    named.sort_unstable();
    variants.sort_unstable();
    assert_eq!(
        named, variants,
        "docs/conformance.md's bug-zoo table and `cdr variants` differ"
    );
    for row in &rows {
        let info = VARIANTS.iter().find(|v| v.name == row[0].trim_matches('`')).unwrap();
        let m = RecoveryModel::new(preset(info.preset).unwrap(), info.variant);
        let actions = shortest_counterexample(&m, info.property).expect("the variant is caught");
        let mut reference = ModelDriver::new(m.clone());
        let mut driver = ImplDriver::for_model(&m);
        // A bug outside what impl/ implements replays without a divergence: "none".
        let actual = match lockstep(&mut reference, &mut driver, &actions, Compare::Every) {
            Ok(_) => [
                format!("`{}`", info.name),
                actions.len().to_string(),
                "none".to_string(),
                "—".to_string(),
                "—".to_string(),
            ],
            Err(e) => {
                let d = e.divergence().expect("a divergence");
                let differs = if d.observation_differs() {
                    "observation"
                } else {
                    "snapshot"
                };
                [
                    format!("`{}`", info.name),
                    actions.len().to_string(),
                    d.step.to_string(),
                    format!("`{}`", d.action().method()),
                    differs.to_string(),
                ]
            }
        };
        assert_eq!(
            row[..5],
            actual[..],
            "docs/conformance.md's bug-zoo row for {} is stale",
            info.name
        );
    }
}

/// The divergence shown under "Reading a divergence" is the broken driver's report: its lines
/// (but the elided `...`) appear in the report, in order.
#[test]
fn the_divergence_example_of_conformance_md_is_what_the_broken_driver_reports() {
    use conformance::driver::ModelDriver;
    use conformance::impl_driver::ImplDriver;
    use conformance::replay::{Compare, lockstep};
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;

    let doc = conformance_md();
    let shown = fenced_block_after(&doc, "## Reading a divergence");
    assert!(shown.len() > 10, "{shown:?}");
    let buggy = RecoveryModel::new(preset("tiny").unwrap(), Variant::StashReplayedAtHead);
    let actions = shortest_counterexample(&buggy, PropertyId::PriorityEventsFirst).expect("caught");
    let fixed = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let mut reference = ModelDriver::new(fixed.clone());
    let mut broken = common::StashAtHead::new(ImplDriver::new(&fixed.cfg));
    let e = lockstep(&mut reference, &mut broken, &actions, Compare::Every).expect_err("diverges");
    let report = e.divergence().expect("a divergence").to_string();
    let mut lines = report.lines();
    for want in shown.iter().filter(|l| l.trim() != "...") {
        assert!(
            lines.any(|l| l == *want),
            "docs/conformance.md's divergence example is stale at {want:?}; the report is:\n{report}"
        );
    }
}

/// The trace format's version and `--watchdog`'s default, as docs/conformance.md gives them.
#[test]
fn the_format_version_and_the_watchdog_default_of_conformance_md_are_current() {
    let doc = conformance_md();
    let version = conformance::trace::FORMAT_VERSION;
    assert!(
        doc.contains(&format!("## The trace format (version {version})"))
            && doc.contains(&format!("\"format_version\": {version},")),
        "docs/conformance.md should give format version {version}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cdr"))
        .args(["conform", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let default = help
        .split("--watchdog")
        .nth(1)
        .and_then(|h| h.split("[default: ").nth(1))
        .and_then(|h| h.split(']').next())
        .expect("--watchdog has a default");
    assert!(
        doc.contains(&format!("`--watchdog SECS` (default {default})")),
        "docs/conformance.md should give --watchdog's default, {default}"
    );
}

/// docs/impl.md's module table names every module of `recovery-impl`, and the loom tests it
/// names exist.
#[test]
fn impl_md_names_every_module_and_its_loom_tests_exist() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let doc = std::fs::read_to_string(format!("{root}/docs/impl.md")).unwrap();
    let lib = std::fs::read_to_string(format!("{root}/impl/src/lib.rs")).unwrap();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("pub(crate) mod ")))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert!(modules.len() >= 10, "{modules:?}");
    let mut rows: Vec<String> = table_rows(&doc, "| Module | Flink class |")
        .into_iter()
        .map(|r| r[0].trim_matches('`').to_string())
        .collect();
    let mut modules: Vec<String> = modules.into_iter().map(String::from).collect();
    rows.sort_unstable();
    modules.sort_unstable();
    assert_eq!(rows, modules, "docs/impl.md's module table and impl/src/lib.rs differ");

    let loom: String = [
        "loom_buffer_manager",
        "loom_remote_input_channel",
        "loom_single_input_gate",
        "loom_local_input_channel",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(format!("{root}/impl/tests/{f}.rs")).unwrap())
    .collect();
    let named = doc
        .lines()
        .skip_while(|l| !l.starts_with("* loom ("))
        .take_while(|l| !l.is_empty() && !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join(" ");
    let tests: Vec<&str> = named
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| n.contains("_concurrent_with_"))
        .collect();
    assert!(tests.len() >= 3, "{tests:?}");
    for t in tests {
        assert!(
            loom.contains(&format!("fn {t}()")),
            "docs/impl.md names loom test {t}, which does not exist"
        );
    }
}

#[test]
fn performance_md_counts_the_property_predicates_the_model_has() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md")).unwrap();
    let n = recovery_model::properties::PropertyId::ALL.len();
    assert!(
        doc.contains(&format!("the {n} property predicates")),
        "docs/performance.md should say the {n} property predicates"
    );
}

#[test]
fn performance_md_gives_the_encoded_size_of_tiny_s_states() {
    // Every state but the initial one is encoded once, whatever the threads: the mean is exact.
    let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let options = recovery_model::tooling::check::CheckOptions {
        threads: 2,
        acyclic: false,
        frontier: recovery_model::tooling::search::Frontier::Encoded,
        por: false,
    };
    let report = recovery_model::tooling::check::check_with_progress(model, "tiny", &[], &options, &mut |_| {});
    let bytes = report
        .encoded_bytes_per_state
        .expect("an encoded frontier reports its size");
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md")).unwrap();
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let figure = format!("a state of `tiny` takes {bytes:.0} bytes encoded");
    assert!(flat.contains(&figure), "docs/performance.md should say \"{figure}\"");
}

#[test]
fn ci_md_counts_the_action_kinds_and_variants_the_code_has() {
    use recovery_model::Action;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ci.md")).unwrap();
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let kinds = Action::KINDS.len() - Action::MODEL_ONLY_KINDS.len();
    assert!(
        flat.contains(&format!("reach all {kinds} action kinds")),
        "docs/ci.md should say the PR tier reaches all {kinds} action kinds"
    );
    let channel = recovery_model::bug_zoo::VARIANTS.len();
    let task = recovery_model::task_level::bug_zoo::TASK_VARIANTS.len();
    assert!(
        flat.contains(&format!(
            "all {} ({channel} channel, {task} task-level)",
            channel + task
        )),
        "docs/ci.md should count {channel} channel and {task} task-level variants"
    );
}

/// docs/model.md's presets table gives each preset's unique states as docs/performance.md's
/// size table does (which the tests above check against the model).
#[test]
fn model_md_s_presets_table_agrees_with_the_size_table() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
    let rows = table_rows(&doc, "| preset | channels | unique states |");
    let sizes = size_table();
    let mut named: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    let mut presets = recovery_model::presets::preset_names();
    named.sort_unstable();
    presets.sort_unstable();
    assert_eq!(named, presets, "docs/model.md's presets table and the presets differ");
    for row in &rows {
        let name = row[0].trim_matches('`');
        let (_, _, unique) = sizes.iter().find(|(n, _, _)| n == name).expect("in the size table");
        assert_eq!(row[2], grouped(*unique), "docs/model.md's row for `{name}`");
    }
}

/// docs/findings.md's table names, for each finding, its preset and the property its preset
/// violates by design, and its write-up gives the shortest counterexample's length as
/// "(`cdr check --preset NAME`, N steps" (in docs/model.md for a finding written up there).
#[test]
fn findings_md_gives_the_length_of_each_finding_s_shortest_counterexample() {
    use recovery_model::tooling::check::shortest_counterexample;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md")).unwrap();
    let model_md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
    let rows = table_rows(
        &doc,
        "| finding | verdict | versions | preset | property | Flink's classes |",
    );
    assert!(rows.len() >= 4);
    for row in &rows {
        let name = row[3].split('`').nth(1).unwrap_or(row[3].as_str());
        if let Some((property, steps)) = task_level_finding(name) {
            // A finding of the task level: its preset's property violated by design.
            assert!(row[4].starts_with(property.name()), "findings.md's row for {name}");
            let figure = format!("(`cdr check --preset {name}`, {steps} steps");
            assert!(doc.contains(&figure), "findings.md should say {figure}");
            continue;
        }
        let cfg = preset(name).unwrap_or_else(|| panic!("findings.md names preset {name}"));
        let property = cfg.violated_by_config()[0];
        assert!(
            row[4].starts_with(property.name()),
            "findings.md's row for {name} names {}",
            row[4]
        );
        let steps = shortest_counterexample(&RecoveryModel::new(cfg, Variant::Fixed), property)
            .unwrap_or_else(|| panic!("{name} violates {property}"))
            .len();
        let figure = format!("(`cdr check --preset {name}`, {steps} steps");
        assert!(
            doc.contains(&figure) || model_md.contains(&figure),
            "findings.md should say {figure}"
        );
    }
}

/// A task-level preset that violates a property by design: the property and its shortest
/// counterexample's length.
fn task_level_finding(name: &str) -> Option<(recovery_model::task_level::properties::TaskPropertyId, usize)> {
    use recovery_model::task_level::{TaskModel, TaskVariant, presets::find_task_preset};
    use recovery_model::tooling::task_level::check::shortest_counterexample;
    let p = find_task_preset(name)?;
    let property = *p.violated.first()?;
    let model = TaskModel::new((p.shapes)(), TaskVariant::Fixed);
    let steps = shortest_counterexample(&model, property)?.actions.len();
    Some((property, steps))
}

/// Every step count docs/findings.md gives ("N steps") is the length of a shortest
/// counterexample the model finds today: the findings' presets, and `tiny` with its remote
/// channel at 0 exclusive and 1 floating buffer.
#[test]
fn every_step_count_in_findings_md_is_a_shortest_counterexample() {
    use recovery_model::properties::PropertyId;
    use recovery_model::tooling::check::shortest_counterexample;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md")).unwrap();
    let mut tiny = preset("tiny").unwrap();
    tiny.channels[1].exclusive = 0;
    tiny.channels[1].floating = 1;
    let claims = [
        (preset("priority-race").unwrap(), PropertyId::PriorityHonoured),
        (preset("drain-wakeup").unwrap(), PropertyId::RecoveryCompletes),
        (preset("late-floating-credit").unwrap(), PropertyId::CreditConservation),
        (preset("late-floating-credit").unwrap(), PropertyId::NoProtocolViolation),
        (tiny.clone(), PropertyId::CreditConservation),
        (tiny, PropertyId::NoProtocolViolation),
    ];
    let mut computed: Vec<usize> = claims
        .into_iter()
        .map(|(cfg, p)| {
            shortest_counterexample(&RecoveryModel::new(cfg, Variant::Fixed), p)
                .unwrap_or_else(|| panic!("{p} is violated"))
                .len()
        })
        .collect();
    computed.push(
        task_level_finding("task-aligned-during-recovery")
            .expect("violated by design")
            .1,
    );
    computed.sort_unstable();
    computed.dedup();
    let words: Vec<&str> = doc.split_whitespace().collect();
    let mut given: Vec<usize> = words
        .windows(2)
        .filter(|w| w[1].trim_end_matches(|c: char| !c.is_alphanumeric()) == "steps")
        .filter_map(|w| w[0].trim_start_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .collect();
    given.sort_unstable();
    given.dedup();
    assert_eq!(
        given, computed,
        "the step counts docs/findings.md gives, and the model's"
    );
}

/// docs/findings.md's table of the fixes' state counts: each finding's preset as Flink is and
/// with every fix (`cdr check --preset NAME [--flink-fix all]`).
#[test]
fn findings_md_gives_each_finding_s_states_with_and_without_the_fixes() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md")).unwrap();
    let rows = table_rows(&doc, "| preset | unique states as Flink is | with every fix |");
    assert_eq!(rows.len(), 4, "one row per finding's preset");
    for row in &rows {
        let name = row[0].trim_matches('`');
        let cfg = preset(name).unwrap_or_else(|| panic!("findings.md names preset {name}"));
        let unique = |cfg| check(RecoveryModel::new(cfg, Variant::Fixed), name, &[], 1, false).unique_states;
        assert_eq!(row[1], grouped(unique(cfg.clone())), "{name} as Flink is");
        assert_eq!(row[2], grouped(unique(cfg.with_every_fix())), "{name} with every fix");
    }
}

/// The rows of docs/performance.md's growth table whose step was checked to the end:
/// (dimension, step, states generated, unique states, the factor the table gives).
fn growth_table() -> Vec<(recovery_model::tooling::growth::Dimension, u32, usize, usize, String)> {
    use recovery_model::tooling::growth::Dimension;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md")).unwrap();
    let rows = table_rows(&doc, "| dimension | step | grown | unique | generated | × unique |");
    assert!(!rows.is_empty(), "docs/performance.md has no growth table");
    let number = |s: &str| s.replace(',', "").parse::<usize>().ok();
    rows.iter()
        .filter_map(|r| {
            let d = Dimension::from_name(&r[0]).unwrap_or_else(|| panic!("growth table: dimension {}", r[0]));
            let step = r[1].parse().unwrap_or_else(|_| panic!("growth table: step {}", r[1]));
            // A step stopped by the budget has no counts.
            Some((d, step, number(&r[4])?, number(&r[3])?, r[5].clone()))
        })
        .collect()
}

/// The base the growth table grows: `cdr growth`'s default preset, as the table's command runs it.
const GROWTH_BASE: &str = "tiny";

fn check_growth_rows(rows: &[(recovery_model::tooling::growth::Dimension, u32, usize, usize, String)]) {
    let base = preset(GROWTH_BASE).unwrap();
    for (d, step, states, unique, _) in rows {
        let cfg = recovery_model::tooling::growth::grow(&base, *d, *step).unwrap();
        let report = check(RecoveryModel::new(cfg, Variant::Fixed), "growth", &[], 2, false);
        assert_eq!(
            (report.states, report.unique_states),
            (*states, *unique),
            "docs/performance.md's growth row {} step {step} is stale",
            d.name()
        );
    }
}

/// Every dimension is in the table from its step 0, steps in order, each factor the ratio of a
/// row's unique states to the row before's; the rows under 100,000 unique states are what the
/// model gives now (step 0, the base, once).
#[test]
fn the_growth_table_is_consistent_and_its_small_rows_are_current() {
    use recovery_model::tooling::growth::Dimension;
    let rows = growth_table();
    for d in Dimension::ALL {
        let steps: Vec<u32> = rows.iter().filter(|r| r.0 == d).map(|r| r.1).collect();
        assert!(steps.len() >= 2, "growth table: {} has {steps:?}", d.name());
        assert!(steps.iter().enumerate().all(|(i, s)| *s as usize == i), "{steps:?}");
    }
    for pair in rows.windows(2).filter(|w| w[0].0 == w[1].0) {
        let factor = format!("{:.1}", pair[1].3 as f64 / pair[0].3 as f64);
        assert_eq!(
            pair[1].4,
            factor,
            "growth table: {} step {}",
            pair[1].0.name(),
            pair[1].1
        );
    }
    let mut small: Vec<_> = rows.into_iter().filter(|r| r.3 < 200_000).collect();
    let mut seen_base = false;
    small.retain(|r| r.1 != 0 || !std::mem::replace(&mut seen_base, true));
    assert!(small.len() >= 3, "{small:?}");
    check_growth_rows(&small);
}

#[test]
#[ignore = "minutes in release: the full CI tier runs it"]
fn every_checked_row_of_the_growth_table_is_current() {
    check_growth_rows(&growth_table());
}

/// docs/model.md's comparison of each preset as Flink has it and with the end-of-recovery event
/// ordinary and checkpoints overlapping: the rows under `limit` unique states.
fn check_end_of_recovery_rows(limit: usize) {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap();
    let rows = table_rows(
        &doc,
        "| preset | unique states, as Flink has it | with the event ordinary and checkpoints overlapping |",
    );
    assert!(rows.len() >= 20, "docs/model.md lacks the end-of-recovery table");
    let number = |s: &str| s.replace(',', "").parse::<usize>().unwrap();
    for row in rows.iter().filter(|r| number(&r[1]) < limit) {
        let name = row[0].trim_matches('`');
        let cfg = preset(name).unwrap();
        let flink = check(RecoveryModel::new(cfg.clone(), Variant::Fixed), name, &[], 2, false);
        let ordinary = recovery_model::ModelConfig {
            overlapping_checkpoints: true,
            flink_fixes: vec![],
            ..cfg
        };
        let ordinary = check(
            RecoveryModel::new(ordinary, Variant::RecoveryCompletionNotBlocking),
            name,
            &[],
            2,
            false,
        );
        assert_eq!(
            (grouped(flink.unique_states), grouped(ordinary.unique_states)),
            (row[1].clone(), row[2].clone()),
            "docs/model.md's end-of-recovery row for `{name}`"
        );
    }
}

#[test]
fn the_small_rows_of_model_md_s_end_of_recovery_table_are_current() {
    check_end_of_recovery_rows(50_000);
}

#[test]
#[ignore = "minutes in release: the full CI tier runs it"]
fn every_row_of_model_md_s_end_of_recovery_table_is_current() {
    check_end_of_recovery_rows(usize::MAX);
}

/// The rows of the traceability table under the heading `heading` of docs/model.md, as
/// (action kind, class of the row: the first word in bold of its last cell).
fn traceability_rows(heading: &str) -> Vec<(String, String)> {
    let doc = model_md();
    let section = &doc[doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/model.md has no {heading}"))..];
    table_rows(
        section,
        "| Action | Flink on master | Pull request | Model against master |",
    )
    .into_iter()
    .map(|row| {
        let last = row.last().unwrap();
        assert!(!last.to_lowercase().contains("unknown"), "a row says unknown: {row:?}");
        let class = last.split("**").nth(1).unwrap_or_else(|| panic!("no class in {row:?}"));
        (row[0].trim_matches('`').to_string(), class.to_string())
    })
    .collect()
}

/// How many rows of each class, in the order the docs' sentence gives them.
fn class_counts(rows: &[(String, String)]) -> Vec<(String, usize)> {
    let counts: Vec<(String, usize)> = ["match", "changed", "older", "differs", "not Flink"]
        .into_iter()
        .map(|class| (class.to_string(), rows.iter().filter(|(_, c)| c == class).count()))
        .collect();
    let classified: usize = counts.iter().map(|(_, n)| n).sum();
    assert_eq!(classified, rows.len(), "a row's class is none of the five: {rows:?}");
    counts
}

fn model_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/model.md")).unwrap()
}

/// docs/model.md's traceability tables have one row per action kind of each level, each of
/// one of five classes, and the sentence under them counts the classes.
#[test]
fn the_traceability_tables_cover_every_action_and_their_counts_are_current() {
    use recovery_model::Action;
    use recovery_model::task_level::action::TaskAction;
    use recovery_model::task_level::state::Mail;

    let channel = traceability_rows("### Channel level");
    let mut named: Vec<&str> = channel.iter().map(|(k, _)| k.as_str()).collect();
    let mut kinds: Vec<&str> = Action::KINDS.to_vec();
    named.sort_unstable();
    kinds.sort_unstable();
    assert_eq!(
        named, kinds,
        "the channel-level traceability table and Action::KINDS differ"
    );

    // Every task-level action; the match makes a new one fail to compile until it is listed.
    let all = [
        TaskAction::ReadInputData { gate: 0 },
        TaskAction::FinishReadRecoveredState { gate: 0 },
        TaskAction::DrainGate { gate: 0 },
        TaskAction::ProcessMail { mail: Mail::Suspend },
        TaskAction::ProcessInput { gate: 0, channel: 0 },
        TaskAction::ProcessInputNothingToRead,
        TaskAction::OnGateStateConsumed { gate: 0 },
        TaskAction::OnAllGatesStateConsumed,
        TaskAction::CompleteRecovery,
        TaskAction::CompleteAllStateConsumed,
        TaskAction::TriggerCheckpoint,
        TaskAction::RunSuspendCallback,
        TaskAction::RunResumeCallback,
        TaskAction::OnInputAvailable,
        TaskAction::ReadInputDataThrows { gate: 0 },
        TaskAction::FinishReadRecoveredStateThrows { gate: 0 },
        TaskAction::RequestPartitionsThrows { gate: 0 },
        TaskAction::CancelExecution,
        TaskAction::CancelInvokable,
        TaskAction::ReleaseResources,
    ];
    for a in all {
        use TaskAction::*;
        match a {
            ReadInputData { .. }
            | FinishReadRecoveredState { .. }
            | DrainGate { .. }
            | ProcessMail { .. }
            | ProcessInput { .. }
            | ProcessInputNothingToRead
            | OnGateStateConsumed { .. }
            | OnAllGatesStateConsumed
            | CompleteRecovery
            | CompleteAllStateConsumed
            | TriggerCheckpoint
            | RunSuspendCallback
            | RunResumeCallback
            | OnInputAvailable
            | ReadInputDataThrows { .. }
            | FinishReadRecoveredStateThrows { .. }
            | RequestPartitionsThrows { .. }
            | CancelExecution
            | CancelInvokable
            | ReleaseResources => {}
        }
    }
    let task = traceability_rows("### Task level");
    let mut named: Vec<&str> = task.iter().map(|(k, _)| k.as_str()).collect();
    let mut kinds: Vec<&str> = all.iter().map(conformance::task_conform::kind).collect();
    named.sort_unstable();
    kinds.sort_unstable();
    assert_eq!(
        named, kinds,
        "the task-level traceability table and the task-level actions differ"
    );

    let sentence = |counts: Vec<(String, usize)>| {
        counts
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(class, n)| {
                let class = if class == "differs" && n > 1 {
                    "differ".to_string()
                } else {
                    class
                };
                format!("{n} {class}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let doc = model_md().split_whitespace().collect::<Vec<_>>().join(" ");
    for (level, rows) in [("Channel level", &channel), ("Task level", &task)] {
        let figure = format!("{level}: {}.", sentence(class_counts(rows)));
        assert!(doc.contains(&figure), "docs/model.md should say \"{figure}\"");
    }
}

/// docs/model.md's actions table has one row per variant of `Action`, named as in the code.
#[test]
fn model_md_s_actions_table_has_a_row_per_action() {
    let schema = serde_json::to_value(schemars::schema_for!(recovery_model::Action)).unwrap();
    // Every variant is tagged `"action": "<kebab-case name>"`.
    fn tags(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(tag) = map.get("properties").and_then(|p| p.get("action")) {
                    let names = tag.get("const").into_iter().chain(
                        tag.get("enum")
                            .into_iter()
                            .flat_map(|e| e.as_array().into_iter().flatten()),
                    );
                    out.extend(names.filter_map(|n| n.as_str().map(str::to_string)));
                }
                map.values().for_each(|v| tags(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| tags(v, out)),
            _ => {}
        }
    }
    let mut variants = Vec::new();
    tags(&schema, &mut variants);
    variants.sort();
    variants.dedup();
    assert_eq!(variants.len(), recovery_model::Action::KINDS.len(), "{variants:?}");
    let kebab = |name: &str| {
        let mut out = String::new();
        for (i, ch) in name.chars().enumerate() {
            if ch.is_uppercase() && i > 0 {
                out.push('-');
            }
            out.push(ch.to_ascii_lowercase());
        }
        out
    };
    let mut rows: Vec<String> = table_rows(&model_md(), "| action | thread | Flink method(s)")
        .iter()
        .map(|r| kebab(r[0].trim_matches('`')))
        .collect();
    rows.sort();
    assert_eq!(
        rows, variants,
        "docs/model.md's actions table and the Action enum differ"
    );
}

/// Phrases that only development history or a reference outside the repository uses, searched
/// for in docs and sources.
const HISTORY_PHRASES: &[&str] = &[
    "the brief",
    "no longer",
    "as before",
    "previously",
    "now sit in",
    "those six are gone",
    "the driver now",
    "before the dispatch table",
    "the earlier observation",
    "an earlier round",
    "an earlier model",
    "was changed to",
    "were changed to",
    "has been replaced",
    "have been replaced",
    "we added",
    "before this change",
    "after the refactor",
];

/// The docs' own uses of "now" and "earlier": a step of a protocol trace, the order of channels,
/// checkpoints, steps or traces. Any other "now" or "earlier" in the docs is taken for history.
/// Each entry is an exact phrase (lower case, whitespace joined) that covers the word.
const NOW_AND_EARLIER_ALLOWED: &[&str] = &[
    // The order of a gate's channels: a checkpoint declined on, or a drainer waiting for, a
    // channel before this one.
    "an earlier channel",
    // The order of checkpoints: an older checkpoint, aborted or obsolete once a later one is seen.
    "the earlier checkpoint",
    "an earlier checkpoint",
    "never triggers the earlier (it is obsolete)",
    // The order of barriers in a channel.
    "an earlier barrier",
    // The order of a log's steps and of a run's traces (conformance.md's window, edge coverage).
    "earlier steps of other threads",
    "compared by an earlier trace",
    // A step of a counterexample trace, told as it happens (bug-zoo.md, findings.md).
    "`getnextbuffer` would now return",
    "`f0`, now surplus",
    "the io thread now reads the released gate",
    "now the channel sits in the gate's priority section",
    "the one the drainer lent earlier",
    "where the refused buffer now is",
    // The timing of a protocol event: the upstream's own timeout sends the barrier before the
    // alignment's.
    "may send it earlier",
    // The moment of a step or a reply: what a call does, or what a snapshot holds, at that point.
    "it takes the buffer now",
    "the abstract state now",
];

/// Where `text` (lower case, whitespace joined) has a history phrase, or, with `words`, a "now"
/// or "earlier" that no entry of `NOW_AND_EARLIER_ALLOWED` covers: each with some context.
fn history_in(text: &str, words: bool) -> Vec<String> {
    let context = |at: usize, len: usize| {
        let mut start = at.saturating_sub(40);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + len + 40).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        format!("\"{}\"", &text[start..end])
    };
    let mut found: Vec<String> = HISTORY_PHRASES
        .iter()
        .filter_map(|phrase| text.find(phrase).map(|at| context(at, phrase.len())))
        .collect();
    if !words {
        return found;
    }
    let allowed: Vec<(usize, usize)> = NOW_AND_EARLIER_ALLOWED
        .iter()
        .flat_map(|phrase| text.match_indices(phrase).map(|(at, p)| (at, at + p.len())))
        .collect();
    let is_word_char = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    for word in ["now", "earlier"] {
        for (at, _) in text.match_indices(word) {
            let end = at + word.len();
            if is_word_char(text[..at].chars().next_back()) || is_word_char(text[end..].chars().next()) {
                continue;
            }
            if !allowed.iter().any(|&(a, b)| a <= at && end <= b) {
                found.push(context(at, word.len()));
            }
        }
    }
    found
}

/// Every `.md` or `.rs` file under `dir`, its subdirectories included.
fn md_and_rs_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            md_and_rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md" || e == "rs") {
            out.push(path);
        }
    }
}

/// Docs and sources describe the code as it is: no development history, and no reference to
/// documents outside the repository. The docs' "now" and "earlier" are checked too (sources say
/// "now" of a step as a matter of course: `Instant::now()`, "the state now").
#[test]
fn docs_and_sources_carry_no_history() {
    let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "drivers", "model/src", "impl/src", "conformance/src", "cdr/src"] {
        md_and_rs_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "too few files found: {}", files.len());
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap().to_lowercase();
        // Joined lines, so that a phrase broken across two lines is found too.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let is_doc = path.extension().is_some_and(|e| e == "md");
        for hit in history_in(&text, is_doc) {
            found.push(format!("{}: {hit}", path.display()));
        }
    }
    assert!(found.is_empty(), "history or outside references: {found:#?}");
}

/// The history check flags history and lets the domain's own "now" and "earlier" through.
#[test]
fn the_history_check_can_fail() {
    for history in [
        "the guard now sits in producer.rs",
        "the driver picks partition ids, now",
        "an earlier round added the properties",
        "it was changed to follow master",
        "earlier, the model numbered the sentinel",
        "a checkpoint declined on an earlier channel. now the pool has it",
    ] {
        assert!(!history_in(history, true).is_empty(), "not flagged: {history:?}");
    }
    for present in [
        "a checkpoint declined on an earlier channel",
        "`getnextbuffer` would now return local#0's `eoo0`",
        "the pool is known; nowhere else",
        "the abstract state now",
    ] {
        assert_eq!(history_in(present, true), Vec::<String>::new(), "{present:?}");
    }
    // In sources only the phrases count.
    assert!(history_in("let start = instant::now();", false).is_empty());
    assert!(!history_in("// this no longer holds", false).is_empty());
}

/// docs/performance.md's conformance table: the traces, steps and edges of `cdr conform --edges`
/// (exact and deterministic) for the rows under 10,000 edges; the times are as measured.
#[test]
fn the_small_rows_of_performance_md_s_conformance_table_are_current() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md")).unwrap();
    let rows = table_rows(&doc, "| preset | traces | steps | edges | seconds | steps/s |");
    let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    let mut checked = 0;
    for row in &rows {
        let (covered, total) = row[3].split_once(" / ").expect("edges as covered / total");
        if number(total) >= 10_000 {
            continue;
        }
        let name = row[0].trim_matches('`');
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cdr"))
            .args(["conform", "--preset", name, "--edges", "--jobs", "1", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            [&v["traces"], &v["steps"], &v["edges_covered"], &v["edges_total"]].map(|x| x.as_u64().unwrap()),
            [number(&row[1]), number(&row[2]), number(covered), number(total)],
            "docs/performance.md's conformance row for `{name}`"
        );
        checked += 1;
    }
    assert!(checked >= 3, "the conformance table has fewer than 3 small rows");
}

/// docs/performance.md's figures of the partial-order reduction on `tiny`: with the properties'
/// visibility it keeps every state; with no action visible, the states the structure alone
/// leaves.
#[test]
fn performance_md_gives_what_the_reduction_leaves_of_tiny() {
    use recovery_model::footprint::Components;
    use recovery_model::tooling::por::Reduction;
    use recovery_model::tooling::search::{Counters, SearchOptions, bfs};
    use std::sync::Arc;
    let model = RecoveryModel::new(preset("tiny").unwrap(), Variant::Fixed);
    let run = |por: Option<Reduction>| {
        let options = SearchOptions {
            threads: 1,
            por: por.map(Arc::new),
            ..Default::default()
        };
        let o = bfs(&model, &options, &Counters::default());
        (o.unique_states, o.states)
    };
    let full = run(None);
    assert_eq!(
        run(Some(Reduction::for_properties(&model))),
        full,
        "the reduction kept tiny whole"
    );
    let (unique, generated) = run(Some(Reduction::new(&model, Components::EMPTY)));
    let flat = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/performance.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let sentence = format!(
        "explores {} unique states of {} generated, against {} of {}",
        grouped(unique),
        grouped(generated),
        grouped(full.0),
        grouped(full.1)
    );
    assert!(flat.contains(&sentence), "docs/performance.md should say: {sentence}");
}
