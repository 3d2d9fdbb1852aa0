//! Publishing: the seven steps of spec/packages.md, in order, ending in an immutable
//! directory `<registry>/<id>/<version>/` that holds the package's files, its `lock.json` and
//! its `publication.json` (the package and lock digests).
//!
//! 1. manifest structure; exact, acyclic dependency resolution (against the registry);
//! 2. files, exports, component kinds, extensions (custom kinds), visual bindings;
//! 3. art coverage, atlas regions, catalog resources, translations;
//! 4. the compiled rules module registered under the manifest's id and rules version agrees
//!    with it (ids, versions, participants, phases, stages, actions);
//! 5. the game's schema files are what the module generates, and the module passes the
//!    rules, invariant, randomness and privacy tests of a bounded conformance run through
//!    the engine ([`ModuleTests`], passed in by the service);
//! 6. protocol and presentation conformance (protocol version, every plan, and the
//!    conformance run's protocol checks);
//! 7. inventory and lock, immutable publication (written aside, then renamed into place;
//!    files read-only), and a load check of what was written.
//!
//! A library has no rules: steps 4 and 5 have nothing to check for it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use juegoland_sdk::ErasedGame;
use juegoland_sdk::components::CustomRegistry;
use serde::{Deserialize, Serialize};

use crate::error::{Kind, Rejection};
use crate::lock::{InventoryEntry, LOCK_FILE, Lock, LockedPackage, PUBLICATION_FILE, PackageKey, package_digest};
use crate::manifest::{GameManifest, Manifest, PackageKind};
use crate::package::{Package, split_dependency};
use crate::plan::{EffectRegistry, PresentationPlan};
use crate::resource::ResourceType;
use crate::validate::{self, Available, Tree, media_type};

/// The publish pipeline's steps, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    Resolve = 1,
    References = 2,
    Art = 3,
    Rules = 4,
    Schemas = 5,
    Conformance = 6,
    Publication = 7,
}

impl Step {
    pub fn describe(self) -> &'static str {
        match self {
            Step::Resolve => "manifest structure and dependency resolution",
            Step::References => "files, exports, component kinds, extensions and visual bindings",
            Step::Art => "art coverage, atlas regions, catalog resources and translations",
            Step::Rules => "the compiled rules module against the manifest",
            Step::Schemas => "the game's schemas and its rules, invariant, randomness and privacy tests",
            Step::Conformance => "protocol and presentation conformance",
            Step::Publication => "inventory, lock, immutable publication and load check",
        }
    }
}

/// Why publishing stopped: the step and the rejection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("publish step {} ({}) failed: {rejection}", *step as u8, step.describe())]
pub struct PublishError {
    pub step: Step,
    pub rejection: Rejection,
}

/// The record written beside the lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Publication {
    pub id: String,
    pub version: String,
    pub kind: PackageKind,
    /// SHA-256 (hex) of the JCS of the package's manifest and inventory.
    pub package_digest: String,
    /// SHA-256 (hex) of the JCS of the lock: what a match pins.
    pub lock_digest: String,
}

/// The compiled rules modules a publisher may check a game against, by id and rules version.
pub type Modules<'a> = &'a dyn Fn(&str, &str) -> Option<Arc<dyn ErasedGame>>;

/// The bounded conformance run of publish steps 5 and 6 on a game's compiled module, through
/// the engine: `juegoland_conformance::check_module`, which the service passes in (this crate
/// may not depend on the engine).
pub type ModuleTests<'a> = &'a dyn Fn(&Arc<dyn ErasedGame>) -> Result<(), ModuleFailure>;

