//! `src/validate.rs` maps impl/'s events to model steps with a dispatch table: `Builder::event`
//! has one short arm per event, each calling a method of its own. This test keeps that shape:
//! it reads the source of `src/validate.rs` (and of any module under `src/validate/`) and
//! fails if a function's body is over 30 lines or an arm of `Builder::event`'s match over 3.
//! `Builder::event` itself is the table, as long as it has arms: its body is its match and at
//! most 3 lines besides.
//!
//! A body's lines are those between the line of its opening brace and the line of its closing
//! brace; an arm's are its lines up to the next arm, comments and blank lines not counted.

const MAX_BODY: usize = 30;
const MAX_ARM: usize = 3;
/// The lines of `Builder::event` outside its match.
const MAX_AROUND_TABLE: usize = 3;
/// The dispatch table.
const TABLE: &str = "event";

/// The sources checked: `(path, text)`.
fn sources() -> Vec<(String, String)> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut paths = vec![format!("{src}/validate.rs")];
    if let Ok(dir) = std::fs::read_dir(format!("{src}/validate")) {
        for entry in dir {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                paths.push(path.display().to_string());
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// `text` with the contents of comments, string literals and character literals blanked (each
/// replaced by spaces, line breaks kept), so that only code braces remain.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|j| chars[*j] == '*' && chars[j + 1] == '/')
                .map_or(chars.len(), |j| j + 2);
            out.extend(chars[i..end].iter().map(|c| blank(*c)));
            i = end;
        } else if c == '"' {
            // A string literal, raw ones (`r"..."`, `r#"..."#`) included: blank up to its end.
            let hashes = raw_hashes(&chars, i);
            let mut j = i + 1;
            while j < chars.len() {
                if hashes.is_none() && chars[j] == '\\' {
                    j += 2;
                    continue;
                }
                if chars[j] == '"' && chars[j + 1..].iter().take_while(|c| **c == '#').count() >= hashes.unwrap_or(0) {
                    break;
                }
                j += 1;
            }
            let end = (j + 1 + hashes.unwrap_or(0)).min(chars.len());
            out.extend(chars[i..end].iter().map(|c| blank(*c)));
            i = end;
        } else if c == '\'' {
            // A character literal (`'{'`, `'\n'`); otherwise a lifetime, kept.
            let end = match next {
                Some('\\') => (i + 3..chars.len()).find(|j| chars[*j] == '\'').map(|j| j + 1),
                Some(_) if chars.get(i + 2) == Some(&'\'') => Some(i + 3),
                _ => None,
            };
            match end {
                Some(end) => {
                    out.extend(chars[i..end].iter().map(|c| blank(*c)));
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `Some(n)` if the string literal whose opening quote is at `i` is raw, with `n` hashes.
fn raw_hashes(chars: &[char], i: usize) -> Option<usize> {
    let hashes = chars[..i].iter().rev().take_while(|c| **c == '#').count();
    let r = i.checked_sub(hashes + 1).map(|j| chars[j]);
    let before_r = i.checked_sub(hashes + 2).map(|j| chars[j]);
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    (r == Some('r') && !ident(before_r)).then_some(hashes)
}

/// A function of the source: its name, the line of its `fn` (0-based) and the lines of its
/// opening and closing braces.
struct Function {
    name: String,
    line: usize,
    open: usize,
    close: usize,
}

impl Function {
    fn body_lines(&self) -> usize {
        self.close - self.open - 1
    }
}

/// Every function with a body in `code` (the output of [`code_only`]).
fn functions(code: &str) -> Vec<Function> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (line, text) in lines.iter().enumerate() {
        let Some(name) = fn_name(text) else {
            continue;
        };
        // The body opens at the first brace after the name, unless a `;` ends the declaration.
        let mut depth = 0usize;
        let mut open = None;
        'lines: for (l, t) in lines.iter().enumerate().skip(line) {
            let from = if l == line { text.find("fn ").unwrap() } else { 0 };
            for c in t[from..].chars() {
                match c {
                    ';' if open.is_none() => break 'lines,
                    '{' => {
                        open.get_or_insert(l);
                        depth += 1;
                    }
                    '}' if open.is_some() => {
                        depth -= 1;
                        if depth == 0 {
                            out.push(Function {
                                name: name.clone(),
                                line,
                                open: open.unwrap(),
                                close: l,
                            });
                            break 'lines;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let qualifiers = ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe", "extern"];
    if !words[..at].iter().all(|w| qualifiers.contains(w)) {
        return None;
    }
    let name = words.get(at + 1)?;
    Some(name.split(['(', '<']).next().unwrap().to_string())
}

/// The first `match` in `Builder::event`: each arm's first line (1-based) and its number of
/// lines, and the number of lines of the function's body outside the match.
fn event_arms(text: &str, code: &str) -> (Vec<(usize, usize)>, usize) {
    let event = functions(code)
        .into_iter()
        .find(|f| f.name == TABLE)
        .expect("validate.rs defines Builder::event");
    let lines: Vec<&str> = text.lines().collect();
    let body = event.open + 1..event.close;
    let start = body
        .clone()
        .find(|l| lines[*l].trim_start().starts_with("match "))
        .expect("Builder::event is a match");
    let indent = |l: &str| l.len() - l.trim_start().len();
    let arm_indent = indent(lines[start]) + 4;
    let end = (start + 1..event.close)
        .find(|l| indent(lines[*l]) < arm_indent && !lines[*l].trim().is_empty())
        .expect("the match closes");
    let counted = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with("//");
    let starts_arm =
        |l: &str| indent(l) == arm_indent && counted(l) && !l.trim_start().starts_with(['|', '}', ')', '.']);
    let mut arms: Vec<(usize, usize)> = Vec::new();
    for (l, line) in lines.iter().enumerate().take(end).skip(start + 1) {
        if starts_arm(line) {
            arms.push((l + 1, 0));
        }
        if let Some(arm) = arms.last_mut()
            && counted(line)
        {
            arm.1 += 1;
        }
    }
    let around = body.filter(|l| (*l < start || *l > end) && counted(lines[*l])).count();
    (arms, around)
}

#[test]
fn no_function_of_validate_is_over_30_lines() {
    let mut long = Vec::new();
    let mut count = 0;
    for (path, text) in sources() {
        for f in functions(&code_only(&text)) {
            count += 1;
            // The table's length is its number of arms (`builder_event_is_a_dispatch_table`).
            if f.body_lines() > MAX_BODY && f.name != TABLE {
                long.push(format!(
                    "{path}:{}: fn {} has {} lines",
                    f.line + 1,
                    f.name,
                    f.body_lines()
                ));
            }
        }
    }
    // The parse found the functions (`steps`, `validate`, `Builder`'s methods, ...).
    assert!(count > 40, "found only {count} functions");
    assert!(long.is_empty(), "functions over {MAX_BODY} lines: {long:#?}");
}

#[test]
fn builder_event_is_a_dispatch_table() {
    let (path, text) = sources().into_iter().next().unwrap();
    let (arms, around) = event_arms(&text, &code_only(&text));
    assert!(
        around <= MAX_AROUND_TABLE,
        "Builder::event has {around} lines besides its match"
    );
    // One arm per event (or group of events handled alike): impl/ logs over 30 kinds.
    assert!(arms.len() > 30, "found only {} arms", arms.len());
    let long: Vec<String> = arms
        .iter()
        .filter(|(_, n)| *n > MAX_ARM)
        .map(|(l, n)| format!("{path}:{l}: an arm of {n} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "arms of Builder::event over {MAX_ARM} lines: {long:#?}"
    );
}

#[test]
fn the_parse_sees_through_literals_and_comments() {
    let code = code_only(
        "fn a() {\n    let s = \"}\"; // }\n    let c = ['{', '\\'', '\\n']; let r = r#\"}\"#;\n    f::<'static>()\n}\n",
    );
    let fs = functions(&code);
    assert_eq!(fs.len(), 1);
    assert_eq!((fs[0].name.as_str(), fs[0].open, fs[0].close), ("a", 0, 4));
    assert_eq!(fs[0].body_lines(), 3);
}
