//! The client edge (the gateway's role, and the platform HTTP API in one process).
//!
//! Owns: the WebSocket endpoint speaking the JSON protocol (strict decoding, one pending
//! board command per client and match, the sync barrier per subscription, cursors,
//! resyncs), JWT verification, the platform's create/withdraw calls, the catalog, dev
//! tokens, the page, `/metrics` and health. Must not use: any service crate, storage
//! directly, or any game by name; it talks to matches only through the [`Host`].
//!
//! [`Host`]: juegoland_actors::Host

pub mod auth;
mod http;
pub mod metrics;
mod ws;

pub use auth::Tokens;
pub use http::{EdgeOptions, EdgeState, router};
pub use ws::GatewayConfig;
