//! Tests of the checker itself, on hand-built graphs and texts: each rule fails when
//! broken, with a message that says how to fix it, and passes when kept.

use juegoland_tidy::clippy::{BANNED_METHODS, BANNED_TYPES, check_config, parse_bans};
use juegoland_tidy::deps::{Exception, apply_ratchet, check, check_dependencies, check_direction, check_purity};
use juegoland_tidy::graph::DepKind::{Build, Dev, Normal};
use juegoland_tidy::graph::Graph;
use juegoland_tidy::manifest::{check_crate_root, check_manifest};

/// The workspace as it is meant to be: every edge allowed, no impure crate reachable from
/// a pure one (tokio is reached only from infra and services).
fn healthy() -> Graph {
    Graph::new()
        .member("juegoland-sdk", "libs/sdk")
        .member("juegoland-protocol", "libs/protocol")
        .member("juegoland-core", "libs/core")
        .member("juegoland-conecta4", "libs/games/conecta4")
        .member("juegoland-store", "libs/store")
        .member("juegoland-actors", "libs/actors")
        .member("juegoland-tidy", "libs/tidy")
        .member("juegoland", "services/juegoland")
        .member("juegoland-loadtest", "loadtest")
        .external("serde")
        .external("tokio")
        .external("mio")
        .external("cargo_metadata")
        .dep("juegoland-sdk", "serde", Normal)
        .dep("juegoland-protocol", "juegoland-sdk", Normal)
        .dep("juegoland-core", "juegoland-sdk", Normal)
        .dep("juegoland-core", "juegoland-protocol", Normal)
        .dep("juegoland-conecta4", "juegoland-sdk", Normal)
        // Dev-dependencies may use any lib, and may pull anything impure.
        .dep("juegoland-conecta4", "juegoland-core", Dev)
        .dep("juegoland-conecta4", "tokio", Dev)
        .dep("juegoland-store", "juegoland-core", Normal)
        .dep("juegoland-store", "tokio", Normal)
        .dep("tokio", "mio", Normal)
        .dep("juegoland-actors", "juegoland-store", Normal)
        .dep("juegoland-actors", "juegoland-conecta4", Normal)
        .dep("juegoland-tidy", "cargo_metadata", Normal)
        .dep("juegoland", "juegoland-actors", Normal)
        .dep("juegoland", "juegoland-tidy", Dev)
        .dep("juegoland-loadtest", "juegoland-protocol", Normal)
}

fn assert_one_failure<'a>(failures: &'a [String], wants: &[&str]) -> &'a str {
    assert_eq!(failures.len(), 1, "expected exactly one failure, got {failures:#?}");
    for want in wants {
        assert!(failures[0].contains(want), "failure does not mention {want:?}:\n{}", failures[0]);
    }
    &failures[0]
}

