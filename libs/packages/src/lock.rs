//! The lock and the digests: content identities computed from exact bytes, never from URLs.
//!
//! A package digest is the SHA-256 of the JCS (RFC 8785) form of
//! `{ manifest, files: [{ path, sha256, bytes, mediaType }] }`, files sorted by path, the
//! lock excluded. The lock digest is the SHA-256 of the JCS form of the whole lock, its
//! packages sorted by id and each package's files by path. Both use
//! [`juegoland_protocol::digest_hex`], the project's one canonicalization.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::manifest::{PRIVATE_DIR, PackageKind};

/// The `format` of a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LockFormat {
    #[serde(rename = "juegoland.lock")]
    Lock,
}

/// The lock file of a published package: the root and every resolved dependency, with every
/// file's hash, size, media type and public URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lock {
    pub format: LockFormat,
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub root: PackageKey,
    /// Sorted by id; one version per id.
    pub packages: Vec<LockedPackage>,
}

/// The file name of the lock inside a published package directory.
pub const LOCK_FILE: &str = "lock.json";
/// The file name of the publication record (the package and lock digests) beside the lock.
pub const PUBLICATION_FILE: &str = "publication.json";

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageKey {
    pub id: String,
    pub version: String,
}

impl std::fmt::Display for PackageKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.id, self.version)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedPackage {
    pub id: String,
    pub version: String,
    pub kind: PackageKind,
    /// The package digest (SHA-256 hex of the JCS of manifest and inventory).
    pub digest: String,
    /// Sorted by path.
    pub files: Vec<LockedFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockedFile {
    pub path: String,
    /// SHA-256 of the exact bytes, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    pub media_type: String,
    /// Where a browser fetches it; `null` for a private rules file, which is never served.
    pub url: Option<String>,
}

/// One file of a package inventory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryEntry {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    pub media_type: String,
}

impl InventoryEntry {
    pub fn of(path: &str, content: &[u8], media_type: &str) -> Self {
        Self {
            path: path.to_owned(),
            sha256: hex::encode(Sha256::digest(content)),
            bytes: content.len() as u64,
            media_type: media_type.to_owned(),
        }
    }

    /// The lock entry of this file in package `key`: private rules files get no URL.
    pub fn locked(&self, key: &PackageKey) -> LockedFile {
        LockedFile {
            path: self.path.clone(),
            sha256: self.sha256.clone(),
            bytes: self.bytes,
            media_type: self.media_type.clone(),
            url: public_url(key, &self.path),
        }
    }
}

/// The public URL of a package file (`/v1/packages/{id}/{version}/{path}`), or `None` for a
/// private rules file.
pub fn public_url(key: &PackageKey, path: &str) -> Option<String> {
    if is_private(path) { None } else { Some(format!("/v1/packages/{}/{}/{path}", key.id, key.version)) }
}

/// Whether a package file is private (a rules file a browser never gets).
pub fn is_private(path: &str) -> bool {
    path.starts_with(PRIVATE_DIR)
}

/// The package digest: `manifest` is the parsed manifest document, `files` the inventory
/// (sorted here by path).
pub fn package_digest(manifest: &Value, files: &[InventoryEntry]) -> String {
    let mut files: Vec<&InventoryEntry> = files.iter().collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    juegoland_protocol::digest_hex(&json!({ "manifest": manifest, "files": files }))
}

impl Lock {
    /// A lock with its packages sorted by id and files by path, so the digest is the same
    /// whatever order resolution found them in.
    pub fn new(root: PackageKey, mut packages: Vec<LockedPackage>) -> Self {
        packages.sort_by(|a, b| a.id.cmp(&b.id));
        for package in &mut packages {
            package.files.sort_by(|a, b| a.path.cmp(&b.path));
        }
        Self { format: LockFormat::Lock, format_version: 1, root, packages }
    }

    /// The lock digest: SHA-256 (hex) of the JCS form of the lock.
    pub fn digest(&self) -> String {
        juegoland_protocol::digest_hex(&serde_json::to_value(self).expect("a lock always serializes"))
    }

    /// The subset a browser may fetch: every package with only its public files.
    pub fn public_files(&self) -> impl Iterator<Item = (&LockedPackage, &LockedFile, &str)> {
        self.packages.iter().flat_map(|p| p.files.iter().filter_map(move |f| f.url.as_deref().map(|url| (p, f, url))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PackageKey {
        PackageKey { id: "conecta4".into(), version: "1.0.0".into() }
    }

    #[test]
    fn package_digest_ignores_inventory_order_but_not_content() {
        let manifest = json!({"id": "conecta4"});
        let a = InventoryEntry::of("a.svg", b"<svg/>", "image/svg+xml");
        let b = InventoryEntry::of("b.json", b"{}", "application/json");
        let one = package_digest(&manifest, &[a.clone(), b.clone()]);
        assert_eq!(one, package_digest(&manifest, &[b.clone(), a.clone()]));
        let changed = InventoryEntry::of("a.svg", b"<svg />", "image/svg+xml");
        assert_ne!(one, package_digest(&manifest, &[changed, b.clone()]));
        assert_ne!(one, package_digest(&json!({"id": "other"}), &[a, b]));
        let expected = juegoland_protocol::digest_hex(&json!({"manifest": manifest, "files": [
            {"path": "a.svg", "sha256": hex::encode(Sha256::digest(b"<svg/>")), "bytes": 6, "mediaType": "image/svg+xml"},
            {"path": "b.json", "sha256": hex::encode(Sha256::digest(b"{}")), "bytes": 2, "mediaType": "application/json"},
        ]}));
        assert_eq!(one, expected);
    }

    #[test]
    fn private_rules_files_have_no_url_and_lock_order_is_canonical() {
        let public = InventoryEntry::of("images/cover.svg", b"x", "image/svg+xml").locked(&key());
        let private = InventoryEntry::of("rules/data.schema.json", b"{}", "application/json").locked(&key());
        assert_eq!(public.url.as_deref(), Some("/v1/packages/conecta4/1.0.0/images/cover.svg"));
        assert_eq!(private.url, None);
        let package = |id: &str, files: Vec<LockedFile>| LockedPackage {
            id: id.into(),
            version: "1.0.0".into(),
            kind: PackageKind::Game,
            digest: "d".into(),
            files,
        };
        let a = Lock::new(key(), vec![package("z", vec![public.clone(), private.clone()]), package("a", vec![])]);
        let b = Lock::new(key(), vec![package("a", vec![]), package("z", vec![private, public])]);
        assert_eq!(a, b);
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.packages[0].id, "a");
        assert_eq!(a.public_files().count(), 1);
        let text = serde_json::to_value(&a).unwrap();
        assert_eq!(text["packages"][1]["files"][1]["url"], Value::Null, "a private file's url is an explicit null");
    }
}
