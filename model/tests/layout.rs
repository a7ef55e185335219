//! The table in `model/src/model.rs`'s module documentation says where each thread's program
//! and each action's effect live; this test keeps it true: every action of `action.rs`'s table is
//! in exactly one row, under the file that defines its effect method.

use std::collections::BTreeMap;

fn source(file: &str) -> String {
    std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// (action, effect method) of every line of `action.rs`'s table.
fn actions() -> Vec<(String, String)> {
    let text = source("action.rs");
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        // An entry starts with its name at four spaces (`Name {` or `Name =>`) ...
        if let Some(rest) = line.strip_prefix("    ")
            && rest.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        {
            name = rest.split([' ', '{']).next().map(str::to_string);
        }
        // ... and ends with `=> "method", thread, effect;`.
        if let Some((_, tail)) = line.split_once("=> \"")
            && let Some(effect) = tail.trim_end().strip_suffix(';').and_then(|t| t.rsplit(", ").next())
        {
            out.push((name.clone().expect("an entry's name"), effect.to_string()));
        }
    }
    out
}

#[test]
fn model_rs_names_where_each_action_s_effect_lives() {
    let doc = source("model.rs");
    // action -> the file its row names.
    let mut named: BTreeMap<String, String> = BTreeMap::new();
    for row in doc
        .lines()
        .filter(|l| l.starts_with("//! | ") && !l.contains("|---"))
        .skip(1)
    {
        let effects = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
        for part in effects.split("; ") {
            let (file, list) = part.split_once(": ").unwrap_or_else(|| panic!("{row}"));
            for action in list.split(", ") {
                let prev = named.insert(action.trim_matches('`').to_string(), file.to_string());
                assert!(prev.is_none(), "{action} is in two rows");
            }
        }
    }
    let actions = actions();
    assert_eq!(actions.len(), recovery_model::Action::KINDS.len(), "parsed {actions:?}");
    for (action, effect) in actions {
        let file = named
            .get(&action)
            .unwrap_or_else(|| panic!("model.rs's table lacks {action}"));
        let defines = source(file)
            .split(&format!("fn {effect}("))
            .skip(1)
            .any(|after| after.trim_start().starts_with("&self"));
        assert!(defines, "{file} does not define the effect `{effect}` of {action}");
    }
    assert_eq!(named.len(), recovery_model::Action::KINDS.len(), "{named:?}");
}
