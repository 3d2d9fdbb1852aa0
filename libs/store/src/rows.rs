//! What both SQL backends share: how a [`Commit`] maps to rows, and how sqlx errors map to
//! [`StoreError`]. The SQL text itself lives in each backend, since the dialects differ.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use juegoland_core::{
    Commit, Deadline, LoggedOp, MatchState, Publication, Receipt, ReceiptKey, ReceiptOutcome, SeatHolder,
};
use juegoland_sdk::ParticipantStatus;
use sqlx::error::DatabaseError;
use uuid::Uuid;

use crate::{DueDeadline, OutboxRow, StoreError};

pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value} does not fit a signed 64-bit column")))
}

pub(crate) fn to_u64(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("stored {what} {value} is negative")))
}

pub(crate) fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// This machine's clock in milliseconds since the Unix epoch (when a row was written).
pub(crate) fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// An outbox read's minimum age (`Store::undispatched`, `Store::outbox_backlog`) in whole
/// milliseconds, at most `u32::MAX` (49 days: past any sweep, and within an SQL interval).
pub(crate) fn age_ms(min_age: std::time::Duration) -> i64 {
    i64::from(u32::try_from(min_age.as_millis()).unwrap_or(u32::MAX))
}

/// A duration in whole milliseconds, for SQL interval arithmetic.
pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Due deadline rows `(match, id, generation, due)` in the order [`crate::Store::due_deadlines`]
/// promises: earliest first, then by match, id and generation.
pub(crate) fn due_sorted(found: Vec<(Uuid, String, i64, i64)>) -> Result<Vec<DueDeadline>, StoreError> {
    let mut due = found
        .into_iter()
        .map(|(match_id, deadline_id, generation, due_ms)| {
            Ok(DueDeadline { match_id, deadline_id, generation: to_u64(generation, "generation")?, due_ms })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    sort_due(&mut due);
    Ok(due)
}

/// Sorts due deadlines earliest first, then by match, id and generation.
pub(crate) fn sort_due(due: &mut [DueDeadline]) {
    due.sort_by(|a, b| {
        (a.due_ms, a.match_id, &a.deadline_id, a.generation).cmp(&(b.due_ms, b.match_id, &b.deadline_id, b.generation))
    });
}

/// The keys of deadline rows as column arrays (for `UNNEST`).
#[derive(Default)]
pub(crate) struct DeadlineKeys {
    pub match_ids: Vec<Uuid>,
    pub deadline_ids: Vec<String>,
    pub generations: Vec<i64>,
}

impl DeadlineKeys {
    pub fn of(deadlines: &[DueDeadline]) -> Result<Self, StoreError> {
        let mut keys = Self::default();
        for d in deadlines {
            keys.match_ids.push(d.match_id);
            keys.deadline_ids.push(d.deadline_id.clone());
            keys.generations.push(to_i64(d.generation, "deadline generation")?);
        }
        Ok(keys)
    }
}

/// `matches.status`.
pub(crate) fn match_status(state: &MatchState) -> &'static str {
    if state.is_finished() { "finished" } else { "active" }
}

/// What `Store::replace_snapshot` writes, checked to keep the match and its revision.
pub(crate) struct Replacement<'a> {
    pub match_id: Uuid,
    pub revision: i64,
    pub expected_rules: &'a str,
    pub rules_version: &'a str,
    pub game_version: &'a str,
    pub rules_digest: &'a str,
    pub lock_digest: &'a str,
    pub state: String,
}

impl<'a> Replacement<'a> {
    pub(crate) fn of(expected: &'a MatchState, state: &'a MatchState) -> Result<Self, StoreError> {
        if state.match_id != expected.match_id || state.revision != expected.revision {
            return Err(Self::conflict(expected));
        }
        let c = SnapshotColumns::of(state)?;
        Ok(Self {
            match_id: expected.match_id,
            revision: c.revision,
            expected_rules: &expected.game.rules_version,
            rules_version: &state.game.rules_version,
            game_version: &state.game_version,
            rules_digest: &state.rules_digest,
            lock_digest: state.package.as_ref().map_or("", |p| p.lock_digest.as_str()),
            state: c.state,
        })
    }

