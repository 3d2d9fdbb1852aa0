//! The table: dealing, playing, resolving tricks and drawing, as pure functions from data
//! to new data over the SDK's zones.
//!
//! Zone convention: `stock` (ordered, hidden; its LAST card is the top, drawn first),
//! `trump` (the face-up `muestra`, one card, drawn after the stock), `table` (ordered,
//! public, the current trick in play order), `hand:pN` (owner-visible) and `won:0` /
//! `won:1` (the sides' won cards, public). Every instance of the deck is in exactly one of
//! them (or in the SDK's `supply`, which the deal empties).

use juegoland_sdk::components::SUPPLY;
use juegoland_sdk::{ComponentSet, InstanceId, Randomness, RuleError, Visibility, Zone, ZoneError, Zones};

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::cards::{faces_of, points, trick_winner};
use crate::model::{Config, Data, Event, Face, LastTrick, TableCard};

/// The randomness label of the deal's shuffle.
pub const DEAL_LABEL: &str = "deal";
/// Cards in a full hand.
pub const HAND: usize = 3;
pub const STOCK: &str = "stock";
pub const TRUMP: &str = "trump";
pub const TABLE: &str = "table";

/// The zone of `seat`'s hand.
pub fn hand_zone(seat: &str) -> String {
    format!("hand:{seat}")
}

/// The zone of a side's won cards.
pub fn won_zone(side: usize) -> String {
    format!("won:{side}")
}

/// The seat index of `seat` (`p3` → 3).
pub fn seat_index(seat: &str) -> Option<usize> {
    seat.strip_prefix('p')?.parse().ok()
}

/// The side of a seat: its index modulo 2 (p0 and p2 against p1 and p3).
pub fn side_of(seat: &str) -> usize {
    seat_index(seat).unwrap_or(0) % 2
}

/// The seat after `seat` among `n` seats (the order of play).
pub fn next_seat(seat: &str, n: usize) -> String {
    format!("p{}", (seat_index(seat).unwrap_or(0) + 1) % n)
}

fn zone_err(context: &'static str) -> impl Fn(ZoneError) -> RuleError {
    move |e| RuleError::fault(format!("{context}: {e}"))
}

/// What one play did.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub data: Data,
    pub events: Vec<Event>,
    /// Every card has been played: the hand is over.
    pub over: bool,
}

/// Brisca's moves over one loaded set of decks (the game uses one copy of spanish40; tests
/// run the same moves over two copies to show instances are conserved whatever the set).
#[derive(Clone, Debug)]
pub struct Table<'a> {
    pub set: &'a ComponentSet,
    pub players: usize,
    /// The face of every card of `set`, looked up without allocating.
    faces: Cow<'a, BTreeMap<InstanceId, Face>>,
}

impl<'a> Table<'a> {
    pub fn new(set: &'a ComponentSet, players: usize) -> Self {
        Self { set, players, faces: Cow::Owned(faces_of(set)) }
    }

    /// The table over `set` whose faces are already known (`mainDeck`'s, built once).
    pub fn with_faces(set: &'a ComponentSet, faces: &'a BTreeMap<InstanceId, Face>, players: usize) -> Self {
        Self { set, players, faces: Cow::Borrowed(faces) }
    }

    fn face_of(&self, id: &InstanceId) -> Option<Face> {
        self.faces.get(id).copied()
    }

    pub fn seats(&self) -> Vec<String> {
        juegoland_sdk::seat_ids(self.players)
    }

    pub fn face(&self, id: &InstanceId) -> Result<Face, RuleError> {
        self.face_of(id).ok_or_else(|| RuleError::fault(format!("{id} is not a Spanish card")))
    }