#[test]
fn a_healthy_workspace_passes() {
    let failures = check_dependencies(&healthy(), &[]);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn core_depending_on_infra_fails_with_a_fix() {
    let g = healthy().member("juegoland-cluster", "libs/cluster").dep("juegoland-core", "juegoland-cluster", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(
        &failures,
        &[
            "juegoland-core (core, libs/core) has a dependency on juegoland-cluster (infra, libs/cluster)",
            "core may use only sdk, protocol",
            "Fix: ",
            "define a trait in juegoland-core that juegoland-cluster implements",
        ],
    );
}

#[test]
fn core_depending_on_an_impure_infra_crate_fails_both_rules() {
    // core → store → tokio → mio: a forbidden edge, and two impure crates in the closure.
    let g = healthy().dep("juegoland-core", "juegoland-store", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_eq!(failures.len(), 3, "{failures:#?}");
    assert!(failures[0].contains("has a dependency on juegoland-store"), "{}", failures[0]);
    for path in ["juegoland-core → juegoland-store → tokio.", "juegoland-core → juegoland-store → tokio → mio."]
    {
        assert!(failures.iter().any(|f| f.contains(path)), "{path}: {failures:#?}");
    }
}

#[test]
fn paths_prefer_edges_that_apply_on_every_platform() {
    let mut g = healthy()
        .external("jsonschema")
        .external("ahash")
        .external("getrandom")
        .dep("juegoland-core", "jsonschema", Normal)
        .dep("jsonschema", "ahash", Normal)
        .dep("ahash", "getrandom", Normal)
        .dep("jsonschema", "getrandom", Normal);
    g.edges.last_mut().expect("edge").platform = Some("cfg(target_arch = \"wasm32\")".into());
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["juegoland-core → jsonschema → ahash → getrandom."]);
    // Reachable only on one platform: still reported, with the platform shown.
    let mut g = healthy().external("getrandom").dep("juegoland-sdk", "getrandom", Normal);
    g.edges.last_mut().expect("edge").platform = Some("cfg(windows)".into());
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["juegoland-sdk → getrandom [cfg(windows)]."]);
}

#[test]
fn core_naming_a_game_fails_with_a_fix() {
    let g = healthy().dep("juegoland-core", "juegoland-conecta4", Build);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["build-dependency", "knows no game by name", "ErasedGame"]);
}

#[test]
fn a_game_using_another_game_fails_with_a_fix() {
    let g = healthy().member("juegoland-parchis", "libs/games/parchis").dep(
        "juegoland-parchis",
        "juegoland-conecta4",
        Normal,
    );
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["game may use only sdk", "move what juegoland-parchis needs", "libs/sdk"]);
}

#[test]
fn the_sdk_depending_on_anything_in_the_workspace_fails() {
    let g = healthy().dep("juegoland-sdk", "juegoland-protocol", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["sdk may use only no workspace crate", "invert the edge"]);
}

#[test]
fn a_lib_using_a_service_fails_with_a_fix() {
    let g = healthy().dep("juegoland-store", "juegoland", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["libs never use services", "move the code"]);
}

#[test]
fn services_and_tools_never_use_each_other() {
    let g = healthy().member("juegoland-router", "services/router").dep("juegoland-router", "juegoland", Normal).dep(
        "juegoland-loadtest",
        "juegoland-router",
        Normal,
    );
    let failures = check_dependencies(&g, &[]);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    for f in &failures {
        assert!(f.contains("never depend on each other") && f.contains("libs/"), "{f}");
    }
}

#[test]
fn a_dev_dependency_on_a_service_fails() {
    let g = healthy().dep("juegoland-store", "juegoland", Dev);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["dev-dependency", "dev-dependencies may use any lib but no service"]);
}

#[test]
fn the_guard_is_dev_only() {
    let g = healthy().dep("juegoland-actors", "juegoland-tidy", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["dev-only guard", "[dev-dependencies]"]);
}

#[test]
fn a_crate_in_no_layer_fails_and_cannot_be_ratcheted() {
    let g = healthy().member("juegoland-xtask", "tools/xtask").dep("juegoland-xtask", "juegoland-core", Normal);
    let violations = check_direction(&g);
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0].target, None);
    let ratchet = [Exception { krate: "juegoland-xtask", target: "", reason: "trying to hide it" }];
    let failures = apply_ratchet(&violations, &ratchet);
    assert!(
        failures.iter().any(|f| f.contains("tools/xtask is in no layer")
            && f.contains("add a layer for tools/xtask in libs/tidy/src/layers.rs")
            && f.contains("or move it")),
        "{failures:#?}"
    );
}

