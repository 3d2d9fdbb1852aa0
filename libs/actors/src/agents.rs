//! Agent seats on the match's actor: the limits a game declares for its AI agents
//! (`Descriptor::agents`, `AgentLimits`), enforced where the seat's commands are serialized,
//! whatever carried them (WebSocket, Socket.IO, the MCP server; one gateway or several).
//!
//! Commands per minute: before the actor judges a command of an agent seat (principal
//! `agent:<seat>`) that has no receipt yet, the seat's sliding minute must have room; without
//! it the command is refused `RATE_LIMITED` (recovery `retry-same-command`), nothing is
//! consumed and no receipt is written, as for every rate limit (protocol spec). A retry
//! answered from its receipt is not counted.
//!
//! Think time: a seat's turn starts when it gets something to do (a revision at which it is
//! an actor in a stage that allows an action, or its own previous command, which it answered),
//! and ends with its next command. The actor arms a timer for the declared think time; a turn
//! still open when it fires is counted late there and then (`juegoland_agent_limits_total
//! {limit="think_time"}`, and a warning), not only when the agent finally moves. Under a `bot`
//! hand-over policy the match's stand-in bot then takes the seat (a change of hands, as for an
//! away human) and plays the rest of that turn; the seat goes back to its agent by another
//! change of hands as soon as it has nothing left to do. A late agent move that lands first is
//! judged like any (lateness is not illegal under the rules, which keep their authority), and
//! the bot finds nothing left to play. Under `off` and `clock` nothing stands in: the turn
//! is counted late and the match's turn clock (the games' `config.clock`), if any, decides
//! (docs/decisions.md, "agent seats").
//!
//! The minute and the open turns are the actor's, in memory: a re-activated match starts every
//! seat's minute and turn afresh. A stand-in is in the match's state, so an agent seat left to
//! a bot by a previous activation goes back to its agent as soon as it has nothing to do.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use juegoland_core::{LifecycleRequest, LiveMatch, SeatHolder};
use juegoland_sdk::{AgentLimits, Handover, Seat};
use ractor::ActorRef;
use tracing::warn;

use crate::actor::{MatchActor, MatchActorState, MatchMsg};

/// The sliding window of the commands-per-minute limit.
const MINUTE: Duration = Duration::from_secs(60);

/// Every agent seat's limits state.
#[derive(Default)]
pub(crate) struct AgentSeats {
    seats: BTreeMap<Seat, AgentSeat>,
    /// Numbers turns, so a timer knows whether the turn it was armed for is still open.
    next_turn: u64,
}

#[derive(Default)]
struct AgentSeat {
    /// When the seat's commands of the last minute were admitted, oldest first.
    recent: VecDeque<Instant>,
    turn: Option<Turn>,
}

struct Turn {
    number: u64,
    since: Instant,
    /// Counted late already (by its timer).
    late: bool,
}

/// The agent seat a principal plays, with its declared limits, if it is one.
pub(crate) fn agent_seat(live: &LiveMatch, principal: &str) -> Option<(Seat, AgentLimits)> {
    let seat = principal.strip_prefix(juegoland_core::state::AGENT_PREFIX)?;
    limits_of(live, seat).map(|limits| (seat.to_owned(), limits))
}

/// Whether `seat` has something to do now: the match goes on and the seat is an actor in a
/// stage that allows an action (a seat waiting for others has none).
fn acting(live: &LiveMatch, seat: &str) -> bool {
    let s = live.state();
    let phase = live.game().descriptor().phase(&s.position.flow.phase);
    let can_act =
        |stage: &str| phase.is_some_and(|p| p.stages.iter().any(|st| st.id == stage && !st.actions.is_empty()));
    !s.is_finished() && s.position.flow.actors.get(seat).is_some_and(|stage| can_act(stage))
}

/// Whether `seat` is an agent seat a bot stands in for that has nothing left to do: its turn
/// is played, and the seat goes back to its agent.
fn hand_back(live: &LiveMatch, seat: &str) -> bool {
    let s = live.state();
    limits_of(live, seat).is_some() && s.stand_ins.contains_key(seat) && !s.is_finished() && !acting(live, seat)
}

