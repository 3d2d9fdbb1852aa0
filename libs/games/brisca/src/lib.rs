//! Brisca (`brisca`): the Spanish deck, hidden hands, private draws, tricks and teams.
//!
//! Owns: the rules of Brisca for two players or two teams of two, its typed config, data,
//! actions, events, view and context ([`model`]), Brisca's order and points over the
//! `spanish40` deck ([`cards`]), dealing, tricks and draws over the SDK's instances and
//! zones ([`table`]), the position invariants of `validate_position`, the privacy of hands,
//! stock and draws in `project` and `project_event`, this game's withdrawal policy and the
//! `default` bot ([`bot`]).
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; the deal's shuffle is the only random draw (labelled
//! [`DEAL_LABEL`]); the game schedules no deadlines.
//!
//! Rules in one paragraph: `mainDeck` is one copy of `spanish-cards/spanish40`. Seats play
//! in seat order (p0, p1, …); the dealer is the last seat, so dealing (three cards each, one
//! at a time) starts with p0, to the dealer's right, who leads the first trick. The next
//! card is turned face up as the trump (`muestra`) and the stock is laid on it, so it is the
//! last card drawn. In phase `playing` (participation `single`) the leader, in stage `lead`,
//! sends `play {card}` (or `exchangeTrump {}`), then each other seat in turn, in stage
//! `follow`, sends `play {card}`. No obligation to follow, trump or beat unless
//! `mustFollow` (follow suit, else trump, if able). The highest trump wins, else the highest
//! card of the suit led (order as, tres, rey, caballo, sota, 7, 6, 5, 4, 2). The winner's
//! side takes the trick; the winner draws first, then the others in turn, and leads the
//! next trick; once the stock and the trump are drawn the hands are played out.
//! `trumpExchange: "seven"`: the leader, whose side won the last trick, before leading and
//! while at least one face-down card is left in the stock, may exchange the trump 7 for the
//! face-up trump; with `twoTakesLow` the trump 2 may take a face-up 7, 6, 5 or 4 (lower
//! than the 7 in Brisca's order). Points: as 11, tres 10, rey 4, caballo 3, sota 2 (120).
//!
//! Result (`points`): the side with more than 60 points wins, the other loses; 60–60 is a
//! draw for everyone. Each participant's result carries its side's points as `score` and,
//! with four players, its team (`team0` = p0+p2, `team1` = p1+p3): partners always share the
//! outcome.
//!
//! Withdrawal policy: with two players the leaver loses and the rival wins; with four, the
//! leaver's team loses and the other team wins (`withdrawal`).
//!
//! Privacy: the data names instances and is never sent. Each seat sees its own hand, the
//! face-up trump, the table, its own side's points (every side's once the match is over),
//! the other hands as counts (a partner's too) and the stock as a count. `card.drawn`
//! carries the face only to the drawer; `trump.exchanged` shows everyone the card put face
//! up, and the card taken only to the exchanger. Won tricks are public once played.
//!
//! Flow counters: `turn` is the number of cards played, `round` the number of completed
//! tricks; neither decreases. A finished match has no actors.

pub mod agents;
pub mod bot;
pub mod cards;
pub mod model;
pub mod table;

mod validate;

use juegoland_sdk::{
    ActionSpec, ConflictPolicy, Corrupt, Descriptor, EntropySource, Flow, Game, Lifecycle, MatchResult, Offer, Outcome,
    ParticipantResult, Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Services, Setup, StageSpec,
    Trans, Transition,
};

pub use cards::{MAIN_DECK, TOTAL_POINTS, components, main_deck, points, strength};
pub use model::{
    Action, CardDrawn, CardPlayed, Config, ConfigError, Context, Data, Event, Face, LastTrick, NoPayload, PlayPayload,
    Suit, TableCard, TrickView, TrickWon, TrumpExchange, TrumpExchanged, View, VisibleEvent,
};
pub use table::{DEAL_LABEL, Table, hand_zone, side_of, won_zone};

/// The game id.
pub const GAME_ID: &str = "brisca";
/// The only phase.
pub const PHASE: &str = "playing";
/// The leader's stage: `play` or `exchangeTrump`.
pub const STAGE_LEAD: &str = "lead";
/// A follower's stage: `play`.
pub const STAGE_FOLLOW: &str = "follow";
pub const ACTION_PLAY: &str = "play";
pub const ACTION_EXCHANGE: &str = "exchangeTrump";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// Result reason: every card was played; the points decide.
pub const REASON_POINTS: &str = "points";
/// Result reason: a seat withdrew; it (its team) loses.
pub const REASON_WITHDRAWAL: &str = "withdrawal";
/// Half the points: more wins, exactly this is a draw.
pub const HALF: u32 = TOTAL_POINTS / 2;

/// The Brisca rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Brisca;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// The table of `config`'s player count over `mainDeck`.
pub fn table(config: &Config) -> Table<'static> {
    Table::with_faces(main_deck(), cards::main_faces(), usize::from(config.players))
}

