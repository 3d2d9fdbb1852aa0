//! The match API's failures on the cluster's wire: the one mapping between
//! [`MatchError`] and `tonic::Status`.
//!
//! The status code alone is ambiguous (UNAVAILABLE may be a dead node or a store outage),
//! so every status this crate builds carries the failure's code in the metadata
//! [`ERROR_METADATA`] and its message as the status message; a status without it (a
//! transport failure: the call never reached our code) is classified by its code.

use juegoland_api::MatchError;
use tonic::{Code, Status};

/// The metadata key that carries [`MatchError::code`].
pub const ERROR_METADATA: &str = "juegoland-error";

/// The status a failure travels as (its gRPC code from [`MatchError::wire`]).
pub fn to_status(e: &MatchError) -> Status {
    let mut status = Status::new(Code::from_i32(e.wire().grpc), e.message());
    status.metadata_mut().insert(ERROR_METADATA, tonic::metadata::MetadataValue::from_static(e.code()));
    status
}

/// The failure a status carries.
pub fn from_status(s: &Status) -> MatchError {
    let message = s.message().to_owned();
    match s.metadata().get(ERROR_METADATA).and_then(|v| v.to_str().ok()) {
        Some(code) => MatchError::from_code(code, message),
        // No code: the call never reached our code (connection refused, reset, deadline).
        None => match s.code() {
            Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded | Code::Unknown | Code::Aborted => {
                MatchError::Unavailable(format!("{:?}: {message}", s.code()))
            }
            Code::InvalidArgument => MatchError::Invalid(message),
            Code::NotFound => MatchError::NotFound,
            _ => MatchError::Internal(format!("{:?}: {message}", s.code())),
        },
    }
}
