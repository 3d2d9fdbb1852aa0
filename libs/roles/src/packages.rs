//! The package registry a node or the all-in-one reads: the directory `juegoland publish`
//! writes (`<registry>/<id>/<version>/`), seen by the engine through
//! [`juegoland_core::PublishedPackages`].

use std::path::PathBuf;

use juegoland_packages::lock::PackageKey;
use juegoland_packages::public::{PublicError, published_lock, published_versions};

/// A registry directory of published packages. A missing directory publishes nothing.
#[derive(Clone, Debug)]
pub struct PublishedDir {
    root: PathBuf,
}

impl PublishedDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }
}

impl juegoland_core::PublishedPackages for PublishedDir {
    /// Reads the package's lock and publication record (two small files, not the package's
    /// files) each time: a publication removed or replaced is seen at the next activation.
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String> {
        let key = PackageKey { id: id.to_owned(), version: version.to_owned() };
        let lock = published_lock(&self.root, &key).map_err(|r| r.to_string())?;
        Ok(lock.map(|l| l.digest()))
    }

    /// Lists `<registry>/<id>/` and reads each version's lock, record and manifest: what
    /// `GET /v1/packages/{id}` lists.
    fn game_versions(&self, id: &str) -> Result<Vec<juegoland_core::PublishedGame>, String> {
        let versions = match published_versions(&self.root, id) {
            Ok(versions) => versions,
            Err(PublicError::NotFound) => return Ok(Vec::new()),
            Err(e) => return Err(e.to_string()),
        };
        Ok(versions
            .into_iter()
            .filter_map(|v| {
                let rules_version = v.rules_version?;
                Some(juegoland_core::PublishedGame { version: v.version, rules_version, lock_digest: v.lock_digest })
            })
            .collect())
    }
}
