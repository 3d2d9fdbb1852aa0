//! `Publisher::publish`: the shipped packages publish into a real registry directory with a
//! real lock, and each step of the pipeline stops a package that breaks it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use juegoland_packages::lock::{LOCK_FILE, Lock, PUBLICATION_FILE, PackageKey};
use juegoland_packages::manifest::PackageKind;
use juegoland_packages::plan::EffectRegistry;
use juegoland_packages::publish::{ModuleFailure, Modules, Publication, PublishError, Publisher, Step, read_published};
use juegoland_packages::{Kind, Package};
use juegoland_sdk::ErasedGame;
use juegoland_sdk::components::CustomRegistry;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use juegoland_testkit::TempDir;

use crate::broken::Broken;
use crate::catalog::{game_dir, library_dir, module};

fn modules(id: &str, rules_version: &str) -> Option<Arc<dyn ErasedGame>> {
    juegoland_catalog::registry()
        .unwrap()
        .games()
        .find(|g| g.descriptor().id == id && g.descriptor().rules_version == rules_version)
        .map(|_| module(id, rules_version))
}

fn publish(registry: &Path, dir: &Path) -> Result<Publication, PublishError> {
    publish_with(registry, dir, &modules)
}

/// Publishes against `modules`, with the conformance run `juegoland publish` makes.
fn publish_with(registry: &Path, dir: &Path, modules: Modules<'_>) -> Result<Publication, PublishError> {
    let customs = CustomRegistry::new();
    let effects = EffectRegistry::standard();
    Publisher {
        registry: registry.to_owned(),
        modules,
        tests: &juegoland_conformance::check_module,
        customs: &customs,
        effects: &effects,
    }
    .publish(dir)
}

