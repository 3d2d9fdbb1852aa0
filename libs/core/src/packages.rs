//! Published packages as the engine sees them: a match pins the lock digest of its game's
//! published package at creation ([`crate::PackagePin`]) and is loaded only while the
//! registry still holds that exact publication (spec/packages.md, "Lock and digest").
//!
//! The engine does no IO: a service passes a [`PublishedPackages`] that reads its registry
//! directory (`juegoland-roles`' `PublishedDir`), and the engine asks it only at creation
//! and when a match is loaded.

use crate::state::{MatchState, PackagePin};

/// Where the engine learns which packages are published.
pub trait PublishedPackages: Send + Sync {
    /// The lock digest of the published package `id@version`, or `None` when the registry
    /// holds no such publication. An unreadable or inconsistent publication is an error
    /// (its message says what is wrong).
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String>;
}

/// Why a pinned match may not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error(
        "match {match_id} is pinned to package {id}@{version}, but this engine has no package registry: start it with the registry the package was published in"
    )]
    NoRegistry { match_id: uuid::Uuid, id: String, version: String },
    #[error(
        "match {match_id} is pinned to package {id}@{version}, which is not published in the registry: publish that exact version again or restore the registry"
    )]
    Missing { match_id: uuid::Uuid, id: String, version: String },
    #[error(
        "match {match_id} is pinned to package {id}@{version} with lock digest {pinned}, but the registry's publication has lock digest {published}: a published package never changes; restore the publication the match was created with"
    )]
    Changed { match_id: uuid::Uuid, id: String, version: String, pinned: String, published: String },
    #[error("match {match_id}: the published package {id}@{version} cannot be read: {message}")]
    Unreadable { match_id: uuid::Uuid, id: String, version: String, message: String },
    #[error(
        "match {match_id} of game {game} {game_version} is pinned to another game's package {id}@{version}: its stored state is inconsistent"
    )]
    Mismatched { match_id: uuid::Uuid, game: String, game_version: String, id: String, version: String },
}

/// The pin a match created now records: the lock digest of its game's published package, or
/// `None` when there is no registry or the package is not published in it.
pub fn pin_for(
    packages: Option<&dyn PublishedPackages>,
    id: &str,
    version: &str,
) -> Result<Option<PackagePin>, String> {
    let Some(packages) = packages else { return Ok(None) };
    let digest = packages
        .lock_digest(id, version)
        .map_err(|message| format!("read the published package {id}@{version}: {message}"))?;
    Ok(digest.map(|lock_digest| PackagePin { id: id.to_owned(), version: version.to_owned(), lock_digest }))
}

/// Checks a stored match's pin against the registry: an unpinned match always passes; a
/// pinned one needs the exact publication it was created with.
pub fn check_pin(packages: Option<&dyn PublishedPackages>, state: &MatchState) -> Result<(), PinError> {
    let Some(pin) = &state.package else { return Ok(()) };
    let (match_id, id, version) = (state.match_id, pin.id.clone(), pin.version.clone());
    if pin.id != state.game.id || pin.version != state.game_version {
        return Err(PinError::Mismatched {
            match_id,
            game: state.game.id.clone(),
            game_version: state.game_version.clone(),
            id,
            version,
        });
    }
    let Some(packages) = packages else { return Err(PinError::NoRegistry { match_id, id, version }) };
    match packages.lock_digest(&pin.id, &pin.version) {
        Err(message) => Err(PinError::Unreadable { match_id, id, version, message }),
        Ok(None) => Err(PinError::Missing { match_id, id, version }),
        Ok(Some(published)) if published != pin.lock_digest => {
            Err(PinError::Changed { match_id, id, version, pinned: pin.lock_digest.clone(), published })
        }
        Ok(Some(_)) => Ok(()),
    }
}
