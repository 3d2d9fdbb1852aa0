//! Published packages as the engine sees them: a match pins the lock digest of its game's
//! published package at creation ([`crate::PackagePin`]) and is loaded only while the
//! registry still holds that exact publication (spec/packages.md, "Lock and digest").
//!
//! The engine does no IO: a service passes a [`PublishedPackages`] that reads its registry
//! directory (`juegoland-roles`' `PublishedDir`), and the engine asks it only at creation
//! and when a match is loaded.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::registry::{LoadedGame, Registry, version_parts};
use crate::state::{GameKey, MatchState, PackagePin};

/// Where the engine learns which packages are published.
pub trait PublishedPackages: Send + Sync {
    /// The lock digest of the published package `id@version`, or `None` when the registry
    /// holds no such publication. An unreadable or inconsistent publication is an error
    /// (its message says what is wrong).
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String>;

    /// Every published version of the game `id`, in any order; none when nothing of it is
    /// published. An unreadable or inconsistent publication is an error.
    fn game_versions(&self, id: &str) -> Result<Vec<PublishedGame>, String>;
}

/// One published version of a game's package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedGame {
    /// The package version.
    pub version: String,
    /// The rules version its manifest names: the module that decides its matches.
    pub rules_version: String,
    pub lock_digest: String,
}

/// What a creation asks for: a game and, optionally, its rules version and the published
/// package version to pin. What is left open is chosen by [`choose`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GameChoice {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_version: Option<String>,
}

impl From<&GameKey> for GameChoice {
    fn from(key: &GameKey) -> Self {
        Self { id: key.id.clone(), rules_version: Some(key.rules_version.clone()), package_version: None }
    }
}

impl From<GameKey> for GameChoice {
    fn from(key: GameKey) -> Self {
        (&key).into()
    }
}

impl GameChoice {
    /// Whether a match of `key` is what this choice asks for (a creation retried with the
    /// same id finds the match the first attempt created).
    pub fn admits(&self, key: &GameKey, package: Option<&PackagePin>) -> bool {
        key.id == self.id
            && self.rules_version.as_ref().is_none_or(|v| *v == key.rules_version)
            && self.package_version.as_ref().is_none_or(|v| package.is_some_and(|p| p.version == *v))
    }
}

/// Why a [`GameChoice`] names nothing this engine can create.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("no game {0:?}")]
    UnknownGame(String),
    #[error("no rules version {version:?} of {id:?}")]
    UnknownRulesVersion { id: String, version: String },
    #[error("no published package {id}@{version}")]
    UnknownPackageVersion { id: String, version: String },
    #[error(
        "package {id}@{version} is published for rules {published}, not {asked}: leave rulesVersion out, or ask for a package of those rules"
    )]
    RulesMismatch { id: String, version: String, published: String, asked: String },
    #[error("package {id}@{version} needs rules {rules_version}, which this engine does not run")]
    RulesNotRegistered { id: String, version: String, rules_version: String },
    #[error("read the published packages of {id}: {message}")]
    Unreadable { id: String, message: String },
}

/// The rules module and the publication a match created on `choice` pins.
///
/// - A package version asked for is pinned, and its manifest's rules version decides the
///   match (a rules version asked for too must be the same).
/// - A rules version asked for alone pins the newest package version published for it, or
///   nothing when none is (an unpublished game, or an engine without a registry).
/// - Neither: the newest published package whose rules this engine runs, else the newest
///   registered rules version, unpinned. Publishing is what moves new matches to a version;
///   a running match keeps the publication it pinned.
pub fn choose(
    registry: &Registry,
    packages: Option<&dyn PublishedPackages>,
    choice: &GameChoice,
) -> Result<(Arc<LoadedGame>, Option<PackagePin>), ChoiceError> {
    let id = &choice.id;
    let published = match packages {
        None => Vec::new(),
        Some(p) => {
            let mut v = p.game_versions(id).map_err(|message| ChoiceError::Unreadable { id: id.clone(), message })?;
            v.sort_by_key(|p| std::cmp::Reverse(version_parts(&p.version)));
            v
        }
    };
    let module =
        |rules_version: &str| registry.get(&GameKey { id: id.clone(), rules_version: rules_version.to_owned() });
    let pin = |p: &PublishedGame| PackagePin {
        id: id.clone(),
        version: p.version.clone(),
        lock_digest: p.lock_digest.clone(),
    };
    if registry.latest(id).is_none() {
        return Err(ChoiceError::UnknownGame(id.clone()));
    }
    match (&choice.rules_version, &choice.package_version) {
        (asked, Some(version)) => {
            let p = published
                .iter()
                .find(|p| p.version == *version)
                .ok_or_else(|| ChoiceError::UnknownPackageVersion { id: id.clone(), version: version.clone() })?;
            if let Some(asked) = asked.as_ref().filter(|a| **a != p.rules_version) {
                return Err(ChoiceError::RulesMismatch {
                    id: id.clone(),
                    version: version.clone(),
                    published: p.rules_version.clone(),
                    asked: asked.clone(),
                });
            }
            let game = module(&p.rules_version).ok_or_else(|| ChoiceError::RulesNotRegistered {
                id: id.clone(),
                version: version.clone(),
                rules_version: p.rules_version.clone(),
            })?;
            Ok((game.clone(), Some(pin(p))))
        }
        (Some(rules_version), None) => {
            let game = module(rules_version)
                .ok_or_else(|| ChoiceError::UnknownRulesVersion { id: id.clone(), version: rules_version.clone() })?;
            Ok((game.clone(), published.iter().find(|p| p.rules_version == *rules_version).map(pin)))
        }
        (None, None) => match published.iter().find_map(|p| module(&p.rules_version).map(|g| (g, p))) {
            Some((game, p)) => Ok((game.clone(), Some(pin(p)))),
            None => Ok((registry.latest(id).expect("checked above").clone(), None)),
        },
    }
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