/// What the conformance run of a game's compiled module found wrong: the check, and what
/// failed in which random playout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleFailure {
    /// The rules faulted: a decided revision broke the rules' invariants (`validate_position`)
    /// or the data schema, the rules panicked, or the default configuration makes no match.
    #[error("the rules fail a random playout: {0}")]
    Rules(String),
    /// A playout's log, replayed with its randomness traces, does not reach the same state.
    #[error("a random playout does not replay to the same state from its randomness traces: {0}")]
    Replay(String),
    /// A recipient received what it must not.
    #[error("a recipient receives what it must not: {0}")]
    Privacy(String),
    /// Two seats' valid `actor` actions do not commute.
    #[error("actor actions of different seats do not commute: {0}")]
    Confluence(String),
    /// A recipient's sync snapshot is not a protocol message whose view, context and offers
    /// pass their schemas.
    #[error("a snapshot fails the protocol: {0}")]
    Protocol(String),
}

impl ModuleFailure {
    /// The publish step whose tests found it: the rules, invariant, randomness and privacy
    /// tests (confluence included) are step 5's, protocol conformance is step 6's.
    pub fn step(&self) -> Step {
        match self {
            ModuleFailure::Protocol(_) => Step::Conformance,
            ModuleFailure::Rules(_)
            | ModuleFailure::Replay(_)
            | ModuleFailure::Privacy(_)
            | ModuleFailure::Confluence(_) => Step::Schemas,
        }
    }
}

/// What the publisher checks against.
pub struct Publisher<'a> {
    /// The registry directory: published packages live in `<registry>/<id>/<version>/`.
    pub registry: PathBuf,
    pub modules: Modules<'a>,
    /// The conformance run every game's module must pass (steps 5 and 6).
    pub tests: ModuleTests<'a>,
    pub customs: &'a CustomRegistry,
    pub effects: &'a EffectRegistry,
}

impl fmt::Debug for Publisher<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher").field("registry", &self.registry).finish_non_exhaustive()
    }
}

fn at(step: Step) -> impl Fn(Rejection) -> PublishError {
    move |rejection| PublishError { step, rejection }
}

