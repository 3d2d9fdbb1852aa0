//! The public view of published packages, for the resources API
//! (`GET /v1/packages/{id}/{version}` and `…/{path}`): only the authorized subset of a lock —
//! the files with a public URL — never a private rules file, never the lock's own record,
//! never anything per match (a published package holds nothing per match).
//!
//! Every request is checked against the lock: the id, version and path must be well formed
//! (so a path cannot leave the package), the lock must hash to its recorded digest, the file
//! must be listed with a URL, and its bytes must hash to the locked SHA-256.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Kind, Rejection};
use crate::lock::{LOCK_FILE, Lock, PUBLICATION_FILE, PackageKey};
use crate::package::parse_document;
use crate::publish::Publication;
use crate::structure::{check_package_id, check_path, check_version};

/// Why a public request gets nothing.
#[derive(Debug, thiserror::Error)]
pub enum PublicError {
    /// Not published, not a public file, or not a well-formed request: the same answer for
    /// all three, so a private file's existence is not revealed.
    #[error("no such public package file")]
    NotFound,
    /// The published directory no longer matches its lock.
    #[error("the published package is corrupt: {0}")]
    Corrupt(String),
}

/// A public file's bytes with what the lock says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicFile {
    pub media_type: String,
    pub sha256: String,
    pub bytes: Vec<u8>,
}

/// The lock of `id@version` with only the files a browser may fetch.
pub fn public_lock(registry: &Path, id: &str, version: &str) -> Result<Lock, PublicError> {
    let mut lock = verified_lock(registry, id, version)?;
    for package in &mut lock.packages {
        package.files.retain(|f| f.url.is_some());
    }
    Ok(lock)
}

/// The public file `path` of `id@version`.
pub fn public_file(registry: &Path, id: &str, version: &str, path: &str) -> Result<PublicFile, PublicError> {
    check_path(path).map_err(|_| PublicError::NotFound)?;
    let lock = verified_lock(registry, id, version)?;
    let entry = lock
        .packages
        .iter()
        .filter(|p| p.id == id)
        .flat_map(|p| p.files.iter())
        .find(|f| f.path == path && f.url.is_some())
        .ok_or(PublicError::NotFound)?;
    let bytes = std::fs::read(registry.join(id).join(version).join(path))
        .map_err(|e| PublicError::Corrupt(format!("read {path}: {e}")))?;
    if hex::encode(Sha256::digest(&bytes)) != entry.sha256 {
        return Err(PublicError::Corrupt(format!("{path} does not hash to its locked SHA-256")));
    }
    Ok(PublicFile { media_type: entry.media_type.clone(), sha256: entry.sha256.clone(), bytes })
}

fn verified_lock(registry: &Path, id: &str, version: &str) -> Result<Lock, PublicError> {
    check_package_id(id).map_err(|_| PublicError::NotFound)?;
    check_version(version).map_err(|_| PublicError::NotFound)?;
    let key = PackageKey { id: id.to_owned(), version: version.to_owned() };
    published_lock(registry, &key).map_err(|r| PublicError::Corrupt(r.to_string()))?.ok_or(PublicError::NotFound)
}

/// The lock of the published package `key`, checked against its publication record (its
/// root is `key` and it hashes to the recorded lock digest), or `None` when `key` is not
/// published in `registry` (no lock). What the resources API serves and what a match pins
/// ([`Lock::digest`]); the package's files are not read.
pub fn published_lock(registry: &Path, key: &PackageKey) -> Result<Option<Lock>, Rejection> {
    let dir = registry.join(&key.id).join(&key.version);
    let (lock_label, record_label) = (format!("{key}/{LOCK_FILE}"), format!("{key}/{PUBLICATION_FILE}"));
    let lock_bytes = match std::fs::read(dir.join(LOCK_FILE)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Rejection::new(lock_label, "", Kind::Io(format!("read the lock: {e}")))),
    };
    let record_bytes = std::fs::read(dir.join(PUBLICATION_FILE))
        .map_err(|e| Rejection::new(&record_label, "", Kind::Io(format!("read the record: {e}"))))?;
    let (lock, _) = parse_document::<Lock>(&lock_label, &lock_bytes)?;
    let (record, _) = parse_document::<Publication>(&record_label, &record_bytes)?;
    if lock.root != *key || lock.digest() != record.lock_digest {
        return Err(Rejection::new(
            lock_label,
            "",
            Kind::LoadCheck("the lock does not hash to the recorded lock digest".into()),
        ));
    }
    Ok(Some(lock))
}