fn publish_libraries(registry: &Path) {
    for library in ["playing-cards", "cards-poker"] {
        publish(registry, &library_dir(library)).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Copies a game's package into `scratch/source/<game>` so a test can break it.
fn copy_game(scratch: &TempDir, game: &str) -> PathBuf {
    let target = scratch.path().join("source").join(game);
    copy_tree(&game_dir(game), &target);
    target
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("game.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
}

/// Overwrites a published (read-only) file, as something behind the registry's back would.
fn tamper(path: &Path, bytes: &[u8]) {
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(path, permissions).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn failure(registry: &Path, dir: &Path) -> PublishError {
    publish(registry, dir).expect_err("publishing must fail")
}

#[test]
fn every_shipped_package_publishes_with_a_real_lock() {
    let scratch = TempDir::new("publish-all");
    let registry = scratch.path().join("registry");
    publish_libraries(&registry);
    publish(&registry, &library_dir("spanish-cards")).unwrap();
    publish(&registry, &library_dir("cards-spanish")).unwrap();
    publish(&registry, &library_dir("board-games")).unwrap();
    for game in crate::catalog::games() {
        let publication = publish(&registry, &game_dir(&game)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((publication.id.as_str(), publication.kind), (game.as_str(), PackageKind::Game));
    }
    let key = PackageKey { id: "solitario".into(), version: "1.0.0".into() };
    let dir = registry.join("solitario/1.0.0");
    let (lock, publication) = read_published(&registry, &key).unwrap();
    let ids: Vec<&str> = lock.packages.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["cards-poker", "playing-cards", "solitario"], "the tree, sorted by id");
    assert_eq!(lock.root, key);
    let lock_bytes = std::fs::read(dir.join(LOCK_FILE)).unwrap();
    let lock_value: Value = serde_json::from_slice(&lock_bytes).unwrap();
    assert_eq!(publication.lock_digest, juegoland_protocol::digest_hex(&lock_value), "the JCS digest of the lock file");
    let root = lock.packages.iter().find(|p| p.id == "solitario").unwrap();
    assert_eq!(root.digest, publication.package_digest);
    let source = Package::read_dir(&game_dir("solitario")).unwrap();
    assert_eq!(root.files.len(), source.files.len(), "every file, manifest included, lock and record excluded");
    for file in &root.files {
        let bytes = std::fs::read(dir.join(&file.path)).unwrap();
        assert_eq!(file.sha256, hex::encode(Sha256::digest(&bytes)), "{}", file.path);
        assert_eq!(file.bytes, bytes.len() as u64);
        let expected_url =
            (!file.path.starts_with("rules/")).then(|| format!("/v1/packages/solitario/1.0.0/{}", file.path));
        assert_eq!(file.url, expected_url, "{}", file.path);
        assert!(
            std::fs::metadata(dir.join(&file.path)).unwrap().permissions().readonly(),
            "{} is immutable",
            file.path
        );
    }
    assert!(
        root.files.iter().any(|f| f.path == "rules/data.json" && f.url.is_none() && f.media_type == "application/json")
    );
    assert!(root.files.iter().any(|f| f.path == "images/cover.svg" && f.media_type == "image/svg+xml"));
    let art = lock.packages.iter().find(|p| p.id == "cards-poker").unwrap();
    assert!(art.files.iter().any(|f| f.path == "graphics/poker.js" && f.media_type == "text/javascript"));
    assert!(lock_value["packages"][2]["files"].as_array().unwrap().iter().any(|f| f["url"] == Value::Null));
    // The conecta4 lock has its own package only, and the sound.
    let (lock, _) = read_published(&registry, &PackageKey { id: "conecta4".into(), version: "1.0.0".into() }).unwrap();
    assert_eq!(lock.packages.len(), 1);
    assert!(lock.packages[0].files.iter().any(|f| f.path == "sounds/drop.wav" && f.media_type == "audio/wav"));
    let parsed: Lock = serde_json::from_value(lock_value).unwrap();
    assert_eq!(parsed.digest(), publication.lock_digest);
}

#[test]
fn step_1_missing_dependencies_and_tampered_publications() {
    let scratch = TempDir::new("step1");
    let registry = scratch.path().join("registry");
    let e = failure(&registry, &game_dir("solitario"));
    assert_eq!(e.step, Step::Resolve);
    assert!(matches!(*e.rejection.kind, Kind::MissingDependency(_)), "{e}");
    assert_eq!(e.rejection.pointer, "/dependencies/0");
    publish_libraries(&registry);
    // A published file changed behind the registry's back no longer matches its record.
    tamper(&registry.join("cards-poker/1.0.0/graphics/poker.js"), b"export default {};");
    let e = failure(&registry, &game_dir("solitario"));
    assert_eq!(e.step, Step::Resolve);
    assert!(matches!(*e.rejection.kind, Kind::LoadCheck(_)) && e.rejection.pointer == "/packageDigest", "{e}");
}

#[test]
fn step_2_missing_files() {
    let scratch = TempDir::new("step2");
    let dir = copy_game(&scratch, "conecta4");
    std::fs::remove_file(dir.join("images/icon.svg")).unwrap();
    let e = failure(&scratch.path().join("registry"), &dir);
    assert_eq!(e.step, Step::References);
    assert!(matches!(*e.rejection.kind, Kind::MissingFile(_)), "{e}");
    assert!(e.to_string().starts_with("publish step 2 "), "{e}");
}

/// A link in the package — to a secret outside it, to `/proc/self/environ` — is refused, not
/// followed and published; so is a pipe. Nothing is written to the registry.
#[test]
fn a_package_of_links_or_special_files_is_refused_before_anything_is_read() {
    let scratch = TempDir::new("links");
    let secret = scratch.path().join("secret.txt");
    std::fs::write(&secret, "the publisher's private key").unwrap();
    let registry = scratch.path().join("registry");
    for (name, target) in [("notes.txt", secret.as_path()), ("env.txt", Path::new("/proc/self/environ"))] {
        let dir = copy_game(&scratch, "conecta4");
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        let e = failure(&registry, &dir);
        assert_eq!(e.step, Step::Resolve, "{e}");
        assert!(
            matches!(&*e.rejection.kind, Kind::NotRegularFile { path, what } if path == name && *what == "a symbolic link"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let dir = copy_game(&scratch, "conecta4");
    std::os::unix::fs::symlink(scratch.path(), dir.join("images/outside")).unwrap();
    let e = failure(&registry, &dir);
    assert!(matches!(&*e.rejection.kind, Kind::NotRegularFile { path, .. } if path == "images/outside"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    let dir = copy_game(&scratch, "conecta4");
    let fifo = dir.join("pipe.txt");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let e = failure(&registry, &dir);
    assert!(matches!(&*e.rejection.kind, Kind::NotRegularFile { what, .. } if *what == "not a regular file"), "{e}");
    assert!(!registry.join("conecta4").exists(), "nothing was published");
}

#[test]
fn step_3_missing_translations() {
    let scratch = TempDir::new("step3");
    let dir = copy_game(&scratch, "hundido");
    edit_manifest(&dir, |m| {
        m["translations"]["en"].as_object_mut().unwrap().remove("fleet.alt");
    });
    let e = failure(&scratch.path().join("registry"), &dir);
    assert_eq!(e.step, Step::Art);
    assert!(matches!(*e.rejection.kind, Kind::MissingTranslation { .. }), "{e}");
}

#[test]
fn step_4_the_module_must_agree_with_the_manifest() {
    let scratch = TempDir::new("step4");
    let registry = scratch.path().join("registry");
    let dir = copy_game(&scratch, "conecta4");
    edit_manifest(&dir, |m| m["rules"]["phases"][0]["stages"][0]["actions"] = json!(["drop", "pass"]));
    let e = failure(&registry, &dir);
    assert_eq!(e.step, Step::Rules);
    assert!(matches!(*e.rejection.kind, Kind::RulesMismatch { what: "the phases and their stages", .. }), "{e}");
    assert_eq!(e.rejection.pointer, "/rules/phases/0");
    edit_manifest(&dir, |m| {
        m["rules"]["phases"][0]["stages"][0]["actions"] = json!(["drop"]);
        m["rules"]["actions"][0]["policy"] = json!("actor");
    });
    let e = failure(&registry, &dir);
    assert!(matches!(*e.rejection.kind, Kind::RulesMismatch { what: "the actions", .. }), "{e}");
    edit_manifest(&dir, |m| {
        m["rules"]["actions"][0]["policy"] = json!("match");
        m["rules"]["viewSchemaVersion"] = json!(2);
    });
    let e = failure(&registry, &dir);
    assert!(matches!(*e.rejection.kind, Kind::RulesMismatch { what: "the view schema version", .. }), "{e}");
    edit_manifest(&dir, |m| {
        m["rules"]["viewSchemaVersion"] = json!(1);
        m["rules"]["version"] = json!("1.1.0");
    });
    let e = failure(&registry, &dir);
    assert_eq!(e.step, Step::Rules);
    assert!(matches!(*e.rejection.kind, Kind::NoRulesModule(_)), "{e}");
}

#[test]
fn step_5_schema_files_must_be_the_modules() {
    let scratch = TempDir::new("step5");
    let dir = copy_game(&scratch, "conecta4");
    std::fs::write(dir.join("schemas/view.json"), b"{\"type\": \"object\"}\n").unwrap();
    let e = failure(&scratch.path().join("registry"), &dir);
    assert_eq!(e.step, Step::Schemas);
    assert!(matches!(*e.rejection.kind, Kind::SchemaMismatch("view")), "{e}");
    assert_eq!(e.rejection.pointer, "/rules/schemas/view");
}

/// Steps 5 and 6 run the module through the engine: a module whose decided revisions break
/// its invariants or whose replay decides otherwise than the match did fails step 5, one whose
/// snapshot offers what its schema refuses fails step 6, and nothing is written.
#[test]
fn steps_5_and_6_the_module_must_pass_its_conformance_run() {
    let scratch = TempDir::new("step5-module");
    let registry = scratch.path().join("registry");
    let broken = |module: Broken| {
        move |id: &str, version: &str| ((id, version) == ("conecta4", "1.0.0")).then(|| module.module())
    };
    let e = publish_with(&registry, &game_dir("conecta4"), &broken(Broken::Invariant))
        .expect_err("three discs are corrupt");
    assert_eq!(e.step, Step::Schemas);
    assert_eq!(e.rejection.pointer, "/rules/version");
    let Kind::ModuleTest(ModuleFailure::Rules(message)) = &*e.rejection.kind else { panic!("{e}") };
    assert!(message.contains("three discs"), "{e}");
    assert!(e.to_string().starts_with("publish step 5 "), "{e}");
    let e = publish_with(&registry, &game_dir("conecta4"), &broken(Broken::Nondeterministic))
        .expect_err("the replay diverges");
    assert_eq!(e.step, Step::Schemas);
    assert!(matches!(&*e.rejection.kind, Kind::ModuleTest(ModuleFailure::Replay(_))), "{e}");
    let e = publish_with(&registry, &game_dir("conecta4"), &broken(Broken::InvalidOffer))
        .expect_err("column 42 is no valid drop");
    assert_eq!(e.step, Step::Conformance);
    let Kind::ModuleTest(ModuleFailure::Protocol(message)) = &*e.rejection.kind else { panic!("{e}") };
    assert!(message.contains("offered an invalid drop payload"), "{e}");
    assert!(!registry.join("conecta4").exists(), "nothing is published");
    // The module itself passes.
    publish(&registry, &game_dir("conecta4")).unwrap();
}

#[test]
fn step_6_protocol_and_presentation_conformance() {
    let scratch = TempDir::new("step6");
    let registry = scratch.path().join("registry");
    let dir = copy_game(&scratch, "conecta4");
    edit_manifest(&dir, |m| m["protocolVersion"] = json!(2));
    let e = failure(&registry, &dir);
    assert_eq!(e.step, Step::Conformance);
    assert!(matches!(*e.rejection.kind, Kind::UnsupportedProtocol { found: 2, .. }), "{e}");
    edit_manifest(&dir, |m| m["protocolVersion"] = json!(1));
    let plan_path = dir.join("plans/drop.plan.json");
    let mut plan: Value = serde_json::from_slice(&std::fs::read(&plan_path).unwrap()).unwrap();
    plan["steps"][1]["blocking"] = json!(true);
    std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();
    let e = failure(&registry, &dir);
    assert_eq!(e.step, Step::Conformance);
    assert!(matches!(*e.rejection.kind, Kind::BlockingOptionalSound { .. }), "{e}");
    assert_eq!(e.rejection.pointer, "/steps/1/params/resource");
    plan["steps"][1]["blocking"] = json!(false);
    plan["steps"][1]["trigger"] = json!({"marker": {"step": "drop", "marker": "bounce"}});
    std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();
    let e = failure(&registry, &dir);
    assert!(matches!(*e.rejection.kind, Kind::UnknownMarker { .. }), "{e}");
}

#[test]
fn step_7_a_published_version_is_immutable() {
    let scratch = TempDir::new("step7");
    let registry = scratch.path().join("registry");
    let first = publish(&registry, &game_dir("conecta4")).unwrap();
    let e = failure(&registry, &game_dir("conecta4"));
    assert_eq!(e.step, Step::Publication);
    assert!(matches!(*e.rejection.kind, Kind::AlreadyPublished(_)), "{e}");
    let record: Publication =
        serde_json::from_slice(&std::fs::read(registry.join("conecta4/1.0.0").join(PUBLICATION_FILE)).unwrap())
            .unwrap();
    assert_eq!(record, first, "the first publication is untouched");
    let leftovers: Vec<_> =
        std::fs::read_dir(registry.join("conecta4")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["1.0.0"], "no staging directory is left behind");
}

#[test]
fn the_public_view_serves_only_locked_public_files() {
    use juegoland_packages::public::{PublicError, public_file, public_lock};
    let temp = TempDir::new("public");
    let registry = temp.path().join("registry");
    publish(&registry, &game_dir("conecta4")).unwrap();
    let lock = public_lock(&registry, "conecta4", "1.0.0").unwrap();
    let paths: Vec<&str> = lock.packages[0].files.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"images/cover.svg") && paths.contains(&"sounds/drop.wav"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with("rules/")), "no private rules file: {paths:?}");
    let cover = public_file(&registry, "conecta4", "1.0.0", "images/cover.svg").unwrap();
    assert_eq!(cover.media_type, "image/svg+xml");
    assert_eq!(cover.bytes, std::fs::read(game_dir("conecta4").join("images/cover.svg")).unwrap());
    for (id, version, path) in [
        ("conecta4", "1.0.0", "rules/data.json"),
        ("conecta4", "1.0.0", "lock.json"),
        ("conecta4", "1.0.0", "publication.json"),
        ("conecta4", "1.0.0", "../conecta4/1.0.0/rules/data.json"),
        ("conecta4", "2.0.0", "images/cover.svg"),
        ("conecta4", "latest", "images/cover.svg"),
        ("..", "1.0.0", "images/cover.svg"),
    ] {
        let refused = public_file(&registry, id, version, path);
        assert!(matches!(refused, Err(PublicError::NotFound)), "{id} {version} {path}: {refused:?}");
    }
    // A file changed behind the registry's back is never served.
    tamper(&registry.join("conecta4/1.0.0/images/cover.svg"), b"<svg/>");
    let refused = public_file(&registry, "conecta4", "1.0.0", "images/cover.svg");
    assert!(matches!(refused, Err(PublicError::Corrupt(_))), "{refused:?}");
}

#[test]
fn published_versions_are_listed_newest_first_with_their_rules() {
    use juegoland_packages::public::{PublicError, published_versions};
    let temp = TempDir::new("versions");
    let registry = temp.path().join("registry");
    assert_eq!(published_versions(&registry, "conecta4").unwrap(), [], "nothing published yet");
    publish(&registry, &game_dir("conecta4")).unwrap();
    // A visual fix: package 1.0.10 over the same rules 1.0.0 (10 > 9 > 1 numerically).
    for version in ["1.0.10", "1.0.9"] {
        let scratch = TempDir::new(&format!("fix-{version}"));
        let fix = copy_game(&scratch, "conecta4");
        edit_manifest(&fix, |m| m["version"] = json!(version));
        publish(&registry, &fix).unwrap();
    }
    let listed = published_versions(&registry, "conecta4").unwrap();
    let versions: Vec<(&str, Option<&str>)> =
        listed.iter().map(|v| (v.version.as_str(), v.rules_version.as_deref())).collect();
    assert_eq!(versions, [("1.0.10", Some("1.0.0")), ("1.0.9", Some("1.0.0")), ("1.0.0", Some("1.0.0"))]);
    assert!(listed.iter().all(|v| v.kind == PackageKind::Game));
    let record: Value =
        serde_json::from_slice(&std::fs::read(registry.join("conecta4/1.0.9/publication.json")).unwrap()).unwrap();
    assert_eq!(json!(listed[1].lock_digest), record["lockDigest"], "the digest a match pins");
    // A library has no rules version.
    publish_libraries(&registry);
    let library = published_versions(&registry, "playing-cards").unwrap();
    assert_eq!((library.len(), library[0].rules_version.as_ref()), (1, None));
    // A malformed id is not a package; a changed manifest is a corrupt publication.
    assert!(matches!(published_versions(&registry, ".."), Err(PublicError::NotFound)));
    let manifest = registry.join("conecta4/1.0.9/game.json");
    let mut changed: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    changed["rules"]["version"] = json!("9.0.0");
    tamper(&manifest, &serde_json::to_vec(&changed).unwrap());
    let refused = published_versions(&registry, "conecta4");
    assert!(matches!(&refused, Err(PublicError::Corrupt(m)) if m.contains("game.json")), "{refused:?}");
}
