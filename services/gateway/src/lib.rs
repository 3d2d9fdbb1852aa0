//! The cluster's gateway process (`juegoland-gateway`), as deployed: the catalog of compiled-in
//! games and [`juegoland_roles::run_gateway`]. `juegoland gateway` runs the same code.
//!
//! Owns: nothing but the composition. Must not use: another service crate.

use anyhow::Context;

/// The command line of `juegoland-gateway` (every flag also reads an environment variable).
#[derive(clap::Parser, Debug)]
#[command(name = "juegoland-gateway", version, about = "The Juegoland cluster gateway")]
pub struct Cli {
    #[command(flatten)]
    pub config: juegoland_roles::GatewayConfig,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let registry = juegoland_catalog::registry().context("register the games")?;
    juegoland_roles::run_gateway(cli.config, registry).await
}
