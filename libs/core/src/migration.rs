//! The state-migration admin operation (spec/engine.md, "Versions"): moving a stored match
//! from the rules version it is pinned to (the source) to another registered version of the
//! same game (the target) — explicitly, validated, and reversibly; never an alias that reads
//! old data with new rules.
//!
//! [`Engine::migrate`] plans it: the source must load (its rules and its publication), the
//! target must be registered, of the same game and state schema version (a state
//! transformation between schema versions is not registered by any game yet, so the state
//! carries over unchanged), published when the source was pinned to a publication, and the
//! migrated state must load and validate under the target rules. The migrated state pins the
//! target and remembers the source in a [`MigrationMark`], so replay decides the revisions up
//! to the migration with the source rules. [`Engine::restore_migration`] gives the source
//! back while the match is exactly as migrated. A store writes either with
//! `Store::replace_snapshot`, a compare-and-set at the same revision.

use serde::{Deserialize, Serialize};

use crate::pipeline::{Engine, check_position};
use crate::state::{GameKey, MatchState};

/// A migration a match went through: the rules it was pinned to up to `revision`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationMark {
    /// The revision whose state was migrated: it and every earlier one are the source's.
    pub revision: u64,
    pub from: GameKey,
    pub from_rules_digest: String,
}

/// A planned migration: the match's state as it was (`source`, what a restore writes back)
/// and as the target rules take it (`target`). Serializable, so an operator keeps it as the
/// backup a restore needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Migration {
    pub source: MatchState,
    pub target: MatchState,
}

/// Why a migration or a restore is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    #[error("no rules module {} {} is registered", .0.id, .0.rules_version)]
    UnknownTarget(GameKey),
    #[error("match {match_id} is a {game} match: it cannot migrate to {target}")]
    OtherGame { match_id: uuid::Uuid, game: String, target: String },
    #[error("match {match_id} is already on rules {rules_version}")]
    SameVersion { match_id: uuid::Uuid, rules_version: String },
    #[error(
        "match {match_id}: rules {from} have state schema version {from_schema} and {to} have {to_schema}; no state transformation between them is registered"
    )]
    NoTransform { match_id: uuid::Uuid, from: String, to: String, from_schema: u32, to_schema: u32 },
    #[error(
        "match {match_id}: no package of {id} is published for rules {version} in the registry: publish one before migrating"
    )]
    TargetUnpublished { match_id: uuid::Uuid, id: String, version: String },
    #[error("match {match_id}: the {which} state does not load: {message}")]
    Invalid { match_id: uuid::Uuid, which: &'static str, message: String },
    #[error(
        "match {match_id} is no longer as it was migrated (now at revision {revision} on rules {rules_version}): restoring would lose what happened since"
    )]
    Changed { match_id: uuid::Uuid, revision: u64, rules_version: String },
}

impl Engine {
    /// Plans the migration of `source` (a match's current state) to the rules `target`.
    pub fn migrate(&self, source: &MatchState, target: &GameKey) -> Result<Migration, MigrationError> {
        let match_id = source.match_id;
        let invalid = |which: &'static str| move |message: String| MigrationError::Invalid { match_id, which, message };
        self.load(source.clone()).map_err(|f| invalid("source")(f.0))?;
        let module = self.registry.get(target).ok_or_else(|| MigrationError::UnknownTarget(target.clone()))?;
        if target.id != source.game.id {
            return Err(MigrationError::OtherGame {
                match_id,
                game: source.game.id.clone(),
                target: target.id.clone(),
            });
        }
        if target.rules_version == source.game.rules_version {
            return Err(MigrationError::SameVersion { match_id, rules_version: target.rules_version.clone() });
        }
        let (from, to) = (self.registry.get(&source.game).map(|g| g.descriptor()), module.descriptor());
        let from_schema = from.map_or(0, |d| d.state_schema_version);
        if from_schema != to.state_schema_version {
            return Err(MigrationError::NoTransform {
                match_id,
                from: source.game.rules_version.clone(),
                to: target.rules_version.clone(),
                from_schema,
                to_schema: to.state_schema_version,
            });
        }
        // The target pins the newest package version published for its rules.
        let choice = crate::packages::GameChoice::from(target);
        let (_, package) = crate::packages::choose(&self.registry, self.packages.as_deref(), &choice)
            .map_err(|e| invalid("target")(e.to_string()))?;
        // A pinned match stays pinned; an unpinned one is pinned if its target is published.
        if package.is_none() && source.package.is_some() {
            return Err(MigrationError::TargetUnpublished {
                match_id,
                id: to.id.clone(),
                version: target.rules_version.clone(),
            });
        }
        let mut migrations = source.migrations.clone();
        migrations.push(MigrationMark {
            revision: source.revision,
            from: source.game.clone(),
            from_rules_digest: source.rules_digest.clone(),
        });
        let migrated = MatchState {
            game: target.clone(),
            game_version: package.as_ref().map_or_else(|| to.version.clone(), |p| p.version.clone()),
            rules_digest: module.digest.clone(),
            package,
            migrations,
            ..source.clone()
        };
        // Validation: the target rules decode the state and accept it as a position they
        // could have decided (invariants, schemas, limits).
        let live = self.load(migrated.clone()).map_err(|f| invalid("migrated")(f.0))?;
        check_position(&live.game, &live.loaded, &live.state.position.data, &self.limits)
            .map_err(|f| invalid("migrated")(f.0))?;
        Ok(Migration { source: source.clone(), target: migrated })
    }

    /// The state a restore writes back: `migration.source`, while `current` (the match's
    /// current state) is exactly `migration.target` and the source still loads.
    pub fn restore_migration(&self, current: &MatchState, migration: &Migration) -> Result<MatchState, MigrationError> {
        if *current != migration.target {
            return Err(MigrationError::Changed {
                match_id: current.match_id,
                revision: current.revision,
                rules_version: current.game.rules_version.clone(),
            });
        }
        let source = &migration.source;
        self.load(source.clone()).map_err(|f| MigrationError::Invalid {
            match_id: source.match_id,
            which: "source",
            message: f.0,
        })?;
        Ok(source.clone())
    }
}
