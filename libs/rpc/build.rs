//! Compiles `proto/` with protox (pure Rust: no system `protoc`) and generates the tonic
//! clients and servers.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let fds = protox::compile([root.join("juegoland/v1/api.proto")], [&root])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
