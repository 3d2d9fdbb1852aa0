//! The architecture checks, run on the real workspace by plain `cargo test`, and the tests
//! that show each check can fail (`checker`).
//!
//! When one of these fails, its message says how to fix the problem. The layer table is in
//! `libs/tidy/src/layers.rs`; known exceptions go into [`RATCHET`] below, with a reason.

mod checker;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use juegoland_tidy::deps::{Exception, check_dependencies};
use juegoland_tidy::graph::Graph;
use juegoland_tidy::layers::layer_of;
use juegoland_tidy::{clippy, manifest, side, workspace_root};

/// Known exceptions to the direction and purity rules: `(crate, forbidden target, reason)`.
/// An entry suppresses exactly that failure; an entry that suppresses nothing fails the
/// test, so this table only shrinks. Add an entry only for something genuinely harmless or
/// scheduled to be fixed, and say which in the reason.
const RATCHET: &[Exception] = &[
    uuid_v4("juegoland-sdk"),
    uuid_v4("juegoland-brisca"),
    uuid_v4("juegoland-conecta4"),
    uuid_v4("juegoland-hundido"),
    uuid_v4("juegoland-laberinto"),
    uuid_v4("juegoland-oca"),
    uuid_v4("juegoland-serpientes"),
    uuid_v4("juegoland-solitario"),
    Exception {
        krate: "juegoland-core",
        target: "getrandom",
        reason: "two routes, both harmless for rule outputs. (1) jsonschema, which validates \
                 rule outputs, uses ahash with its default `runtime-rng` feature (and, on wasm32, \
                 getrandom directly): the OS randomness only seeds the hash maps inside compiled \
                 validators, changing lookup speed, never a validation result. (2) sha2 → digest \
                 → crypto-common, whose `getrandom` feature is switched on for the whole \
                 workspace by jsonwebtoken in libs/edge (feature unification): it only adds key \
                 generation APIs that hashing never calls. Rules cannot reach either (getrandom \
                 is no direct dependency; randomness comes only from the SDK's services). \
                 Remove when jsonschema lets us turn `runtime-rng` off and crypto-common's \
                 feature is no longer unified in",
    },
    Exception {
        krate: "juegoland-protocol",
        target: "getrandom",
        reason: "sha2 → digest → crypto-common, whose `getrandom` feature is switched on for the \
                 whole workspace by jsonwebtoken (rust_crypto) in libs/edge, through feature \
                 unification; `cargo build -p juegoland-protocol` alone does not link it. It only \
                 adds key generation APIs; the protocol's JCS fingerprints hash deterministically \
                 and never call them. Remove when the JWT stack stops enabling it, or when the \
                 protocol hashes with a crate that has no such feature",
    },
];

fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(workspace_root)
}

fn metadata() -> &'static cargo_metadata::Metadata {
    static METADATA: OnceLock<cargo_metadata::Metadata> = OnceLock::new();
    METADATA.get_or_init(|| {
        cargo_metadata::MetadataCommand::new()
            .manifest_path(root().join("Cargo.toml"))
            .exec()
            .unwrap_or_else(|e| panic!("run cargo metadata on the workspace: {e}"))
    })
}

fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| Graph::from_metadata(metadata()).unwrap_or_else(|e| panic!("{e}")))
}

fn report(what: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{what}: {} problem(s)\n\n{}\n",
        failures.len(),
        failures.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n\n")
    );
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn dependencies_follow_the_layers_and_pure_crates_stay_pure() {
    report("architecture (libs/tidy): dependency direction and purity", &check_dependencies(graph(), RATCHET));
}

/// The SDK and the games reach getrandom only through schemars → uuid (schemars' `uuid1`
/// feature, switched on by libs/protocol for its UUID fields), whose `v4` feature — and with it
/// getrandom — rmcp (the MCP server in libs/edge, issue 23) switches on for the whole
/// workspace through feature unification. `cargo build -p juegoland-sdk` alone does not link
/// it; schema generation never makes a UUID, and rules get randomness only from the SDK's
/// services. Remove when rmcp no longer needs uuid's `v4` or schemars no longer needs uuid.
const fn uuid_v4(krate: &'static str) -> Exception {
    Exception {
        krate,
        target: "getrandom",
        reason: "schemars → uuid, whose `v4` feature (and getrandom) rmcp in libs/edge switches on for the \
                 whole workspace (feature unification); a schema never makes a UUID and rules get \
                 randomness only from the SDK's services. Remove when rmcp stops enabling uuid's `v4`",
    }
}

#[test]
fn the_workspace_has_pure_crates_to_check() {
    // Guards the guard: if the layer mapping stopped recognising the pure crates, the
    // purity and clippy checks would pass vacuously.
    let pure: Vec<&str> = graph()
        .members()
        .filter(|c| c.dir.as_deref().and_then(layer_of).is_some_and(|l| l.is_pure()))
        .map(|c| c.name.as_str())
        .collect();
    for expected in ["juegoland-sdk", "juegoland-protocol", "juegoland-core"] {
        assert!(
            pure.contains(&expected),
            "{expected} is not seen as a pure crate (found {pure:?}): check layer_of in \
             libs/tidy/src/layers.rs"
        );
    }
}