    /// The cards of a zone (empty when it does not exist).
    pub fn cards<'d>(&self, data: &'d Data, zone: &str) -> &'d [InstanceId] {
        data.zones.zone(zone).map(|z| z.cards.as_slice()).unwrap_or(&[])
    }

    /// Shuffles the deck (labelled [`DEAL_LABEL`]), deals [`HAND`] cards to each seat one at
    /// a time starting with p0 (to the right of the dealer, the last seat), turns the next
    /// card face up as the trump and leaves the rest face down on it as the stock.
    pub fn deal(&self, random: &mut Randomness<'_>) -> Result<Data, RuleError> {
        let mut zones = Zones::setup(self.set.instances());
        let mut specs: Vec<(String, Option<String>, bool, Visibility)> = vec![
            (STOCK.into(), None, true, Visibility::Hidden),
            (TRUMP.into(), None, true, Visibility::Public),
            (TABLE.into(), None, true, Visibility::Public),
            (won_zone(0), None, true, Visibility::Public),
            (won_zone(1), None, true, Visibility::Public),
        ];
        specs.extend(self.seats().into_iter().map(|s| (hand_zone(&s), Some(s), false, Visibility::Owner)));
        for (id, owner, ordered, visibility) in specs {
            zones = zones.with_zone(&id, Zone::new(owner, ordered, visibility)).map_err(zone_err("deal"))?;
        }
        zones = zones.shuffle_zone(SUPPLY, DEAL_LABEL, random).map_err(zone_err("deal"))?;
        zones = zones.move_all(SUPPLY, STOCK).map_err(zone_err("deal"))?;
        for _ in 0..HAND {
            for seat in self.seats() {
                zones = zones.move_top(STOCK, &hand_zone(&seat), 1).map_err(zone_err("deal"))?;
            }
        }
        zones = zones.move_top(STOCK, TRUMP, 1).map_err(zone_err("deal"))?;
        let trump = zones.zone(TRUMP).and_then(Zone::top).ok_or_else(|| RuleError::fault("no trump card"))?;
        let trump_suit = self.face(trump)?.suit;
        Ok(Data { zones, table: Vec::new(), leader: "p0".into(), trump_suit, tricks: 0, last_trick: None })
    }

    /// The instance in `seat`'s hand with face `card`.
    pub fn in_hand(&self, data: &Data, seat: &str, card: Face) -> Option<InstanceId> {
        self.cards(data, &hand_zone(seat)).iter().find(|id| self.face_of(id) == Some(card)).cloned()
    }

    /// The faces of `seat`'s hand.
    pub fn hand(&self, data: &Data, seat: &str) -> Vec<Face> {
        self.cards(data, &hand_zone(seat)).iter().filter_map(|id| self.face_of(id)).collect()
    }

    /// The current trick's faces, in play order.
    pub fn table_faces(&self, data: &Data) -> Vec<Face> {
        self.cards(data, TABLE).iter().filter_map(|id| self.face_of(id)).collect()
    }

    /// The faces `seat` may play now: its whole hand, unless `mustFollow` applies to a
    /// follower, who must follow the suit led, else trump, if able.
    pub fn playable(&self, config: &Config, data: &Data, seat: &str) -> Vec<Face> {
        let hand = self.hand(data, seat);
        let led = self.table_faces(data).first().map(|f| f.suit);
        match led {
            Some(led) if config.must_follow => {
                for suit in [led, data.trump_suit] {
                    let of_suit: Vec<Face> = hand.iter().copied().filter(|f| f.suit == suit).collect();
                    if !of_suit.is_empty() {
                        return of_suit;
                    }
                }
                hand
            }
            _ => hand,
        }
    }

    /// Cards left to draw: the face-down stock and the face-up trump.
    pub fn to_draw(&self, data: &Data) -> usize {
        self.cards(data, STOCK).len() + self.cards(data, TRUMP).len()
    }

    /// `seat` plays `card`; a completed trick is resolved at once (the winner takes it,
    /// everyone draws, the winner leads the next).
    pub fn play(&self, config: &Config, data: &Data, seat: &str, card: Face) -> Result<Step, RuleError> {
        let id = self.in_hand(data, seat, card).ok_or_else(|| RuleError::illegal("not-in-hand"))?;
        if !self.playable(config, data, seat).contains(&card) {
            return Err(RuleError::illegal("must-follow"));
        }
        let mut data = data.clone();
        data.zones = data.zones.move_cards(&hand_zone(seat), TABLE, &[id]).map_err(zone_err("play"))?;
        data.table.push(seat.to_owned());
        let mut events = vec![Event::CardPlayed { seat: seat.to_owned(), card }];
        if data.table.len() < self.players {
            return Ok(Step { data, events, over: false });
        }
        // The trick is complete.
        let faces = self.table_faces(&data);
        let winner = data.table[trick_winner(&faces, data.trump_suit)].clone();
        let cards: Vec<InstanceId> = self.cards(&data, TABLE).to_vec();
        let plays: Vec<TableCard> =
            data.table.iter().zip(&faces).map(|(s, f)| TableCard { seat: s.clone(), card: *f }).collect();
        events.push(Event::TrickWon { seat: winner.clone(), cards: plays });
        data.zones = data.zones.move_all(TABLE, &won_zone(side_of(&winner))).map_err(zone_err("trick"))?;
        data.last_trick = Some(LastTrick { winner: winner.clone(), seats: std::mem::take(&mut data.table), cards });
        data.tricks += 1;
        data.leader = winner.clone();
        // The winner draws first, then the others in turn; the trump card is drawn last.
        if self.to_draw(&data) >= self.players {
            let mut drawer = winner;
            for _ in 0..self.players {
                let from = if data.zones.count(STOCK) > 0 { STOCK } else { TRUMP };
                let drawn = data
                    .zones
                    .zone(from)
                    .and_then(Zone::top)
                    .cloned()
                    .ok_or_else(|| RuleError::fault("nothing to draw"))?;
                data.zones = data.zones.move_top(from, &hand_zone(&drawer), 1).map_err(zone_err("draw"))?;
                events.push(Event::CardDrawn { seat: drawer.clone(), card: self.face(&drawn)? });
                drawer = next_seat(&drawer, self.players);
            }
        }
        let over = self.seats().iter().all(|s| self.cards(&data, &hand_zone(s)).is_empty());
        Ok(Step { data, events, over })
    }

    /// The card `seat` may exchange for the face-up trump now, if any (see the crate docs).
    pub fn exchangeable(&self, config: &Config, data: &Data, seat: &str) -> Option<InstanceId> {
        if config.trump_exchange == crate::model::TrumpExchange::None
            || !data.table.is_empty()
            || data.leader != seat
            || data.last_trick.as_ref().is_none_or(|t| side_of(&t.winner) != side_of(seat))
            || data.zones.count(STOCK) == 0
        {
            return None;
        }
        let shown = self.face(self.cards(data, TRUMP).last()?).ok()?;
        let seven = Face { suit: data.trump_suit, rank: 7 };
        let two = Face { suit: data.trump_suit, rank: 2 };
        if let Some(id) = self.in_hand(data, seat, seven) {
            return Some(id);
        }
        let low = crate::cards::strength(shown.rank) <= crate::cards::strength(7);
        if config.two_takes_low && low {
            return self.in_hand(data, seat, two);
        }
        None
    }

    /// `seat` exchanges its trump 7 (or 2) for the face-up trump card.
    pub fn exchange(&self, config: &Config, data: &Data, seat: &str) -> Result<Step, RuleError> {
        let id = self.exchangeable(config, data, seat).ok_or_else(|| RuleError::illegal("no-exchange"))?;
        let shown = self.cards(data, TRUMP).last().cloned().ok_or_else(|| RuleError::fault("no trump card"))?;
        let mut data = data.clone();
        data.zones =
            data.zones.move_cards(&hand_zone(seat), TRUMP, std::slice::from_ref(&id)).map_err(zone_err("exchange"))?;
        data.zones = data
            .zones
            .move_cards(TRUMP, &hand_zone(seat), std::slice::from_ref(&shown))
            .map_err(zone_err("exchange"))?;
        let events =
            vec![Event::TrumpExchanged { seat: seat.to_owned(), gave: self.face(&id)?, took: self.face(&shown)? }];
        Ok(Step { data, events, over: false })
    }

    /// The points a side has won.
    pub fn side_points(&self, data: &Data, side: usize) -> u32 {
        self.cards(data, &won_zone(side)).iter().filter_map(|id| self.face_of(id)).map(|f| points(f.rank)).sum()
    }

    /// The seat to play now: the leader, or the seat after the last one on the table.
    pub fn to_play(&self, data: &Data) -> String {
        match data.table.last() {
            None => data.leader.clone(),
            Some(last) => next_seat(last, self.players),
        }
    }
}
