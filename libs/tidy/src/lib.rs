//! The architecture guard of the Juegoland workspace, run by plain `cargo test` (the
//! "tidy" style of rust-analyzer).
//!
//! Owns the architecture checks and the data they enforce:
//!
//! - [`layers`]: the layer table (which directory is which layer, and which layer may
//!   depend on which), mirrored from `shared/style.md` "The layers";
//! - [`graph`]: a small dependency graph model, built from `cargo metadata` or by hand in
//!   tests, so every check can be shown to fail on a synthetic workspace;
//! - [`deps`]: the direction rule, the purity of the rules crates (the normal dependency
//!   closure of `sdk`, `games/*`, `protocol` and `core` reaches no runtime, clock, network
//!   or OS-randomness crate) and the ratchet of known exceptions, which only shrinks;
//! - [`clippy`]: the `disallowed-methods`/`disallowed-types` every pure crate's nearest
//!   `clippy.toml` must carry;
//! - [`manifest`]: `[lints] workspace = true`, versions only in `[workspace.dependencies]`,
//!   and a `//!` doc comment at every crate root;
//! - [`side`]: the same rules for the side workspaces (`fuzz/`), which `cargo metadata` on
//!   the product does not see, plus their lints and lock agreeing with the product's.
//!
//! The ratchet table itself lives next to the tests that use it, in `tests/it/main.rs`.
//! Every failure message says how to fix the problem, not only what broke.
//!
//! Must not: be a normal or build dependency of any crate (it is dev-only; the direction
//! check fails such an edge), or touch the network beyond what `cargo metadata` does.

pub mod clippy;
pub mod deps;
pub mod graph;
pub mod layers;
pub mod manifest;
pub mod side;

use std::path::PathBuf;

/// The workspace root: the directory holding the root `Cargo.toml`.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // libs/tidy → libs → the root.
    here.ancestors().nth(2).map(PathBuf::from).unwrap_or(here)
}

/// Where the ratchet table lives, for failure messages.
pub const RATCHET_LOCATION: &str = "RATCHET in libs/tidy/tests/it/main.rs";

/// Where the layer table lives, for failure messages.
pub const LAYERS_LOCATION: &str = "libs/tidy/src/layers.rs (`layer_of`)";
