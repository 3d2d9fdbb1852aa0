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
        HostError::Lifecycle(e) => match e {
            LifecycleError::Finished => refused("MATCH_FINISHED", e.to_string()),
            LifecycleError::UnknownSeat => refused("UNKNOWN_SEAT", e.to_string()),
            LifecycleError::AlreadyWithdrawn => refused("ALREADY_WITHDRAWN", e.to_string()),
            LifecycleError::StaleDeadline => refused("STALE_DEADLINE", e.to_string()),
            LifecycleError::Illegal(m) => refused("ILLEGAL", m),
            LifecycleError::Fault(f) => RpcError::Internal(f.0),
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
            "MATCH_FINISHED" => HostError::Lifecycle(LifecycleError::Finished),
            "UNKNOWN_SEAT" => HostError::Lifecycle(LifecycleError::UnknownSeat),
            "ALREADY_WITHDRAWN" => HostError::Lifecycle(LifecycleError::AlreadyWithdrawn),
            "STALE_DEADLINE" => HostError::Lifecycle(LifecycleError::StaleDeadline),
            "ILLEGAL" => HostError::Lifecycle(LifecycleError::Illegal(message)),
            _ => HostError::Lifecycle(LifecycleError::Fault(Fault(format!("{code}: {message}")))),
        },
    }
}
