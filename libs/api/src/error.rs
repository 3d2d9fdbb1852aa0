//! The one failure type of a match operation, and how each wire tells it.

use juegoland_core::{ChoiceError, CreateError, LifecycleError};
use juegoland_protocol::{ErrorCode, ErrorMessage};
use uuid::Uuid;

/// Why a match operation was not answered with a [`MatchReply`](crate::MatchReply).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("match not found")]
    NotFound,
    /// The node does not own the match (per its ring, or it lost the match's fence): retry
    /// on the owner after refreshing membership.
    #[error("not the owner: {0}")]
    NotOwner(String),
    /// The match is moving, the node is draining, or the store is down: retry the same
    /// request.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The match's FIFO of `queue` commands is full: the client retries the same command
    /// later (`RATE_LIMITED`, recovery `retry-same-command`); forwarders do not retry it.
    #[error("rate limited: {0}")]
    RateLimited(String),
    /// The request is malformed (a bad UUID, JSON that does not decode, a missing field).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The match or the catalog refuses the operation; not retryable.
    #[error("{}: {message}", refusal.code())]
    Refused { refusal: Refusal, message: String },
    #[error("internal failure: {0}")]
    Internal(String),
}

/// What the match or the catalog refuses, by its code on every wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    UnknownGame,
    /// The game exists, but not that rules version.
    UnknownRulesVersion,
    /// No such published package version (or its rules are not run here).
    UnknownPackageVersion,
    /// A package version and a rules version that do not go together.
    VersionMismatch,
    InvalidSeats,
    InvalidConfig,
    MatchFinished,
    UnknownSeat,
    AlreadyWithdrawn,
    StaleDeadline,
    /// A deadline fired before its due instant (retry later; never dropped for it).
    DeadlineNotDue,
    /// The rules refused a lifecycle operation.
    Illegal,
    InvalidReason,
    /// A hand-over policy the game cannot follow (an unknown bot, a grace out of range).
    InvalidHandover,
    /// An expiry out of range (each time 0, off, or one minute to thirty days).
    InvalidExpiry,
    /// A replay that cannot be made: a speed out of range, or a source whose decisions do not
    /// replay under the rules it pinned.
    InvalidReplay,
}

impl Refusal {
    pub const ALL: [Refusal; 16] = [
        Self::UnknownGame,
        Self::UnknownRulesVersion,
        Self::UnknownPackageVersion,
        Self::VersionMismatch,
        Self::InvalidSeats,
        Self::InvalidConfig,
        Self::MatchFinished,
        Self::UnknownSeat,
        Self::AlreadyWithdrawn,
        Self::StaleDeadline,
        Self::DeadlineNotDue,
        Self::Illegal,
        Self::InvalidReason,
        Self::InvalidHandover,
        Self::InvalidExpiry,
        Self::InvalidReplay,
    ];