impl Publisher<'_> {
    /// The directory a published package lives in.
    pub fn package_dir(&self, key: &PackageKey) -> PathBuf {
        self.registry.join(&key.id).join(&key.version)
    }

    /// Runs the seven steps on the package in `dir` and publishes it.
    pub fn publish(&self, dir: &Path) -> Result<Publication, PublishError> {
        // Step 1.
        let root = Package::read_dir(dir).map_err(at(Step::Resolve))?;
        let available = self.load_available(&root).map_err(at(Step::Resolve))?;
        let tree = validate::resolve(&root, &available).map_err(at(Step::Resolve))?;
        // Steps 2 and 3.
        validate::check_references(&tree, self.customs).map_err(at(Step::References))?;
        validate::check_art(&tree).map_err(at(Step::Art))?;
        if let Manifest::Game(game) = &root.manifest {
            // Steps 4 and 5.
            let module = (self.modules)(&game.id, &game.rules.version).ok_or_else(|| {
                at(Step::Rules)(Rejection::new(
                    root.manifest_label(),
                    "/rules/version",
                    Kind::NoRulesModule(format!("{} {}", game.id, game.rules.version)),
                ))
            })?;
            crate::rules::check_module(&root, game, module.as_ref()).map_err(at(Step::Rules))?;
            crate::rules::check_schemas(&root, game, module.as_ref()).map_err(at(Step::Schemas))?;
            // The conformance run's failures belong to step 5 or, for the protocol, to step 6.
            (self.tests)(&module).map_err(|failure| {
                at(failure.step())(Rejection::new(root.manifest_label(), "/rules/version", Kind::ModuleTest(failure)))
            })?;
            // Step 6.
            self.check_conformance(&root, game).map_err(at(Step::Conformance))?;
        }
        // Step 7.
        self.write(&tree).map_err(at(Step::Publication))
    }

    /// Reads every dependency of `root`'s tree that the registry has (missing ones are left
    /// for resolution to report where they are named), checking each against its record.
    fn load_available(&self, root: &Package) -> Result<Available, Rejection> {
        let mut available = Available::new();
        let mut pending: Vec<PackageKey> =
            root.manifest.dependencies().iter().filter_map(|d| split_dependency(d)).collect();
        while let Some(key) = pending.pop() {
            if available.contains_key(&key) || key == root.key() {
                continue;
            }
            let dir = self.package_dir(&key);
            if !dir.is_dir() {
                continue;
            }
            let package = Package::read_dir(&dir)?;
            verify_publication(&dir, &package)?;
            pending.extend(package.manifest.dependencies().iter().filter_map(|d| split_dependency(d)));
            available.insert(key, package);
        }
        Ok(available)
    }

    fn check_conformance(&self, root: &Package, game: &GameManifest) -> Result<(), Rejection> {
        let supported = juegoland_protocol::PROTOCOL_VERSION;
        if u64::from(game.protocol_version) != supported {
            return Err(Rejection::new(
                root.manifest_label(),
                "/protocolVersion",
                Kind::UnsupportedProtocol { found: game.protocol_version, supported },
            ));
        }
        for (i, path) in game.presentation.plans.iter().enumerate() {
            let plan: PresentationPlan = root.parse_file(path, &format!("/presentation/plans/{i}"))?;
            let label = root.label(path);
            plan.validate(&label, self.effects)?;
            for (step, resource_id) in plan.sounds() {
                let resource = game.presentation.resources.iter().find(|r| r.id == resource_id);
                let plan_step = &plan.steps[step];
                let kind = match resource {
                    Some(r) if r.kind == ResourceType::Sound => {
                        if !r.required && plan_step.blocking {
                            Kind::BlockingOptionalSound { step: plan_step.id.clone(), resource: resource_id.to_owned() }
                        } else {
                            continue;
                        }
                    }
                    _ => Kind::PlanSound { step: plan_step.id.clone(), resource: resource_id.to_owned() },
                };
                return Err(Rejection::new(label, format!("/steps/{step}/params/resource"), kind));
            }
        }
        Ok(())
    }

    /// Step 7: the lock, the record, the directory written aside and renamed into place,
    /// then read back.
    fn write(&self, tree: &Tree<'_>) -> Result<Publication, Rejection> {
        let root = tree.root;
        let key = root.key();
        let target = self.package_dir(&key);
        let io =
            |what: &str, e: std::io::Error| Rejection::new(root.manifest_label(), "", Kind::Io(format!("{what}: {e}")));
        if target.exists() {
            return Err(Rejection::new(root.manifest_label(), "/version", Kind::AlreadyPublished(key.to_string())));
        }
        let packages: Vec<LockedPackage> = tree.packages().map(locked).collect();
        let package_digest = packages[0].digest.clone();
        let lock = Lock::new(key.clone(), packages);
        let publication = Publication {
            id: key.id.clone(),
            version: key.version.clone(),
            kind: root.manifest.kind(),
            package_digest,
            lock_digest: lock.digest(),
        };
        let parent = target.parent().expect("a package directory has a parent");
        std::fs::create_dir_all(parent).map_err(|e| io("create the registry directory", e))?;
        let staging = parent.join(format!(".{}.staging-{}", key.version, std::process::id()));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| io("remove a stale staging directory", e))?;
        }
        let mut files: BTreeMap<String, Vec<u8>> = root.files.clone();
        files.insert(LOCK_FILE.to_owned(), pretty(&lock));
        files.insert(PUBLICATION_FILE.to_owned(), pretty(&publication));
        for (path, bytes) in &files {
            let file = staging.join(path);
            std::fs::create_dir_all(file.parent().expect("a file has a parent"))
                .map_err(|e| io("create a directory", e))?;
            std::fs::write(&file, bytes).map_err(|e| io("write a file", e))?;
            let mut permissions = std::fs::metadata(&file).map_err(|e| io("read permissions", e))?.permissions();
            permissions.set_readonly(true);
            std::fs::set_permissions(&file, permissions).map_err(|e| io("make a file read-only", e))?;
        }
        // A rename onto an existing directory fails, so two publishers of one version cannot
        // both succeed.
        std::fs::rename(&staging, &target).map_err(|e| {
            let _ = std::fs::remove_dir_all(&staging);
            if target.exists() {
                Rejection::new(root.manifest_label(), "/version", Kind::AlreadyPublished(key.to_string()))
            } else {
                io("move the publication into place", e)
            }
        })?;
        load_check(&target, root, &lock, &publication)?;
        Ok(publication)
    }
}

