//! `juegoland-scheduler`: parses the command line and calls [`juegoland_scheduler::run`].

use clap::Parser;

// The same allocator as the other binaries (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland_scheduler::Cli::parse();
    // A deployed service logs JSON lines unless `JUEGOLAND_LOG_FORMAT=text`.
    let _telemetry = juegoland_telemetry::init_with("juegoland-scheduler", juegoland_telemetry::LogFormat::Json);
    juegoland_scheduler::run(cli).await
}