    /// The refusal when the stored match is not `expected`.
    pub(crate) fn conflict(expected: &MatchState) -> StoreError {
        StoreError::Conflict { match_id: expected.match_id, expected: Some(expected.revision) }
    }
}

/// The `SET` of `Store::replace_snapshot`'s `UPDATE` and its first conditions (parameters as
/// [`bind_replacement!`] binds them; `$9` is the store's owner); each backend adds its clock,
/// its owner test and its "no revision after it" test.
pub(crate) const REPLACE_SET: &str = "UPDATE matches SET rules_version = $4, game_version = $5, rules_digest = $6,
                                lock_digest = $7, state = $8";
pub(crate) const REPLACE_WHERE: &str = "WHERE match_id = $1 AND revision = $2 AND rules_version = $3";

/// Binds a [`Replacement`] and the store's owner to [`REPLACE_SET`]'s parameters, for either
/// backend's query type.
macro_rules! bind_replacement {
    ($query:expr, $r:expr, $owner:expr) => {
        $query
            .bind($r.match_id)
            .bind($r.revision)
            .bind($r.expected_rules)
            .bind($r.rules_version)
            .bind($r.game_version)
            .bind($r.rules_digest)
            .bind($r.lock_digest)
            .bind($r.state)
            .bind($owner)
    };
}
pub(crate) use bind_replacement;

/// The ids of the matches pinned to the lock digest `$1` (`Store::pinned_to`; the same
/// statement on both SQL backends). It repeats the predicate of the partial index
/// `matches_by_lock_digest` so both planners may use that index for a bound `$1`.
pub(crate) const PINNED_TO: &str =
    "SELECT match_id FROM matches WHERE lock_digest = $1 AND lock_digest <> '' ORDER BY match_id";

/// The `matches` columns a snapshot of `state` writes (both backends, every writer of one).
pub(crate) struct SnapshotColumns {
    pub revision: i64,
    pub phase_epoch: i64,
    pub status: &'static str,
    /// The whole `MatchState` as JSON.
    pub state: String,
}

impl SnapshotColumns {
    pub(crate) fn of(state: &MatchState) -> Result<Self, StoreError> {
        Ok(Self {
            revision: to_i64(state.revision, "revision")?,
            phase_epoch: to_i64(state.phase_epoch, "phase epoch")?,
            status: match_status(state),
            state: encode("match state", state)?,
        })
    }
}

/// One `participants` row.
pub(crate) struct ParticipantRow<'a> {
    pub seat: &'a str,
    pub principal: Option<&'a str>,
    /// A bot seat's profile, or an agent seat's profile behind [`AGENT_PROFILE`].
    pub bot_profile: Option<Cow<'a, str>>,
    pub status: &'static str,
}

/// How a `participants` row tells an agent seat (issue 23): no principal, and its profile in
/// the `bot_profile` column (the column of the seats no platform principal holds) behind this
/// prefix, which no bot profile may start with (the registry refuses such a game). No
/// migration: the row keeps exactly one holder column, and listings decode it back.
pub(crate) const AGENT_PROFILE: &str = juegoland_core::state::AGENT_PREFIX;

/// How a `participants` row tells a replay match's seat: no principal, and this in the
/// `bot_profile` column (no bot profile may start with a reserved prefix).
pub(crate) const REPLAY_PROFILE: &str = juegoland_core::state::REPLAY_PREFIX;

/// The participants of a match as rows: the seat holders, with the status the position
/// gives each seat (a seat the position does not list is active).
pub(crate) fn participants(state: &MatchState) -> Vec<ParticipantRow<'_>> {
    state
        .seats
        .iter()
        .map(|(seat, holder)| {
            let (principal, bot_profile) = match holder {
                SeatHolder::Principal(p) => (Some(p.as_str()), None),
                SeatHolder::Bot(b) => (None, Some(Cow::Borrowed(b.as_str()))),
                SeatHolder::Agent(a) => (None, Some(Cow::Owned(format!("{AGENT_PROFILE}{a}")))),
                SeatHolder::Replay => (None, Some(Cow::Borrowed(REPLAY_PROFILE))),
            };
            let status = match state.position.participants.get(seat).map(|p| &p.status) {
                Some(ParticipantStatus::Withdrawn) => "withdrawn",
                Some(ParticipantStatus::Active) | None => "active",
            };
            ParticipantRow { seat, principal, bot_profile, status }
        })
        .collect()
}

