//! The `default` bot: a legal, sensible Brisca player with no memory and no peeking (it
//! reads only its own hand, the table, the trump and the counts a seat sees).
//!
//! - It exchanges the trump 7 (or 2) when allowed and the face-up card is stronger.
//! - Leading, it keeps its trumps and its points: it leads its cheapest non-trump card.
//! - Following, when the trick is its partner's it adds points only as the last to play
//!   (nobody can take them back), else it plays its cheapest card; when the trick is a
//!   rival's it wins it as cheaply as it can — with a card of the suit led first, and with a
//!   trump only when the table holds at least [`TRUMP_WORTH`] points — else it throws its
//!   cheapest card, never gifting points to the rival.

use crate::cards::{beats, points, strength};
use crate::model::{Action, Config, Data, Face};
use crate::table::{Table, side_of};

/// The points on the table for which the bot spends a trump to take the trick.
pub const TRUMP_WORTH: u32 = 10;

/// Cost of giving up a card: its points first, then whether it is a trump, then strength.
fn cost(card: Face, trump: crate::model::Suit) -> (u32, bool, u8) {
    (points(card.rank), card.suit == trump, strength(card.rank))
}

/// The bot's move for `seat`, which must be the actor.
pub fn choose(config: &Config, data: &Data, seat: &str) -> Option<Action> {
    let t = crate::table(config);
    choose_on(&t, config, data, seat)
}

pub(crate) fn choose_on(t: &Table<'_>, config: &Config, data: &Data, seat: &str) -> Option<Action> {
    let trump = data.trump_suit;
    if let Some(id) = t.exchangeable(config, data, seat) {
        let mine = t.face(&id).ok()?;
        let shown = t.cards(data, crate::table::TRUMP).last().and_then(|c| t.face(c).ok())?;
        if strength(shown.rank) > strength(mine.rank) {
            return Some(Action::exchange_trump());
        }
    }
    let legal = t.playable(config, data, seat);
    let cheapest = |cards: &[Face]| cards.iter().copied().min_by_key(|c| cost(*c, trump));
    let on_table = t.table_faces(data);
    if on_table.is_empty() {
        return cheapest(&legal).map(Action::play);
    }
    let mut best = 0;
    for (i, card) in on_table.iter().enumerate().skip(1) {
        if beats(*card, on_table[best], trump) {
            best = i;
        }
    }
    let winning_seat = &data.table[best];
    let last_to_play = on_table.len() + 1 == t.players;
    if side_of(winning_seat) == side_of(seat) {
        if last_to_play {
            // Safe points for the partner: the richest card that does not take the trick
            // from it needlessly (any card keeps the side's trick).
            let gift =
                legal.iter().copied().filter(|c| c.suit != trump).max_by_key(|c| (points(c.rank), strength(c.rank)));
            return gift.or_else(|| cheapest(&legal)).map(Action::play);
        }
        return cheapest(&legal).map(Action::play);
    }
    let table_points: u32 = on_table.iter().map(|c| points(c.rank)).sum();
    let winners: Vec<Face> = legal.iter().copied().filter(|c| beats(*c, on_table[best], trump)).collect();
    let plain = winners.iter().copied().filter(|c| c.suit != trump).min_by_key(|c| strength(c.rank));
    let trumps = winners.iter().copied().filter(|c| c.suit == trump).min_by_key(|c| cost(*c, trump));
    let take = plain.or(trumps.filter(|_| table_points >= TRUMP_WORTH));
    take.or_else(|| cheapest(&legal)).map(Action::play)
}
