//! The client edge (the gateway's role, and the platform HTTP API in one process).
//!
//! Owns: the JSON protocol loop of a connection (strict decoding, one pending board command
//! per client and match, the sync barrier per subscription, cursors, resyncs) and its two
//! transports, WebSocket at `/v1/ws` and Socket.IO at `/socket.io` (event name = message
//! type, token in the handshake's `auth.token`, the same messages on both), JWT
//! verification, the platform's create/withdraw calls, the catalog, dev tokens, the page,
//! `/metrics` and health. Must not use: any service crate, storage directly, the actor
//! runtime, or any game by name; it talks to matches only through the match API
//! ([`juegoland_api::Matches`]: the host in one process, the routers in a cluster).

pub mod auth;
mod connection;
mod gateway;
#[cfg(test)]
mod harness;
mod http;
pub mod metrics;
mod outbox;
mod shutdown;
mod sio;
mod subscription;
mod ws;

pub use auth::Tokens;
pub use gateway::{BARRIER_MAX_BYTES, BARRIER_MAX_REVISIONS, CURSOR_GRACE, GatewayConfig};
pub use http::{EdgeOptions, EdgeState, listener, router};
pub use shutdown::Shutdown;