/// The waiting publications of `found` (match, revision, publications column: the
/// revisions past their watermarks, in match and revision order), the first `limit`.
pub(crate) fn undispatched(found: Vec<(Uuid, i64, String)>, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
    let mut out = Vec::new();
    for (match_id, revision, text) in found {
        let revision = to_u64(revision, "revision")?;
        out.extend(
            decode_publications(match_id, revision, &text)?.into_iter().map(|publication| OutboxRow { publication }),
        );
        if out.len() >= limit {
            break;
        }
    }
    out.truncate(limit);
    Ok(out)
}

/// A revision's publications as one column (`revisions.publications`): a JSON array, in the
/// order they were decided, of `{"recipient", "payload", "traceContext"}`, where `payload` is
/// the encoded snapshot itself (not a string holding it) and `recipient` is `null` for
/// authorized spectators. The payload texts are copied in verbatim: they are JSON already,
/// and parsing them to write them again would cost more than the rest of the row.
pub(crate) fn encode_publications(publications: &[Publication]) -> Result<String, StoreError> {
    let mut out = String::with_capacity(publications.iter().map(|p| p.encoded.len() + 96).sum::<usize>() + 2);
    out.push('[');
    for (i, p) in publications.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"recipient\":");
        out.push_str(&encode("publication recipient", &p.recipient)?);
        out.push_str(",\"payload\":");
        out.push_str(&p.encoded);
        out.push_str(",\"traceContext\":");
        out.push_str(&encode("publication trace context", &p.trace_context)?);
        out.push('}');
    }
    out.push(']');
    Ok(out)
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredPublication<'a> {
    recipient: Option<String>,
    #[serde(borrow)]
    payload: &'a serde_json::value::RawValue,
    trace_context: Option<String>,
}

/// The publications of revision `revision` of `match_id` from their column.
pub(crate) fn decode_publications(match_id: Uuid, revision: u64, text: &str) -> Result<Vec<Publication>, StoreError> {
    let stored: Vec<StoredPublication<'_>> = decode_borrowed("publications", match_id, text)?;
    Ok(stored
        .into_iter()
        .map(|s| Publication {
            match_id,
            revision,
            recipient: s.recipient,
            encoded: s.payload.get().into(),
            trace_context: s.trace_context.map(Into::into),
        })
        .collect())
}

fn decode_borrowed<'a, T: serde::Deserialize<'a>>(what: &str, match_id: Uuid, text: &'a str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("decode {what} of match {match_id}: {e}")))
}

/// How the pending deadline rows of a match change with a commit.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct DeadlinePlan<'a> {
    /// Pending rows to close: (deadline id, generation, new state).
    pub close: Vec<(String, i64, &'static str)>,
    /// Rows to add as pending: (deadline id, generation, due, payload).
    pub add: Vec<(&'a str, i64, i64, &'a serde_json::Value)>,
}

/// The generation the commit consumed: its log is the lifecycle event that fired it.
pub(crate) fn fired_generation(commit: &Commit) -> Result<Option<i64>, StoreError> {
    match commit.log.as_ref().map(|l| &l.op) {
        Some(LoggedOp::Lifecycle { generation: Some(g), .. }) => Ok(Some(to_i64(*g, "deadline generation")?)),
        _ => Ok(None),
    }
}

/// Plans the deadline rows for a new state's `deadlines`, given the generations pending
/// in the store. A pending generation the state no longer holds was `fired` (the one the
/// commit consumed) or `cancelled`; a generation not yet stored is added. Generations are
/// never reused, so an existing row is never rewritten.
pub(crate) fn plan_deadlines<'a>(
    fired: Option<i64>,
    deadlines: &'a BTreeMap<String, Deadline>,
    pending: Vec<(String, i64)>,
) -> Result<DeadlinePlan<'a>, StoreError> {
    let mut wanted = BTreeSet::new();
    let mut plan = DeadlinePlan::default();
    for (id, d) in deadlines {
        let generation = to_i64(d.generation, "deadline generation")?;
        wanted.insert((id.as_str(), generation));
        if !pending.iter().any(|(p, g)| p == id && *g == generation) {
            plan.add.push((id.as_str(), generation, d.due_ms, &d.payload));
        }
    }
    for (id, generation) in pending {
        if !wanted.contains(&(id.as_str(), generation)) {
            let state = if fired == Some(generation) { "fired" } else { "cancelled" };
            plan.close.push((id, generation, state));
        }
    }
    Ok(plan)
}

