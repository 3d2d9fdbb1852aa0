//! Manifest and crate-root hygiene (style.md habits 2 and 3): every member's `Cargo.toml`
//! has `[lints] workspace = true` and takes every dependency from
//! `[workspace.dependencies]` with `workspace = true`; every crate root starts with a `//!`
//! doc comment saying what the crate owns and must not use.
//!
//! The workspace has no `toml` dependency, so manifests are read with a line scanner that
//! understands the shapes cargo manifests use in practice: `[dependencies]`-style tables
//! with `name = ...` or dotted `name.workspace = true` keys (inline tables may span lines),
//! `[dependencies.name]` sub-tables, and `[target.'cfg(..)'.dependencies]`.

use std::collections::BTreeMap;

/// `line` without its `#` comment, minding `"..."` and `'...'` strings.
pub fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, ch) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if ch == '\\' && q == '"' {
                    escaped = true;
                } else if ch == q {
                    quote = None;
                }
            }
            None => match ch {
                '"' | '\'' => quote = Some(ch),
                '#' => return &line[..i],
                _ => {}
            },
        }
    }
    line
}

/// What a table header means for this check.
#[derive(Debug, PartialEq, Eq)]
enum Table {
    /// A dependency table (`[dependencies]`, `[dev-dependencies]`, `[target.X.dependencies]`…),
    /// named for messages.
    Deps(String),
    /// One dependency as a sub-table (`[dependencies.serde]`): its table and name.
    Dep(String, String),
    /// `[lints]`.
    Lints,
    /// `[lints.rust]`, `[lints.clippy]`…: crate-local lint levels.
    LocalLints(String),
    /// Anything else.
    Other,
}

const DEP_TABLES: &[&str] = &["dependencies", "dev-dependencies", "build-dependencies"];

fn classify(header: &str) -> Table {
    let name = header.trim();
    // Split on dots outside quotes.
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for ch in name.chars() {
        match quote {
            Some(q) if ch == q => {
                quote = None;
                current.push(ch);
            }
            Some(_) => current.push(ch),
            None if ch == '"' || ch == '\'' => {
                quote = Some(ch);
                current.push(ch);
            }
            None if ch == '.' => parts.push(std::mem::take(&mut current).trim().to_owned()),
            None => current.push(ch),
        }
    }
    parts.push(current.trim().to_owned());
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        [t] if DEP_TABLES.contains(t) => Table::Deps(name.to_owned()),
        ["target", _, t] if DEP_TABLES.contains(t) => Table::Deps(name.to_owned()),
        [t, dep] if DEP_TABLES.contains(t) => Table::Dep((*t).to_owned(), unquote_key(dep)),
        ["target", target, t, dep] if DEP_TABLES.contains(t) => {
            Table::Dep(format!("target.{target}.{t}"), unquote_key(dep))
        }
        ["lints"] => Table::Lints,
        ["lints", _] => Table::LocalLints(name.to_owned()),
        _ => Table::Other,
    }
}

fn unquote_key(key: &str) -> String {
    key.trim().trim_matches(|c| c == '"' || c == '\'').to_owned()
}

fn compact(value: &str) -> String {
    value.chars().filter(|c| !c.is_whitespace()).collect()
}

fn bracket_balance(text: &str) -> i64 {
    let mut balance = 0i64;
    let mut quote: Option<char> = None;
    for ch in text.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None => match ch {
                '"' | '\'' => quote = Some(ch),
                '{' | '[' => balance += 1,
                '}' | ']' => balance -= 1,
                _ => {}
            },
        }
    }
    balance
}

/// Checks one member manifest; `label` names it in messages (e.g. `libs/core/Cargo.toml`).
/// Returns failure messages.
pub fn check_manifest(label: &str, text: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let mut table = Table::Other;
    let mut lints_workspace = false;
    // (table, dependency) → whether it says `workspace = true`.
    let mut deps: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut pending = String::new();

    for raw in text.lines() {
        let line = strip_comment(raw);
        if pending.is_empty() {
            let trimmed = line.trim();
            if trimmed.starts_with('[') {
                let header = trimmed.trim_start_matches('[').trim_end_matches(']');
                table = classify(header);
                if let Table::Dep(t, d) = &table {
                    deps.entry((t.clone(), d.clone())).or_insert(false);
                }
                if let Table::LocalLints(name) = &table {
                    failures.push(format!(
                        "{label}: [{name}] sets crate-local lint levels: move them into \
                         [workspace.lints] in the root Cargo.toml and keep only `[lints]` \
                         `workspace = true` here"
                    ));
                }
                continue;
            }
        }
        pending.push_str(line);
        pending.push('\n');
        if bracket_balance(&pending) > 0 {
            // An inline table or array continues on the next line.
            continue;
        }
        let statement = std::mem::take(&mut pending);
        let Some((key, value)) = statement.split_once('=') else {
            continue;
        };
        let key = compact(key);
        let value = compact(value);
        match &table {
            Table::Lints if key == "workspace" && value == "true" => lints_workspace = true,
            Table::Deps(t) => {
                let (name, attr) = match key.split_once('.') {
                    Some((n, a)) => (unquote_key(n), Some(a.to_owned())),
                    None => (unquote_key(&key), None),
                };
                let uses_workspace = match attr.as_deref() {
                    Some("workspace") => value == "true",
                    Some(_) => false,
                    None => value.starts_with('{') && value.contains("workspace=true"),
                };
                let entry = deps.entry((t.clone(), name)).or_insert(false);
                *entry |= uses_workspace;
            }
            Table::Dep(t, d) if key == "workspace" && value == "true" => {
                deps.insert((t.clone(), d.clone()), true);
            }
            _ => {}
        }
    }

    if !lints_workspace {
        failures.push(format!("{label} does not inherit the workspace lints: add\n    [lints]\n    workspace = true"));
    }
    for ((table, dep), uses_workspace) in deps {
        if !uses_workspace {
            failures.push(format!(
                "{label}: [{table}] `{dep}` does not use `workspace = true`: move its version \
                 (or path) into [workspace.dependencies] in the root Cargo.toml and write \
                 `{dep}.workspace = true` here (features may be added: \
                 `{dep} = {{ workspace = true, features = [...] }}`)"
            ));
        }
    }
    failures
}

/// Checks that a crate root starts with a `//!` doc comment; `label` names the file.
pub fn check_crate_root(label: &str, text: &str) -> Option<String> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    if first.is_some_and(|l| l.starts_with("//!")) {
        return None;
    }
    Some(format!(
        "{label} does not start with a `//!` doc comment: open it with what the crate owns and \
         what it must not use (style.md habit 3), e.g. `//! The match actors: one per match, a \
         thin shell around the engine. Must not: …`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_stripped_outside_strings() {
        assert_eq!(strip_comment("a = 1 # c"), "a = 1 ");
        assert_eq!(strip_comment("a = \"#x\" # c"), "a = \"#x\" ");
        assert_eq!(strip_comment("a = '#x'"), "a = '#x'");
    }

    #[test]
    fn headers_are_classified() {
        assert_eq!(classify("dependencies"), Table::Deps("dependencies".into()));
        assert_eq!(
            classify("target.'cfg(unix)'.dev-dependencies"),
            Table::Deps("target.'cfg(unix)'.dev-dependencies".into())
        );
        assert_eq!(classify("dependencies.serde"), Table::Dep("dependencies".into(), "serde".into()));
        assert_eq!(classify("lints"), Table::Lints);
        assert_eq!(classify("lints.clippy"), Table::LocalLints("lints.clippy".into()));
        assert_eq!(classify("package"), Table::Other);
    }
}
