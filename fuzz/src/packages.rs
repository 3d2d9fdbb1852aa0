//! `package_manifest`: a package's files through validation levels 1 (parsing, structure),
//! 2 (dependencies against the shipped libraries, references, art) and 3 (the files), its
//! presentation plans, the rules checks against the catalog's module of its id, the lock and
//! publication record of a published directory, and the package digest.
//!
//! Input: an [`crate::archive`] (the seeds are every catalog game's package and every shipped
//! library, their media reduced to small files of the same kind and size). A `lock.json` or
//! `publication.json` among the files is read as a published directory's.
//!
//! Holds: no panic; every refusal is a `Rejection` naming a file and a well-formed JSON
//! pointer (RFC 6901), and it displays.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use juegoland_packages::lock::{InventoryEntry, LOCK_FILE, Lock, PUBLICATION_FILE, package_digest};
use juegoland_packages::manifest::Manifest;
use juegoland_packages::plan::{EffectRegistry, PresentationPlan};
use juegoland_packages::publish::Publication;
use juegoland_packages::validate::{self, Available, media_type};
use juegoland_packages::{Package, Rejection, parse_document};
use juegoland_sdk::components::CustomRegistry;

/// The shipped libraries (`libs/packages/libraries/`), what a package resolves against.
fn libraries() -> &'static Available {
    static LIBRARIES: OnceLock<Available> = OnceLock::new();
    LIBRARIES.get_or_init(|| {
        let dir = crate::repo_root().join("libs/packages/libraries");
        let mut available = Available::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
            let path = entry.expect("a library").path();
            let package = Package::read_dir(&path).unwrap_or_else(|r| panic!("a shipped library is refused: {r}"));
            available.insert(package.key(), package);
        }
        available
    })
}

pub fn run(data: &[u8]) {
    let _ = libraries();
    let mut files = crate::archive::files(data);
    if let Some(bytes) = files.remove(LOCK_FILE) {
        match parse_document::<Lock>(LOCK_FILE, &bytes) {
            Ok((lock, _)) => {
                let _ = lock.digest();
                let _ = lock.public_files().count();
            }
            Err(r) => check(&r),
        }
    }
    if let Some(bytes) = files.remove(PUBLICATION_FILE)
        && let Err(r) = parse_document::<Publication>(PUBLICATION_FILE, &bytes)
    {
        check(&r);
    }
    if let Err(r) = validate_package(files) {
        check(&r);
    }
}

fn validate_package(files: BTreeMap<String, Vec<u8>>) -> Result<(), Rejection> {
    let package = Package::from_files(files)?;
    let tree = validate::resolve(&package, libraries())?;
    validate::check_references(&tree, &CustomRegistry::new())?;
    validate::check_art(&tree)?;
    if let Manifest::Game(game) = &package.manifest {
        let effects = EffectRegistry::standard();
        for (i, path) in game.presentation.plans.iter().enumerate() {
            let plan: PresentationPlan = package.parse_file(path, &format!("/presentation/plans/{i}"))?;
            plan.validate(&package.label(path), &effects)?;
        }
        let registry = &crate::games::engine().registry;
        let key = juegoland_core::GameKey { id: game.id.clone(), rules_version: game.rules.version.clone() };
        if let Some(module) = registry.get(&key) {
            juegoland_packages::rules::check_module(&package, game, module.game.as_ref())?;
            juegoland_packages::rules::check_schemas(&package, game, module.game.as_ref())?;
        }
    }
    let inventory: Vec<InventoryEntry> = package
        .files
        .iter()
        .map(|(path, bytes)| {
            InventoryEntry::of(path, bytes, media_type(path).expect("level 3 checked every media type"))
        })
        .collect();
    let _ = package_digest(&package.document, &inventory);
    Ok(())
}

/// A rejection names its file and points into it with a well-formed JSON pointer.
fn check(r: &Rejection) {
    assert!(!r.file.is_empty(), "a rejection names no file: {r:?}");
    let pointer_ok = r.pointer.is_empty()
        || (r.pointer.starts_with('/')
            && r.pointer.split('~').skip(1).all(|rest| rest.starts_with('0') || rest.starts_with('1')));
    assert!(pointer_ok, "a rejection's pointer {:?} is not a JSON pointer: {r}", r.pointer);
    let _ = r.to_string();
}