/// One published version of a package, as the platform lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedVersion {
    pub version: String,
    pub kind: crate::manifest::PackageKind,
    /// A game's rules version (what decides its matches); `None` for a library.
    pub rules_version: Option<String>,
    /// What a match created on this version pins.
    pub lock_digest: String,
}

/// Every published version of the package `id`, newest first (by `MAJOR.MINOR.PATCH`); none
/// when nothing of `id` is published. Each is checked as the resources API checks it (its
/// lock hashes to its record), and a game's manifest is read for its rules version only when
/// its bytes hash to what the lock says of it.
pub fn published_versions(registry: &Path, id: &str) -> Result<Vec<PublishedVersion>, PublicError> {
    check_package_id(id).map_err(|_| PublicError::NotFound)?;
    let entries = match std::fs::read_dir(registry.join(id)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(PublicError::Corrupt(format!("list {id}: {e}"))),
    };
    let mut versions = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| PublicError::Corrupt(format!("list {id}: {e}")))?;
        // Publishing writes a version aside under a name that is not a version, then renames it.
        let Some(version) = entry.file_name().to_str().filter(|v| check_version(v).is_ok()).map(str::to_owned) else {
            continue;
        };
        let key = PackageKey { id: id.to_owned(), version: version.clone() };
        let Some(lock) = published_lock(registry, &key).map_err(|r| PublicError::Corrupt(r.to_string()))? else {
            continue;
        };
        let own = lock
            .packages
            .iter()
            .find(|p| p.id == id && p.version == version)
            .ok_or_else(|| PublicError::Corrupt(format!("the lock of {key} does not list {key}")))?;
        let rules_version = match own.kind {
            crate::manifest::PackageKind::Game => Some(rules_version(registry, &key, own)?),
            _ => None,
        };
        versions.push(PublishedVersion { version, kind: own.kind, rules_version, lock_digest: lock.digest() });
    }
    versions.sort_by_key(|v| std::cmp::Reverse(version_order(&v.version)));
    Ok(versions)
}

/// A well-formed version's numbers, for ordering.
fn version_order(version: &str) -> Vec<u64> {
    version.split('.').map(|n| n.parse().unwrap_or(0)).collect()
}

fn rules_version(registry: &Path, key: &PackageKey, own: &crate::lock::LockedPackage) -> Result<String, PublicError> {
    Ok(verified_manifest(registry, key, own)?.rules.version)
}

/// The manifest (`game.json`) of the published game `key`, read only when its bytes hash to
/// what its lock says of it.
fn verified_manifest(
    registry: &Path,
    key: &PackageKey,
    own: &crate::lock::LockedPackage,
) -> Result<crate::manifest::GameManifest, PublicError> {
    use crate::manifest::{GAME_MANIFEST, GameManifest};
    let corrupt = |what: String| PublicError::Corrupt(format!("{key}/{GAME_MANIFEST}: {what}"));
    let locked = own.files.iter().find(|f| f.path == GAME_MANIFEST).ok_or_else(|| corrupt("not in the lock".into()))?;
    let bytes = std::fs::read(registry.join(&key.id).join(&key.version).join(GAME_MANIFEST))
        .map_err(|e| corrupt(e.to_string()))?;
    if hex::encode(Sha256::digest(&bytes)) != locked.sha256 {
        return Err(corrupt("does not hash to its locked SHA-256".into()));
    }
    let (manifest, _) = parse_document::<GameManifest>(GAME_MANIFEST, &bytes).map_err(|r| corrupt(r.to_string()))?;
    Ok(manifest)
}

/// The manifest of the published game `id@version` (checked as [`published_versions`] checks
/// it); `NotFound` when it is not a published game.
pub fn published_game_manifest(
    registry: &Path,
    id: &str,
    version: &str,
) -> Result<crate::manifest::GameManifest, PublicError> {
    let lock = verified_lock(registry, id, version)?;
    let own = lock
        .packages
        .iter()
        .find(|p| p.id == id && p.version == version && p.kind == crate::manifest::PackageKind::Game)
        .ok_or(PublicError::NotFound)?;
    let key = PackageKey { id: id.to_owned(), version: version.to_owned() };
    verified_manifest(registry, &key, own)
}