/// The SQL dialects, for error classification.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dialect {
    Postgres,
    Sqlite,
}

/// Whether a database error is transient: the same statement may succeed later.
fn transient(dialect: Dialect, db: &dyn DatabaseError) -> bool {
    let Some(code) = db.code() else { return false };
    match dialect {
        // SQLSTATE: 08 connection exception, 53 insufficient resources, 57P01..57P03
        // shutdown and start-up, 40001 serialization failure, 40P01 deadlock, 55P03 lock not
        // available.
        Dialect::Postgres => {
            code.starts_with("08")
                || code.starts_with("53")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "55P03")
        }
        // Primary result codes (the low byte of the extended code): BUSY, LOCKED, IOERR,
        // FULL, CANTOPEN.
        Dialect::Sqlite => code.parse::<i32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6 | 10 | 13 | 14)),
    }
}

/// Maps a sqlx error met while doing `action` (`"load match"`).
pub(crate) fn store_error(dialect: Dialect, action: &str, e: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    match &e {
        E::Io(_) | E::Tls(_) | E::Protocol(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::BeginFailed => {
            StoreError::Unavailable(format!("{action}: {e}"))
        }
        E::Database(db) if transient(dialect, db.as_ref()) => StoreError::Unavailable(format!("{action}: {e}")),
        _ => StoreError::Corrupt(format!("{action}: {e}")),
    }
}

/// Decodes a JSON column (both backends read JSON as text).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(what: &str, match_id: Uuid, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("decode {what} of match {match_id}: {e}")))
}

/// Encodes a value for a JSON column (both backends write JSON as text).
pub(crate) fn encode<T: serde::Serialize>(what: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(format!("encode {what}: {e}")))
}

/// A receipt from its columns: `(fingerprint, outcome, revision, sequence)`, where a
/// `receipts` row (a final rejection) has its outcome (a `queue` command's sequence in it)
/// and a `revisions` row (an applied command) has none: it was applied at its revision, and
/// a `queue` command's sequence is the one its log entry carries.
pub(crate) fn receipt(
    key: ReceiptKey,
    (fingerprint, outcome, revision, sequence): (String, Option<String>, i64, Option<i64>),
) -> Result<Receipt, StoreError> {
    let outcome = match outcome {
        Some(text) => decode("receipt outcome", key.match_id, &text)?,
        None => ReceiptOutcome::Applied {
            revision: to_u64(revision, "revision")?,
            sequence: sequence.map(|s| to_u64(s, "sequence")).transpose()?,
        },
    };
    Ok(Receipt { key, fingerprint, outcome })
}

/// The platform feed's event a commit causes (`match_events`): its kind and body (the match's
/// summary at the new revision); `None` for the commits of play. A creation is `created`; a
/// commit that ends the match `finished` or `cancelled` (a finished match takes no further
/// commit); a withdrawal that leaves the match going `seatChanged`.
pub(crate) fn feed_event(c: &Commit) -> Result<Option<(&'static str, String)>, StoreError> {
    use juegoland_sdk::MatchResult;
    let Some(state) = c.state.as_deref() else { return Ok(None) };
    // A seat changed hands: withdrawn, or taken by a bot standing in for its away human and
    // handed back.
    let withdrawal = matches!(
        c.log.as_ref().map(|l| &l.op),
        Some(LoggedOp::Lifecycle { event: juegoland_sdk::Lifecycle::Withdrawal { .. }, .. } | LoggedOp::Control { .. })
    );
    let kind = match (&state.position.result, c.expected_revision) {
        (_, None) => "created",
        (Some(MatchResult::Completed { .. }), _) => "finished",
        (Some(MatchResult::Cancelled { .. }), _) => "cancelled",
        (None, Some(_)) if withdrawal => "seatChanged",
        (None, Some(_)) => return Ok(None),
    };
    Ok(Some((kind, encode("feed event", &juegoland_api::MatchSummary::of(state))?)))
}