/// The name of a side as views and results show it: the seat with two players, `team0` /
/// `team1` with four.
pub fn side_name(config: &Config, side: usize) -> String {
    if config.players == 4 { format!("team{side}") } else { format!("p{side}") }
}

/// The seat to move, if the match is running.
pub fn actor(position: &Pos<Brisca>) -> Option<&str> {
    if position.is_finished() {
        return None;
    }
    match position.flow.actors.iter().next() {
        Some((seat, _)) if position.flow.actors.len() == 1 => Some(seat),
        _ => None,
    }
}

fn flow_for(data: &Data, t: &Table<'_>, turn: u32) -> Flow {
    let seat = t.to_play(data);
    let stage = if data.table.is_empty() { STAGE_LEAD } else { STAGE_FOLLOW };
    Flow::single(PHASE, data.tricks, turn, &seat, stage)
}

/// The result once the sides' points are known; `loser` forces a side's loss (withdrawal).
fn result(position: &Pos<Brisca>, data: &Data, reason: &str, loser: Option<usize>) -> MatchResult {
    let config = &position.config;
    let t = table(config);
    let points = [t.side_points(data, 0), t.side_points(data, 1)];
    let outcome = |side: usize| match loser {
        Some(l) => {
            if side == l {
                Outcome::Loss
            } else {
                Outcome::Win
            }
        }
        None if points[side] > HALF => Outcome::Win,
        None if points[side] == HALF => Outcome::Draw,
        None => Outcome::Loss,
    };
    MatchResult::Completed {
        reason_code: reason.to_owned(),
        participants: position
            .participants
            .keys()
            .map(|seat| {
                let side = side_of(seat);
                let mut r = ParticipantResult::outcome(outcome(side));
                r.score = Some(i64::from(points[side]));
                if config.players == 4 {
                    r.team = Some(side_name(config, side));
                }
                (seat.clone(), r)
            })
            .collect(),
    }
}

