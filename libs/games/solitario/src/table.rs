//! The table: dealing and the card moves of Klondike over any loaded [`ComponentSet`] of
//! card decks, as pure functions from data to new data.
//!
//! The game uses one copy of `playing-cards/poker52` ([`crate::main_deck`]); tests also run
//! the same moves over other sets (two copies of the deck) to prove that instances are
//! conserved whatever the set. Flow and result are the game's ([`crate::Solitario`]); this
//! module only says whether the foundations are complete.

use std::collections::BTreeSet;

use juegoland_sdk::components::SUPPLY;
use juegoland_sdk::{ComponentSet, InstanceId, Randomness, RuleError, Visibility, Zone, Zones};

use crate::model::{Action, Card, Colour, Data, Event, FOUNDATIONS, KING, Pile, TABLEAU_COLUMNS};

/// The randomness label of the deal.
pub const DEAL_LABEL: &str = "deal";

fn illegal(reason: &str) -> RuleError {
    RuleError::illegal(reason)
}

/// What one accepted card action produced.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Step {
    pub data: Data,
    pub events: Vec<Event>,
    /// Every instance of the set is on a foundation.
    pub complete: bool,
}

/// Klondike moves over one loaded set of decks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table<'a> {
    pub set: &'a ComponentSet,
}

/// Whether `card` may lie on `onto` in a tableau column: one rank lower, other colour.
pub(crate) fn stacks_on(card: &Card, onto: &Card) -> bool {
    card.rank + 1 == onto.rank && card.colour != onto.colour
}

/// The zones of the wire contract, in creation order, with their declared visibility.
pub(crate) fn zone_specs() -> Vec<(Pile, Visibility)> {
    Pile::all()
        .into_iter()
        .map(|p| (p, if p == Pile::Stock { Visibility::Hidden } else { Visibility::Public }))
        .collect()
}

impl<'a> Table<'a> {
    pub fn new(set: &'a ComponentSet) -> Self {
        Self { set }
    }

    /// The visible face of an instance, or a fault if the set does not know it.
    pub fn card(&self, id: &InstanceId) -> Result<Card, RuleError> {
        let face = self.set.face(id).ok_or_else(|| RuleError::fault(format!("{id} is not a card of this set")))?;
        let colour = Colour::of_suit(&face.suit).ok_or_else(|| RuleError::fault(format!("{id} has no poker suit")))?;
        Ok(Card { suit: face.suit, rank: face.rank, colour })
    }

