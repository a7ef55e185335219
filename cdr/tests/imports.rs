//! The crates' module graphs, read from their sources: impl/, conformance/ and cdr/ have no
//! import cycle (a module can be understood, and changed, from the modules below it). model/ is
//! in two layers: the protocol below and the checker's tooling (`tooling/`) above, which no
//! protocol file imports; the kernel (state, actions, configuration, variants, the model type)
//! imports nothing above it, every other file has few importers, and no import loop is large.
//! Also read from the sources: the longest function of each crate, which docs/contributing.md
//! names.
//!
//! An edge A -> B is a path in A's code (comments and literals excluded) that names B: `use
//! crate::b::X`, `crate::b::f()`, `super::b` from a top-level module, or an item that `lib.rs` or
//! a `mod.rs` re-exports from B (`crate::X` with `pub use b::X`). `lib.rs` and `mod.rs` only
//! declare and re-export, so they are not nodes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root: `["task_level", "config"]`.
type ModPath = Vec<String>;

/// A crate's modules (one per file) and the items its modules re-export.
struct Crate {
    /// Module path -> its file, relative to `src/`.
    files: BTreeMap<ModPath, String>,
    /// (module, name) -> the module the re-exported name comes from.
    reexports: BTreeMap<(ModPath, String), ModPath>,
    /// Each file's code with comments, strings and chars blanked.
    code: BTreeMap<ModPath, String>,
}

