//! The integration tests of `juegoland-packages`.

mod broken;
mod catalog;
mod plans;
mod publish;
mod rejections;
mod schemas;
mod support;

/// Regenerates every generated file this crate's tests check.
const REGENERATE: &str = "UPDATE_SCHEMAS=1 cargo test -p juegoland-packages";
