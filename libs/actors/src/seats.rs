//! Who answers a seat's "your move?" besides its human (engine spec § Seats), on the match's
//! actor: hand-over — a built-in bot stands in for a human whose subscriptions all ended,
//! once the match's grace passed, and hands the seat back when the human syncs again — and
//! the replay script, which plays a stored match's decisions back into a replay match at a
//! chosen speed. Built-in bot seats are `bots.rs`; the bot that stands in is the same code.
//! Every controller's move goes through the engine like any command, with its receipt; a
//! change of hands is a revision of its own (`LifecycleRequest::Control`), never a
//! withdrawal. The seats gauge counts every active match's seats by controller kind.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use juegoland_api::{MatchError, Refusal};
use juegoland_core::state::SPECTATOR_PREFIX;
use juegoland_core::{ControllerKind, LifecycleRequest, LogEntry, SeatHolder};
use juegoland_sdk::{Handover, Seat};
use ractor::ActorRef;
use tracing::{Instrument, error, info, warn};

use crate::actor::{MatchActor, MatchActorState, MatchMsg, lifecycle_span};
use crate::shell::redacted;

/// The longest pause a replay waits between two decisions, whatever the source waited: a
/// match left alone for an hour replays without the hour.
pub(crate) const LONGEST_REPLAY_PAUSE: Duration = Duration::from_secs(5);

/// The seats' presence as this match's actor knows it: which subscriptions of each human
/// seat are open (with when their gateway last said so: one not renewed within the lease is
/// forgotten), the seats whose humans left (with the generation of the hand-over timer armed
/// for each), whether a lapse check is scheduled, and until when spectators follow the match.
#[derive(Default)]
pub(crate) struct Presence {
    open: BTreeMap<Seat, BTreeMap<String, Instant>>,
    away: BTreeMap<Seat, u64>,
    generation: u64,
    lapse_scheduled: bool,
    /// Spectators follow the match until then: a spectator's sync, and each renewal of its
    /// subscription's presence, hold it for a lease. `None`: no spectator has said so to
    /// this actor.
    watched_until: Option<Instant>,
}

impl Presence {
    /// The presence of an actor that starts with a match just created (nobody can follow a
    /// match before it exists) or, `activated`, with one loaded from the store: its
    /// spectators may have synced with its previous actor (before passivation, or on the node
    /// that owned it), so they are assumed to follow it for a lease, within which their
    /// subscriptions' next renewal tells this actor.
    pub(crate) fn new(activated: bool, lease: Duration) -> Self {
        Self { watched_until: activated.then(|| Instant::now() + lease), ..Self::default() }
    }

    /// A spectator synced, or renewed its subscription's presence: the match's revisions
    /// carry a spectators' publication for a lease from now.
    pub(crate) fn spectator_here(&mut self, lease: Duration) {
        let until = Instant::now() + lease;
        self.watched_until = Some(self.watched_until.map_or(until, |t| t.max(until)));
    }

    /// Whether a spectator may follow the match now (its revisions then carry a spectators'
    /// publication). A spectator whose gateway stopped renewing within the lease is
    /// forgotten; should it still be there, its subscription sees the gap or a cursor ahead of
    /// it and syncs again, which holds the match watched again.
    pub(crate) fn watched(&self) -> bool {
        self.watched_until.is_some_and(|t| Instant::now() < t)
    }
}

/// A replay match's script: the source's decisions (its log without its creation and its
/// hand-overs), the source's creation instant, and whether a step is scheduled.
pub(crate) struct Script {
    decisions: Vec<LogEntry>,
    source_created_ms: i64,
    scheduled: bool,
}

impl MatchActor {
    /// A seat's subscription synced (`present`) or ended, or a spectator's (under
    /// [`SPECTATOR_PREFIX`]) renewed its lease. Answers the match's revision after whatever it
    /// caused: a seat handed back to its returning human is a revision.
    pub(crate) async fn presence(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        principal: &str,
        subscription: String,
        present: bool,
    ) -> Result<u64, MatchError> {
        if principal.starts_with(SPECTATOR_PREFIX) {
            // A spectator that left lapses with its lease: its absence changes nothing now.
            if present {
                state.presence.spectator_here(self.shared.config.presence_lease);
            }
            return Ok(state.live().state().revision);
        }
        let s = state.live().state();
        let seat = match s.seat_of(principal) {
            Some(seat) if matches!(s.seats.get(seat), Some(SeatHolder::Principal(_))) => seat.to_owned(),
            // Only a human's seat has a presence to follow.
            _ => return Ok(s.revision),
        };
        let open = state.presence.open.entry(seat.clone()).or_default();
        if present {
            open.insert(subscription, Instant::now());
            state.presence.away.remove(&seat);
            self.schedule_lapse(myself, state);
            if state.live().state().stand_ins.contains_key(&seat) {
                let request = LifecycleRequest::Control { seat: seat.clone(), stand_in: None };
                self.change_hands(myself, state, request, "handover_returned").await?;
            }
        } else {
            open.remove(&subscription);
            if open.is_empty() {
                self.human_left(myself, state, seat);
            }
        }
        Ok(state.live().state().revision)
    }

