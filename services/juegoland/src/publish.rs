//! `juegoland publish DIR`: runs the seven publish steps of spec/packages.md on a package
//! directory and publishes it into the registry directory (`libs/packages`' `Publisher`),
//! checking a game against the rules module compiled into this binary under its id and
//! rules version, and running that module through `juegoland_conformance::check_module`.

use std::path::PathBuf;
use std::sync::Arc;

use juegoland_core::Registry;
use juegoland_packages::plan::EffectRegistry;
use juegoland_packages::publish::Publisher;
use juegoland_sdk::ErasedGame;
use juegoland_sdk::components::CustomRegistry;

/// Where published packages live: `juegoland publish` writes there, `juegoland dev` serves
/// their public files.
#[derive(clap::Args, Debug, Clone)]
pub struct RegistryConfig {
    /// The registry directory of published packages (`<registry>/<id>/<version>/`).
    #[arg(long, env = "JUEGOLAND_REGISTRY", default_value = "data/packages")]
    pub registry: PathBuf,
}

/// Settings of `juegoland publish`.
#[derive(clap::Args, Debug, Clone)]
pub struct PublishConfig {
    /// The package directory: a game's (`game.json`) or a library's (`package.json`); its
    /// dependencies must already be published in the registry.
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryConfig,
}

/// Publishes `config.dir` and prints where, with the package and lock digests; a game's
/// rules module is looked up in `registry` (the binary passes the catalog's).
pub fn run(config: PublishConfig, registry: &Registry) -> anyhow::Result<()> {
    let modules = |id: &str, rules_version: &str| -> Option<Arc<dyn ErasedGame>> {
        registry
            .games()
            .find(|g| g.descriptor().id == id && g.descriptor().rules_version == rules_version)
            .map(|g| g.game.clone())
    };
    // No compiled-in game declares a custom component kind; a game that does registers its
    // validator here, and the publisher refuses the kind until then.
    let customs = CustomRegistry::new();
    let effects = EffectRegistry::standard();
    let publisher = Publisher {
        registry: config.registry.registry.clone(),
        modules: &modules,
        tests: &juegoland_conformance::check_module,
        customs: &customs,
        effects: &effects,
    };
    let publication = publisher.publish(&config.dir)?;
    let key = juegoland_packages::lock::PackageKey { id: publication.id.clone(), version: publication.version.clone() };
    println!("published {key} ({}) in {}", publication.kind.name(), publisher.package_dir(&key).display());
    println!("package digest {}", publication.package_digest);
    println!("lock digest    {}", publication.lock_digest);
    Ok(())
}
