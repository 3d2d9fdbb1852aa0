//! The fuzz targets of Juegoland (cargo-fuzz, libFuzzer): their input languages, their
//! drivers and their oracles. Each `fuzz_targets/<name>.rs` is one line that hands libFuzzer's
//! bytes to `<module>::run`, so the same code runs under libFuzzer, in this crate's tests
//! (every committed seed) and in `examples/seeds.rs` (which writes the seed corpora).
//!
//! | target | module | what it drives | what must hold |
//! |---|---|---|---|
//! | `protocol_decode` | [`protocol`] | `decode_client` / `decode_server` on raw bytes | no panic; a typed `DecodeError` with its code and recovery; what decodes re-encodes and decodes to the same message |
//! | `jcs_fingerprint` | [`jcs`] | JSON texts respelled ([`json`]) through serde_json, the canonicalizer and the strict decoder | equal values, equal canonical forms, digests and command fingerprints; different values, different ones; RFC 8785 output |
//! | `game_commands` | [`games`] | every catalog game through the real `Engine`: configs and commands chosen from offers, bots, schemas and noise ([`schema`]) | no panic or fault; offered and bot actions accepted; refusals typed; publications decode; the log replays |
//! | `package_manifest` | [`packages`] | a package's files ([`archive`]) through validation levels 1–3, plans, the rules checks and the lock | no panic; every rejection a `Rejection` with a file and a JSON pointer |
//! | `edge_frames` | [`edge`] | WebSocket and Socket.IO inputs through the gateway's adapters and protocol loop over an in-process `Host` | no panic; every answer decodes as a server message; no INTERNAL; another match of the connection keeps being served |
//!
//! Must not: be linked by any product crate (a tool, layer `tool` in libs/tidy), or read
//! anything but the repository's own package directories (the shipped libraries, the games'
//! packages) and the input.

pub mod archive;
pub mod edge;
pub mod games;
pub mod jcs;
pub mod json;
pub mod packages;
pub mod protocol;
pub mod schema;

use std::path::{Path, PathBuf};

/// The repository's root (this crate lives in `fuzz/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("fuzz/ has a parent").to_path_buf()
}

/// The names of the targets, each with its seed directory `seeds/<name>/`.
pub const TARGETS: [&str; 5] =
    ["protocol_decode", "jcs_fingerprint", "game_commands", "package_manifest", "edge_frames"];

/// Runs target `name` on one input (what its `fuzz_targets/` file does).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "protocol_decode" => protocol::run(data),
        "jcs_fingerprint" => jcs::run(data),
        "game_commands" => games::run(data),
        "package_manifest" => packages::run(data),
        "edge_frames" => edge::run(data),
        other => panic!("no fuzz target {other}"),
    }
}

#[cfg(test)]
mod tests {
    /// Every committed seed runs through its target without a failure (what a smoke run
    /// starts with), so the corpora stay inputs of the current languages.
    #[test]
    fn every_seed_passes_its_target() {
        for target in super::TARGETS {
            let dir = super::repo_root().join("fuzz/seeds").join(target);
            let mut seeds: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("read {}: {e} (write it with `cargo run --example seeds`)", dir.display()))
                .map(|e| e.expect("a seed").path())
                .collect();
            seeds.sort();
            assert!(!seeds.is_empty(), "{} has no seeds", dir.display());
            for seed in seeds {
                let data = std::fs::read(&seed).expect("read a seed");
                super::run(target, &data);
            }
        }
    }
}