    /// Forgets the subscriptions whose gateways stopped renewing them within the lease: a
    /// seat left with none is a human who left.
    pub(crate) fn presence_lapse(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        state.presence.lapse_scheduled = false;
        let lease = self.shared.config.presence_lease;
        let now = Instant::now();
        let mut left = Vec::new();
        for (seat, open) in &mut state.presence.open {
            let before = open.len();
            open.retain(|_, renewed| now.duration_since(*renewed) < lease);
            if before > 0 && open.is_empty() {
                left.push(seat.clone());
            }
        }
        for seat in left {
            warn!(match_id = %state.live().state().match_id, seat, "a seat's presence lapsed: its gateway stopped renewing it");
            self.human_left(myself, state, seat);
        }
        self.schedule_lapse(myself, state);
    }

    /// Checks for lapsed presences again within a fraction of the lease, while any is open.
    fn schedule_lapse(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        if state.presence.lapse_scheduled || state.presence.open.values().all(BTreeMap::is_empty) {
            return;
        }
        state.presence.lapse_scheduled = true;
        myself.send_after(self.shared.config.presence_lease / 3, || MatchMsg::PresenceLapse);
    }

    /// The last subscription of `seat`'s human ended: under a `bot`, `forfeit` or `cancel`
    /// policy, the policy acts once the grace has passed (if the human has not come back).
    fn human_left(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState, seat: Seat) {
        let s = state.live().state();
        let Some(after_ms) = s.handover.as_ref().and_then(Handover::after_ms) else { return };
        let active = s.position.participants.get(&seat).is_some_and(|p| p.is_active());
        if s.is_finished() || !active || s.stand_ins.contains_key(&seat) {
            return;
        }
        state.presence.generation += 1;
        let generation = state.presence.generation;
        state.presence.away.insert(seat.clone(), generation);
        myself.send_after(Duration::from_millis(after_ms), move || MatchMsg::HandoverDue {
            seat: seat.clone(),
            generation,
        });
    }

    /// The grace of an away human ran out, and it is still away from a seat still in play:
    /// its bot takes the seat (`bot`), the seat is withdrawn (`forfeit`: the game's withdrawal
    /// policy decides what follows) or the match is cancelled (`cancel`, reason
    /// `match.expired.abandoned`).
    pub(crate) async fn handover_due(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        seat: Seat,
        generation: u64,
    ) {
        if state.presence.away.get(&seat) != Some(&generation) {
            return;
        }
        state.presence.away.remove(&seat);
        let s = state.live().state();
        let active = s.position.participants.get(&seat).is_some_and(|p| p.is_active());
        if s.is_finished() || !active || s.stand_ins.contains_key(&seat) {
            return;
        }
        let (request, event) = match &s.handover {
            Some(Handover::Bot { profile, .. }) => {
                (LifecycleRequest::Control { seat: seat.clone(), stand_in: Some(profile.clone()) }, "handover_taken")
            }
            Some(Handover::Forfeit { .. }) => (LifecycleRequest::Withdraw { seat: seat.clone() }, "handover_forfeit"),
            Some(Handover::Cancel { .. }) => {
                let reason_code = juegoland_core::EXPIRED_ABANDONED.to_owned();
                (LifecycleRequest::Cancel { reason_code }, "handover_cancelled")
            }
            Some(Handover::Off | Handover::Clock) | None => return,
        };
        if let Err(e) = self.change_hands(myself, state, request, event).await {
            warn!(match_id = %state.live().state().match_id, seat, error = %e, "hand-over failed");
        }
    }

    /// Commits a change of hands and counts it.
    pub(crate) async fn change_hands(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        request: LifecycleRequest,
        event: &str,
    ) -> Result<u64, MatchError> {
        let span = lifecycle_span(None, state.live().state().match_id, &request);
        let revision = self.lifecycle(myself, state, &request).instrument(span).await?;
        self.shared.metrics.actor_events.with_label_values(&[event]).inc();
        match &request {
            LifecycleRequest::Control { seat, stand_in } => {
                info!(match_id = %state.live().state().match_id, seat, revision, bot = stand_in.as_deref(), "seat changed hands");
            }
            other => {
                info!(match_id = %state.live().state().match_id, revision, event, request = ?other, "away human's seat")
            }
        }
        Ok(revision)
    }

    /// What a lifecycle request from outside (the platform, the scheduler, a local timer) is
    /// refused on a replay match: its script alone decides it; only a cancellation (to stop
    /// watching) is the platform's.
    pub(crate) fn refused_on_replay(state: &MatchActorState, request: &LifecycleRequest) -> Option<MatchError> {
        state.live().state().replay_of.as_ref()?;
        let message = "a replay match is played by its script";
        match request {
            LifecycleRequest::Cancel { .. } => None,
            LifecycleRequest::FireDeadline { .. } => Some(MatchError::refused(Refusal::StaleDeadline, message)),
            LifecycleRequest::Withdraw { .. } | LifecycleRequest::Control { .. } => {
                Some(MatchError::refused(Refusal::Illegal, message))
            }
        }
    }

