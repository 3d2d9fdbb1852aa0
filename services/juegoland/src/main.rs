//! `juegoland`: the all-in-one binary. Parses the command line and calls [`juegoland::run`].

use clap::Parser;

// mimalloc: the engine's hot path allocates many small JSON nodes, and the measured pipeline
// is about 30% faster with it than with the system allocator (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Fault injection for the crash and delivery tests: the failpoints named in FAILPOINTS
    // (`libs/actors`'s `failpoints` feature, on in this binary only). Unset, nothing happens.
    let _failpoints = fail::FailScenario::setup();
    let cli = juegoland::Cli::parse();
    let _telemetry = juegoland::init_tracing(&cli.command);
    juegoland::run(cli).await
}
