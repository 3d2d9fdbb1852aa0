//! Writes the committed seed corpora, `fuzz/seeds/<target>/`, from the repository: the
//! protocol's fixtures and variants of them, JSON texts for the canonicalizer, every catalog
//! game's package and every shipped library as archives, and, for the two targets whose input
//! is a sequence of choices, the inputs among a deterministic set of candidates that get
//! furthest (the most revisions per game; the most answers per connection).
//!
//! `cargo run --release --manifest-path fuzz/Cargo.toml --example seeds` (from the
//! repository's root). The output is deterministic; `juegoland_fuzz`'s tests run every seed.

use std::collections::BTreeMap;
use std::path::Path;

use juegoland_fuzz::{archive, edge, games, repo_root};

fn main() {
    let root = repo_root().join("fuzz/seeds");
    let _ = std::fs::remove_dir_all(&root);
    protocol(&root.join("protocol_decode"));
    jcs(&root.join("jcs_fingerprint"));
    packages(&root.join("package_manifest"));
    game_commands(&root.join("game_commands"));
    edge_frames(&root.join("edge_frames"));
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).expect("create the seed directory");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

/// The protocol's fixtures as they are, and variants that each break one rule.
fn protocol(dir: &Path) {
    let fixtures = repo_root().join("libs/protocol/fixtures");
    for side in ["client", "server"] {
        let mut names: Vec<_> = std::fs::read_dir(fixtures.join(side))
            .expect("the fixtures")
            .map(|e| e.expect("a fixture").path())
            .collect();
        names.sort();
        for path in names {
            let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
            write(dir, &format!("{side}-{name}"), &std::fs::read(&path).expect("read a fixture"));
        }
    }
    let command = std::fs::read_to_string(fixtures.join("client/game.command.json")).expect("the command fixture");
    let compact: serde_json::Value = serde_json::from_str(&command).expect("a fixture is JSON");
    let compact = compact.to_string();
    let variants: [(&str, String); 8] = [
        (
            "duplicate-key",
            compact.replacen("{\"protocolVersion\":1", "{\"protocolVersion\":1,\"protocolVersion\":1", 1),
        ),
        ("future-version", compact.replace("\"protocolVersion\":1", "\"protocolVersion\":2")),
        ("unknown-field", compact.replacen('{', "{\"extra\":true,", 1)),
        ("lone-surrogate", compact.replace("\"type\":\"drop\"", "\"type\":\"\\ud800\"")),
        ("deep", format!("{}{}", "[".repeat(40), "]".repeat(40))),
        ("not-json", "{\"protocolVersion\":1,".to_owned()),
        (
            "payload-array",
            compact.replace("\"payload\":{", "\"payload\":[{").replace("}},\"precondition", "}]},\"precondition"),
        ),
        ("queue", compact.replace("{\"kind\":\"match\",\"revision\":7}", "{\"kind\":\"queue\"}")),
    ];
    for (name, text) in variants {
        write(dir, &format!("variant-{name}.json"), text.as_bytes());
    }
}