    /// Schedules the replay script's next step, after the source's pause before that
    /// decision at the replay's speed (at most [`LONGEST_REPLAY_PAUSE`]). Loads the source's
    /// log first when the actor has not yet.
    pub(crate) async fn schedule_script(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let s = state.live().state();
        let Some(replay) = s.replay_of.clone() else { return };
        if s.is_finished() {
            return;
        }
        if state.script.is_none() {
            match self.shared.store.log(replay.source).await {
                Ok(log) => {
                    let source_created_ms = log.first().map_or(0, |e| e.instant_ms);
                    let decisions = log.into_iter().filter(|e| e.op.is_decision()).collect();
                    state.script = Some(Script { decisions, source_created_ms, scheduled: false });
                }
                Err(e) => {
                    warn!(match_id = %s.match_id, source = %replay.source, error = %e, "replay: the source's log is unreadable; retrying");
                    myself.send_after(LONGEST_REPLAY_PAUSE, || MatchMsg::ScriptStep);
                    return;
                }
            }
        }
        let revision = state.live().state().revision;
        let Some(script) = state.script.as_mut() else { return };
        if script.scheduled {
            return;
        }
        // Revision r of the replay is the source's r-th decision.
        let Some(next) = script.decisions.get(revision as usize) else { return };
        let before = match revision {
            0 => script.source_created_ms,
            r => script.decisions[r as usize - 1].instant_ms,
        };
        let pause_ms = u64::try_from(next.instant_ms - before).unwrap_or(0) * 100 / u64::from(replay.speed_percent);
        let pause = Duration::from_millis(pause_ms).min(LONGEST_REPLAY_PAUSE);
        script.scheduled = true;
        myself.send_after(pause, || MatchMsg::ScriptStep);
    }

    /// Plays the script's next decision: decided by the engine with the source revision's
    /// randomness at its instant shifted to this match, committed and published like any.
    /// A decision that does not come out as it did stops the replay: the match is cancelled
    /// with `replay.diverged`.
    pub(crate) async fn script_step(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        if let Some(script) = state.script.as_mut() {
            script.scheduled = false;
        }
        let revision = state.live().state().revision;
        let entry = state.script.as_ref().and_then(|s| s.decisions.get(revision as usize).cloned());
        let (Some(entry), Some(script)) = (entry, state.script.as_ref()) else {
            // Not loaded yet (or nothing left): loading schedules the step.
            self.schedule_script(myself, state).await;
            return;
        };
        let live = state.live();
        let instant_ms = live.state().created_ms + (entry.instant_ms - script.source_created_ms);
        let match_id = live.state().match_id;
        match self.shared.engine.replay_step(live, &entry, instant_ms) {
            Ok(pending) => match self.commit(myself, state, pending).await {
                Ok(_) => self.shared.metrics.actor_events.with_label_values(&["replay_step"]).inc(),
                Err(e) => {
                    warn!(match_id = %match_id, error = %e, "replay step not committed; retrying");
                    myself.send_after(LONGEST_REPLAY_PAUSE, || MatchMsg::ScriptStep);
                    return;
                }
            },
            Err(fault) => {
                error!(match_id = %match_id, source_revision = entry.revision, fault = redacted(&fault.0), "replay diverged; cancelling the replay match");
                self.shared.metrics.actor_events.with_label_values(&["replay_diverged"]).inc();
                let request = LifecycleRequest::Cancel { reason_code: "replay.diverged".into() };
                if let Err(e) = self.lifecycle(myself, state, &request).await {
                    warn!(match_id = %match_id, error = %e, "cancelling a diverged replay failed");
                }
                return;
            }
        }
        self.schedule_script(myself, state).await;
    }

    /// Brings the seats gauge in line with this match's controllers now (after a creation,
    /// an activation, a change of hands); `stopping` takes them all out.
    pub(crate) fn count_seats(&self, state: &mut MatchActorState, stopping: bool) {
        let now: BTreeMap<Seat, ControllerKind> = match (&state.hot, stopping) {
            (Some(live), false) => {
                let s = live.state();
                s.seats.keys().filter_map(|seat| Some((seat.clone(), s.controller(seat)?))).collect()
            }
            // A quiet match's controllers are those counted when it cooled.
            (None, false) => return,
            (_, true) => BTreeMap::new(),
        };
        if now == state.counted {
            return;
        }
        let gauge = &self.shared.metrics.seats;
        for kind in state.counted.values() {
            gauge.with_label_values(&[kind.as_str()]).dec();
        }
        for kind in now.values() {
            gauge.with_label_values(&[kind.as_str()]).inc();
        }
        state.counted = now;
    }
}