fn src_dir(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `lib.rs` (or a binary's `main.rs`) -> `[]`, `a.rs` -> `[a]`, `t/mod.rs` -> `[t]`, `t/x.rs`
/// -> `[t, x]`.
fn mod_path(relative: &Path) -> ModPath {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        "main.rs" if parts.is_empty() => {}
        _ => parts.push(last.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// `text` with comments, string and char literals replaced by spaces (line breaks kept), so that
/// prose and messages that mention `crate::x` are not edges and braces in them do not count.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && (i == 0 || !is_ident(c[i - 1])) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(c[i..j.min(c.len())].iter().map(|&ch| blank(ch)));
            i = j;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a), which stays.
            let end = if next == Some('\\') {
                (i + 2..c.len()).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.extend(std::iter::repeat_n(' ', e + 1 - i));
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The paths a `use` tree (or a plain path) starting at `s` names, each as idents, with `{a,
/// b::c}` groups expanded: `x::{y, z::w}` -> `[x, y]`, `[x, z, w]`.
fn paths_at(s: &[char]) -> Vec<Vec<String>> {
    fn tree(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            while *i < s.len() && s[*i].is_whitespace() {
                *i += 1;
            }
            if *i < s.len() && s[*i] == '{' {
                *i += 1;
                loop {
                    tree(s, i, path.clone(), out);
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    match s.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                    while *i < s.len() && s[*i].is_whitespace() {
                        *i += 1;
                    }
                    if s.get(*i) == Some(&'}') {
                        *i += 1;
                        break;
                    }
                }
                return;
            }
            let start = *i;
            while *i < s.len() && (is_ident(s[*i]) || s[*i] == '*') {
                *i += 1;
            }
            if start == *i {
                break;
            }
            path.push(s[start..*i].iter().collect());
            while *i < s.len() && s[*i].is_whitespace() {
                *i += 1;
            }
            if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
                *i += 2;
            } else {
                break;
            }
        }
        out.push(path);
    }
    let mut out = Vec::new();
    tree(s, &mut 0, Vec::new(), &mut out);
    out
}

/// Every `crate::`, `super::` and `self::` path in `code` of the file whose module is `file`, as
/// an absolute path. Inline modules (`mod tests { use super::*; }`) are followed, so that their
/// `super` is the file itself.
fn referenced_paths(file: &ModPath, code: &str) -> Vec<Vec<String>> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    // The inline modules open at this point, with the brace depth each closes at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < c.len() {
        if c[i] == '{' {
            depth += 1;
            i += 1;
            continue;
        }
        if c[i] == '}' {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            i += 1;
            continue;
        }
        if !is_ident(c[i]) || (i > 0 && (is_ident(c[i - 1]) || c[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < c.len() && is_ident(c[i]) {
            i += 1;
        }
        let word: String = c[start..i].iter().collect();
        if word == "mod" {
            // `mod name {` opens an inline module; `mod name;` declares a file.
            let rest: String = c[i..c.len().min(i + 200)].iter().collect();
            let name: String = rest.trim_start().chars().take_while(|&ch| is_ident(ch)).collect();
            let after = rest.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                inline.push((name, depth));
            }
            continue;
        }
        if !matches!(word.as_str(), "crate" | "super" | "self") || c.get(i) != Some(&':') || c.get(i + 1) != Some(&':')
        {
            continue;
        }
        let mut here: ModPath = file.clone();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        let base: ModPath = match word.as_str() {
            "crate" => Vec::new(),
            "self" => here,
            _ => here[..here.len().saturating_sub(1)].to_vec(),
        };
        for rel in paths_at(&c[i + 2..]) {
            let mut path = base.clone();
            path.extend(rel);
            out.push(path);
        }
        i += 2;
    }
    out
}

impl Crate {
    fn read(krate: &str) -> Crate {
        let src = src_dir(krate);
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let mut files = BTreeMap::new();
        let mut code = BTreeMap::new();
        for p in &paths {
            let relative = p.strip_prefix(&src).expect("under src/");
            let m = mod_path(relative);
            files.insert(m.clone(), relative.display().to_string());
            code.insert(m, code_only(&std::fs::read_to_string(p).expect("readable source")));
        }
        let mut krate = Crate {
            files,
            reexports: BTreeMap::new(),
            code,
        };
        // `pub use a::X;` in a module re-exports X of module a (relative to it, or `crate::`).
        let mut found = Vec::new();
        for (m, text) in &krate.code {
            let c: Vec<char> = text.chars().collect();
            let mut at = 0;
            while let Some(k) = text[at..].find("pub use ").map(|k| k + at) {
                at = k + "pub use ".len();
                let chars_before = text[..at].chars().count();
                for path in paths_at(&c[chars_before..]) {
                    let (name, prefix) = path.split_last().expect("a path");
                    let absolute: ModPath = match prefix.first().map(String::as_str) {
                        Some("crate") => prefix[1..].to_vec(),
                        Some("super") => {
                            let mut p = m[..m.len().saturating_sub(1)].to_vec();
                            p.extend_from_slice(&prefix[1..]);
                            p
                        }
                        _ => m.iter().chain(prefix).cloned().collect(),
                    };
                    found.push(((m.clone(), name.clone()), absolute));
                }
            }
        }
        for (key, target) in found {
            if krate.files.contains_key(&target) {
                krate.reexports.insert(key, target);
            }
        }
        krate
    }

    /// The file an absolute path lands in: its longest module prefix, or the module a re-export
    /// of the next name points at.
    fn resolve(&self, path: &[String]) -> &ModPath {
        let mut module: ModPath = Vec::new();
        for name in path {
            let mut deeper = module.clone();
            deeper.push(name.clone());
            if self.files.contains_key(&deeper) {
                module = deeper;
            } else if let Some(target) = self.reexports.get(&(module.clone(), name.clone())) {
                return self.files.get_key_value(target).expect("a module").0;
            } else {
                break;
            }
        }
        self.files.get_key_value(&module).expect("a module").0
    }

    /// Whether a module is a `lib.rs` or `mod.rs`, which only declares and re-exports.
    fn is_root(&self, m: &ModPath) -> bool {
        let f = &self.files[m];
        f == "lib.rs" || f.ends_with("/mod.rs")
    }

    /// File -> the files its code names.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (m, text) in &self.code {
            if self.is_root(m) {
                continue;
            }
            let targets: BTreeSet<String> = referenced_paths(m, text)
                .iter()
                .map(|p| self.resolve(p))
                .filter(|t| *t != m && !self.is_root(t))
                .map(|t| self.files[t].clone())
                .collect();
            graph.insert(self.files[m].clone(), targets);
        }
        graph
    }
}

/// A cycle of `graph`, if it has one: the files in order, the first repeated at the end.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| *n == node).expect("on the stack");
                let mut cycle: Vec<String> = stack[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node, Mark::Open);
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

