//! Checking a store after the fact: replaying stored matches with their pinned rules, and the
//! end-of-run audit of a load test or a crash test — every receipt a client saw as applied is
//! committed with that revision, no command took effect twice, every log is contiguous and
//! ends at the stored revision, and every match replays to its stored state.
//!
//! Used by `juegoland replay`, the load-test harness (`loadtest/`) and the cluster tests, so
//! the three agree on what "consistent" means.

use std::collections::{BTreeMap, BTreeSet};

use juegoland_core::{LoggedOp, ReceiptKey, ReceiptOutcome, Registry, ReplayError};
use uuid::Uuid;

use crate::{Store, StoreError};

/// The outcome of replaying one match.
#[derive(Debug)]
pub struct MatchReplay {
    pub match_id: Uuid,
    pub revision: u64,
    pub result: Result<(), ReplayError>,
}

/// Replays each match of `ids` from its log and trace with its pinned module.
pub async fn replay_matches(
    store: &dyn Store,
    registry: &Registry,
    ids: impl IntoIterator<Item = Uuid>,
) -> Result<Vec<MatchReplay>, StoreError> {
    let mut out = Vec::new();
    for match_id in ids {
        let Some((stored, log)) = settled(store, match_id).await? else {
            out.push(MatchReplay { match_id, revision: 0, result: Err(ReplayError::NoCreate) });
            continue;
        };
        let result = juegoland_core::replay(registry, &stored.snapshot, &log);
        out.push(MatchReplay { match_id, revision: stored.revision(), result });
    }
    Ok(out)
}

/// How many times a match that moved while it was read is read again.
const SETTLE_ATTEMPTS: usize = 20;

/// A match and its log as of one revision: the store's two reads are separate, and a match
/// still in play (a bot standing in for a load test's departed client, a scheduler's deadline)
/// may commit between them. Read the match, its log, then the match again: the same revision
/// twice means no commit came between, so the log is the one of that revision. Read again
/// while it moves; a match that never holds still gives its last reads (and the audit then
/// reports the mismatch it sees).
async fn settled(
    store: &dyn Store,
    match_id: Uuid,
) -> Result<Option<(juegoland_core::StoredMatch, Vec<juegoland_core::LogEntry>)>, StoreError> {
    let Some(mut stored) = store.load(match_id).await? else { return Ok(None) };
    let mut attempts = 1;
    loop {
        let log = store.log(match_id).await?;
        let Some(again) = store.load(match_id).await? else { return Ok(None) };
        if again.revision() == stored.revision() || attempts == SETTLE_ATTEMPTS {
            return Ok(Some((stored, log)));
        }
        (stored, attempts) = (again, attempts + 1);
    }
}

/// A command a client saw acknowledged as applied, producing `revision`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeenApplied {
    pub match_id: Uuid,
    pub principal: String,
    pub command_id: Uuid,
    pub revision: u64,
}

/// What the audit checked and every inconsistency it found (none when the store is sound).
#[derive(Debug, Default)]
pub struct AuditReport {
    pub matches: usize,
    pub receipts_checked: usize,
    pub log_entries: usize,
    pub replayed: usize,
    pub problems: Vec<String>,
}

impl AuditReport {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Audits `matches` (every stored match when `None`) against what clients saw.
pub async fn audit(
    store: &dyn Store,
    registry: &Registry,
    seen: &[SeenApplied],
    matches: Option<&BTreeSet<Uuid>>,
) -> Result<AuditReport, StoreError> {
    let ids: BTreeSet<Uuid> = match matches {
        Some(ids) => ids.clone(),
        None => store.match_ids().await?.into_iter().collect(),
    };
    let mut report = AuditReport { matches: ids.len(), ..AuditReport::default() };
    let mut seen_per_match: BTreeMap<Uuid, BTreeSet<Uuid>> = BTreeMap::new();
    for s in seen {
        let key = ReceiptKey { match_id: s.match_id, principal: s.principal.clone(), command_id: s.command_id };
        report.receipts_checked += 1;
        match store.receipt(&key).await? {
            Some(r) if matches!(r.outcome, ReceiptOutcome::Applied { revision, .. } if revision == s.revision) => {}
            Some(r) => report.problems.push(format!(
                "command {} of {} in {} was acknowledged applied at revision {} but its receipt says {:?}",
                s.command_id, s.principal, s.match_id, s.revision, r.outcome
            )),
            None => report.problems.push(format!(
                "command {} of {} in {} was acknowledged applied at revision {} but has no receipt",
                s.command_id, s.principal, s.match_id, s.revision
            )),
        }
        seen_per_match.entry(s.match_id).or_default().insert(s.command_id);
    }
    for &match_id in &ids {
        let Some((stored, log)) = settled(store, match_id).await? else {
            report.problems.push(format!("match {match_id} is not stored"));
            continue;
        };
        report.log_entries += log.len();
        let contiguous = log.iter().enumerate().all(|(i, e)| e.revision == i as u64);
        if !contiguous {
            report.problems.push(format!("the log of {match_id} has a gap or a fork"));
        }
        if log.last().map(|e| e.revision) != Some(stored.revision()) {
            report.problems.push(format!(
                "match {match_id} is stored at revision {} but its log ends at {:?}",
                stored.revision(),
                log.last().map(|e| e.revision)
            ));
        }
        if !log.ends_with(&stored.tail) {
            report.problems.push(format!("the revisions after the snapshot of {match_id} are not its log's last"));
        }
        let mut logged = BTreeSet::new();
        for entry in &log {
            if let LoggedOp::Command { command_id, .. } = &entry.op
                && !logged.insert(*command_id)
            {
                report.problems.push(format!("command {command_id} took effect twice in {match_id}"));
            }
        }
        for command_id in seen_per_match.get(&match_id).into_iter().flatten() {
            if !logged.contains(command_id) {
                report.problems.push(format!("acknowledged command {command_id} is not in the log of {match_id}"));
            }
        }
        let replayed = juegoland_core::replay(registry, &stored.snapshot, &log);
        report.replayed += 1;
        if let Err(e) = replayed {
            report.problems.push(format!("match {match_id} does not replay to its stored state: {e}"));
        }
    }
    for match_id in seen_per_match.keys() {
        if !ids.contains(match_id) {
            report.problems.push(format!("a client saw commands applied in {match_id}, which was not audited"));
        }
    }
    Ok(report)
}
