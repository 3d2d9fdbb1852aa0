//! `juegoland-router`: parses the command line and calls [`juegoland_router::run`].

use clap::Parser;

// The same allocator as the all-in-one binary (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland_router::Cli::parse();
    // A deployed service logs JSON lines unless `JUEGOLAND_LOG_FORMAT=text`.
    let _telemetry = juegoland_telemetry::init_with("juegoland-router", juegoland_telemetry::LogFormat::Json);
    juegoland_router::run(cli).await
}