/// The strongly connected components of `graph` with more than one file: each is a set of files
/// that all reach one another (Tarjan's algorithm).
fn tangles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().expect("on the stack");
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// File -> how many other files import it (its own submodules aside), most imported first.
fn importers(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, usize)> {
    let mut count: BTreeMap<&str, usize> = graph.keys().map(|k| (k.as_str(), 0)).collect();
    for (from, targets) in graph {
        // A file's own submodules (`a/b.rs` of `a.rs`) are parts of it, not its importers.
        let part_of = |t: &str| from.starts_with(&format!("{}/", t.trim_end_matches(".rs")));
        for t in targets.iter().filter(|t| !part_of(t)) {
            *count.entry(t.as_str()).or_default() += 1;
        }
    }
    let mut v: Vec<(String, usize)> = count.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The most importers a model/ file may have.
const MAX_IMPORTERS: usize = 8;

#[test]
fn impl_has_no_import_cycle() {
    has_no_import_cycle("impl", 20);
}

#[test]
fn cdr_has_no_import_cycle() {
    has_no_import_cycle("cdr", 10);
}

#[test]
fn conformance_has_no_import_cycle() {
    has_no_import_cycle("conformance", 10);
}

/// `krate`'s `src/` (at least `min_files` files) has no import cycle.
fn has_no_import_cycle(krate: &str, min_files: usize) {
    let graph = Crate::read(krate).graph();
    assert!(graph.len() > min_files, "{krate}/src was read: {} files", graph.len());
    if let Some(cycle) = find_cycle(&graph) {
        let tangles: Vec<String> = tangles(&graph)
            .iter()
            .map(|t| format!("{} files: {}", t.len(), t.join(", ")))
            .collect();
        panic!(
            "{krate}/src has an import cycle: {}\nfiles that all import one another:\n  {}",
            cycle.join(" -> "),
            tangles.join("\n  ")
        );
    }
}

#[test]
fn the_reader_sees_edges_and_cycles() {
    // A file naming a module through a re-export, `super` and a grouped `use` all count; a path
    // in a comment or a string does not.
    let code = code_only(
        "use crate::{a::X, b};\n// crate::c::Y\nfn f() { let s = \"crate::d\"; super::e::g(); }\nmod tests { use super::*; }",
    );
    let file: ModPath = vec!["f".into()];
    let paths = referenced_paths(&file, &code);
    let names: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(names, ["a::X", "b", "e::g", "f::*"]);
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .iter()
        .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
        .collect();
    assert_eq!(find_cycle(&graph).expect("a cycle"), ["a", "b", "c", "a"]);
    assert_eq!(tangles(&graph), [["a", "b", "c"]]);
}

/// The model's kernel: the state, the actions, the configuration and the variants at both
/// levels, and the channel model's type, whose methods every Flink class's file adds to. Every
/// file may import them; they import only one another.
fn is_kernel(file: &str) -> bool {
    let kernel = ["state.rs", "action.rs", "config.rs", "variant.rs"];
    let name = file.strip_prefix("task_level/").unwrap_or(file);
    kernel.contains(&name) || file == "model.rs" || file.starts_with("state/")
}

/// The checker's tooling: everything under `tooling/`. The rest is the protocol.
fn is_tooling(file: &str) -> bool {
    file.starts_with("tooling/")
}

#[test]
fn the_model_kernel_imports_nothing_above_it() {
    let graph = Crate::read("model").graph();
    let kernel: Vec<&String> = graph.keys().filter(|f| is_kernel(f)).collect();
    assert!(kernel.len() >= 10, "the kernel was found: {kernel:?}");
    let above: Vec<String> = (graph.iter())
        .filter(|(file, _)| is_kernel(file))
        .flat_map(|(file, targets)| {
            (targets.iter())
                .filter(|t| !is_kernel(t))
                .map(move |t| format!("{file} -> {t}"))
        })
        .collect();
    assert!(
        above.is_empty(),
        "kernel files that import files above the kernel: {above:#?}"
    );
}

#[test]
fn no_model_file_outside_the_kernel_is_imported_by_more_than_eight_others() {
    let graph = Crate::read("model").graph();
    let over: Vec<String> = (importers(&graph).into_iter())
        .filter(|(file, n)| !is_kernel(file) && *n > MAX_IMPORTERS)
        .map(|(f, n)| format!("{f} ({n})"))
        .collect();
    assert!(
        over.is_empty(),
        "model/src files outside the kernel imported by more than {MAX_IMPORTERS} others: {}",
        over.join(", ")
    );
}

#[test]
fn no_protocol_file_imports_the_tooling() {
    let graph = Crate::read("model").graph();
    assert!(graph.keys().any(|f| is_tooling(f)), "model/src/tooling/ was read");
    let up: Vec<String> = (graph.iter())
        .filter(|(file, _)| !is_tooling(file))
        .flat_map(|(file, targets)| {
            (targets.iter())
                .filter(|t| is_tooling(t))
                .map(move |t| format!("{file} -> {t}"))
        })
        .collect();
    assert!(up.is_empty(), "protocol files that import the tooling: {up:#?}");
}

#[test]
fn the_tooling_has_no_import_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = (Crate::read("model").graph().into_iter())
        .filter(|(file, _)| is_tooling(file))
        .map(|(file, targets)| (file, targets.into_iter().filter(|t| is_tooling(t)).collect()))
        .collect();
    assert!(graph.len() > 8, "model/src/tooling/ was read: {} files", graph.len());
    assert_eq!(find_cycle(&graph), None, "an import cycle in model/src/tooling/");
}

