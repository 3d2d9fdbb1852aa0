//! The client edge (the gateway's role, and the platform HTTP API in one process).
//!
//! Owns: the JSON protocol loop of a connection (strict decoding, one pending board command
//! per client and match, the sync barrier per subscription, cursors, resyncs) and its two
//! transports, WebSocket at `/v1/ws` and Socket.IO at `/socket.io` (event name = message
//! type, token in the handshake's `auth.token`, the same messages on both), the MCP server
//! through which AI agents play their granted seat (`/v1/mcp`, `mcp.rs` and `agent.rs`), JWT
//! verification, the platform's create/withdraw calls and grants (spectators, agents), the
//! catalog, dev tokens, the web client
//! (the embedded Vite bundle of `clients/web`, `assets.rs`),
//! `/metrics` and health. Must not use: any service crate, storage directly, the actor
//! runtime, or any game by name; it talks to matches only through the match API
//! ([`juegoland_api::Matches`]: the host in one process, the routers in a cluster).

mod agent;
mod assets;
pub mod auth;
mod connection;
mod duplicate_keys;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod gateway;
#[cfg(test)]
mod harness;
mod http;
mod limits;
mod mcp;
pub mod metrics;
mod outbox;
mod server;
mod shutdown;
mod sio;
mod subscription;
mod webhook_routes;
mod ws;

pub use auth::{KeySet, TokenError, Tokens, Verification};
pub use gateway::{BARRIER_MAX_BYTES, BARRIER_MAX_REVISIONS, CURSOR_GRACE, GatewayConfig};
pub use http::{EdgeOptions, EdgeState, router, same_secret};
pub use limits::{EdgeLimits, Refusal, RemoteAddr};
pub use server::serve;
pub use shutdown::Shutdown;
