//! `juegoland-gateway`: parses the command line and calls [`juegoland_gateway::run`].

use clap::Parser;

// The same allocator as the all-in-one binary (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland_gateway::Cli::parse();
    let _telemetry = juegoland_telemetry::init("juegoland-gateway");
    juegoland_gateway::run(cli).await
}