#[test]
fn an_impure_closure_fails_with_the_path_and_a_fix() {
    let g = healthy()
        .external("jsonschema")
        .external("ahash")
        .external("getrandom")
        .dep("juegoland-protocol", "jsonschema", Normal)
        .dep("jsonschema", "ahash", Normal)
        .dep("ahash", "getrandom", Normal);
    let violations = check_purity(&g);
    // Reported once, at the crate that brings it in: core reaches it only through the
    // protocol, which is checked on its own.
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0].krate, "juegoland-protocol");
    assert_eq!(violations[0].target.as_deref(), Some("getrandom"));
    let failures = apply_ratchet(&violations, &[]);
    assert_one_failure(
        &failures,
        &[
            "juegoland-protocol → jsonschema → ahash → getrandom",
            "OS randomness",
            "drop or replace the dependency that brings it in (`jsonschema`)",
            "cargo tree --workspace -e features -i getrandom",
            "RATCHET in libs/tidy/tests/it/main.rs",
        ],
    );
}

#[test]
fn build_dependencies_count_for_purity_and_are_labelled() {
    let g = healthy().external("sqlx-core").dep("juegoland-conecta4", "sqlx-core", Build);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["juegoland-conecta4 → sqlx-core [build]", "database access"]);
}

#[test]
fn a_pure_crate_depending_directly_on_a_runtime_fails_twice_deep() {
    // core → tokio → mio: both are impure and both are reported, each with its path.
    let g = healthy().dep("juegoland-core", "tokio", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    for path in ["juegoland-core → tokio.", "juegoland-core → tokio → mio."] {
        assert!(failures.iter().any(|f| f.contains(path)), "{path}: {failures:#?}");
    }
}

#[test]
fn a_ratchet_entry_suppresses_exactly_its_violation() {
    let g = healthy().external("getrandom").dep("juegoland-sdk", "getrandom", Normal);
    let ratchet = [Exception { krate: "juegoland-sdk", target: "getrandom", reason: "test: harmless seeding" }];
    assert!(check_dependencies(&g, &ratchet).is_empty());
    // The same entry does not cover another crate bringing it in.
    let g = g.dep("juegoland-conecta4", "getrandom", Normal);
    let failures = check_dependencies(&g, &ratchet);
    assert_one_failure(&failures, &["juegoland-conecta4 → getrandom"]);
}

#[test]
fn an_unneeded_ratchet_entry_fails() {
    let ratchet = [Exception {
        krate: "juegoland-protocol",
        target: "getrandom",
        reason: "jsonschema pulled ahash with runtime-rng",
    }];
    let failures = check_dependencies(&healthy(), &ratchet);
    assert_one_failure(
        &failures,
        &["remove the ratchet entry (\"juegoland-protocol\", \"getrandom\")", "it is fixed", "only shrinks"],
    );
}

#[test]
fn ratchet_entries_need_a_reason_and_are_listed_once() {
    let g = healthy().external("rand").dep("juegoland-sdk", "rand", Normal);
    let entry = Exception { krate: "juegoland-sdk", target: "rand", reason: " " };
    let failures = apply_ratchet(&check(&g), &[entry, entry]);
    assert!(failures.iter().any(|f| f.contains("has no reason")), "{failures:#?}");
    assert!(failures.iter().any(|f| f.contains("listed twice")), "{failures:#?}");
}

#[test]
fn prefix_patterns_match_families() {
    let g = healthy().external("opentelemetry_sdk").dep("juegoland-sdk", "opentelemetry_sdk", Normal);
    let failures = check_dependencies(&g, &[]);
    assert_one_failure(&failures, &["opentelemetry_sdk (telemetry export"]);
}

const SDK_CLIPPY: &str = include_str!("../../../sdk/clippy.toml");
const GAMES_CLIPPY: &str = include_str!("../../../games/clippy.toml");
const PROTOCOL_CLIPPY: &str = include_str!("../../../protocol/clippy.toml");
const CORE_CLIPPY: &str = include_str!("../../../core/clippy.toml");

#[test]
fn the_real_clippy_configs_carry_every_ban_with_a_reason() {
    for (label, text) in [
        ("libs/sdk/clippy.toml", SDK_CLIPPY),
        ("libs/games/clippy.toml", GAMES_CLIPPY),
        ("libs/protocol/clippy.toml", PROTOCOL_CLIPPY),
        ("libs/core/clippy.toml", CORE_CLIPPY),
    ] {
        let failures = check_config("pure", label, text);
        assert!(failures.is_empty(), "{failures:#?}");
        let methods = parse_bans(text, "disallowed-methods").expect("methods");
        let types = parse_bans(text, "disallowed-types").expect("types");
        assert_eq!(methods.len(), BANNED_METHODS.len(), "{label}");
        assert_eq!(types.len(), BANNED_TYPES.len(), "{label}");
    }
}

#[test]
fn a_clippy_config_missing_a_ban_fails_with_a_fix() {
    let text = SDK_CLIPPY.replace("{ path = \"std::collections::HashMap\"", "# removed { path = \"nothing\"");
    let failures = check_config("juegoland-x (libs/x)", "libs/x/clippy.toml", &text);
    assert_one_failure(
        &failures,
        &[
            "does not ban `std::collections::HashMap`: add each to its `disallowed-types` as \
             `{ path = \"std::collections::HashMap\", reason = \"...\" }`",
            "nearest clippy.toml",
        ],
    );
}

#[test]
fn a_clippy_config_without_reasons_or_without_the_lists_fails() {
    let text = "disallowed-methods = [\n  \"std::time::Instant::now\", # no reason\n]\n";
    let failures = check_config("juegoland-x", "clippy.toml", text);
    assert!(failures.iter().any(|f| f.contains("bans `std::time::Instant::now` without a reason")), "{failures:#?}");
    // Missing methods, a ban without a reason, missing types.
    assert_eq!(failures.len(), 3, "{failures:#?}");
    assert!(failures[0].contains("does not ban `std::time::SystemTime::now`, `std::thread::sleep`"), "{}", failures[0]);
    let parsed = parse_bans(text, "disallowed-methods").expect("parsed");
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].reason, None);
    assert!(parse_bans(text, "disallowed-types").is_none());
}

