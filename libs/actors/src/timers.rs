//! Timers: a local timer per deadline of an active match due within the horizon (the fast
//! path; the durable scheduler fires the rest, through the same generation check), and one
//! ticker for every actor's idle check.

use std::sync::Arc;
use std::time::Duration;

use juegoland_api::{MatchError, Refusal};
use juegoland_core::LifecycleRequest;
use ractor::ActorRef;
use tracing::{Instrument, warn};

use crate::actor::{MatchActor, MatchActorState, MatchMsg, lifecycle_span};
use crate::host::Host;
use crate::shell::now_ms;

impl Host {
    /// One ticker for every actor's idle check (a timer per actor would cost each one its
    /// own task).
    pub(crate) fn spawn_idle_ticker(&self) {
        let weak = Arc::downgrade(&self.shared);
        let period = (self.shared.config.idle_passivation / 4).max(Duration::from_millis(50));
        let cancel = self.shared.cancel.clone();
        self.shared.tasks.spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(shared) = weak.upgrade() else { return };
                let actors: Vec<ActorRef<MatchMsg>> =
                    shared.slots.lock().values().filter_map(|slot| slot.get().cloned()).collect();
                drop(shared);
                for actor in actors {
                    let _ = actor.cast(MatchMsg::IdleCheck);
                }
            }
        });
    }
}

impl MatchActor {
    /// Arms a local timer for each current deadline generation due within the horizon.
    pub(crate) fn arm_deadlines(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let (Some(live), Some(horizon)) = (&state.hot, self.shared.config.local_deadline_horizon) else { return };
        // A replay match's deadlines fire from its script alone.
        if live.state().replay_of.is_some() {
            return;
        }
        let deadlines = &live.state().deadlines;
        state.armed.retain(|(id, g)| deadlines.get(id).is_some_and(|d| d.generation == *g));
        let horizon = i64::try_from(horizon.as_millis()).unwrap_or(i64::MAX);
        let now = now_ms();
        let due: Vec<(String, u64, i64)> = deadlines
            .iter()
            .filter(|(id, d)| d.due_ms - now <= horizon && !state.armed.contains(&((*id).clone(), d.generation)))
            .map(|(id, d)| (id.clone(), d.generation, d.due_ms))
            .collect();
        for (id, generation, due_ms) in due {
            let delay = Duration::from_millis(u64::try_from(due_ms - now).unwrap_or(0));
            state.armed.insert((id.clone(), generation));
            myself.send_after(delay, move || MatchMsg::LocalDeadline { id: id.clone(), generation });
        }
    }

    /// Fires a deadline from its local timer, through the same generation check as the
    /// durable scheduler's firing: whichever comes second is stale.
    pub(crate) async fn fire_local(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        id: String,
        generation: u64,
    ) {
        state.armed.remove(&(id.clone(), generation));
        let m = &self.shared.metrics;
        let due_ms = state.live().state().deadlines.get(&id).filter(|d| d.generation == generation).map(|d| d.due_ms);
        let request = LifecycleRequest::FireDeadline { id, generation };
        let span = lifecycle_span(None, state.live().state().match_id, &request);
        match self.lifecycle(myself, state, &request).instrument(span).await {
            Ok(_) => {
                m.local_deadlines.with_label_values(&["fired"]).inc();
                if let Some(due_ms) = due_ms {
                    m.local_deadline_lag.observe((now_ms() - due_ms).max(0) as f64 / 1000.0);
                }
            }
            Err(MatchError::Refused { refusal: Refusal::StaleDeadline | Refusal::MatchFinished, .. }) => {
                m.local_deadlines.with_label_values(&["stale"]).inc();
            }
            Err(e) => {
                warn!(match_id = %state.live().state().match_id, error = %e, "local deadline firing failed; the scheduler will fire it");
                m.local_deadlines.with_label_values(&["failed"]).inc();
            }
        }
    }
}
