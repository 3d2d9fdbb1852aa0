//! Failures of a cluster call, and the single mapping to and from `tonic::Status`.
//!
//! The status code alone is ambiguous (UNAVAILABLE may be a dead node or a store outage),
//! so every status this crate builds carries the metadata [`ERROR_METADATA`] naming the
//! failure; a status without it (a transport failure) is classified by its code.

use tonic::{Code, Status};

/// The metadata key that carries the code of a [`RpcError::Refused`].
pub const REFUSAL_METADATA: &str = "juegoland-refusal";

/// The metadata key that names a failure: `NOT_OWNER`, `UNAVAILABLE`, `MATCH_NOT_FOUND`,
/// `INVALID`, `REFUSED`, `INTERNAL`.
pub const ERROR_METADATA: &str = "juegoland-error";

/// Why a cluster call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The node does not own the match (per its ring, or it lost the match's fence).
    /// Retry on the owner after refreshing membership.
    #[error("not the owner: {0}")]
    NotOwner(String),
    /// The match is moving, the node is draining, or the store is down: retry the same call.
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("match not found")]
    MatchNotFound,
    /// The request is malformed (a bad UUID, JSON that does not decode).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// An operation the match or the catalog refuses, named by `code` (`UNKNOWN_GAME`,
    /// `INVALID_SEATS`, `INVALID_CONFIG`, `MATCH_FINISHED`, `UNKNOWN_SEAT`,
    /// `ALREADY_WITHDRAWN`, `STALE_DEADLINE`, `ILLEGAL`); not retryable.
    #[error("refused ({code}): {message}")]
    Refused { code: String, message: String },
    #[error("internal failure: {0}")]
    Internal(String),
}

impl RpcError {
    fn parts(&self) -> (Code, &'static str, &str) {
        if let RpcError::Refused { message, .. } = self {
            return (Code::FailedPrecondition, "REFUSED", message);
        }
        match self {
            RpcError::NotOwner(m) => (Code::FailedPrecondition, "NOT_OWNER", m),
            RpcError::Unavailable(m) => (Code::Unavailable, "UNAVAILABLE", m),
            RpcError::MatchNotFound => (Code::NotFound, "MATCH_NOT_FOUND", "match not found"),
            RpcError::Invalid(m) => (Code::InvalidArgument, "INVALID", m),
            RpcError::Refused { .. } => unreachable!("handled above"),
            RpcError::Internal(m) => (Code::Internal, "INTERNAL", m),
        }
    }

    /// The failure's name as a metric label (`not_owner`, `unavailable`, …).
    pub fn label(&self) -> &'static str {
        match self {
            RpcError::NotOwner(_) => "not_owner",
            RpcError::Unavailable(_) => "unavailable",
            RpcError::MatchNotFound => "not_found",
            RpcError::Invalid(_) => "invalid",
            RpcError::Refused { .. } => "refused",
            RpcError::Internal(_) => "internal",
        }
    }

    /// Whether the same call may succeed on a retry (after refreshing membership).
    pub fn is_retryable(&self) -> bool {
        matches!(self, RpcError::NotOwner(_) | RpcError::Unavailable(_))
    }
}

impl From<RpcError> for Status {
    fn from(e: RpcError) -> Status {
        let (code, name, message) = e.parts();
        let mut status = Status::new(code, message.to_owned());
        status.metadata_mut().insert(ERROR_METADATA, tonic::metadata::MetadataValue::from_static(name));
        if let RpcError::Refused { code, .. } = &e
            && let Ok(value) = code.parse()
        {
            status.metadata_mut().insert(REFUSAL_METADATA, value);
        }
        status
    }
}

impl From<Status> for RpcError {
    fn from(s: Status) -> RpcError {
        let message = s.message().to_owned();
        let named = s.metadata().get(ERROR_METADATA).and_then(|v| v.to_str().ok()).map(str::to_owned);
        match named.as_deref() {
            Some("NOT_OWNER") => RpcError::NotOwner(message),
            Some("UNAVAILABLE") => RpcError::Unavailable(message),
            Some("MATCH_NOT_FOUND") => RpcError::MatchNotFound,
            Some("INVALID") => RpcError::Invalid(message),
            Some("REFUSED") => {
                let code = s.metadata().get(REFUSAL_METADATA).and_then(|v| v.to_str().ok()).unwrap_or("REFUSED");
                RpcError::Refused { code: code.to_owned(), message }
            }
            Some("INTERNAL") => RpcError::Internal(message),
            // No name: the call never reached our code (connection refused, reset, deadline).
            _ => match s.code() {
                Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded | Code::Unknown | Code::Aborted => {
                    RpcError::Unavailable(format!("{:?}: {message}", s.code()))
                }
                Code::InvalidArgument => RpcError::Invalid(message),
                Code::NotFound => RpcError::MatchNotFound,
                _ => RpcError::Internal(format!("{:?}: {message}", s.code())),
            },
        }
    }
}
