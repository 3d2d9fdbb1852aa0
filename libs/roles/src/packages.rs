//! The package registry a node or the all-in-one reads: the directory `juegoland publish`
//! writes (`<registry>/<id>/<version>/`), seen by the engine through
//! [`juegoland_core::PublishedPackages`].

use std::path::PathBuf;

use juegoland_packages::lock::PackageKey;
use juegoland_packages::public::published_lock;

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
}