    /// The code on every wire.
    pub fn code(self) -> &'static str {
        match self {
            Self::UnknownGame => "UNKNOWN_GAME",
            Self::UnknownRulesVersion => "UNKNOWN_RULES_VERSION",
            Self::UnknownPackageVersion => "UNKNOWN_PACKAGE_VERSION",
            Self::VersionMismatch => "VERSION_MISMATCH",
            Self::InvalidSeats => "INVALID_SEATS",
            Self::InvalidConfig => "INVALID_CONFIG",
            Self::MatchFinished => "MATCH_FINISHED",
            Self::UnknownSeat => "UNKNOWN_SEAT",
            Self::AlreadyWithdrawn => "ALREADY_WITHDRAWN",
            Self::StaleDeadline => "STALE_DEADLINE",
            Self::DeadlineNotDue => "DEADLINE_NOT_DUE",
            Self::Illegal => "ILLEGAL",
            Self::InvalidReason => "INVALID_REASON",
            Self::InvalidHandover => "INVALID_HANDOVER",
            Self::InvalidExpiry => "INVALID_EXPIRY",
            Self::InvalidReplay => "INVALID_REPLAY",
        }
    }

    /// The refusal of a code [`Refusal::code`] gave.
    pub fn from_code(code: &str) -> Option<Refusal> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }

    /// The field of the platform's request it is about (HTTP bodies name it).
    pub fn field(self) -> Option<&'static str> {
        match self {
            Self::UnknownGame => Some("game"),
            Self::UnknownRulesVersion => Some("rulesVersion"),
            Self::UnknownPackageVersion | Self::VersionMismatch => Some("packageVersion"),
            Self::InvalidSeats => Some("seats"),
            Self::InvalidConfig => Some("config"),
            Self::UnknownSeat | Self::AlreadyWithdrawn => Some("seat"),
            Self::InvalidReason => Some("reasonCode"),
            Self::InvalidHandover => Some("handover"),
            Self::InvalidExpiry => Some("expiry"),
            Self::InvalidReplay => Some("replay"),
            Self::MatchFinished | Self::StaleDeadline | Self::DeadlineNotDue | Self::Illegal => None,
        }
    }

    fn http(self) -> u16 {
        match self {
            Self::UnknownGame | Self::UnknownRulesVersion | Self::UnknownPackageVersion => 404,
            Self::InvalidSeats
            | Self::InvalidConfig
            | Self::InvalidReason
            | Self::VersionMismatch
            | Self::InvalidHandover
            | Self::InvalidExpiry
            | Self::InvalidReplay => 400,
            Self::MatchFinished
            | Self::UnknownSeat
            | Self::AlreadyWithdrawn
            | Self::StaleDeadline
            | Self::DeadlineNotDue
            | Self::Illegal => 409,
        }
    }
}

/// How one failure is told on each wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wire {
    /// The protocol's `game.error` code (the client protocol).
    pub protocol: ErrorCode,
    /// The HTTP status (the platform API).
    pub http: u16,
    /// The gRPC status code, by its number in the gRPC standard (the cluster's wire).
    pub grpc: i32,
}

/// gRPC status codes (grpc/grpc `doc/statuscodes.md`).
mod grpc {
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const NOT_FOUND: i32 = 5;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const FAILED_PRECONDITION: i32 = 9;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
}

