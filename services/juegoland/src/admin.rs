//! `juegoland migrate-match` and `juegoland restore-match`: the state-migration admin
//! operation over a store no server is serving (the embedded store's directory lock makes
//! sure of it; stop the nodes first on PostgreSQL). The plan, its validation and the restore
//! check are the engine's (`juegoland_core::migration`); this module reads the match, keeps
//! the backup file a restore needs, and writes with `Store::replace_snapshot`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use juegoland_core::{Engine, GameKey, Migration, Registry};
use juegoland_store::Store;

use crate::StoreConfig;
use crate::publish::RegistryConfig;

/// Settings of `juegoland migrate-match`.
#[derive(clap::Args, Debug, Clone)]
pub struct MigrateMatchConfig {
    #[command(flatten)]
    pub store: StoreConfig,
    #[command(flatten)]
    pub packages: RegistryConfig,
    /// The match to migrate.
    #[arg(long = "match")]
    pub match_id: uuid::Uuid,
    /// The registered rules version of the same game to migrate it to.
    #[arg(long)]
    pub rules_version: String,
    /// Where to write the backup `juegoland restore-match` needs (must not exist).
    #[arg(long)]
    pub backup: PathBuf,
}

/// Settings of `juegoland restore-match`.
#[derive(clap::Args, Debug, Clone)]
pub struct RestoreMatchConfig {
    #[command(flatten)]
    pub store: StoreConfig,
    #[command(flatten)]
    pub packages: RegistryConfig,
    /// The backup `juegoland migrate-match` wrote.
    #[arg(long)]
    pub backup: PathBuf,
}

/// The engine an admin operation validates with: `registry`'s rules and the package registry.
pub fn engine(registry: Registry, packages: &RegistryConfig) -> Engine {
    Engine::new(Arc::new(registry)).with_packages(Arc::new(juegoland_roles::PublishedDir::new(&packages.registry)))
}

/// The match's current state, written as its snapshot if revisions follow the stored one
/// (so the replacement's compare-and-set is against the state the plan was made from).
async fn current(
    store: &dyn Store,
    engine: &Engine,
    match_id: uuid::Uuid,
) -> anyhow::Result<juegoland_core::MatchState> {
    let stored =
        store.load(match_id).await.context("load the match")?.with_context(|| format!("no match {match_id}"))?;
    let live = engine.restore(stored).map_err(|f| anyhow::anyhow!("restore match {match_id}: {}", f.0))?;
    store.snapshot(live.state()).await.context("write the match's snapshot")?;
    Ok(live.state().clone())
}

/// Migrates `match_id` to `rules_version`, writing the backup to `backup` first.
pub async fn migrate_match(
    store: &dyn Store,
    engine: &Engine,
    match_id: uuid::Uuid,
    rules_version: &str,
    backup: &Path,
) -> anyhow::Result<Migration> {
    let source = current(store, engine, match_id).await?;
    let target = GameKey { id: source.game.id.clone(), rules_version: rules_version.to_owned() };
    let migration = engine.migrate(&source, &target)?;
    let text = serde_json::to_vec_pretty(&migration).context("encode the backup")?;
    let mut file = std::fs::File::create_new(backup)
        .with_context(|| format!("create the backup {} (it must not exist)", backup.display()))?;
    std::io::Write::write_all(&mut file, &text).and_then(|()| file.sync_all()).context("write the backup")?;
    store.replace_snapshot(&migration.source, &migration.target).await.context("write the migrated match")?;
    Ok(migration)
}

/// Restores the match `backup` holds to its state before the migration.
pub async fn restore_match(store: &dyn Store, engine: &Engine, backup: &Path) -> anyhow::Result<Migration> {
    let bytes = std::fs::read(backup).with_context(|| format!("read the backup {}", backup.display()))?;
    let migration: Migration = serde_json::from_slice(&bytes).context("decode the backup")?;
    let current = current(store, engine, migration.target.match_id).await?;
    let source = engine.restore_migration(&current, &migration)?;
    store.replace_snapshot(&current, &source).await.context("write the restored match")?;
    Ok(migration)
}

pub async fn migrate_command(config: MigrateMatchConfig, registry: Registry) -> anyhow::Result<()> {
    let store = config.store.open_existing().await?;
    let engine = engine(registry, &config.packages);
    let m = migrate_match(store.as_ref(), &engine, config.match_id, &config.rules_version, &config.backup).await?;
    println!(
        "migrated {} from {} {} to {} at revision {}; backup in {}",
        config.match_id,
        m.source.game.id,
        m.source.game.rules_version,
        m.target.game.rules_version,
        m.target.revision,
        config.backup.display()
    );
    Ok(())
}

pub async fn restore_command(config: RestoreMatchConfig, registry: Registry) -> anyhow::Result<()> {
    let store = config.store.open_existing().await?;
    let engine = engine(registry, &config.packages);
    let m = restore_match(store.as_ref(), &engine, &config.backup).await?;
    println!("restored {} to {} {}", m.source.match_id, m.source.game.id, m.source.game.rules_version);
    Ok(())
}
