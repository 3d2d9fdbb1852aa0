//! The cluster's gRPC wire and its one border to the domain.
//!
//! Owns: the code generated from `proto/juegoland/v1/api.proto` ([`pb`]), the mapping
//! between the node's typed failures and `tonic::Status` ([`RpcError`]), and the
//! conversions of every request field into domain types (UUIDs, seats, game keys, the
//! protocol's strictly decoded JSON). Validation happens here, once, on receipt.
//! Must not use: the store, the bus, the actors or any service crate; it knows no game.

mod convert;
mod error;

pub use convert::*;
pub use error::{ERROR_METADATA, REFUSAL_METADATA, RpcError};

/// The generated messages, clients and servers of `juegoland.v1`.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("juegoland.v1");
}