impl MatchError {
    /// The failure's code, the same on every wire: `MATCH_NOT_FOUND`, `NOT_OWNER`,
    /// `UNAVAILABLE`, `INVALID_REQUEST`, a [`Refusal`]'s code, `INTERNAL`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "MATCH_NOT_FOUND",
            Self::NotOwner(_) => "NOT_OWNER",
            Self::Unavailable(_) => "UNAVAILABLE",
            Self::RateLimited(_) => "RATE_LIMITED",
            Self::Invalid(_) => "INVALID_REQUEST",
            Self::Refused { refusal, .. } => refusal.code(),
            Self::Internal(_) => "INTERNAL",
        }
    }

    /// The failure of a [`MatchError::code`] and its message (what a wire carried).
    pub fn from_code(code: &str, message: String) -> MatchError {
        match code {
            "MATCH_NOT_FOUND" => Self::NotFound,
            "NOT_OWNER" => Self::NotOwner(message),
            "UNAVAILABLE" => Self::Unavailable(message),
            "RATE_LIMITED" => Self::RateLimited(message),
            "INVALID_REQUEST" => Self::Invalid(message),
            "INTERNAL" => Self::Internal(message),
            other => match Refusal::from_code(other) {
                Some(refusal) => Self::Refused { refusal, message },
                None => Self::Internal(format!("{other}: {message}")),
            },
        }
    }

    /// The failure's message, as the wires carry it.
    pub fn message(&self) -> String {
        match self {
            Self::NotFound => "match not found".to_owned(),
            Self::NotOwner(m) | Self::Unavailable(m) | Self::RateLimited(m) | Self::Invalid(m) | Self::Internal(m) => {
                m.clone()
            }
            Self::Refused { message, .. } => message.clone(),
        }
    }

    /// How the failure is told on each wire: the one table of it.
    pub fn wire(&self) -> Wire {
        let (protocol, http, grpc) = match self {
            Self::NotFound => (ErrorCode::MatchNotFound, 404, grpc::NOT_FOUND),
            Self::NotOwner(_) => (ErrorCode::Unavailable, 503, grpc::FAILED_PRECONDITION),
            Self::Unavailable(_) => (ErrorCode::Unavailable, 503, grpc::UNAVAILABLE),
            Self::RateLimited(_) => (ErrorCode::RateLimited, 429, grpc::RESOURCE_EXHAUSTED),
            Self::Invalid(_) => (ErrorCode::Internal, 400, grpc::INVALID_ARGUMENT),
            Self::Refused { refusal, .. } => (ErrorCode::Internal, refusal.http(), grpc::FAILED_PRECONDITION),
            Self::Internal(_) => (ErrorCode::Internal, 500, grpc::INTERNAL),
        };
        Wire { protocol, http, grpc }
    }

    /// The failure's name as a metric label (`not_found`, `not_owner`, `unavailable`,
    /// `rate_limited`, `invalid`, `refused`, `internal`).
    pub fn label(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::NotOwner(_) => "not_owner",
            Self::Unavailable(_) => "unavailable",
            Self::RateLimited(_) => "rate_limited",
            Self::Invalid(_) => "invalid",
            Self::Refused { .. } => "refused",
            Self::Internal(_) => "internal",
        }
    }

    /// Whether the same request may succeed on a retry (after refreshing membership).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::NotOwner(_) | Self::Unavailable(_))
    }

    /// The `game.error` a client gets for it.
    pub fn to_error_message(&self, match_id: Option<Uuid>) -> ErrorMessage {
        let mut e = ErrorMessage::new(self.wire().protocol);
        e.match_id = match_id;
        e
    }

    /// A refusal with its message.
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> MatchError {
        Self::Refused { refusal, message: message.into() }
    }
}

impl From<CreateError> for MatchError {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::Choice(c) => {
                let refusal = match c {
                    ChoiceError::UnknownGame(_) => Refusal::UnknownGame,
                    ChoiceError::UnknownRulesVersion { .. } => Refusal::UnknownRulesVersion,
                    ChoiceError::UnknownPackageVersion { .. } | ChoiceError::RulesNotRegistered { .. } => {
                        Refusal::UnknownPackageVersion
                    }
                    ChoiceError::RulesMismatch { .. } => Refusal::VersionMismatch,
                    ChoiceError::Unreadable { .. } => return Self::Internal(c.to_string()),
                };
                Self::refused(refusal, c.to_string())
            }
            CreateError::InvalidSeats(m) => Self::refused(Refusal::InvalidSeats, m),
            CreateError::InvalidConfig(m) => Self::refused(Refusal::InvalidConfig, m),
            CreateError::InvalidHandover(m) => Self::refused(Refusal::InvalidHandover, m),
            CreateError::InvalidExpiry(m) => Self::refused(Refusal::InvalidExpiry, m),
            CreateError::InvalidReplay(m) => Self::refused(Refusal::InvalidReplay, m),
            CreateError::Fault(f) => Self::Internal(f.0),
        }
    }
}