const GOOD_MANIFEST: &str = r#"
[package]
name = "juegoland-x"
version.workspace = true   # the package version may be inherited too

[lints]
workspace = true

[dependencies]
serde.workspace = true
serde_json = { workspace = true, features = [
    "raw_value",
] }

[dependencies.thiserror]
workspace = true

[target.'cfg(unix)'.dev-dependencies]
proptest = { workspace = true } # a comment with workspace = false
"#;

#[test]
fn a_manifest_using_the_workspace_passes() {
    let failures = check_manifest("libs/x/Cargo.toml", GOOD_MANIFEST);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_manifest_with_its_own_versions_fails_with_a_fix() {
    let text = GOOD_MANIFEST
        .replace("serde.workspace = true", "serde = \"1\"")
        .replace("proptest = { workspace = true }", "proptest = { version = \"1\" }")
        .replace("[dependencies.thiserror]\nworkspace = true", "[dependencies.thiserror]\nversion = \"2\"")
        .replace("[dependencies]", "[dependencies]\njuegoland-sdk = { path = \"../sdk\" }");
    let failures = check_manifest("libs/x/Cargo.toml", &text);
    assert_eq!(failures.len(), 4, "{failures:#?}");
    for dep in ["serde", "proptest", "thiserror", "juegoland-sdk"] {
        assert!(
            failures.iter().any(|f| f.contains(&format!("`{dep}` does not use `workspace = true`"))
                && f.contains("[workspace.dependencies]")
                && f.contains(&format!("`{dep}.workspace = true`"))),
            "{dep}: {failures:#?}"
        );
    }
}

#[test]
fn a_manifest_without_workspace_lints_fails_with_a_fix() {
    let text = GOOD_MANIFEST.replace("[lints]\nworkspace = true", "[lints.clippy]\ntodo = \"allow\"");
    let failures = check_manifest("libs/x/Cargo.toml", &text);
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(failures.iter().any(|f| f.contains("[workspace.lints]")), "{failures:#?}");
    assert!(failures.iter().any(|f| f.contains("add\n    [lints]\n    workspace = true")), "{failures:#?}");
}

#[test]
fn crate_roots_need_a_doc_comment() {
    assert_eq!(check_crate_root("src/lib.rs", "\n//! Owns x.\n\npub fn f() {}\n"), None);
    let failure = check_crate_root("services/x/src/main.rs", "fn main() {}\n").expect("fails");
    assert!(failure.contains("services/x/src/main.rs does not start with a `//!` doc comment"));
    assert!(failure.contains("what the crate owns and what it must not use"));
    assert!(check_crate_root("src/lib.rs", "/// item doc\npub fn f() {}\n").is_some());
    assert!(check_crate_root("src/lib.rs", "").is_some());
}

mod side_workspaces {
    use juegoland_tidy::side::{PathDep, check_layers, check_lints, check_lock, lock_packages};

    use super::assert_one_failure;

    fn dep(name: &str, dir: &str, dev: bool) -> PathDep {
        PathDep { name: name.into(), dir: dir.into(), dev }
    }

    #[test]
    fn a_side_crate_chooses_a_layer_and_uses_only_libs() {
        let libs = [dep("juegoland-core", "libs/core", false), dep("juegoland-edge", "libs/edge", false)];
        assert!(check_layers("juegoland-fuzz", "fuzz", &libs).is_empty());
        let f = check_layers("juegoland-fuzz", "tools/fuzz", &libs);
        assert_one_failure(&f, &["tools/fuzz", "is in no layer", "layers.rs"]);
        let f = check_layers("juegoland-fuzz", "fuzz", &[dep("juegoland", "services/juegoland", false)]);
        assert_one_failure(&f, &["juegoland", "may not use the service layer", "depend on a lib instead"]);
        let f = check_layers("juegoland-fuzz", "fuzz", &[dep("juegoland-tidy", "libs/tidy", false)]);
        assert_one_failure(&f, &["juegoland-tidy", "dev-only"]);
        assert!(check_layers("juegoland-fuzz", "fuzz", &[dep("juegoland-tidy", "libs/tidy", true)]).is_empty());
    }

    #[test]
    fn a_side_workspace_keeps_the_products_lints() {
        let root =
            "[workspace.lints.rust]\nunsafe_code = \"forbid\"\n\n[workspace.lints.clippy]\ntodo = \"deny\" # c\n";
        let same = "[package]\nname = \"x\"\n[workspace.lints.clippy]\ntodo=\"deny\"\n[workspace.lints.rust]\nunsafe_code = \"forbid\"\n";
        assert!(check_lints("fuzz/Cargo.toml", root, same).is_empty());
        let weaker = same.replace("forbid", "allow");
        assert_one_failure(&check_lints("fuzz/Cargo.toml", root, &weaker), &["fuzz/Cargo.toml", "copy the root's"]);
    }

    #[test]
    fn a_side_lock_resolves_shared_crates_as_the_product() {
        let product = "[[package]]\nname = \"serde\"\nversion = \"1.0.1\"\n\n[[package]]\nname = \"rand\"\nversion = \"0.8.5\"\n\n[[package]]\nname = \"rand\"\nversion = \"0.9.0\"\n";
        assert_eq!(lock_packages(product).len(), 3);
        let side = "[[package]]\nname = \"serde\"\nversion = \"1.0.1\"\n\n[[package]]\nname = \"rand\"\nversion = \"0.9.0\"\n\n[[package]]\nname = \"libfuzzer-sys\"\nversion = \"0.4.13\"\n";
        assert!(check_lock("fuzz/Cargo.lock", product, side).is_empty());
        let drifted = side.replace("1.0.1", "1.0.2");
        let f = check_lock("fuzz/Cargo.lock", product, &drifted);
        assert_one_failure(&f, &["serde to 1.0.2", "1.0.1", "copy Cargo.lock"]);
    }
}
