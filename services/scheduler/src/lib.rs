//! The cluster's deadline scheduler process (`juegoland-scheduler`), as deployed: the catalog
//! of compiled-in games and [`juegoland_roles::run_scheduler`], which also delivers the
//! configured webhooks. `juegoland scheduler` runs the same code.
//!
//! Owns: nothing but the composition. Must not use: another service crate.

use anyhow::Context;

/// The command line of `juegoland-scheduler` (every flag also reads an environment variable).
#[derive(clap::Parser, Debug)]
#[command(name = "juegoland-scheduler", version, about = "The Juegoland deadline scheduler")]
pub struct Cli {
    #[command(flatten)]
    pub config: juegoland_roles::SchedulerConfig,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let registry = juegoland_catalog::registry().context("register the games")?;
    juegoland_roles::run_scheduler(cli.config, registry).await
}