#[test]
fn pure_crates_ban_nondeterminism_in_their_clippy_toml() {
    let mut failures = Vec::new();
    for member in graph().members() {
        let Some(dir) = member.dir.as_deref() else {
            continue;
        };
        if layer_of(dir).is_some_and(|l| l.is_pure()) {
            failures.extend(clippy::check_crate(&member.name, &root().join(dir), root()));
        }
    }
    report("architecture (libs/tidy): clippy bans in pure crates", &failures);
}

#[test]
fn manifests_inherit_workspace_lints_and_versions() {
    let mut failures = Vec::new();
    for package in metadata().workspace_packages() {
        let path = package.manifest_path.as_std_path();
        let label = relative(path);
        match std::fs::read_to_string(path) {
            Ok(text) => failures.extend(manifest::check_manifest(&label, &text)),
            Err(e) => failures.push(format!("read {label}: {e}")),
        }
    }
    report("architecture (libs/tidy): manifests", &failures);
}

#[test]
fn crate_roots_start_with_a_doc_comment() {
    use cargo_metadata::TargetKind;
    let mut failures = Vec::new();
    for package in metadata().workspace_packages() {
        for target in &package.targets {
            let is_root = target
                .kind
                .iter()
                .any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib | TargetKind::ProcMacro | TargetKind::Bin));
            if !is_root {
                continue;
            }
            let path = target.src_path.as_std_path();
            let label = relative(path);
            match std::fs::read_to_string(path) {
                Ok(text) => failures.extend(manifest::check_crate_root(&label, &text)),
                Err(e) => failures.push(format!("read {label}: {e}")),
            }
        }
    }
    report("architecture (libs/tidy): crate roots", &failures);
}

/// The crates each client of the match API must not link, with why: the match API and the
/// edge (a gateway's protocol loop) reach the matches only through `juegoland_api::Matches`.
const ACTORLESS: &[(&str, &[&str], &str)] = &[
    (
        "juegoland-api",
        &["juegoland-actors", "juegoland-store", "ractor", "tokio", "tonic", "axum", "sqlx*"],
        "the match API is data and one trait: no runtime, transport or storage",
    ),
    (
        "juegoland-edge",
        &["juegoland-actors", "juegoland-store", "ractor", "sqlx*"],
        "the edge talks to matches only through juegoland_api::Matches",
    ),
];

#[test]
fn the_match_api_and_the_edge_never_link_the_actor_runtime() {
    use juegoland_tidy::graph::DepKind;
    use std::collections::{BTreeSet, VecDeque};
    let graph = graph();
    let adjacency = graph.adjacency();
    let mut failures = Vec::new();
    for (krate, banned, why) in ACTORLESS {
        let root = graph.members().find(|c| c.name == *krate).unwrap_or_else(|| panic!("{krate} is not a member"));
        let mut seen = BTreeSet::from([root.id.as_str()]);
        let mut queue = VecDeque::from([root.id.as_str()]);
        while let Some(id) = queue.pop_front() {
            for edge in adjacency.get(id).into_iter().flatten() {
                if edge.kind != DepKind::Dev && seen.insert(edge.to.as_str()) {
                    queue.push_back(edge.to.as_str());
                }
            }
        }
        for id in seen {
            let name = &graph.get(id).expect("a reached crate is in the graph").name;
            let hit = banned.iter().any(|b| match b.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == b,
            });
            if hit {
                failures.push(format!(
                    "{krate} links {name}, but {why}: depend on juegoland-api's Matches instead, or move the code \
                     that needs {name} into libs/actors or libs/roles"
                ));
            }
        }
    }
    report("architecture (libs/tidy): clients of the match API", &failures);
}

/// The side workspaces (`fuzz/`): `cargo metadata` on the product does not see them, so
/// their manifests and locks are read here and held to the same rules (`juegoland_tidy::side`).
#[test]
fn side_workspaces_choose_a_layer_and_follow_the_products_rules() {
    use cargo_metadata::DependencyKind;
    let mut failures = Vec::new();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    for dir in side::SIDE_WORKSPACES {
        let manifest_path = root().join(dir).join("Cargo.toml");
        let metadata = cargo_metadata::MetadataCommand::new()
            .manifest_path(&manifest_path)
            .no_deps()
            .exec()
            .unwrap_or_else(|e| panic!("run cargo metadata on {}: {e}", manifest_path.display()));
        for package in metadata.workspace_packages() {
            let manifest = package.manifest_path.as_std_path();
            let crate_dir = relative(manifest.parent().expect("a manifest has a directory"));
            let deps: Vec<side::PathDep> = package
                .dependencies
                .iter()
                .filter_map(|d| {
                    let path = d.path.as_ref()?;
                    Some(side::PathDep {
                        name: d.name.clone(),
                        dir: relative(path.as_std_path()),
                        dev: d.kind == DependencyKind::Development,
                    })
                })
                .collect();
            failures.extend(side::check_layers(&package.name, &crate_dir, &deps));
            failures.extend(manifest::check_manifest(&relative(manifest), &read(manifest)));
            for target in &package.targets {
                let path = target.src_path.as_std_path();
                failures.extend(manifest::check_crate_root(&relative(path), &read(path)));
            }
        }
        let label = format!("{dir}/Cargo.toml");
        failures.extend(side::check_lints(&label, &read(&root().join("Cargo.toml")), &read(&manifest_path)));
        let lock = format!("{dir}/Cargo.lock");
        failures.extend(side::check_lock(&lock, &read(&root().join("Cargo.lock")), &read(&root().join(&lock))));
    }
    report("architecture (libs/tidy): side workspaces", &failures);
}
