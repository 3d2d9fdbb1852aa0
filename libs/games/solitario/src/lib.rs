//! Solitario (`solitario`): Klondike for one participant, the engine's card-instance game.
//!
//! Owns: the rules of Klondike in its one v1 variant (draw one, unlimited passes), its typed
//! config, data, actions, events, view and context ([`model`]), dealing and the card moves
//! over instances and zones of the SDK's component library, the position invariants checked
//! by `validate_position`, the privacy of the stock and of face-down cards in `project` and
//! `project_event`, this game's withdrawal policy (the one participant loses, reason
//! `withdrawal`) and the `default` bot.
//!
//! Must not use: anything but `juegoland-sdk` among workspace crates; IO of any kind,
//! clocks, OS randomness, tokio, or `HashMap`/`HashSet` iteration. Every function is
//! synchronous and deterministic; the deal is the only random draw (labelled
//! [`DEAL_LABEL`], through the services) and the game schedules no deadlines.
//!
//! Rules in one paragraph: `mainDeck` is one copy of `playing-cards/poker52` ([`main_deck`]);
//! its 52 instances live in zones `stock`, `waste`, `tableau0`…`tableau6` and
//! `foundation0`…`foundation3`. Setup shuffles, deals 1…7 cards to the columns with only
//! the top card face up and the rest to the stock face down. In phase `playing`
//! (participation `single`) the one seat `p0`, in stage `move`, sends `draw {}` (stock top
//! to the waste, face up), `recycle {}` (only with an empty stock: the waste goes back face
//! down, its first-drawn card on top), `moveStack {from, to, count}` (a face-up, descending,
//! alternating-colour sequence onto a column; an empty column takes a king; one card from
//! the waste or a foundation), `moveToFoundation {from}` (ace to king by suit, onto the
//! foundation holding the suit, else the first empty one) or `giveUp {}`. A column whose top
//! card is left face down turns it up in the same transition. 52 cards on the foundations
//! win (`all-foundations`); `giveUp` is `p0: loss` (`gave-up`) with no winner invented; a
//! withdrawal is `p0: loss` (`withdrawal`). There is no automatic "no moves left" defeat:
//! recycling is unlimited and solving positions is not part of v1.
//!
//! Privacy: the data names instances and is never sent. A view shows the stock as a count,
//! the waste and foundations as faces, and a face-down tableau card as `{"faceDown": true}`
//! with nothing else; no output ever carries an instance id or a definition id.
//!
//! Flow counters: `turn` is the number of accepted card actions (`moves`) and `round` the
//! number of recycles; neither ever decreases. A finished match has no actors.

pub mod agents;
pub mod model;

mod bot;
mod table;
mod validate;

use std::sync::LazyLock;

use juegoland_sdk::{
    ActionSpec, ComponentDeclaration, ComponentDefinition, ComponentSet, ConflictPolicy, Corrupt, CustomRegistry,
    Descriptor, EntropySource, Flow, Game, Lifecycle, MatchResult, Offer, Outcome, Participation, PhaseSpec, Pos,
    Projection, Recipient, RuleError, Services, Setup, StageSpec, Trans, Transition, poker52,
};
use serde_json::json;

pub use bot::GIVE_UP_AFTER_IDLE_PASSES;
pub use model::{
    Action, Card, CardDrawn, CardRevealed, CardsMoved, Colour, Config, Context, Data, Event, FOUNDATIONS, FaceDown,
    FoundationView, KING, MatchLost, MatchWon, MoveStackPayload, MoveToFoundationPayload, NoPayload, Pile,
    StockRecycled, TABLEAU_COLUMNS, TableauCard, View, VisibleEvent,
};
pub use table::DEAL_LABEL;

/// The game id.
pub const GAME_ID: &str = "solitario";
/// The only seat.
pub const SEAT: &str = "p0";
/// The only phase.
pub const PHASE: &str = "playing";
/// The only stage.
pub const STAGE: &str = "move";
pub const ACTION_DRAW: &str = "draw";
pub const ACTION_RECYCLE: &str = "recycle";
pub const ACTION_MOVE_STACK: &str = "moveStack";
pub const ACTION_MOVE_TO_FOUNDATION: &str = "moveToFoundation";
pub const ACTION_GIVE_UP: &str = "giveUp";
/// The only bot profile.
pub const BOT_DEFAULT: &str = "default";
/// The component id of the deck.
pub const MAIN_DECK: &str = "mainDeck";
/// Result reason: all 52 cards are on the foundations (`p0: win`).
pub const REASON_ALL_FOUNDATIONS: &str = "all-foundations";
/// Result reason: p0 gave up (`p0: loss`).
pub const REASON_GAVE_UP: &str = "gave-up";
/// Result reason: the platform withdrew p0 (`p0: loss`; there is no one else to win).
pub const REASON_WITHDRAWAL: &str = "withdrawal";