/// The declared limits of `seat`, if an agent plays it.
fn limits_of(live: &LiveMatch, seat: &str) -> Option<AgentLimits> {
    let SeatHolder::Agent(profile) = live.state().seats.get(seat)? else { return None };
    Some(live.game().descriptor().agents.as_ref()?.profile(profile)?.limits)
}

impl AgentSeats {
    /// Admits one more command of `seat` now, or says how long until its minute has room.
    pub(crate) fn admit(&mut self, seat: &str, limits: AgentLimits, now: Instant) -> Result<(), Duration> {
        let s = self.seats.entry(seat.to_owned()).or_default();
        while s.recent.front().is_some_and(|at| now.duration_since(*at) >= MINUTE) {
            s.recent.pop_front();
        }
        if s.recent.len() >= limits.commands_per_minute as usize {
            let oldest = s.recent.front().copied().unwrap_or(now);
            return Err(MINUTE.saturating_sub(now.duration_since(oldest)));
        }
        s.recent.push_back(now);
        Ok(())
    }

    /// The seat answered its turn (a command judged, applied or rejected): how long it
    /// thought, and whether that was over its think time. The next turn starts at the next
    /// [`AgentSeats::note_turns`].
    pub(crate) fn answered(&mut self, seat: &str, limits: AgentLimits, now: Instant) -> Option<(Duration, bool)> {
        let turn = self.seats.get_mut(seat)?.turn.take()?;
        let thought = now.duration_since(turn.since);
        Some((thought, thought > Duration::from_millis(u64::from(limits.think_time_ms))))
    }

    /// Starts the turn of every agent seat that has something to do and no open turn, and
    /// closes the turn of every one that has nothing to do; answers the turns started, with
    /// their think times, for their timers, and the agent seats a bot stands in for that have
    /// nothing left to do (to hand back).
    fn note_turns(&mut self, live: &LiveMatch, now: Instant) -> (Vec<(Seat, u64, Duration)>, Vec<Seat>) {
        let s = live.state();
        let mut started = Vec::new();
        let mut returning = Vec::new();
        for seat in s.seats.keys() {
            let Some(limits) = limits_of(live, seat) else { continue };
            let acting = acting(live, seat);
            let entry = self.seats.entry(seat.clone()).or_default();
            if s.stand_ins.contains_key(seat) {
                // The stand-in plays the overrun turn; the agent's next one is its own.
                entry.turn = None;
                if hand_back(live, seat) {
                    returning.push(seat.clone());
                }
                continue;
            }
            match (acting, &entry.turn) {
                (true, None) => {
                    self.next_turn += 1;
                    entry.turn = Some(Turn { number: self.next_turn, since: now, late: false });
                    started.push((
                        seat.clone(),
                        self.next_turn,
                        Duration::from_millis(u64::from(limits.think_time_ms)),
                    ));
                }
                (false, Some(_)) => entry.turn = None,
                _ => {}
            }
        }
        (started, returning)
    }

    /// A think-time timer fired: whether turn `number` of `seat` is still open (and now
    /// counted late).
    fn overran(&mut self, seat: &str, number: u64) -> bool {
        match self.seats.get_mut(seat).and_then(|s| s.turn.as_mut()) {
            Some(turn) if turn.number == number && !turn.late => {
                turn.late = true;
                true
            }
            _ => false,
        }
    }
}

impl MatchActor {
    /// After a commit or an activation: opens and closes agent seats' turns, arming a timer
    /// for each turn opened, and asks for the seats a bot played past their think time back
    /// once they have nothing left to do.
    pub(crate) fn note_agent_turns(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let Some(live) = &state.hot else { return };
        if live.game().descriptor().agents.is_none() {
            return;
        }
        let (started, returning) = state.agents.note_turns(live, Instant::now());
        for (seat, number, think_time) in started {
            myself.send_after(think_time, move || MatchMsg::AgentThinkTime { seat, turn: number });
        }
        for seat in returning {
            // A message, not a commit here: this runs inside a commit.
            if let Err(e) = myself.send_message(MatchMsg::AgentReturns { seat }) {
                warn!(error = %e, "the match actor is gone; the seat goes back at its next activation");
            }
        }
    }