/// A granted webhook claim from its row's (epoch, txid, seq).
pub(crate) fn webhook_claim(
    endpoint: &str,
    claimant: &str,
    (epoch, txid, seq): (i64, i64, i64),
) -> Result<crate::WebhookClaim, StoreError> {
    Ok(crate::WebhookClaim {
        endpoint: endpoint.to_owned(),
        claimant: claimant.to_owned(),
        epoch: to_u64(epoch, "webhook claim epoch")?,
        cursor: juegoland_api::FeedCursor {
            txid: to_u64(txid, "webhook cursor")?,
            seq: to_u64(seq, "webhook cursor")?,
        },
    })
}

/// A webhook endpoint's row from its (txid, seq, live holder, epoch).
pub(crate) fn webhook_cursor(
    (txid, seq, claimed_by, epoch): (i64, i64, Option<String>, i64),
) -> Result<crate::WebhookCursor, StoreError> {
    Ok(crate::WebhookCursor {
        cursor: juegoland_api::FeedCursor {
            txid: to_u64(txid, "webhook cursor")?,
            seq: to_u64(seq, "webhook cursor")?,
        },
        claimed_by,
        epoch: to_u64(epoch, "webhook claim epoch")?,
    })
}

/// The bindings of a claim's compare-and-set: endpoint, claimant, epoch, cursor txid and seq.
pub(crate) fn webhook_fence(claim: &crate::WebhookClaim) -> Result<(i64, i64, i64), StoreError> {
    Ok((
        to_i64(claim.epoch, "webhook claim epoch")?,
        to_i64(claim.cursor.txid, "webhook cursor")?,
        to_i64(claim.cursor.seq, "webhook cursor")?,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deadline(generation: u64, due_ms: i64) -> Deadline {
        Deadline { generation, due_ms, payload: json!({}) }
    }

    #[test]
    fn deadline_rows_follow_the_state_by_generation() {
        let deadlines =
            BTreeMap::from([("turn".to_string(), deadline(4, 900)), ("idle".to_string(), deadline(2, 500))]);
        let pending = vec![("turn".to_string(), 3), ("idle".to_string(), 2), ("bonus".to_string(), 1)];
        let plan = plan_deadlines(Some(3), &deadlines, pending).unwrap();
        let payload = json!({});
        assert_eq!(
            plan,
            DeadlinePlan {
                close: vec![("turn".into(), 3, "fired"), ("bonus".into(), 1, "cancelled")],
                add: vec![("turn", 4, 900, &payload)],
            },
            "the consumed generation fires, a dropped one is cancelled, a kept one stays, a new one is added"
        );
        let none = BTreeMap::new();
        let plan = plan_deadlines(None, &none, vec![("turn".to_string(), 3)]).unwrap();
        assert_eq!(plan.close, vec![("turn".into(), 3, "cancelled")]);
    }

    #[test]
    fn publications_round_trip_through_their_column_verbatim() {
        let m = Uuid::from_u128(9);
        let publication = |recipient: Option<&str>, encoded: &str, trace: Option<&str>| Publication {
            match_id: m,
            revision: 4,
            recipient: recipient.map(Into::into),
            encoded: encoded.into(),
            trace_context: trace.map(Into::into),
        };
        let publications = vec![
            publication(
                Some("p0"),
                r#"{"type":"game.snapshot","view":{"x":1.50,"s":"\u00e9\"q"}}"#,
                Some("00-ab-cd-01"),
            ),
            publication(None, r#"{"type":"game.snapshot","view":{}}"#, None),
        ];
        let column = encode_publications(&publications).unwrap();
        assert_eq!(decode_publications(m, 4, &column).unwrap(), publications, "exact texts, order and recipients");
        assert_eq!(decode_publications(m, 4, &encode_publications(&[]).unwrap()).unwrap(), vec![]);
        assert!(matches!(decode_publications(m, 4, "[{\"recipient\":1}]"), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn generations_beyond_a_bigint_are_refused() {
        let deadlines = BTreeMap::from([("turn".to_string(), deadline(u64::MAX, 0))]);
        assert!(matches!(plan_deadlines(None, &deadlines, vec![]), Err(StoreError::Corrupt(_))));
    }
}
