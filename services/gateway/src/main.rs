//! `juegoland-gateway`: parses the command line and calls [`juegoland_gateway::run`].

use clap::Parser;

// The same allocator as the all-in-one binary (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland_gateway::Cli::parse();
    // A deployed service logs JSON lines unless `JUEGOLAND_LOG_FORMAT=text`.
    let _telemetry = juegoland_telemetry::init_with("juegoland-gateway", juegoland_telemetry::LogFormat::Json);
    juegoland_gateway::run(cli).await
}