fn pretty<T: Serialize>(value: &T) -> Vec<u8> {
    let mut text = serde_json::to_vec_pretty(value).expect("locks and records always serialize");
    text.push(b'\n');
    text
}

/// The inventory and lock entry of one package of the tree.
fn locked(package: &Package) -> LockedPackage {
    let key = package.key();
    let inventory: Vec<InventoryEntry> = package
        .files
        .iter()
        .map(|(path, bytes)| {
            InventoryEntry::of(path, bytes, media_type(path).expect("step 2 checked every media type"))
        })
        .collect();
    LockedPackage {
        id: key.id.clone(),
        version: key.version.clone(),
        kind: package.manifest.kind(),
        digest: package_digest(&package.document, &inventory),
        files: inventory.iter().map(|entry| entry.locked(&key)).collect(),
    }
}

/// A published directory's record must match what its files hash to now.
fn verify_publication(dir: &Path, package: &Package) -> Result<Publication, Rejection> {
    let label = package.label(PUBLICATION_FILE);
    let bytes = std::fs::read(dir.join(PUBLICATION_FILE))
        .map_err(|e| Rejection::new(&label, "", Kind::LoadCheck(format!("read the publication record: {e}"))))?;
    let (publication, _) = crate::package::parse_document::<Publication>(&label, &bytes)?;
    let digest = locked(package).digest;
    if publication.package_digest != digest {
        return Err(Rejection::new(
            label,
            "/packageDigest",
            Kind::LoadCheck(format!("the files hash to {digest}, not the recorded {}", publication.package_digest)),
        ));
    }
    Ok(publication)
}

/// Reads the published directory back: the same files, a lock that parses and hashes to the
/// recorded digest, and a record that matches.
fn load_check(dir: &Path, source: &Package, lock: &Lock, publication: &Publication) -> Result<(), Rejection> {
    let fail = |what: String| Rejection::new(source.manifest_label(), "", Kind::LoadCheck(what));
    let loaded = Package::read_dir(dir)?;
    if loaded.files != source.files {
        return Err(fail("the published files differ from the source's".into()));
    }
    let recorded = verify_publication(dir, &loaded)?;
    if recorded != *publication {
        return Err(fail("the publication record differs from what was published".into()));
    }
    let bytes = std::fs::read(dir.join(LOCK_FILE)).map_err(|e| fail(format!("read the lock: {e}")))?;
    let (read_lock, _) = crate::package::parse_document::<Lock>(&loaded.label(LOCK_FILE), &bytes)?;
    if read_lock != *lock || read_lock.digest() != publication.lock_digest {
        return Err(fail("the lock read back differs from the lock written".into()));
    }
    Ok(())
}

/// Reads a published package's lock and record (for loaders and the resources API).
pub fn read_published(registry: &Path, key: &PackageKey) -> Result<(Lock, Publication), Rejection> {
    let dir = registry.join(&key.id).join(&key.version);
    let label = format!("{key}/{LOCK_FILE}");
    let bytes = std::fs::read(dir.join(LOCK_FILE))
        .map_err(|e| Rejection::new(&label, "", Kind::Io(format!("read the lock: {e}"))))?;
    let (lock, _) = crate::package::parse_document::<Lock>(&label, &bytes)?;
    let package = Package::read_dir(&dir)?;
    let publication = verify_publication(&dir, &package)?;
    if lock.digest() != publication.lock_digest {
        return Err(Rejection::new(label, "", Kind::LoadCheck("the lock does not hash to the recorded digest".into())));
    }
    Ok((lock, publication))
}
