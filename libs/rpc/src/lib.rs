//! The cluster's gRPC wire and its one border to the domain.
//!
//! Owns: the code generated from `proto/juegoland/v1/api.proto` ([`pb`]), the mapping
//! between the match API's [`MatchError`](juegoland_api::MatchError) and `tonic::Status`
//! ([`to_status`], [`from_status`]), and the conversions of every [`MatchRequest`] and
//! [`MatchReply`] to and from the wire ([`request`], [`reply`]), with each field turned into
//! domain types (UUIDs, seats, game keys, the protocol's strictly decoded JSON). Validation
//! happens here, once, on receipt. And the credential one role stamps on its calls to
//! another ([`credential`]).
//!
//! [`MatchRequest`]: juegoland_api::MatchRequest
//! [`MatchReply`]: juegoland_api::MatchReply
//! Must not use: the store, the bus, the actors or any service crate; it knows no game.

mod convert;
pub mod credential;
mod error;

pub use convert::*;
pub use error::{ERROR_METADATA, from_status, to_status};

/// The generated messages, clients and servers of `juegoland.v1`.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("juegoland.v1");
}
