//! Listing matches for the platform (`GET /v1/matches`): by principal, game and status, newest
//! first, a page at a time. A listing is read from the durable store, not from the match
//! actors, so it addresses no match and is not a [`crate::MatchRequest`]; its revision and
//! result are not in it (a match's row changes only at snapshot points):
//! [`crate::Matches::describe`] tells one match's current state.

use juegoland_core::GameKey;
use juegoland_sdk::{ParticipantStatus, Seat};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Controller, MatchError};

/// The most matches one page holds.
pub const MAX_PAGE: u32 = 100;

/// What to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchQuery {
    /// Only matches where this principal holds a seat.
    pub principal: Option<String>,
    /// Only matches of this game id.
    pub game: Option<String>,
    pub status: Option<ListedStatus>,
    /// The page after this cursor (a previous page's `next`); the first page without.
    pub after: Option<Cursor>,
    /// At most this many, 1..=[`MAX_PAGE`].
    pub limit: u32,
}

/// A field of a listing or feed query that does not parse: its name and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidField {
    pub field: &'static str,
    pub message: String,
}

impl MatchQuery {
    /// A query from its text parts, as the platform's HTTP query and the routers' gRPC request
    /// give them, validated once: an unknown status, a cursor no page gave, a limit out of
    /// 1..=[`MAX_PAGE`] (20 when absent) are refused naming the field.
    pub fn parse(
        principal: Option<String>,
        game: Option<String>,
        status: Option<&str>,
        after: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Self, InvalidField> {
        let invalid = |field, message| InvalidField { field, message };
        let status = match status {
            None => None,
            Some(text) => Some(
                ListedStatus::parse(text)
                    .ok_or_else(|| invalid("status", format!("{text:?} is not active, finished or cancelled")))?,
            ),
        };
        let after = match after {
            None => None,
            Some(text) => Some(Cursor::parse(text).ok_or_else(|| invalid("after", "not a cursor a page gave".into()))?),
        };
        Ok(Self { principal, game, status, after, limit: page_limit(limit, 20)? })
    }
}

/// A feed query from its text parts: where to resume (the start when absent) and how many
/// events at most (1..=[`MAX_PAGE`], all of a page when absent).
pub fn feed_query(after: Option<&str>, limit: Option<u32>) -> Result<(FeedCursor, u32), InvalidField> {
    let after = match after {
        None => FeedCursor::default(),
        Some(text) => FeedCursor::parse(text)
            .ok_or_else(|| InvalidField { field: "after", message: "not a cursor the feed gave".into() })?,
    };
    Ok((after, page_limit(limit, MAX_PAGE)?))
}

fn page_limit(limit: Option<u32>, default: u32) -> Result<u32, InvalidField> {
    let limit = limit.unwrap_or(default);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(InvalidField { field: "limit", message: format!("{limit} is not within 1..={MAX_PAGE}") });
    }
    Ok(limit)
}

/// A match's status, as [`crate::MatchStatus`] tells it: active, finished (a result) or
/// cancelled (no winners).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ListedStatus {
    Active,
    Finished,
    Cancelled,
}

impl ListedStatus {
    pub const ALL: [ListedStatus; 3] = [Self::Active, Self::Finished, Self::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Finished => "finished",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// Milliseconds since the Unix epoch of a time a store wrote as ISO 8601 text (RFC 3339, in
/// UTC): what the API tells every time in (`createdMs`, `atMs`), as the match summary does.
pub fn iso_ms(text: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Where a page ends: the last listed match's creation time (as its store writes it) and
/// id. Opaque to callers: `cursor.to_string()` and [`Cursor::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: String,
    pub match_id: Uuid,
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}~{}", self.match_id, self.created_at)
    }
}

impl Cursor {
    /// A cursor a page gave; anything else is `None`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (id, at) = text.split_once('~')?;
        let ok = !at.is_empty() && at.len() <= 64 && at.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
        Some(Cursor { created_at: ok.then(|| at.to_owned())?, match_id: Uuid::parse_str(id).ok()? })
    }
}

/// One listed match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchListing {
    pub match_id: Uuid,
    pub game: GameKey,
    pub game_version: String,
    pub status: ListedStatus,
    /// When the match was created, as its store wrote it (ISO 8601, UTC): the page cursor's
    /// key, not on the wire.
    #[serde(skip)]
    pub created_at: String,
    /// When the match was created, ms since the Unix epoch.
    pub created_ms: i64,
    pub seats: Vec<ListedSeat>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListedSeat {
    pub seat: Seat,
    pub controller: Controller,
    pub status: ParticipantStatus,
}

/// A page of matches, newest first, and the cursor of the next page when there may be one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchPage {
    pub matches: Vec<MatchListing>,
    pub next: Option<String>,
}

/// Where the platform API lists matches: the store (the all-in-one's, a router's read-only
/// connection to the cluster's PostgreSQL).
#[async_trait::async_trait]
pub trait MatchDirectory: Send + Sync + 'static {
    async fn list(&self, query: &MatchQuery) -> Result<MatchPage, MatchError>;

    /// Up to `limit` feed events after `after` (from the start without), oldest first.
    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<FeedPage, MatchError>;
}

/// Where a feed consumer resumes: after the event with this cursor. Opaque to callers
/// (`cursor.to_string()`, [`FeedCursor::parse`]); a store orders events by it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FeedCursor {
    /// PostgreSQL: the writing transaction's id; 0 elsewhere.
    pub txid: u64,
    pub seq: u64,
}

impl std::fmt::Display for FeedCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.txid, self.seq)
    }
}

impl FeedCursor {
    pub fn parse(text: &str) -> Option<FeedCursor> {
        let (txid, seq) = text.split_once('-')?;
        Some(FeedCursor { txid: txid.parse().ok()?, seq: seq.parse().ok()? })
    }
}

/// Every [`FeedEvent::kind`]: the match created, a seat changed (a withdrawal that did not
/// end the match), the match finished or cancelled (migration 0014's `match_events.kind`).
pub const FEED_KINDS: [&str; 4] = ["created", "seatChanged", "finished", "cancelled"];

/// One lifecycle event of the platform feed: written by the commit that caused it, so none
/// is lost; delivered at least once, so a consumer keeps the ids it applied.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedEvent {
    /// `<matchId>/<revision>`: the same on every delivery.
    pub id: String,
    /// One of [`FEED_KINDS`].
    pub kind: String,
    /// When it was written, ms since the Unix epoch.
    pub at_ms: i64,
    /// Resume after this event.
    pub cursor: String,
    /// The match at that revision.
    #[serde(rename = "match")]
    pub summary: crate::MatchSummary,
}

/// A page of the feed, oldest first, and where to resume (the last event's cursor, or the
/// one asked with when there was nothing new).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedPage {
    pub events: Vec<FeedEvent>,
    pub next: String,
}
