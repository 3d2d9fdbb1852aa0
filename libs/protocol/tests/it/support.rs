//! Shared builders for the integration tests.

use std::path::{Path, PathBuf};

pub const MATCH: &str = "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69";
pub const COMMAND: &str = "c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A valid `game.command` with the given payload text.
pub fn command_with_payload(payload: &str) -> String {
    format!(
        r#"{{"protocolVersion":1,"type":"game.command","matchId":"{MATCH}","commandId":"{COMMAND}","precondition":{{"kind":"match","revision":7}},"action":{{"type":"drop","payload":{payload}}}}}"#
    )
}

/// `levels` nested objects, `{"a":{"a":…{}}}`.
pub fn nested_objects(levels: usize) -> String {
    let mut text = "{\"a\":".repeat(levels - 1);
    text.push_str("{}");
    text.push_str(&"}".repeat(levels - 1));
    text
}

/// The JSON files under `fixtures/<direction>/`, sorted by name.
pub fn fixture_files(direction: &str) -> Vec<PathBuf> {
    let dir = crate_dir().join("fixtures").join(direction);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("read fixture entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}
