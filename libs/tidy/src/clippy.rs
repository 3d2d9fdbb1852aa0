//! The clippy bans every pure crate carries: sources of nondeterminism and IO that rules
//! must never touch (style.md habit 4). Clippy reads only the NEAREST `clippy.toml` (or
//! `.clippy.toml`, which wins when both exist) going up from the crate's directory, so
//! every pure crate's nearest file must carry the whole list; `libs/games/clippy.toml`
//! covers every game.
//!
//! The workspace has no `toml` dependency, so this module reads the two arrays it needs
//! with a small scanner that understands the shape clippy documents:
//! `disallowed-methods = [{ path = "...", reason = "..." }, "plain::path"]`.

use std::path::{Path, PathBuf};

use crate::manifest::strip_comment;

/// Methods a pure crate must not call.
pub const BANNED_METHODS: &[&str] = &[
    "std::time::Instant::now",
    "std::time::SystemTime::now",
    "std::thread::sleep",
    "std::thread::spawn",
    "std::env::var",
    "std::env::var_os",
    "std::env::vars",
    "std::fs::read",
    "std::fs::read_to_string",
    "std::fs::write",
    "std::fs::File::open",
    "std::fs::File::create",
    "std::process::Command::new",
];

/// Types a pure crate must not use.
pub const BANNED_TYPES: &[&str] = &[
    "std::collections::HashMap",
    "std::collections::HashSet",
    "std::hash::RandomState",
    "std::time::Instant",
    "std::time::SystemTime",
    "std::fs::File",
    "std::net::TcpStream",
    "std::net::TcpListener",
    "std::net::UdpSocket",
];

/// The file names clippy looks for, in the order it prefers them.
pub const CONFIG_NAMES: &[&str] = &[".clippy.toml", "clippy.toml"];

/// The clippy configuration clippy would use for a crate in `crate_dir`: the nearest
/// `.clippy.toml` or `clippy.toml` in `crate_dir` or a parent, up to and including `root`.
pub fn nearest_config(crate_dir: &Path, root: &Path) -> Option<PathBuf> {
    for dir in crate_dir.ancestors() {
        for name in CONFIG_NAMES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        if dir == root {
            break;
        }
    }
    None
}

/// One entry of a `disallowed-*` array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ban {
    /// The banned path.
    pub path: String,
    /// The reason shown with the lint, if given.
    pub reason: Option<String>,
}

/// The entries of the array under `key` (`disallowed-methods` or `disallowed-types`), or
/// `None` if the key is absent.
pub fn parse_bans(text: &str, key: &str) -> Option<Vec<Ban>> {
    let cleaned: String = text.lines().map(strip_comment).collect::<Vec<_>>().join("\n");
    let start = cleaned.lines().scan(0usize, |offset, line| {
        let here = *offset;
        *offset += line.len() + 1;
        Some((here, line))
    });
    let mut body_start = None;
    for (offset, line) in start {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            let eq = offset + (line.len() - trimmed.len()) + key.len();
            body_start = cleaned[eq..].find('[').map(|i| eq + i + 1);
            break;
        }
    }
    let body = &cleaned[body_start?..];
    // Split the array into its top-level elements, minding strings and inline tables.
    let mut bans = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut current = String::new();
    for ch in body.chars() {
        if in_string {
            current.push(ch);
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => {
                in_string = true;
                current.push(ch);
            }
            '{' | '[' => {
                depth += 1;
                current.push(ch);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                current.push(ch);
            }
            ']' if depth == 0 => break,
            ']' => {
                depth -= 1;
                current.push(ch);
            }
            ',' if depth == 0 => {
                bans.extend(parse_element(&current));
                current.clear();
            }
            _ => current.push(ch),
        }
    }
    bans.extend(parse_element(&current));
    Some(bans)
}

fn parse_element(element: &str) -> Option<Ban> {
    let element = element.trim();
    if element.is_empty() {
        return None;
    }
    if let Some(table) = element.strip_prefix('{') {
        return Some(Ban { path: string_field(table, "path")?, reason: string_field(table, "reason") });
    }
    Some(Ban { path: unquote(element)?, reason: None })
}