/// JSON texts: RFC 8785's examples, numbers at JCS's edges, strings with every escape, the
/// protocol's messages; some with choices after a NUL.
fn jcs(dir: &Path) {
    let texts: [(&str, &str); 7] = [
        (
            "rfc8785-structures",
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"#,
        ),
        (
            "rfc8785-sorting",
            r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#,
        ),
        (
            "numbers",
            "[0, -0, 1, 1.0, 1e0, 0.1, 0.3, 1e21, 1e20, 1e-7, 1e-6, 9007199254740992, 9007199254740993, 18446744073709551615, -9223372036854775808, 5e-324, 1.7976931348623157e308, 123456789012345678901234567890]",
        ),
        ("strings", r#"["", "\u0000\u001f\u007f", "\b\f\n\r\t\"\\\/", "\ud800\udc00", "\u2028\u2029", "é€😀"]"#),
        ("nested", r#"{"a":{"b":{"c":[[[{"d":[]}]]]}},"a ":{},"A":null}"#),
        ("payload", r#"{"column":3,"ships":[{"x":1,"y":2,"horizontal":true}],"direction":"north"}"#),
        ("scalar", "12.50"),
    ];
    for (name, text) in texts {
        write(dir, &format!("{name}.json"), text.as_bytes());
        let mut with_choices = text.as_bytes().to_vec();
        with_choices.push(0);
        with_choices.extend((0u8..64).map(|i| i.wrapping_mul(37)));
        write(dir, &format!("{name}-choices.bin"), &with_choices);
    }
    let fixtures = repo_root().join("libs/protocol/fixtures");
    for name in ["client/game.command.json", "server/game.snapshot.live-parametrized.json"] {
        let bytes = std::fs::read(fixtures.join(name)).expect("a fixture");
        write(dir, &format!("fixture-{}", name.replace('/', "-")), &bytes);
    }
}

/// Every catalog game's package and every shipped library.
fn packages(dir: &Path) {
    let repo = repo_root();
    let mut sources: Vec<(String, std::path::PathBuf)> = Vec::new();
    for base in ["libs/games", "libs/packages/libraries"] {
        for entry in std::fs::read_dir(repo.join(base)).expect("a package folder") {
            let path = entry.expect("an entry").path();
            let package = if base == "libs/games" { path.join("package") } else { path.clone() };
            if package.is_dir() {
                let name = path.file_name().expect("a name").to_string_lossy().into_owned();
                sources.push((name, package));
            }
        }
    }
    sources.sort();
    for (name, path) in sources {
        let files = archive::read_dir(&path);
        write(dir, &format!("{name}.pkg"), &archive::write(&files));
    }
}

/// A deterministic stream of candidate inputs (SplitMix64).
struct Candidates(u64);

impl Candidates {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `len` bytes, each below `bound` (a small bound keeps every choice on its first options:
    /// offers taken, few noisy steps).
    fn bytes(&mut self, len: usize, bound: u8) -> Vec<u8> {
        (0..len).map(|_| (self.next() % u64::from(bound)) as u8).collect()
    }
}

/// Per game, the candidates that reach the most revisions: one that mostly takes offers
/// (every byte below 50: the first options, and the step "take an offer"), one where bots
/// decide (every byte 52–57: the step "a bot decides"), one with every kind of step.
fn game_commands(dir: &Path) {
    let mut best: BTreeMap<(String, &str), (u64, Vec<u8>)> = BTreeMap::new();
    let mut candidates = Candidates(25);
    let games = games::engine().registry.games().count() as u8;
    for round in 0..90u32 {
        for game in 0..games {
            let kind = ["offers", "bots", "mixed"][(round % 3) as usize];
            let mut data = vec![game];
            data.extend(match kind {
                "offers" => candidates.bytes(700, 50),
                "bots" => candidates.bytes(700, 6).into_iter().map(|b| b + 52).collect(),
                _ => candidates.bytes(700, 255),
            });
            let Some((id, revision)) = games::play(&data) else { continue };
            let slot = best.entry((id, kind)).or_insert((0, Vec::new()));
            if revision > slot.0 {
                *slot = (revision, data);
            }
        }
    }
    for ((id, kind), (revision, data)) in best {
        println!("game_commands: {id} {kind}: revision {revision}");
        write(dir, &format!("{id}-{kind}.bin"), &data);
    }
}

/// The candidates that make the connection answer the most, per transport.
fn edge_frames(dir: &Path) {
    let mut candidates = Candidates(6);
    let mut best: BTreeMap<String, (edge::Answers, Vec<u8>)> = BTreeMap::new();
    for round in 0..40u32 {
        let mut data = candidates.bytes(6, 255);
        // Not a spectator; the transport alternates.
        data[4] = 1;
        data[5] = (round % 2) as u8;
        data.extend(candidates.bytes(400, if round % 4 < 2 { 97 } else { 255 }));
        let answers = edge::play(&data);
        let name = format!(
            "{}-{}",
            if round % 2 == 0 { "websocket" } else { "socketio" },
            if round % 4 < 2 { "play" } else { "noise" }
        );
        let slot = best.entry(name).or_insert((edge::Answers::default(), Vec::new()));
        if (answers.applied, answers.snapshots) > (slot.0.applied, slot.0.snapshots) {
            *slot = (answers, data);
        }
    }
    for (name, (answers, data)) in best {
        println!("edge_frames: {name}: {answers:?}");
        write(dir, &format!("{name}.bin"), &data);
    }
}