/// The declared components: `mainDeck`, one copy of `playing-cards/poker52`.
pub fn components() -> Vec<ComponentDeclaration> {
    vec![ComponentDeclaration {
        component_id: MAIN_DECK.to_owned(),
        definition: ComponentDefinition::Deck(poker52()),
        copies: 1,
    }]
}

static MAIN_DECK_SET: LazyLock<ComponentSet> = LazyLock::new(|| {
    ComponentSet::load(components(), &CustomRegistry::new()).expect("poker52 is a valid deck definition")
});

/// The loaded `mainDeck`: 52 instances `mainDeck/0/AC`…`mainDeck/0/KS`, loaded once.
pub fn main_deck() -> &'static ComponentSet {
    &MAIN_DECK_SET
}

/// The Solitario rules, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solitario;

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

fn table() -> table::Table<'static> {
    table::Table::new(main_deck())
}

/// The flow after `data`: p0 in stage `move`, or no actors once `finished`.
fn flow_after(data: &Data, finished: bool) -> Flow {
    let flow = Flow::single(PHASE, data.recycles, data.moves, SEAT, STAGE);
    if finished { flow.terminal() } else { flow }
}

/// Whether p0 may act in `position`.
fn p0_enabled(position: &Pos<Solitario>) -> bool {
    !position.is_finished() && position.flow.stage_of(SEAT) == Some(STAGE) && position.flow.actors.len() == 1
}

fn loss(reason: &str) -> MatchResult {
    MatchResult::completed(reason, [(SEAT, Outcome::Loss)])
}

impl Game for Solitario {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        let actions = [ACTION_DRAW, ACTION_RECYCLE, ACTION_MOVE_STACK, ACTION_MOVE_TO_FOUNDATION, ACTION_GIVE_UP];
        Descriptor {
            id: GAME_ID.to_owned(),
            version: "1.0.0".to_owned(),
            rules_version: "1.0.0".to_owned(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 1,
            max_seats: 1,
            phases: vec![PhaseSpec {
                id: PHASE.to_owned(),
                participation: Participation::Single,
                stages: vec![StageSpec {
                    id: STAGE.to_owned(),
                    actions: actions.iter().map(|a| (*a).to_owned()).collect(),
                }],
            }],
            actions: vec![
                ActionSpec::of::<NoPayload>(ACTION_DRAW, ConflictPolicy::Match),
                ActionSpec::of::<NoPayload>(ACTION_RECYCLE, ConflictPolicy::Match),
                ActionSpec::of::<MoveStackPayload>(ACTION_MOVE_STACK, ConflictPolicy::Match),
                ActionSpec::of::<MoveToFoundationPayload>(ACTION_MOVE_TO_FOUNDATION, ConflictPolicy::Match),
                ActionSpec::of::<NoPayload>(ACTION_GIVE_UP, ConflictPolicy::Match),
            ],
            bots: vec![BOT_DEFAULT.to_owned()],
            agents: Some(agents::virtual_players()),
        }
    }

