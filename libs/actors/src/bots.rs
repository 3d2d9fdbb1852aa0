//! Built-in bot seats: a bot's move is decided off the actor (on a blocking thread) for the
//! revision it saw, then submitted through the same command path as any seat's, with a
//! precondition and a receipt.

use juegoland_core::SeatHolder;
use juegoland_protocol::{Action, CommandEnvelope, ServerMessage};
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
        let Some((seat, profile)) = s.position.flow.actors.iter().find_map(|(seat, stage)| match s.seats.get(seat) {
            Some(SeatHolder::Bot(profile)) if can_act(stage) => Some((seat.clone(), profile.clone())),
            _ => None,
        }) else {
            return;
        };
        let revision = s.revision;
        let game = state.live().game().clone();
        let position = s.position.clone();
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
