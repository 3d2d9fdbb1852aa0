//! `juegoland`: the all-in-one binary. Parses the command line and calls [`juegoland::run`].

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = juegoland::Cli::parse();
    juegoland::init_tracing();
    juegoland::run(cli).await
}