impl From<LifecycleError> for MatchError {
    fn from(e: LifecycleError) -> Self {
        let refusal = match &e {
            LifecycleError::Finished => Refusal::MatchFinished,
            LifecycleError::UnknownSeat => Refusal::UnknownSeat,
            LifecycleError::AlreadyWithdrawn => Refusal::AlreadyWithdrawn,
            LifecycleError::StaleDeadline => Refusal::StaleDeadline,
            LifecycleError::NotDue { .. } => Refusal::DeadlineNotDue,
            LifecycleError::Illegal(m) => return Self::refused(Refusal::Illegal, m.clone()),
            LifecycleError::InvalidReason(m) => return Self::refused(Refusal::InvalidReason, m.clone()),
            LifecycleError::Fault(f) => return Self::Internal(f.0.clone()),
        };
        Self::refused(refusal, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_error() -> Vec<MatchError> {
        let mut all = vec![
            MatchError::NotFound,
            MatchError::NotOwner("n".into()),
            MatchError::Unavailable("u".into()),
            MatchError::RateLimited("r".into()),
            MatchError::Invalid("i".into()),
            MatchError::Internal("x".into()),
        ];
        all.extend(Refusal::ALL.map(|refusal| MatchError::Refused { refusal, message: "m".into() }));
        all
    }

    #[test]
    fn every_error_survives_its_code_and_message() {
        for e in every_error() {
            let back = MatchError::from_code(e.code(), e.message());
            assert_eq!(back, e, "{}", e.code());
        }
    }

    #[test]
    fn codes_are_distinct_and_retries_are_only_for_moving_matches() {
        let errors = every_error();
        let codes: std::collections::BTreeSet<_> = errors.iter().map(MatchError::code).collect();
        assert_eq!(codes.len(), errors.len());
        let retryable: Vec<_> = errors.iter().filter(|e| e.is_retryable()).map(MatchError::code).collect();
        assert_eq!(retryable, ["NOT_OWNER", "UNAVAILABLE"]);
    }

    #[test]
    fn the_wire_table() {
        let table: Vec<_> = every_error()
            .iter()
            .map(|e| {
                let w = e.wire();
                format!("{} {} {} {}", e.code(), w.protocol.as_str(), w.http, w.grpc)
            })
            .collect();
        assert_eq!(
            table,
            [
                "MATCH_NOT_FOUND MATCH_NOT_FOUND 404 5",
                "NOT_OWNER UNAVAILABLE 503 9",
                "UNAVAILABLE UNAVAILABLE 503 14",
                "RATE_LIMITED RATE_LIMITED 429 8",
                "INVALID_REQUEST INTERNAL 400 3",
                "INTERNAL INTERNAL 500 13",
                "UNKNOWN_GAME INTERNAL 404 9",
                "UNKNOWN_RULES_VERSION INTERNAL 404 9",
                "UNKNOWN_PACKAGE_VERSION INTERNAL 404 9",
                "VERSION_MISMATCH INTERNAL 400 9",
                "INVALID_SEATS INTERNAL 400 9",
                "INVALID_CONFIG INTERNAL 400 9",
                "MATCH_FINISHED INTERNAL 409 9",
                "UNKNOWN_SEAT INTERNAL 409 9",
                "ALREADY_WITHDRAWN INTERNAL 409 9",
                "STALE_DEADLINE INTERNAL 409 9",
                "DEADLINE_NOT_DUE INTERNAL 409 9",
                "ILLEGAL INTERNAL 409 9",
                "INVALID_REASON INTERNAL 400 9",
                "INVALID_HANDOVER INTERNAL 400 9",
                "INVALID_EXPIRY INTERNAL 400 9",
                "INVALID_REPLAY INTERNAL 400 9",
            ]
        );
    }

    #[test]
    fn lifecycle_and_create_refusals_keep_their_codes() {
        for e in [
            LifecycleError::Finished,
            LifecycleError::UnknownSeat,
            LifecycleError::AlreadyWithdrawn,
            LifecycleError::StaleDeadline,
            LifecycleError::NotDue { due_ms: 2, now_ms: 1 },
            LifecycleError::Illegal("no".into()),
            LifecycleError::InvalidReason("bad".into()),
        ] {
            assert_eq!(Some(MatchError::from(e.clone()).code()), e.code());
        }
        assert_eq!(MatchError::from(CreateError::InvalidSeats("x".into())).code(), "INVALID_SEATS");
    }
}
