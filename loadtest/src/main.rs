//! `juegoland-loadtest`: see the library (`juegoland_loadtest`) and `loadtest/README.md`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = juegoland_loadtest::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if let Some(summary) = runtime.block_on(juegoland_loadtest::execute(cli))?
        && !summary.passed()
    {
        eprintln!("the run FAILED: no moves, or the audit found problems");
        std::process::exit(1);
    }
    Ok(())
}