/// The most files one import loop of model/src may hold.
const MAX_LOOP: usize = 7;

#[test]
fn every_model_import_loop_is_under_eight_files() {
    let graph = Crate::read("model").graph();
    let big: Vec<String> = (tangles(&graph).into_iter())
        .filter(|t| t.len() > MAX_LOOP)
        .map(|t| format!("{} files: {}", t.len(), t.join(", ")))
        .collect();
    assert!(big.is_empty(), "import loops of more than {MAX_LOOP} files: {big:#?}");
}

/// Each `fn` with a body in `code` (comments and literals blanked): its name, first line and
/// length in lines, from the `fn` keyword to the closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let c: Vec<char> = code.chars().collect();
    let line_at = |i: usize| c[..i].iter().filter(|&&ch| ch == '\n').count() + 1;
    let mut found = Vec::new();
    for i in 0..c.len().saturating_sub(3) {
        let starts_word = i == 0 || !is_ident(c[i - 1]);
        if !(starts_word && c[i] == 'f' && c[i + 1] == 'n' && c[i + 2].is_whitespace()) {
            continue;
        }
        let mut j = i + 2;
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        let name: String = c[j..].iter().take_while(|&&ch| is_ident(ch)).collect();
        // The body's brace, unless a `;` ends a declaration first (a trait's method).
        let Some(open) = (j..c.len()).find(|&k| c[k] == '{' || c[k] == ';') else {
            continue;
        };
        if name.is_empty() || c[open] == ';' {
            continue;
        }
        let mut depth = 0;
        let mut close = open;
        for (k, &ch) in c.iter().enumerate().skip(open) {
            depth += match ch {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            if depth == 0 {
                close = k;
                break;
            }
        }
        found.push((name, line_at(i), line_at(close) - line_at(i) + 1));
    }
    found
}

/// The longest function of a crate's `src/`: (lines, file, name).
fn longest_function(krate: &str) -> (usize, String, String) {
    let krate_files = Crate::read(krate);
    krate_files
        .code
        .iter()
        .flat_map(|(m, code)| {
            let file = krate_files.files[m].clone();
            functions(code)
                .into_iter()
                .map(move |(name, _, lines)| (lines, file.clone(), name))
        })
        .max()
        .expect("a crate has functions")
}

#[test]
fn the_longest_functions_are_those_contributing_md_names() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/contributing.md"))
        .expect("docs/contributing.md");
    for krate in ["model", "impl", "conformance", "cdr"] {
        let (lines, file, name) = longest_function(krate);
        let row = format!("| {krate} | `{name}` (`{krate}/src/{file}`) | {lines} |");
        assert!(
            doc.lines().any(|l| l.starts_with(&row)),
            "docs/contributing.md's table of the longest functions should start a row with\n{row}"
        );
    }
}

#[test]
fn the_function_reader_measures_from_fn_to_its_closing_brace() {
    let code = code_only("trait T { fn a(&self); }\nfn b() {\n    if x { y }\n}\nfn c() {}\n");
    let found = functions(&code);
    assert_eq!(found, [("b".to_string(), 2, 3), ("c".to_string(), 5, 1)]);
}

/// The most lines a function of conformance/src may have: its tables (the observation, the
/// log's dispatch) stay one line per action, and each case a function of its own.
const MAX_CONFORMANCE_FUNCTION: usize = 80;

#[test]
fn no_function_in_conformance_is_over_eighty_lines() {
    let (lines, file, name) = longest_function("conformance");
    assert!(
        lines <= MAX_CONFORMANCE_FUNCTION,
        "conformance/src/{file}: `{name}` has {lines} lines, over {MAX_CONFORMANCE_FUNCTION}"
    );
}
