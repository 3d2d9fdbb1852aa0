//! The `default` bot: sensible Klondike moves that always end the match.
//!
//! It looks only at what p0 sees (face-up cards and counts) and picks, in order of
//! preference, one move of the first non-empty tier (ties broken with the entropy):
//!
//! 1. a safe move to a foundation (an ace or a two, or a card whose opposite-colour
//!    foundations already hold the rank below it, so nothing may need it as a target);
//! 2. a move that reveals a face-down card: a column's whole face-up run onto another column
//!    (a king onto an empty one), or its top card to a foundation;
//! 3. the waste's top card onto a column;
//! 4. any other move to a foundation;
//! 5. `draw`; then `recycle`, unless the last [`GIVE_UP_AFTER_IDLE_PASSES`] full passes
//!    through the stock made no progress, in which case `giveUp`.
//!
//! Termination: every move of tiers 1–4 strictly decreases the cards off the foundations,
//! the face-down cards or the cards in stock and waste, and never increases the others; the
//! bot never makes the moves that could cycle (a column-to-column move that reveals nothing,
//! anything from a foundation). Between two such moves it draws at most one pass and
//! recycles at most [`GIVE_UP_AFTER_IDLE_PASSES`] times before giving up.

use juegoland_sdk::{EntropySource, below};

use crate::model::{Action, Card, Colour, Data, FOUNDATIONS, Pile};
use crate::table::Table;

/// Full passes through the stock without progress after which the bot gives up.
pub const GIVE_UP_AFTER_IDLE_PASSES: u32 = 3;

/// The bot's move in an active position where p0 may act.
pub(crate) fn choose(table: &Table<'_>, data: &Data, entropy: &mut dyn EntropySource) -> Action {
    let mut tiers: [Vec<Action>; 4] = Default::default();
    for action in table.legal_moves(data) {
        if let Some(tier) = tier(table, data, &action) {
            tiers[tier].push(action);
        }
    }
    if let Some(best) = tiers.iter().find(|t| !t.is_empty()) {
        return best[below(entropy, best.len() as u64) as usize].clone();
    }
    if data.zones.count(&Pile::Stock.name()) > 0 {
        return Action::draw();
    }
    let idle = data.idle_passes + u32::from(!data.progress_this_pass);
    if data.zones.count(&Pile::Waste.name()) > 0 && idle < GIVE_UP_AFTER_IDLE_PASSES {
        return Action::recycle();
    }
    Action::give_up()
}

/// The tier (0 is best) of a legal move, or `None` for a move the bot never makes.
fn tier(table: &Table<'_>, data: &Data, action: &Action) -> Option<usize> {
    match action {
        Action::MoveToFoundation(p) => {
            let from = Pile::parse(&p.from)?;
            let (_, card) = table.check_to_foundation(data, from).ok()?;
            if safe_for_foundation(table, data, &card) {
                Some(0)
            } else if reveals(table, data, from, 1) {
                Some(1)
            } else {
                Some(3)
            }
        }
        Action::MoveStack(p) => match Pile::parse(&p.from)? {
            Pile::Waste => Some(2),
            from @ Pile::Tableau(_) if reveals(table, data, from, usize::from(p.count)) => Some(1),
            _ => None,
        },
        _ => None,
    }
}

/// Whether moving the top `count` cards of `from` turns a face-down card up.
fn reveals(table: &Table<'_>, data: &Data, from: Pile, count: usize) -> bool {
    let len = data.zones.count(&from.name());
    matches!(from, Pile::Tableau(_)) && count < len && table.face_up_run(data, from) == count
}

/// An ace or a two, or a card whose rank below is on both opposite-colour foundations.
fn safe_for_foundation(table: &Table<'_>, data: &Data, card: &Card) -> bool {
    if card.rank <= 2 {
        return true;
    }
    let mut opposite_ok = 0;
    for f in 0..FOUNDATIONS {
        let Some(zone) = data.zones.zone(&Pile::Foundation(f).name()) else { continue };
        let Some(bottom) = zone.cards.first().and_then(|id| table.card(id).ok()) else { continue };
        if Colour::of_suit(&bottom.suit) != Some(card.colour) && zone.len() + 1 >= usize::from(card.rank) {
            opposite_ok += 1;
        }
    }
    opposite_ok >= 2
}
