//! The cluster's node process (`juegoland-node`), as deployed: the catalog of compiled-in
//! games and [`juegoland_roles::run_node`]. `juegoland node` runs the same code.
//!
//! Owns: nothing but the composition. Must not use: another service crate.

use anyhow::Context;

/// The command line of `juegoland-node` (every flag also reads an environment variable).
#[derive(clap::Parser, Debug)]
#[command(name = "juegoland-node", version, about = "The Juegoland cluster node")]
pub struct Cli {
    #[command(flatten)]
    pub config: juegoland_roles::NodeConfig,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let registry = juegoland_catalog::registry().context("register the games")?;
    juegoland_roles::run_node(cli.config, registry).await
}
