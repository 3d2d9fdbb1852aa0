//! Per-recipient outputs: snapshots with visible events and offers, each validated against
//! the game's generated schemas and the size limit before anything is committed.

use juegoland_protocol::{
    ConcreteOffer, ParametrizedOffer, Precondition, ServerMessage, Snapshot, WireEvent, WireOffer,
};
use juegoland_sdk::{ConflictPolicy, ErasedTransition, LoadedPosition, RawJson, Recipient};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::pipeline::{Fault, Limits};
use crate::registry::LoadedGame;
use crate::state::{MatchState, Publication};

/// The serialized length of a JSON value, without building the string.
pub fn json_size(v: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing to a counter cannot fail; a serialization error would count as oversized.
    match serde_json::to_writer(&mut c, v) {
        Ok(()) => c.0,
        Err(_) => usize::MAX,
    }
}

/// The stable id of a visible event: one UUID per (match, recipient, revision, local order).
/// It is derived, not random, so a re-dispatched publication carries the same ids; it hides
/// the internal event index it came from.
pub fn event_id(match_id: Uuid, recipient: Option<&str>, revision: u64, index: usize) -> Uuid {
    let mut h = Sha256::new();
    h.update(match_id.as_bytes());
    h.update(recipient.unwrap_or("*spectator*").as_bytes());
    h.update([0]);
    h.update(revision.to_be_bytes());
    h.update((index as u64).to_be_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Uuid::new_v8(bytes)
}

/// `{"type":<event_type>,"data":<data>}`, the form a visible event's schema describes.
fn tagged_text(event_type: &str, data: &str) -> String {
    let mut text = String::with_capacity(event_type.len() + data.len() + 20);
    text.push_str("{\"type\":");
    // Writing a string into a String cannot fail.
    text.push_str(&serde_json::to_string(event_type).unwrap_or_default());
    text.push_str(",\"data\":");
    text.push_str(data);
    text.push('}');
    text
}

/// The precondition a recipient must send with an offered action.
fn precondition(state: &MatchState, seat: Option<&str>, policy: ConflictPolicy) -> Precondition {
    match policy {
        ConflictPolicy::Match => Precondition::Match { revision: state.revision },
        ConflictPolicy::Actor => Precondition::Actor {
            phase_epoch: state.phase_epoch,
            actor_revision: seat.and_then(|s| state.actor_revisions.get(s)).copied().unwrap_or(0),
        },
        ConflictPolicy::Queue => Precondition::Queue,
    }
}

fn offers(
    game: &LoadedGame,
    state: &MatchState,
    loaded: &LoadedPosition,
    recipient: Recipient<'_>,
) -> Result<Vec<WireOffer>, Fault> {
    let d = game.descriptor();
    game.game
        .available_actions(loaded, recipient)
        .map_err(|e| Fault(e.to_string()))?
        .into_iter()
        .map(|o| {
            let spec = d
                .action(&o.action_type)
                .ok_or_else(|| Fault(format!("{} offered unknown action {}", d.id, o.action_type)))?;
            let precondition = precondition(state, recipient.seat(), spec.policy);
            match (o.payload, o.constraints) {
                (Some(payload), None) => {
                    if !game.offered_payload_valid(&o.action_type, payload.get()) {
                        return Err(Fault(format!("{} offered an invalid {} payload", d.id, o.action_type)));
                    }
                    Ok(WireOffer::Concrete(ConcreteOffer { r#type: o.action_type, payload, precondition }))
                }
                (None, Some(constraints)) => Ok(WireOffer::Parametrized(ParametrizedOffer {
                    schema: d.action_schema_id(&o.action_type),
                    r#type: o.action_type,
                    constraints,
                    precondition,
                })),
                _ => Err(Fault(format!("{} produced a malformed offer", d.id))),
            }
        })
        .collect()
}

/// Builds and validates one recipient's snapshot (the caller checks its encoded size). With
/// `transition`, it is a live snapshot (`fromRevision = revision - 1` and the visible events
/// of this revision); without, a sync snapshot with no events.
pub(crate) fn build_snapshot(
    game: &LoadedGame,
    state: &MatchState,
    loaded: &LoadedPosition,
    transition: Option<(&LoadedPosition, &ErasedTransition)>,
    recipient: Recipient<'_>,
    known_valid_view: Option<&RawJson>,
) -> Result<ServerMessage, Fault> {
    let d = game.descriptor();
    let projection = game.game.project(loaded, recipient).map_err(|e| Fault(e.to_string()))?;
    // A view with the same text as one already checked in this revision (public games give
    // every recipient the same view) is valid; comparing costs a fraction of checking.
    let known = known_valid_view.is_some_and(|v| v.get() == projection.view.get());
    if !known && let Err(e) = game.view.check(projection.view.get()) {
        return Err(Fault(format!("{} produced a view that fails its view schema: {e}", d.id)));
    }
    if let Err(e) = game.context.check(projection.context.get()) {
        return Err(Fault(format!("{} produced a context that fails its context schema: {e}", d.id)));
    }
    let seat = recipient.seat();
    let events = match transition {
        None => Vec::new(),
        Some((before, t)) => game
            .game
            .project_events(before, &t.next, &t.events, recipient)
            .map_err(|e| Fault(e.to_string()))?
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                // Check the tagged form the game's schema describes, as text.
                let tagged = tagged_text(&e.event_type, e.data.get());
                if let Err(error) = game.visible_event.check(&tagged) {
                    return Err(Fault(format!("{} produced a visible event that fails its schema: {error}", d.id)));
                }
                Ok(WireEvent {
                    event_id: event_id(state.match_id, seat, state.revision, i),
                    r#type: e.event_type,
                    data: e.data,
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let snapshot = ServerMessage::Snapshot(Box::new(Snapshot {
        match_id: state.match_id,
        subscription_id: String::new(),
        request_id: None,
        from_revision: transition.map(|_| state.revision - 1),
        revision: state.revision,
        seat: seat.map(str::to_owned),
        view: projection.view,
        context: projection.context,
        actions: offers(game, state, loaded, recipient)?,
        result: projection.result,
        events,
        controllers: state.controllers(),
    }));
    Ok(snapshot)
}

/// Fails when a snapshot is over the per-recipient limit.
pub(crate) fn check_size(game: &LoadedGame, size: usize, limits: &Limits) -> Result<(), Fault> {
    if size > limits.max_projection_bytes {
        return Err(Fault(format!("{} produced a {size}-byte snapshot, over the limit", game.descriptor().id)));
    }
    Ok(())
}

/// The publications of an accepted revision: one snapshot per seat and, when the game
/// defines a spectator projection ([`juegoland_sdk::Game::spectators`]) and spectators
/// follow the match (`watched`, [`crate::LiveMatch::set_watched`]), one for spectators
/// (recipient `None`: its view, its visible events, no offers), all built from THIS
/// revision's state (never a later re-read).
pub(crate) fn publications(
    game: &LoadedGame,
    before_loaded: &LoadedPosition,
    after: &MatchState,
    t: &ErasedTransition,
    limits: &Limits,
    watched: bool,
) -> Result<Vec<Publication>, Fault> {
    let mut previous: Option<ServerMessage> = None;
    let spectators = (watched && game.game.spectators()).then_some(Recipient::Spectator);
    let mut out = Vec::with_capacity(after.seats.len() + usize::from(spectators.is_some()));
    for recipient in after.seats.keys().map(|seat| Recipient::Seat(seat)).chain(spectators) {
        let known_valid_view = match &previous {
            Some(ServerMessage::Snapshot(s)) => Some(&s.view),
            _ => None,
        };
        let snapshot = build_snapshot(game, after, &t.next, Some((before_loaded, t)), recipient, known_valid_view)?;
        if recipient == Recipient::Spectator && has_offers(&snapshot) {
            return Err(Fault(format!("{} offered actions to spectators", game.descriptor().id)));
        }
        let encoded = juegoland_protocol::encode(&snapshot);
        check_size(game, encoded.len(), limits)?;
        out.push(Publication {
            match_id: after.match_id,
            revision: after.revision,
            recipient: recipient.seat().map(str::to_owned),
            encoded: encoded.into(),
            trace_context: None,
        });
        previous = Some(snapshot);
    }
    Ok(out)
}

/// Whether a snapshot offers any action (a spectator's never does: it sends no commands).
pub(crate) fn has_offers(snapshot: &ServerMessage) -> bool {
    matches!(snapshot, ServerMessage::Snapshot(s) if !s.actions.is_empty())
}