    /// Spectators see the public table: face-up cards and counts, never a face-down card's
    /// identity or the stock's order.
    fn spectators(&self) -> bool {
        true
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let seats: Vec<&str> = input.participants.keys().map(String::as_str).collect();
        if seats != [SEAT] || !input.participants.values().all(|p| p.is_active()) {
            return Err(illegal("invalid-participants"));
        }
        let data = table().deal(&mut services.random)?;
        Ok(Transition { flow: flow_after(&data, false), data, result: None, events: Vec::new(), deadlines: Vec::new() })
    }

    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        validate::position(position, main_deck())
    }

    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        _services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        if position.is_finished() {
            return Err(illegal("match-finished"));
        }
        if actor != SEAT || !p0_enabled(position) {
            return Err(illegal("not-your-turn"));
        }
        let data = &position.data;
        if let Action::GiveUp(_) = action {
            return Ok(Transition {
                data: data.clone(),
                flow: flow_after(data, true),
                result: Some(loss(REASON_GAVE_UP)),
                events: vec![Event::MatchLost { reason: REASON_GAVE_UP.to_owned() }],
                deadlines: Vec::new(),
            });
        }
        let step = table().apply(data, action)?;
        let mut events = step.events;
        let result = step.complete.then(|| {
            events.push(Event::MatchWon {});
            MatchResult::completed(REASON_ALL_FOUNDATIONS, [(SEAT, Outcome::Win)])
        });
        Ok(Transition {
            flow: flow_after(&step.data, result.is_some()),
            data: step.data,
            result,
            events,
            deadlines: Vec::new(),
        })
    }

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        if recipient.seat() != Some(SEAT) || !p0_enabled(position) {
            return Vec::new();
        }
        let t = table();
        let data = &position.data;
        let mut offers = Vec::new();
        let (stock, waste) = (data.zones.count(&Pile::Stock.name()), data.zones.count(&Pile::Waste.name()));
        if stock > 0 {
            offers.push(Offer::Concrete(Action::draw()));
        } else if waste > 0 {
            offers.push(Offer::Concrete(Action::recycle()));
        }
        // Parametrized offers: the sources (with the most cards each may move) and targets
        // of at least one legal move. Legality depends on face-up cards only.
        let legal = t.legal_moves(data);
        let mut sources: Vec<(String, u8)> = Vec::new();
        let mut targets: Vec<String> = Vec::new();
        let mut foundation_sources: Vec<String> = Vec::new();
        for action in &legal {
            match action {
                Action::MoveStack(p) => {
                    match sources.iter_mut().find(|(s, _)| *s == p.from) {
                        Some((_, max)) => *max = (*max).max(p.count),
                        None => sources.push((p.from.clone(), p.count)),
                    }
                    if !targets.contains(&p.to) {
                        targets.push(p.to.clone());
                    }
                }
                Action::MoveToFoundation(p) => foundation_sources.push(p.from.clone()),
                _ => {}
            }
        }
        if !sources.is_empty() {
            targets.sort();
            let sources: Vec<_> = sources.iter().map(|(zone, max)| json!({"zone": zone, "maxCount": max})).collect();
            offers.push(Offer::Parametrized {
                action_type: ACTION_MOVE_STACK.to_owned(),
                constraints: json!({ "sources": sources, "targets": targets }),
            });
        }
        if !foundation_sources.is_empty() {
            offers.push(Offer::Parametrized {
                action_type: ACTION_MOVE_TO_FOUNDATION.to_owned(),
                constraints: json!({ "sources": foundation_sources }),
            });
        }
        offers.push(Offer::Concrete(Action::give_up()));
        offers
    }

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let data = &position.data;
        Projection {
            view: view(data),
            context: Context {
                seat: recipient.seat().filter(|s| *s == SEAT).map(str::to_owned),
                moves: data.moves,
                recycles: data.recycles,
            },
            result: position.result.clone(),
        }
    }

    fn project_event(
        &self,
        _before: &Pos<Self>,
        _after: &Pos<Self>,
        event: &Event,
        _recipient: Recipient<'_>,
    ) -> Vec<VisibleEvent> {
        // Internal events already carry only faces of face-up cards and counts: p0 and any
        // spectator see them as they are.
        vec![VisibleEvent::from(event)]
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
                if seat != SEAT {
                    return Err(illegal("unknown-seat"));
                }
                Ok(Transition {
                    data: position.data.clone(),
                    flow: position.flow.terminal(),
                    result: Some(loss(REASON_WITHDRAWAL)),
                    events: vec![Event::MatchLost { reason: REASON_WITHDRAWAL.to_owned() }],
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
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        if seat != SEAT || profile != BOT_DEFAULT || !p0_enabled(position) {
            return None;
        }
        Some(bot::choose(&table(), &position.data, entropy))
    }
}

/// The view of `data`: what p0 and any spectator may see. A card that is face down (the
/// whole stock, the covered part of a column) shows no face and no id.
fn view(data: &Data) -> View {
    let t = table();
    // A card the deck does not know is corruption `validate_position` rejects; a view of
    // such a position shows it face down rather than failing.
    let face = |id| t.card(id).ok();
    let zone = |pile: Pile| data.zones.zone(&pile.name()).map(|z| z.cards.as_slice()).unwrap_or(&[]);
    View {
        stock: model::StockView { count: zone(Pile::Stock).len() as u32 },
        waste: zone(Pile::Waste).iter().filter_map(face).collect(),
        tableau: (0..TABLEAU_COLUMNS)
            .map(|c| {
                zone(Pile::Tableau(c))
                    .iter()
                    .map(|id| match (data.face_up.contains(id), face(id)) {
                        (true, Some(card)) => TableauCard::FaceUp(card),
                        _ => TableauCard::FaceDown(FaceDown { face_down: true }),
                    })
                    .collect()
            })
            .collect(),
        foundations: (0..FOUNDATIONS)
            .map(|f| {
                let cards = zone(Pile::Foundation(f));
                FoundationView { top: cards.last().and_then(face), count: cards.len() as u32 }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
