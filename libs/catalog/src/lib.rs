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
    r.register(juegoland_sdk::erase(juegoland_brisca::Brisca))?;
    r.register(juegoland_sdk::erase(juegoland_oca::Oca))?;
    r.register(juegoland_sdk::erase(juegoland_serpientes::Serpientes))?;
    r.register(juegoland_sdk::erase(juegoland_laberinto::Laberinto))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    /// The digest every compiled-in module declares. Matches pin it at creation and refuse to
    /// load under another one, so a contract (descriptor or schema) change under an existing
    /// rules version would strand every live match pinned to it. Schema annotations (doc
    /// comments) count: the digest is of the whole declared contract.
    const PINNED: &[(&str, &str, &str)] = &[
        ("brisca", "1.0.0", "84e6d09ba225b44aa251b4f9bbec822e8bb584de13ef31f2e83120cef2712c92"),
        ("conecta4", "1.0.0", "78b75421ad6b3bc2ba09f9d43a9a5bc55998d1926cd02c48053efe096c58b340"),
        ("hundido", "1.0.0", "e5a274726c785d07bb132aa0c13bb9ad05d01ec7413044724d003c0db0141550"),
        ("laberinto", "1.0.0", "c109e9d3a570bd540815dff3be3dc5ce9f66d6a0a8d2f878bce0be8151901b61"),
        ("oca", "1.0.0", "70151b98cc891bd1aee9594a9760acee7d6d4436f7c237e9f9e15f95e99bdb74"),
        ("serpientes", "1.0.0", "f7572b36f4293a79309be48dd2dc343203942fba8a15149911207b6b60d81cbe"),
        ("solitario", "1.0.0", "23f1bdcfafddda873c35a2a3a8f2f9cb72286a6d2001c3c09f0111724455a497"),
    ];

    #[test]
    fn a_module_contract_changes_only_with_a_new_rules_version() {
        let registry = super::registry().unwrap();
        let found: Vec<(String, String, String)> = registry
            .games()
            .map(|g| (g.descriptor().id.clone(), g.descriptor().rules_version.clone(), g.digest.clone()))
            .collect();
        let expected: Vec<(String, String, String)> =
            PINNED.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
        assert_eq!(
            found, expected,
            "a rules module's contract changed: register the change under a new rules version beside the old \
             module; only a module that no stored match was ever pinned to may change its digest here"
        );
    }
}
