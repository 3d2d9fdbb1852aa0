//! The match protocol (protocol version 1): the border between clients and the engine.
//!
//! Owns: every wire message as Rust types ([`ClientMessage`], [`ServerMessage`] and their
//! bodies), the closed code lists ([`RejectionCode`], [`ErrorCode`], [`Recovery`]), the strict
//! decoder ([`decode_client`]: size, depth, duplicate keys, Unicode, unknown fields, types),
//! encoding ([`encode`]), canonical JSON and command fingerprints ([`canonical_json`],
//! [`fingerprint`]) and the published JSON Schemas ([`schema::schema_files`]).
//!
//! Must not use: tokio, IO of any kind, clocks, OS randomness (so no `Uuid::new_v4`), the
//! network, storage, or any game's rules. It may depend on `juegoland-sdk` and nothing else
//! of the workspace. Everything here is synchronous, deterministic and pure.
//!
//! # Which function to use
//!
//! - Bytes from a client: [`decode_client`]. On error, send
//!   [`DecodeError::to_error_message`]; never send the input or the parser's message back.
//! - A message to a client: build a [`ServerMessage`] and call [`encode`] (or [`encode_into`]
//!   with a reused buffer).
//! - Idempotency of commands: [`fingerprint`] of the decoded [`CommandEnvelope`].
//! - Clients and tests reading server messages: [`decode_server`].
//!
//! Untrusted bytes enter only through the decoders. The body types derive `Deserialize`
//! (strict, `deny_unknown_fields`) for storage, but that path does not see duplicate keys.

pub mod codes;
pub mod decode;
pub mod encode;
pub mod jcs;
pub mod messages;
pub mod schema;

pub use codes::{ErrorCode, Recovery, RejectionCode};
pub use decode::{
    DecodeError, Limits, MAX_DEPTH, MAX_MESSAGE_BYTES, MalformedKind, MessageIds, decode_client, decode_client_with,
    decode_server, decode_server_with,
};
pub use encode::{encode, encode_client, encode_into};
pub use jcs::{canonical_command, canonical_json, digest_hex, fingerprint, fingerprint_hex};
pub use messages::{
    Ack, AckStatus, Action, ClientMessage, CommandEnvelope, CommandStatusRequest, CommandUnknown, ConcreteOffer,
    ContractTuple, ControllerKind, Cursor, ErrorMessage, MAX_NAME_CHARS, MessageType, PROTOCOL_VERSION,
    ParametrizedOffer, Precondition, ServerMessage, Snapshot, SyncRequest, UnsubscribeRequest, WireEvent, WireOffer,
};
