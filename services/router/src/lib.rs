//! The cluster's router process (`juegoland-router`), as deployed: the catalog of compiled-in
//! games and [`juegoland_roles::run_router`]. `juegoland router` runs the same code.
//!
//! Owns: nothing but the composition. Must not use: another service crate.

use anyhow::Context;

/// The command line of `juegoland-router` (every flag also reads an environment variable).
#[derive(clap::Parser, Debug)]
#[command(name = "juegoland-router", version, about = "The Juegoland cluster router")]
pub struct Cli {
    #[command(flatten)]
    pub config: juegoland_roles::RouterConfig,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let registry = juegoland_catalog::registry().context("register the games")?;
    juegoland_roles::run_router(cli.config, registry).await
}