/// The string value of `key = "..."` inside an inline table body.
pub(crate) fn string_field(table: &str, key: &str) -> Option<String> {
    let mut rest = table;
    while let Some(i) = rest.find(key) {
        let before_ok = rest[..i].chars().next_back().is_none_or(|c| c == '{' || c == ',' || c.is_whitespace());
        let after = rest[i + key.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let end = value.find([',', '}']).unwrap_or(value.len());
            return unquote(&value[..end]);
        }
        rest = &rest[i + key.len()..];
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    let inner = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))?;
    Some(inner.to_owned())
}

/// Checks one clippy configuration (`config_label` names it in messages) against the ban
/// lists, for the pure crate `crate_label`. Returns failure messages, at most two per list.
pub fn check_config(crate_label: &str, config_label: &str, text: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for (key, required) in [("disallowed-methods", BANNED_METHODS), ("disallowed-types", BANNED_TYPES)] {
        let bans = parse_bans(text, key).unwrap_or_default();
        let mut missing = Vec::new();
        let mut unreasoned = Vec::new();
        for path in required.iter().copied() {
            match bans.iter().find(|b| b.path == path) {
                None => missing.push(format!("`{path}`")),
                Some(b) if b.reason.as_deref().is_none_or(|r| r.trim().is_empty()) => {
                    unreasoned.push(format!("`{path}`"));
                }
                Some(_) => {}
            }
        }
        if let Some(first) = required.iter().find(|p| missing.contains(&format!("`{p}`"))) {
            failures.push(format!(
                "{crate_label} is a pure crate, but its nearest clippy config {config_label} \
                 does not ban {}: add each to its `{key}` as `{{ path = \"{first}\", reason = \
                 \"...\" }}` (libs/sdk/clippy.toml has the full list to copy; clippy reads only \
                 the nearest clippy.toml, so a closer one must repeat every ban)",
                missing.join(", ")
            ));
        }
        if !unreasoned.is_empty() {
            failures.push(format!(
                "{config_label} bans {} without a reason: write each as \
                 `{{ path = \"...\", reason = \"...\" }}` so the lint tells the author what to \
                 use instead",
                unreasoned.join(", ")
            ));
        }
    }
    failures
}

/// Checks the nearest clippy configuration of the pure crate `name` in `crate_dir`.
pub fn check_crate(name: &str, crate_dir: &Path, root: &Path) -> Vec<String> {
    let rel = crate_dir.strip_prefix(root).unwrap_or(crate_dir).display();
    let label = format!("{name} ({rel})");
    let Some(config) = nearest_config(crate_dir, root) else {
        return vec![format!(
            "{label} is a pure crate but no clippy.toml applies to it: copy libs/sdk/clippy.toml \
             to {rel}/clippy.toml (games are covered by libs/games/clippy.toml)"
        )];
    };
    let show = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let config_label = show(&config);
    let text = match std::fs::read_to_string(&config) {
        Ok(text) => text,
        Err(e) => return vec![format!("read {config_label}: {e}")],
    };
    let mut failures = check_config(&label, &config_label, &text);
    if failures.is_empty() {
        return failures;
    }
    // A closer file can shadow a complete one further up (a game's own clippy.toml hides
    // libs/games/clippy.toml): say so, since deleting it may be the simplest fix.
    let above =
        config.parent().and_then(Path::parent).filter(|p| p.starts_with(root)).and_then(|p| nearest_config(p, root));
    if let Some(above) = above
        && std::fs::read_to_string(&above).is_ok_and(|t| check_config(&label, "", &t).is_empty())
    {
        failures.push(format!(
            "{config_label} shadows {}, which has the full ban list: either complete \
             {config_label}, or delete it (moving any other settings it holds into {}) so that \
             the complete one applies",
            show(&above),
            show(&above)
        ));
    }
    failures
}
