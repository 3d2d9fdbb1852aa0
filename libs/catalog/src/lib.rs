//! The catalog: every game compiled into Juegoland's processes. The all-in-one, the nodes
//! and the routers register the same games from here, so a match created through any
//! router runs on any node.
//!
//! Owns: the list of games. Must not use: IO, or any service crate.

use juegoland_core::{Registry, RegistryError};

/// A registry of every compiled-in game.
pub fn registry() -> Result<Registry, RegistryError> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4))?;
    r.register(juegoland_sdk::erase(juegoland_hundido::Hundido))?;
    r.register(juegoland_sdk::erase(juegoland_solitario::Solitario))?;
    Ok(r)
}
