//! The closed code lists of the protocol: receipt rejection codes, error codes and the
//! recovery a client should attempt.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a command was rejected. Rejections are final business outcomes and are stored in the
/// command's receipt, so a retry of the same envelope gets the same code again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RejectionCode {
    /// The rules refused the action in the current position.
    IllegalAction,
    /// The match moved past the revision the command was built against.
    StaleRevision,
    /// The phase epoch the command was built against is over.
    StaleEpoch,
    /// The sender's seat is not an enabled actor right now.
    ActorNotEnabled,
    /// The game knows no action of this type.
    UnknownAction,
    /// The payload does not satisfy the action's schema.
    InvalidPayload,
    /// The match has a result; no further commands are accepted.
    MatchFinished,
    /// The precondition is of another kind than the action's policy takes (an `actor`
    /// precondition on a `match` action, anything but `queue` on a `queue` action): it was
    /// not built from an offer of this action. Resync and use the offer's precondition.
    PreconditionMismatch,
}

impl RejectionCode {
    /// Every rejection code, in declaration order.
    pub const ALL: [RejectionCode; 8] = [
        Self::IllegalAction,
        Self::StaleRevision,
        Self::StaleEpoch,
        Self::ActorNotEnabled,
        Self::UnknownAction,
        Self::InvalidPayload,
        Self::MatchFinished,
        Self::PreconditionMismatch,
    ];

    /// The code as it appears on the wire, e.g. `STALE_REVISION`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IllegalAction => "ILLEGAL_ACTION",
            Self::StaleRevision => "STALE_REVISION",
            Self::StaleEpoch => "STALE_EPOCH",
            Self::ActorNotEnabled => "ACTOR_NOT_ENABLED",
            Self::UnknownAction => "UNKNOWN_ACTION",
            Self::InvalidPayload => "INVALID_PAYLOAD",
            Self::MatchFinished => "MATCH_FINISHED",
            Self::PreconditionMismatch => "PRECONDITION_MISMATCH",
        }
    }
}

/// The code of a `game.error`. Errors are not receipts: they do not consume the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Bad JSON, duplicate keys, invalid Unicode, unknown fields, wrong types or depth > 32.
    MalformedMessage,
    /// The message exceeds the size limit (64 KiB for client messages).
    MessageTooLarge,
    /// `protocolVersion` is not a version this server speaks.
    UnsupportedProtocol,
    /// No accepted contract tuple matches the match's pinned versions.
    IncompatibleClient,
    /// The connection carries no valid credentials.
    Unauthenticated,
    /// The principal may not do this in this match.
    Forbidden,
    /// No match has this id.
    MatchNotFound,
    /// The command id was already used for a different envelope.
    CommandIdReused,
    /// A second board command arrived while one is still pending.
    CommandPending,
    /// The subscription does not exist on this connection.
    SubscriptionNotFound,
    /// The client sends too fast.
    RateLimited,
    /// The match is moving between nodes or the store is down; retry the same command.
    Unavailable,
    /// An unexpected server fault.
    Internal,
}

impl ErrorCode {
    /// Every error code, in declaration order.
    pub const ALL: [ErrorCode; 13] = [
        Self::MalformedMessage,
        Self::MessageTooLarge,
        Self::UnsupportedProtocol,
        Self::IncompatibleClient,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::MatchNotFound,
        Self::CommandIdReused,
        Self::CommandPending,
        Self::SubscriptionNotFound,
        Self::RateLimited,
        Self::Unavailable,
        Self::Internal,
    ];

    /// The code as it appears on the wire, e.g. `COMMAND_ID_REUSED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MalformedMessage => "MALFORMED_MESSAGE",
            Self::MessageTooLarge => "MESSAGE_TOO_LARGE",
            Self::UnsupportedProtocol => "UNSUPPORTED_PROTOCOL",
            Self::IncompatibleClient => "INCOMPATIBLE_CLIENT",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Forbidden => "FORBIDDEN",
            Self::MatchNotFound => "MATCH_NOT_FOUND",
            Self::CommandIdReused => "COMMAND_ID_REUSED",
            Self::CommandPending => "COMMAND_PENDING",
            Self::SubscriptionNotFound => "SUBSCRIPTION_NOT_FOUND",
            Self::RateLimited => "RATE_LIMITED",
            Self::Unavailable => "UNAVAILABLE",
            Self::Internal => "INTERNAL",
        }
    }

    /// The translation key clients show for this code, e.g. `error.command_id_reused`.
    pub fn message_key(self) -> &'static str {
        match self {
            Self::MalformedMessage => "error.malformed_message",
            Self::MessageTooLarge => "error.message_too_large",
            Self::UnsupportedProtocol => "error.unsupported_protocol",
            Self::IncompatibleClient => "error.incompatible_client",
            Self::Unauthenticated => "error.unauthenticated",
            Self::Forbidden => "error.forbidden",
            Self::MatchNotFound => "error.match_not_found",
            Self::CommandIdReused => "error.command_id_reused",
            Self::CommandPending => "error.command_pending",
            Self::SubscriptionNotFound => "error.subscription_not_found",
            Self::RateLimited => "error.rate_limited",
            Self::Unavailable => "error.unavailable",
            Self::Internal => "error.internal",
        }
    }

    /// The recovery a client should attempt unless the server says otherwise.
    ///
    /// Transient faults (`RATE_LIMITED`, `UNAVAILABLE`, `INTERNAL`) do not consume the command,
    /// and retrying the exact same envelope is always safe because commands are idempotent.
    /// A client that speaks the wrong dialect must reload; a lost subscription needs a sync.
    /// Everything else is a client bug or a final answer, so there is nothing to retry.
    pub fn default_recovery(self) -> Recovery {
        match self {
            Self::MalformedMessage
            | Self::MessageTooLarge
            | Self::Forbidden
            | Self::MatchNotFound
            | Self::CommandIdReused
            | Self::CommandPending => Recovery::None,
            Self::UnsupportedProtocol | Self::IncompatibleClient => Recovery::ReloadClient,
            Self::Unauthenticated => Recovery::Reauthenticate,
            Self::SubscriptionNotFound => Recovery::Sync,
            Self::RateLimited | Self::Unavailable | Self::Internal => Recovery::RetrySameCommand,
        }
    }
}

/// What a client should do after a `game.error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// Nothing automatic; show the message.
    None,
    /// Start a new sync (a new subscription with a fresh snapshot).
    Sync,
    /// Resend the exact same envelope later, with the same command id.
    RetrySameCommand,
    /// Reload the client: it speaks a protocol or contract the server does not accept.
    ReloadClient,
    /// Obtain a new token and reconnect.
    Reauthenticate,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_match_serde() {
        for code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
            assert_eq!(code.message_key(), format!("error.{}", code.as_str().to_lowercase()));
        }
        for code in RejectionCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }

    #[test]
    fn recoveries_are_kebab_case() {
        assert_eq!(serde_json::to_value(Recovery::RetrySameCommand).unwrap(), "retry-same-command");
        assert_eq!(serde_json::to_value(Recovery::ReloadClient).unwrap(), "reload-client");
        assert_eq!(ErrorCode::Unavailable.default_recovery(), Recovery::RetrySameCommand);
        assert_eq!(ErrorCode::CommandIdReused.default_recovery(), Recovery::None);
    }
}