    /// A think-time timer of `seat`'s turn `turn` fired: a turn still open is counted late,
    /// and under a `bot` hand-over policy the stand-in bot takes the seat for it.
    pub(crate) async fn agent_think_time(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        seat: Seat,
        turn: u64,
    ) {
        if !state.agents.overran(&seat, turn) {
            return;
        }
        self.shared.metrics.agent_limits.with_label_values(&["think_time"]).inc();
        let Some(live) = &state.hot else { return };
        let s = live.state();
        warn!(match_id = %s.match_id, seat, "an agent seat holds its turn past its think time");
        let Some(Handover::Bot { profile, .. }) = &s.handover else { return };
        if s.is_finished() || s.stand_ins.contains_key(&seat) {
            return;
        }
        let request = LifecycleRequest::Control { seat: seat.clone(), stand_in: Some(profile.clone()) };
        if let Err(e) = self.change_hands(myself, state, request, "agent_think_time_taken").await {
            warn!(seat, error = %e, "a stand-in for a slow agent seat failed");
        }
    }

    /// `seat`, an agent seat a bot played past its think time, has nothing left to do: it goes
    /// back to its agent (unless that happened already, or it has something to do again).
    pub(crate) async fn agent_returns(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState, seat: Seat) {
        if !state.hot.as_ref().is_some_and(|live| hand_back(live, &seat)) {
            return;
        }
        let request = LifecycleRequest::Control { seat: seat.clone(), stand_in: None };
        if let Err(e) = self.change_hands(myself, state, request, "agent_think_time_returned").await {
            warn!(seat, error = %e, "handing a seat back to its agent failed");
        }
    }

    /// An agent seat's command was judged (applied or rejected): its think time is observed.
    pub(crate) fn agent_answered(&self, state: &mut MatchActorState, seat: &str, limits: AgentLimits) {
        if let Some((thought, late)) = state.agents.answered(seat, limits, Instant::now()) {
            self.shared.metrics.agent_think_seconds.observe(thought.as_secs_f64());
            if late {
                self.shared.metrics.agent_late_commands.inc();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: AgentLimits = AgentLimits { think_time_ms: 1_000, commands_per_minute: 3 };

    #[test]
    fn a_seat_gets_its_commands_per_sliding_minute_and_no_more() {
        let mut seats = AgentSeats::default();
        let t0 = Instant::now();
        for s in 0..3 {
            assert_eq!(seats.admit("p1", LIMITS, t0 + Duration::from_secs(s * 10)), Ok(()));
        }
        // The fourth within the minute waits for the first to leave the window.
        assert_eq!(seats.admit("p1", LIMITS, t0 + Duration::from_secs(40)), Err(Duration::from_secs(20)));
        // Another seat has its own minute.
        assert_eq!(seats.admit("p0", LIMITS, t0 + Duration::from_secs(40)), Ok(()));
        assert_eq!(seats.admit("p1", LIMITS, t0 + MINUTE), Ok(()));
        assert!(seats.admit("p1", LIMITS, t0 + MINUTE + Duration::from_secs(5)).is_err());
        assert_eq!(seats.admit("p1", LIMITS, t0 + MINUTE + Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn a_turn_is_late_once_and_only_while_it_is_open() {
        let mut seats = AgentSeats::default();
        let t0 = Instant::now();
        seats.seats.entry("p1".into()).or_default().turn = Some(Turn { number: 7, since: t0, late: false });
        assert!(!seats.overran("p1", 6), "a timer of an earlier turn");
        assert!(seats.overran("p1", 7));
        assert!(!seats.overran("p1", 7), "counted once");
        let (thought, late) = seats.answered("p1", LIMITS, t0 + Duration::from_millis(1_500)).unwrap();
        assert_eq!((thought, late), (Duration::from_millis(1_500), true));
        assert!(!seats.overran("p1", 7), "the turn is over");
        assert_eq!(seats.answered("p1", LIMITS, t0), None);
    }
}