impl Game for Brisca {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: GAME_ID.to_owned(),
            version: "1.0.0".to_owned(),
            rules_version: "1.0.0".to_owned(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 2,
            max_seats: 4,
            phases: vec![PhaseSpec {
                id: PHASE.to_owned(),
                participation: Participation::Single,
                stages: vec![
                    StageSpec {
                        id: STAGE_LEAD.to_owned(),
                        actions: vec![ACTION_PLAY.to_owned(), ACTION_EXCHANGE.to_owned()],
                    },
                    StageSpec { id: STAGE_FOLLOW.to_owned(), actions: vec![ACTION_PLAY.to_owned()] },
                ],
            }],
            actions: vec![
                ActionSpec::of::<PlayPayload>(ACTION_PLAY, ConflictPolicy::Match),
                ActionSpec::of::<NoPayload>(ACTION_EXCHANGE, ConflictPolicy::Match),
            ],
            bots: vec![BOT_DEFAULT.to_owned()],
            agents: Some(agents::virtual_players()),
        }
    }

    /// Spectators see the table, the trump, the trick counts and every hand's size, never a
    /// hand, a drawn face or the stock's order (and the points only once the match is over).
    fn spectators(&self) -> bool {
        true
    }

    /// A bot takes the seat of a human away for 30 s and hands it back when the human returns.
    fn handover(&self) -> juegoland_sdk::Handover {
        juegoland_sdk::Handover::Bot { after_ms: 30_000, profile: BOT_DEFAULT.to_owned() }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let config = &input.config;
        config.check().map_err(|e| RuleError::illegal(format!("config.{e}")))?;
        let seats: Vec<&String> = input.participants.keys().collect();
        let expected = juegoland_sdk::seat_ids(usize::from(config.players));
        if seats.len() != expected.len() && input.participants.values().all(|p| p.is_active()) {
            return Err(RuleError::illegal(format!(
                "config.players: {} does not match the {} seats given; give \"players\": {} for {} seats",
                config.players,
                seats.len(),
                seats.len(),
                seats.len()
            )));
        }
        if seats.len() != expected.len()
            || seats.iter().zip(&expected).any(|(a, b)| *a != b)
            || !input.participants.values().all(|p| p.is_active())
        {
            return Err(illegal("invalid-participants"));
        }
        let t = table(config);
        let data = t.deal(&mut services.random)?;
        Ok(Transition { flow: flow_for(&data, &t, 0), data, result: None, events: Vec::new(), deadlines: Vec::new() })
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        validate::position(position)
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        seat: &str,
        action: &Action,
        _services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        if actor(position) != Some(seat) {
            return Err(illegal("not-your-turn"));
        }
        let t = table(&position.config);
        let (step, turn) = match action {
            Action::Play(PlayPayload { card }) => {
                (t.play(&position.config, &position.data, seat, *card)?, position.flow.turn + 1)
            }
            Action::ExchangeTrump(NoPayload {}) => {
                (t.exchange(&position.config, &position.data, seat)?, position.flow.turn)
            }
        };
        if step.over {
            return Ok(Transition {
                result: Some(result(position, &step.data, REASON_POINTS, None)),
                flow: Flow { round: step.data.tricks, turn, ..position.flow.terminal() },
                data: step.data,
                events: step.events,
                deadlines: Vec::new(),
            });
        }
        Ok(Transition {
            flow: flow_for(&step.data, &t, turn),
            data: step.data,
            result: None,
            events: step.events,
            deadlines: Vec::new(),
        })
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let Some(seat) = actor(position).filter(|a| recipient.seat() == Some(*a)) else { return Vec::new() };
        let t = table(&position.config);
        let mut offers: Vec<Offer<Action>> = Vec::new();
        if t.exchangeable(&position.config, &position.data, seat).is_some() {
            offers.push(Offer::Concrete(Action::exchange_trump()));
        }
        let mut playable = t.playable(&position.config, &position.data, seat);
        playable.sort();
        offers.extend(playable.into_iter().map(|card| Offer::Concrete(Action::play(card))));
        offers
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let (config, data) = (&position.config, &position.data);
        let t = table(config);
        let seat = recipient.seat().filter(|s| position.participants.contains_key(*s));
        let mut hand = seat.map(|s| t.hand(data, s)).unwrap_or_default();
        hand.sort();
        let finished = position.is_finished();
        let points = (0..2)
            .filter(|side| finished || seat.is_some_and(|s| side_of(s) == *side))
            .map(|side| (side_name(config, side), t.side_points(data, side)))
            .collect();
        let faces = |seats: &[String], cards: &[juegoland_sdk::InstanceId]| -> Vec<TableCard> {
            seats
                .iter()
                .zip(cards)
                .filter_map(|(s, id)| cards::face(id).map(|card| TableCard { seat: s.clone(), card }))
                .collect()
        };
        let view = View {
            hand,
            trump: t.cards(data, table::TRUMP).last().and_then(cards::face),
            trump_suit: data.trump_suit,
            table: faces(&data.table, t.cards(data, table::TABLE)),
            hands: position
                .participants
                .keys()
                .filter(|s| Some(s.as_str()) != seat)
                .map(|s| (s.clone(), t.cards(data, &hand_zone(s)).len() as u32))
                .collect(),
            stock: t.cards(data, table::STOCK).len() as u32,
            points,
            last_trick: data
                .last_trick
                .as_ref()
                .map(|l| TrickView { winner: l.winner.clone(), cards: faces(&l.seats, &l.cards) }),
            tricks: data.tricks,
            players: config.players,
        };
        let context = Context {
            seat: seat.map(str::to_owned),
            side: seat.map(|s| side_name(config, side_of(s))),
            partner: seat
                .filter(|_| config.players == 4)
                .map(|s| format!("p{}", (table::seat_index(s).unwrap_or(0) + 2) % 4)),
            your_turn: seat.is_some() && actor(position) == seat,
        };
        Projection { view, context, result: position.result.clone() }
    }

    fn project_event(
        &self,
        _before: &Pos<Self>,
        _after: &Pos<Self>,
        event: &Event,
        recipient: Recipient<'_>,
    ) -> Vec<VisibleEvent> {
        let own = |seat: &str| recipient.seat() == Some(seat);
        vec![match event.clone() {
            Event::CardPlayed { seat, card } => VisibleEvent::CardPlayed(CardPlayed { seat, card }),
            Event::TrickWon { seat, cards } => VisibleEvent::TrickWon(TrickWon { seat, cards }),
            Event::CardDrawn { seat, card } => {
                let card = own(&seat).then_some(card);
                VisibleEvent::CardDrawn(CardDrawn { seat, card })
            }
            Event::TrumpExchanged { seat, gave, took } => {
                let took = own(&seat).then_some(took);
                VisibleEvent::TrumpExchanged(TrumpExchanged { seat, card: gave, took })
            }
        }]
    }

    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        _services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        match event {
            Lifecycle::Withdrawal { seat } => {
                if position.is_finished() {
                    return Err(illegal("match-finished"));
                }
                if !position.participants.contains_key(seat.as_str()) {
                    return Err(illegal("unknown-seat"));
                }
                Ok(Transition {
                    result: Some(result(position, &position.data, REASON_WITHDRAWAL, Some(side_of(seat)))),
                    data: position.data.clone(),
                    flow: position.flow.terminal(),
                    events: Vec::new(),
                    deadlines: Vec::new(),
                })
            }
            Lifecycle::DeadlineExpired { .. } => Err(illegal("no-deadlines")),
        }
    }

    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        _entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        if profile != BOT_DEFAULT || actor(position) != Some(seat) {
            return None;
        }
        bot::choose(&position.config, &position.data, seat)
    }
}

#[cfg(test)]
mod tests;
