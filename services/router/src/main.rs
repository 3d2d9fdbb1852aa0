//! `juegoland-router`: parses the command line and calls [`juegoland_router::run`].

use clap::Parser;

// The same allocator as the all-in-one binary (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland_router::Cli::parse();
    let _telemetry = juegoland_telemetry::init("juegoland-router");
    juegoland_router::run(cli).await
}
