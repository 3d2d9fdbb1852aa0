//! Built-in bot seats: a bot's move is decided off the actor (on a blocking thread) for the
//! revision it saw, then submitted through the same command path as any seat's, with a
//! precondition and a receipt. When several bot seats may act at once, the one after the
//! last asked goes first; a bot's real-time (`queue`) command pauses that seat for
//! `HostConfig::bot_queue_pause`, so a bot plays at a human pace instead of filling the
//! match's FIFO with moves its cooldown refuses.

use std::time::Instant;

use juegoland_protocol::{Action, CommandEnvelope, ServerMessage};
use juegoland_sdk::Seat;
use ractor::ActorRef;
use serde_json::Value;
use tracing::{Instrument, warn};

use crate::actor::{MatchActor, MatchActorState, MatchMsg, command_span};
use crate::shell::{OsEntropy, random_uuid};

impl MatchActor {
    /// Starts computing a bot seat's move off the actor, if a bot is to act.
    pub(crate) fn maybe_bot(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let s = state.live().state();
        if state.bot_pending.is_some() || s.is_finished() || state.bot_idle == Some(s.revision) {
            return;
        }
        // A bot seat whose stage allows some action (a seat waiting for others has none).
        let d = state.live().game().descriptor();
        let phase = d.phase(&s.position.flow.phase);
        let can_act =
            |stage: &str| phase.is_some_and(|p| p.stages.iter().any(|st| st.id == stage && !st.actions.is_empty()));
        let bots: Vec<(Seat, String)> = s
            .position
            .flow
            .actors
            .iter()
            .filter_map(|(seat, stage)| match s.bot_of(seat) {
                // Its own bot's, or the one standing in for its away human.
                Some(profile) if can_act(stage) => Some((seat.clone(), profile.to_owned())),
                _ => None,
            })
            .collect();
        // The seats after the last one asked first, then the others (it included).
        let after = |seat: &Seat| state.bot_last.as_ref().is_some_and(|last| seat > last);
        let ordered = bots.iter().filter(|(s, _)| after(s)).chain(bots.iter().filter(|(s, _)| !after(s)));
        let now = Instant::now();
        let mut paused_until: Option<Instant> = None;
        let mut chosen = None;
        for (seat, profile) in ordered {
            match state.bot_ready_at.get(seat) {
                Some(at) if *at > now => paused_until = Some(paused_until.map_or(*at, |p| p.min(*at))),
                _ => {
                    chosen = Some((seat.clone(), profile.clone()));
                    break;
                }
            }
        }
        let Some((seat, profile)) = chosen else {
            if let Some(at) = paused_until
                && !state.bot_wake_scheduled
            {
                state.bot_wake_scheduled = true;
                myself.send_after(at - now, || MatchMsg::BotWake);
            }
            return;
        };
        let revision = s.revision;
        let position = s.position.clone();
        let game = state.live().game().clone();
        state.bot_last = Some(seat.clone());
        state.bot_pending = Some(revision);
        let myself = myself.clone();
        tokio::task::spawn_blocking(move || {
            let decided = game
                .game
                .decode_position(&position)
                .ok()
                .and_then(|p| game.game.bot_action(&p, &seat, &profile, &mut OsEntropy::new()));
            // The actor may have stopped meanwhile; then there is nobody to tell.
            let _ = myself.cast(MatchMsg::BotMove { seat, revision, decided });
        });
    }

    pub(crate) async fn bot_move(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        seat: &str,
        action_type: String,
        payload: Value,
    ) {
        let precondition = state.live().precondition(seat, &action_type);
        if precondition == juegoland_protocol::Precondition::Queue {
            let pause = self.shared.config.bot_queue_pause;
            state.bot_ready_at.insert(seat.to_owned(), Instant::now() + pause);
        }
        let envelope = CommandEnvelope {
            match_id: state.live().state().match_id,
            command_id: random_uuid(),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        let principal = format!("{}{seat}", juegoland_core::state::BOT_PREFIX);
        // A bot's move starts a trace of its own.
        let span = command_span(None, state, &principal, &envelope);
        let answer = self.command(myself, state, &principal, &envelope).instrument(span).await;
        if let ServerMessage::Error(e) = answer {
            warn!(match_id = %envelope.match_id, seat, code = ?e.code, "bot command failed");
        }
    }
}
