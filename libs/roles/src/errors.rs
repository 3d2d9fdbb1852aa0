//! The one mapping between the host's failures and the wire's: a node turns a
//! [`HostError`] into an [`RpcError`]; a router turns it back, so the edge answers the same
//! HTTP and protocol errors whether the match is in this process or behind a router.

use juegoland_actors::HostError;
use juegoland_core::{CreateError, Fault, LifecycleError};
use juegoland_rpc::RpcError;

/// What a node answers for a host failure.
pub fn to_rpc(e: HostError) -> RpcError {
    let refused = |code: &str, message: String| RpcError::Refused { code: code.to_owned(), message };
    match e {
        HostError::NotFound => RpcError::MatchNotFound,
        HostError::Unavailable(m) => RpcError::Unavailable(m),
        HostError::Internal(m) => RpcError::Internal(m),
        HostError::Create(e) => match e {
            CreateError::UnknownGame => refused("UNKNOWN_GAME", e.to_string()),
            CreateError::InvalidSeats(m) => refused("INVALID_SEATS", m),
            CreateError::InvalidConfig(m) => refused("INVALID_CONFIG", m),
            CreateError::Fault(f) => RpcError::Internal(f.0),
        },
        HostError::Lifecycle(e) => match (e.code(), e) {
            (_, LifecycleError::Fault(f)) => RpcError::Internal(f.0),
            (Some(code), LifecycleError::Illegal(m) | LifecycleError::InvalidReason(m)) => refused(code, m),
            (Some(code), e) => refused(code, e.to_string()),
            (None, e) => RpcError::Internal(e.to_string()),
        },
    }
}

/// What a router's caller sees for a failed forward.
pub fn to_host(e: RpcError) -> HostError {
    match e {
        RpcError::NotOwner(m) | RpcError::Unavailable(m) => HostError::Unavailable(m),
        RpcError::MatchNotFound => HostError::NotFound,
        RpcError::Invalid(m) | RpcError::Internal(m) => HostError::Internal(m),
        RpcError::Refused { code, message } => match code.as_str() {
            "UNKNOWN_GAME" => HostError::Create(CreateError::UnknownGame),
            "INVALID_SEATS" => HostError::Create(CreateError::InvalidSeats(message)),
            "INVALID_CONFIG" => HostError::Create(CreateError::InvalidConfig(message)),
            _ => HostError::Lifecycle(
                LifecycleError::from_code(&code, message.clone())
                    .unwrap_or_else(|| LifecycleError::Fault(Fault(format!("{code}: {message}")))),
            ),
        },
    }
}
