//! Replay: re-run a match from its log (configuration, participants, commands and
//! lifecycle events, captured instants and randomness traces) with its pinned module, and
//! compare the logical state (data, flow, result, participants) with what is stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_sdk::{ErasedGame, Lifecycle, LoadedPosition, Participant, Randomness, RuleError, Seat, Services};

use crate::registry::Registry;
use crate::state::{GameKey, LogEntry, LoggedOp, MatchState};

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("rules module {0} is not loaded")]
    UnknownGame(String),
    #[error("{0}")]
    Pinned(String),
    #[error("the log does not start with the creation of the match")]
    NoCreate,
    #[error("log entry {index} has revision {found}, expected {expected}")]
    RevisionGap { index: usize, expected: u64, found: u64 },
    #[error("revision {revision}: {message}")]
    Diverged { revision: u64, message: String },
    #[error("the replayed state differs from the stored one in {0}")]
    StateDiffers(&'static str),
}

/// Replays `log` — the whole log of a match, from its creation — and checks that it passes
/// through `stored`'s logical state (data, flow, result, participants) at `stored`'s revision:
/// a snapshot, which may have log entries after it; those are replayed and checked too.
///
/// A migrated match ([`crate::migration`]) replays each revision with the rules it was
/// decided by: those of its migration marks ([`crate::MigrationMark`]) up to their revisions, then its pinned ones;
/// the position carries over from one module to the next as the migration carried it.
pub fn replay(registry: &Registry, stored: &MatchState, log: &[LogEntry]) -> Result<(), ReplayError> {
    let module = |key: &GameKey, digest: &str| {
        let game =
            registry.get(key).ok_or_else(|| ReplayError::UnknownGame(format!("{} {}", key.id, key.rules_version)))?;
        game.check_pinned(digest).map_err(ReplayError::Pinned)?;
        Ok::<_, ReplayError>(game.game.clone())
    };
    // The rules of each span of revisions: (the last revision they decided, their module).
    let mut spans = Vec::new();
    for mark in &stored.migrations {
        spans.push((mark.revision, module(&mark.from, &mark.from_rules_digest)?));
    }
    spans.push((u64::MAX, module(&stored.game, &stored.rules_digest)?));
    let mut spans = spans.into_iter();
    let mut span = spans.next().expect("the pinned rules' span");
    let diverged = |revision: u64, message: String| ReplayError::Diverged { revision, message };
    if (log.len() as u64) <= stored.revision {
        return Err(diverged(
            stored.revision,
            format!("the log has {} entries for revision {}", log.len(), stored.revision),
        ));
    }

    let (first, rest) = log.split_first().ok_or(ReplayError::NoCreate)?;
    let LoggedOp::Create { config } = &first.op else { return Err(ReplayError::NoCreate) };
    let participants: BTreeMap<Seat, Participant> =
        stored.seats.keys().map(|s| (s.clone(), Participant::active())).collect();
    let mut services = Services::new(first.instant_ms, Randomness::replay(&first.trace));
    let g = span.1.clone();
    let t = g.setup(config, &participants, &mut services).map_err(|e| diverged(0, e.to_string()))?;
    services.finish().map_err(|e| diverged(0, e.to_string()))?;
    check_events(g.encode_events(&t.events).ok(), first, 0)?;
    let mut position: LoadedPosition = t.next;
    carry(0, &mut position, &mut span, &mut spans)?;
    if stored.revision == 0 {
        same_state(&*span.1, &position, stored)?;
    }

    for (i, entry) in rest.iter().enumerate() {
        let expected = i as u64 + 1;
        if entry.revision != expected {
            return Err(ReplayError::RevisionGap { index: i + 1, expected, found: entry.revision });
        }
        if matches!(&entry.op, LoggedOp::Control { .. } | LoggedOp::Lifecycle { .. }) && !entry.op.is_decision() {
            // A seat changed hands, or the engine armed the match's expiry again: the
            // position stays as it was.
            carry(expected, &mut position, &mut span, &mut spans)?;
            if expected == stored.revision {
                same_state(&*span.1, &position, stored)?;
            }
            continue;
        }
        let g = span.1.clone();
        let mut services = Services::new(entry.instant_ms, Randomness::replay(&entry.trace));
        let result: Result<_, RuleError> = match &entry.op {
            LoggedOp::Create { .. } => return Err(diverged(expected, "a second creation".into())),
            LoggedOp::Command { seat, action_type, payload, .. } => {
                let action = g.decode_action(action_type, payload).map_err(|e| diverged(expected, e.to_string()))?;
                g.apply(&position, seat, &action, &mut services)
            }
            LoggedOp::Lifecycle { event, .. } => {
                if let Lifecycle::Withdrawal { seat } = event {
                    position = g.with_withdrawn(&position, seat);
                }
                g.on_lifecycle(&position, event, &mut services)
            }
            LoggedOp::Cancel { reason_code } => Ok(g.cancelled(&position, reason_code)),
            LoggedOp::Control { .. } => return Err(diverged(expected, "a hand-over is no rules decision".into())),
        };
        let t = result.map_err(|e| diverged(expected, e.to_string()))?;
        services.finish().map_err(|e| diverged(expected, e.to_string()))?;
        check_events(g.encode_events(&t.events).ok(), entry, expected)?;
        position = t.next;
        carry(expected, &mut position, &mut span, &mut spans)?;
        if expected == stored.revision {
            same_state(&*span.1, &position, stored)?;
        }
    }
    Ok(())
}

/// The rules of a span of revisions: the last revision they decided, and their module.
type Span = (u64, Arc<dyn ErasedGame>);

/// After `revision`: when it ends the current span (a migration's), carries the position
/// to the next span's rules as the migration did (the same state JSON).
fn carry(
    revision: u64,
    position: &mut LoadedPosition,
    span: &mut Span,
    spans: &mut impl Iterator<Item = Span>,
) -> Result<(), ReplayError> {
    let diverged = |message: String| ReplayError::Diverged { revision, message };
    while span.0 == revision {
        let next = spans.next().ok_or_else(|| diverged("a migration after the pinned rules".into()))?;
        let carried = span.1.encode_position(position).map_err(|e| diverged(e.to_string()))?;
        *position = next.1.decode_position(&carried).map_err(|e| diverged(e.to_string()))?;
        *span = next;
    }
    Ok(())
}

/// Whether the replayed `position` is `stored`'s logical state.
fn same_state(g: &dyn ErasedGame, position: &LoadedPosition, stored: &MatchState) -> Result<(), ReplayError> {
    let replayed = g
        .encode_position(position)
        .map_err(|e| ReplayError::Diverged { revision: stored.revision, message: e.to_string() })?;
    let s = &stored.position;
    if replayed.data != s.data {
        return Err(ReplayError::StateDiffers("data"));
    }
    if replayed.flow != s.flow {
        return Err(ReplayError::StateDiffers("flow"));
    }
    if replayed.result != s.result {
        return Err(ReplayError::StateDiffers("result"));
    }
    if replayed.participants != s.participants {
        return Err(ReplayError::StateDiffers("participants"));
    }
    Ok(())
}

fn check_events(events: Option<Vec<serde_json::Value>>, entry: &LogEntry, revision: u64) -> Result<(), ReplayError> {
    if events.as_ref() != Some(&entry.events) {
        return Err(ReplayError::Diverged { revision, message: "internal events differ".into() });
    }
    Ok(())
}
