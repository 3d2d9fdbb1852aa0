//! Listing matches for the platform API (`GET /v1/matches`) from the `matches` and
//! `participants` rows: the same query on both SQL backends, keyset-paginated on
//! (creation time, match id) descending so a page costs the same wherever it starts
//! (migration 0013's `matches_by_creation`); the platform feed's events as the stores read
//! them (migration 0014's `match_events`); and [`Directory`], the match API's
//! [`MatchDirectory`] over any store.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_api::{
    Controller, Cursor, FeedCursor, FeedEvent, FeedPage, ListedSeat, ListedStatus, MatchDirectory, MatchError,
    MatchListing, MatchPage, MatchQuery,
};
use juegoland_core::GameKey;
use juegoland_sdk::ParticipantStatus;
use uuid::Uuid;

use crate::{Store, StoreError};

/// The page's matches. `$1` principal, `$2` game, `$3` status (each NULL for any), `$4`
/// the cursor's creation time and `$5` its id (NULL for the first page), `$6` the limit;
/// `created` renders `created_at` as text in a fixed width (so text order is time order)
/// and `at` reads `$4` back as a `created_at`. Every parameter is cast where it is tested
/// for NULL, so PostgreSQL knows its type. `result_kind` reads the kind of the stored
/// state's result (a finished match's state is always its final one): a finished row whose
/// result is a cancellation lists as `cancelled`, as the match summary tells it.
pub(crate) fn matches_sql(created: &str, at: &str, result_kind: &str) -> String {
    let status =
        format!("CASE WHEN m.status = 'finished' AND {result_kind} = 'cancelled' THEN 'cancelled' ELSE m.status END");
    format!(
        "SELECT m.match_id, m.game_id, m.rules_version, m.game_version, {status}, {created} AS created
         FROM matches m
         WHERE (CAST($1 AS text) IS NULL
                OR EXISTS (SELECT 1 FROM participants p WHERE p.match_id = m.match_id AND p.principal = $1))
           AND (CAST($2 AS text) IS NULL OR m.game_id = $2)
           AND (CAST($3 AS text) IS NULL OR {status} = $3)
           AND (CAST($4 AS text) IS NULL OR (m.created_at, m.match_id) < ({at}, $5))
         ORDER BY m.created_at DESC, m.match_id DESC
         LIMIT $6"
    )
}

/// One `matches` row of a page: id, game, rules version, game version, status, created.
pub(crate) type MatchRow = (Uuid, String, String, String, String, String);
/// One `participants` row: match, seat, principal, bot profile (or agent profile, see
/// `rows::AGENT_PROFILE`, or the replay script, `rows::REPLAY_PROFILE`), status.
pub(crate) type SeatRow = (Uuid, String, Option<String>, Option<String>, String);

/// The listings of `rows` with the seats of `seats`.
pub(crate) fn listings(rows: Vec<MatchRow>, seats: Vec<SeatRow>) -> Result<Vec<MatchListing>, StoreError> {
    let mut by_match: BTreeMap<Uuid, Vec<ListedSeat>> = BTreeMap::new();
    for (match_id, seat, principal, bot, status) in seats {
        let controller = match (principal, bot) {
            (Some(principal), None) => Controller::Human { principal },
            (None, Some(profile)) if profile == crate::rows::REPLAY_PROFILE => Controller::Replay,
            (None, Some(profile)) => match profile.strip_prefix(crate::rows::AGENT_PROFILE) {
                Some(agent) => Controller::Agent { profile: agent.to_owned() },
                None => Controller::Bot { profile },
            },
            _ => return Err(StoreError::Corrupt(format!("match {match_id} seat {seat}: not one holder"))),
        };
        let status = match status.as_str() {
            "active" => ParticipantStatus::Active,
            "withdrawn" => ParticipantStatus::Withdrawn,
            other => return Err(StoreError::Corrupt(format!("match {match_id} seat {seat}: status {other:?}"))),
        };
        by_match.entry(match_id).or_default().push(ListedSeat { seat, controller, status });
    }
    rows.into_iter()
        .map(|(match_id, id, rules_version, game_version, status, created_at)| {
            let status = ListedStatus::parse(&status)
                .ok_or_else(|| StoreError::Corrupt(format!("match {match_id}: status {status:?}")))?;
            let mut seats = by_match.remove(&match_id).unwrap_or_default();
            seats.sort_by(|a, b| a.seat.cmp(&b.seat));
            let created_ms = juegoland_api::iso_ms(&created_at)
                .ok_or_else(|| StoreError::Corrupt(format!("match {match_id}: created {created_at:?}")))?;
            Ok(MatchListing {
                match_id,
                game: GameKey { id, rules_version },
                game_version,
                status,
                created_at,
                created_ms,
                seats,
            })
        })
        .collect()
}

/// The match API's directory over a store: a page of at most `limit` listings, with the
/// next page's cursor when the page is full.
pub struct Directory(pub Arc<dyn Store>);

#[async_trait::async_trait]
impl MatchDirectory for Directory {
    async fn list(&self, query: &MatchQuery) -> Result<MatchPage, MatchError> {
        Ok(page(query, self.0.list_matches(query).await?))
    }

    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<FeedPage, MatchError> {
        Ok(feed_page(after, self.0.feed(after, limit).await?))
    }
}

/// The feed page of `events` read after `after`.
pub(crate) fn feed_page(after: FeedCursor, events: Vec<FeedEvent>) -> FeedPage {
    let next = events.last().map_or_else(|| after.to_string(), |e| e.cursor.clone());
    FeedPage { events, next }
}

/// One `match_events` row: txid, seq, match, revision, kind, at, body.
pub(crate) type FeedRow = (i64, i64, Uuid, i64, String, String, String);

/// The feed events of `rows`.
pub(crate) fn feed_events(rows: Vec<FeedRow>) -> Result<Vec<FeedEvent>, StoreError> {
    rows.into_iter()
        .map(|(txid, seq, match_id, revision, kind, at, body)| {
            let corrupt = |what: String| StoreError::Corrupt(format!("feed event {match_id}/{revision}: {what}"));
            let summary = serde_json::from_str(&body).map_err(|e| corrupt(e.to_string()))?;
            let number = |n: i64| u64::try_from(n).map_err(|_| corrupt(format!("negative position {n}")));
            let cursor = FeedCursor { txid: number(txid)?, seq: number(seq)? };
            let at_ms = juegoland_api::iso_ms(&at).ok_or_else(|| corrupt(format!("time {at:?}")))?;
            Ok(FeedEvent { id: format!("{match_id}/{revision}"), kind, at_ms, cursor: cursor.to_string(), summary })
        })
        .collect()
}

/// The page of `matches` listed for `query`: a full page has a next one's cursor.
pub(crate) fn page(query: &MatchQuery, matches: Vec<MatchListing>) -> MatchPage {
    let next = (matches.len() == query.limit as usize)
        .then(|| matches.last())
        .flatten()
        .map(|m| Cursor { created_at: m.created_at.clone(), match_id: m.match_id }.to_string());
    MatchPage { matches, next }
}