    /// A zone of `data`, or a fault if it is missing.
    pub fn zone<'d>(&self, data: &'d Data, pile: Pile) -> Result<&'d Zone, RuleError> {
        data.zones.zone(&pile.name()).ok_or_else(|| RuleError::fault(format!("zone {} is missing", pile.name())))
    }

    /// Shuffles every instance with the labelled draw [`DEAL_LABEL`], deals 1..=7 cards to
    /// the columns (only each top card face up, and known) and the rest to the stock.
    pub fn deal(&self, random: &mut Randomness<'_>) -> Result<Data, RuleError> {
        let zone_err = |e: juegoland_sdk::ZoneError| RuleError::fault(format!("deal: {e}"));
        let mut zones = Zones::setup(self.set.instances());
        for (pile, visibility) in zone_specs() {
            zones = zones.with_zone(&pile.name(), Zone::new(None, true, visibility)).map_err(zone_err)?;
        }
        zones = zones.shuffle_zone(SUPPLY, DEAL_LABEL, random).map_err(zone_err)?;
        let mut face_up = BTreeSet::new();
        for column in 0..TABLEAU_COLUMNS {
            let name = Pile::Tableau(column).name();
            zones = zones.move_top(SUPPLY, &name, column + 1).map_err(zone_err)?;
            let top = zones.zone(&name).and_then(Zone::top).cloned().ok_or_else(|| RuleError::fault("empty deal"))?;
            face_up.insert(top);
        }
        zones = zones.move_all(SUPPLY, &Pile::Stock.name()).map_err(zone_err)?;
        Ok(Data {
            zones,
            known: face_up.clone(),
            face_up,
            moves: 0,
            recycles: 0,
            progress_this_pass: false,
            idle_passes: 0,
        })
    }

    /// How many cards the foundations hold.
    pub fn on_foundations(&self, data: &Data) -> usize {
        (0..FOUNDATIONS).map(|f| data.zones.count(&Pile::Foundation(f).name())).sum()
    }

    /// The top `count` cards of `pile`, bottom first, each with its face and orientation.
    fn top_cards(&self, data: &Data, pile: Pile, count: usize) -> Result<Vec<(InstanceId, Card, bool)>, RuleError> {
        let zone = self.zone(data, pile)?;
        if count > zone.len() {
            return Err(illegal("not-enough-cards"));
        }
        zone.cards[zone.len() - count..]
            .iter()
            .map(|id| Ok((id.clone(), self.card(id)?, data.face_up.contains(id))))
            .collect()
    }

    /// Why `moveStack` from `from` to `to` with `count` cards is illegal, if it is.
    pub fn check_move_stack(&self, data: &Data, from: Pile, to: Pile, count: usize) -> Result<(), RuleError> {
        if !matches!(to, Pile::Tableau(_)) {
            return Err(illegal("target-not-a-column"));
        }
        if from == Pile::Stock {
            return Err(illegal("cannot-move-from-stock"));
        }
        if from == to {
            return Err(illegal("same-zone"));
        }
        if count == 0 {
            return Err(illegal("count-out-of-range"));
        }
        if matches!(from, Pile::Waste | Pile::Foundation(_)) && count != 1 {
            return Err(illegal("count-must-be-one"));
        }
        let moved = self.top_cards(data, from, count)?;
        if moved.iter().any(|(_, _, up)| !up) {
            return Err(illegal("face-down-card"));
        }
        if moved.windows(2).any(|w| !stacks_on(&w[1].1, &w[0].1)) {
            return Err(illegal("not-a-sequence"));
        }
        let base = &moved[0].1;
        let target = self.zone(data, to)?;
        match target.top() {
            None if base.rank == KING => Ok(()),
            None => Err(illegal("only-kings-on-empty-columns")),
            Some(top) if data.face_up.contains(top) && stacks_on(base, &self.card(top)?) => Ok(()),
            Some(_) => Err(illegal("does-not-fit")),
        }
    }

    /// The foundation the top card of `from` goes to, with that card, or why it cannot.
    pub fn check_to_foundation(&self, data: &Data, from: Pile) -> Result<(usize, Card), RuleError> {
        if !matches!(from, Pile::Waste | Pile::Tableau(_)) {
            return Err(illegal("source-not-allowed"));
        }
        if self.zone(data, from)?.is_empty() {
            return Err(illegal("empty-source"));
        }
        let (_, card, up) = self.top_cards(data, from, 1)?.remove(0);
        if !up {
            return Err(illegal("face-down-card"));
        }
        let mut first_empty = None;
        let mut holding = None;
        for f in 0..FOUNDATIONS {
            let zone = self.zone(data, Pile::Foundation(f))?;
            match zone.cards.first() {
                None => first_empty = first_empty.or(Some(f)),
                Some(bottom) if holding.is_none() && self.card(bottom)?.suit == card.suit => holding = Some(f),
                Some(_) => {}
            }
        }
        let target = holding.or(first_empty).ok_or_else(|| illegal("no-foundation-for-suit"))?;
        if self.zone(data, Pile::Foundation(target))?.len() + 1 != usize::from(card.rank) {
            return Err(illegal("not-next-on-foundation"));
        }
        Ok((target, card))
    }

    /// Applies one card action (not `giveUp`, which is the game's). `Err(Illegal)` leaves
    /// everything as it was: the input is never touched.
    pub fn apply(&self, data: &Data, action: &Action) -> Result<Step, RuleError> {
        let zone_err = |e: juegoland_sdk::ZoneError| RuleError::fault(format!("move: {e}"));
        let stock = Pile::Stock.name();
        let waste = Pile::Waste.name();
        let mut next = data.clone();
        let mut events = Vec::new();
        let mut progress = false;
        match action {
            Action::Draw(_) => {
                let Some(top) = self.zone(data, Pile::Stock)?.top().cloned() else {
                    return Err(illegal("stock-empty"));
                };
                next.zones = data.zones.move_top(&stock, &waste, 1).map_err(zone_err)?;
                next.face_up.insert(top.clone());
                next.known.insert(top.clone());
                events.push(Event::CardDrawn { card: self.card(&top)? });
            }
            Action::Recycle(_) => {
                if !self.zone(data, Pile::Stock)?.is_empty() {
                    return Err(illegal("stock-not-empty"));
                }
                let cards = self.zone(data, Pile::Waste)?.cards.clone();
                if cards.is_empty() {
                    return Err(illegal("waste-empty"));
                }
                // The waste turned over: its first-drawn card (the bottom) is the stock's top.
                next.zones =
                    data.zones.move_all(&waste, &stock).and_then(|z| z.reverse_zone(&stock)).map_err(zone_err)?;
                for card in &cards {
                    next.face_up.remove(card);
                }
                next.recycles += 1;
                next.idle_passes = if data.progress_this_pass { 0 } else { data.idle_passes + 1 };
                next.progress_this_pass = false;
                events.push(Event::StockRecycled { count: cards.len() as u32 });
            }
            Action::MoveStack(p) => {
                let (from, to) = match (Pile::parse(&p.from), Pile::parse(&p.to)) {
                    (Some(from), Some(to)) => (from, to),
                    _ => return Err(illegal("unknown-zone")),
                };
                let count = usize::from(p.count);
                self.check_move_stack(data, from, to, count)?;
                let cards = self.top_cards(data, from, count)?.into_iter().map(|(_, c, _)| c).collect();
                next.zones = data.zones.move_top(&from.name(), &to.name(), count).map_err(zone_err)?;
                progress |= from == Pile::Waste;
                events.push(Event::CardsMoved { from: from.name(), to: to.name(), count: count as u32, cards });
                progress |= self.reveal(&mut next, from, &mut events)?;
            }
            Action::MoveToFoundation(p) => {
                let from = Pile::parse(&p.from).ok_or_else(|| illegal("unknown-zone"))?;
                let (target, card) = self.check_to_foundation(data, from)?;
                let to = Pile::Foundation(target).name();
                next.zones = data.zones.move_top(&from.name(), &to, 1).map_err(zone_err)?;
                progress = true;
                events.push(Event::CardsMoved { from: from.name(), to, count: 1, cards: vec![card] });
                self.reveal(&mut next, from, &mut events)?;
            }
            Action::GiveUp(_) => return Err(RuleError::fault("giveUp is not a card move")),
        }
        next.moves += 1;
        if progress {
            next.progress_this_pass = true;
            next.idle_passes = 0;
        }
        let complete = self.on_foundations(&next) == self.set.instances().len();
        Ok(Step { data: next, events, complete })
    }

    /// Turns the top card of a tableau column face up if it is face down (the auto-flip).
    /// Returns whether a card was revealed.
    fn reveal(&self, data: &mut Data, pile: Pile, events: &mut Vec<Event>) -> Result<bool, RuleError> {
        if !matches!(pile, Pile::Tableau(_)) {
            return Ok(false);
        }
        let Some(top) = self.zone(data, pile)?.top().cloned() else { return Ok(false) };
        if data.face_up.contains(&top) {
            return Ok(false);
        }
        data.face_up.insert(top.clone());
        data.known.insert(top.clone());
        events.push(Event::CardRevealed { zone: pile.name(), card: self.card(&top)? });
        Ok(true)
    }

    /// Every legal `moveStack` and `moveToFoundation`, in a fixed order. Legality depends
    /// only on face-up cards, so this list reveals nothing hidden.
    pub fn legal_moves(&self, data: &Data) -> Vec<Action> {
        let mut moves = Vec::new();
        for from in Pile::all() {
            if matches!(from, Pile::Waste | Pile::Tableau(_)) && self.check_to_foundation(data, from).is_ok() {
                moves.push(Action::move_to_foundation(from));
            }
            let up = self.face_up_run(data, from);
            for to in (0..TABLEAU_COLUMNS).map(Pile::Tableau) {
                for count in 1..=up {
                    if self.check_move_stack(data, from, to, count).is_ok() {
                        moves.push(Action::move_stack(from, to, count as u8));
                    }
                }
            }
        }
        moves
    }

    /// How many cards at the top of `pile` are face up (capped at 13, the longest sequence).
    pub fn face_up_run(&self, data: &Data, pile: Pile) -> usize {
        data.zones
            .zone(&pile.name())
            .map_or(0, |z| z.cards.iter().rev().take_while(|c| data.face_up.contains(*c)).count().min(13))
    }
}
