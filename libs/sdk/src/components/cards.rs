//! Card faces and the standard card definitions rules depend on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::definition::{Attributes, CardDefinition, DeckDefinition};

/// What a view shows of a card the recipient may see: `{"suit": …, "rank": …}`.
///
/// A card the recipient may NOT see carries no face, no definition id and no instance id:
/// the view gives a count, or an opaque token that is fresh at every revision.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CardFace {
    pub suit: String,
    pub rank: u8,
}

/// The suits of [`poker52`], in deck order.
pub const POKER_SUITS: [&str; 4] = ["clubs", "diamonds", "hearts", "spades"];

/// The id of the `playing-cards/poker52` card with this suit (one of [`POKER_SUITS`]) and
/// rank (1–13): the rank symbol `A 2 … 10 J Q K` followed by the suit's initial in upper
/// case, so `AS` is the ace of spades, `10H` the ten of hearts, `QC` the queen of clubs.
/// `None` for anything else.
pub fn poker_card_id(suit: &str, rank: u8) -> Option<String> {
    let initial = match suit {
        "clubs" => 'C',
        "diamonds" => 'D',
        "hearts" => 'H',
        "spades" => 'S',
        _ => return None,
    };
    let symbol = match rank {
        1 => "A".to_owned(),
        2..=10 => rank.to_string(),
        11 => "J".to_owned(),
        12 => "Q".to_owned(),
        13 => "K".to_owned(),
        _ => return None,
    };
    Some(format!("{symbol}{initial}"))
}

/// The `playing-cards/poker52` definition: 52 cards, suits `clubs diamonds hearts spades`
/// in that order, ranks 1 (ace) to 13 (king) within each suit, ids from [`poker_card_id`]
/// (`AC`, `2C`, …, `KS`), no attributes. Ace-high or ace-low, colours and points are each
/// game's rules.
pub fn poker52() -> DeckDefinition {
    let cards = POKER_SUITS
        .iter()
        .flat_map(|suit| {
            (1..=13u8).map(move |rank| CardDefinition {
                id: poker_card_id(suit, rank).expect("suits and ranks are in range"),
                suit: (*suit).to_owned(),
                rank,
                attributes: Attributes::new(),
            })
        })
        .collect();
    DeckDefinition { cards }
}

/// The suits of [`spanish40`], in deck order.
pub const SPANISH_SUITS: [&str; 4] = ["oros", "copas", "espadas", "bastos"];
/// The ranks of [`spanish40`] within each suit, in deck order: 1–7, then 10 (sota),
/// 11 (caballo) and 12 (rey). There are no 8s and 9s.
pub const SPANISH_RANKS: [u8; 10] = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12];

/// The id of the `spanish-cards/spanish40` card with this suit (one of [`SPANISH_SUITS`])
/// and rank (one of [`SPANISH_RANKS`]): the rank's number followed by the suit's initial in
/// upper case, so `1O` is the as de oros and `12B` the rey de bastos. `None` for anything
/// else.
pub fn spanish_card_id(suit: &str, rank: u8) -> Option<String> {
    let initial = match suit {
        "oros" => 'O',
        "copas" => 'C',
        "espadas" => 'E',
        "bastos" => 'B',
        _ => return None,
    };
    SPANISH_RANKS.contains(&rank).then(|| format!("{rank}{initial}"))
}

/// The `spanish-cards/spanish40` definition: a deck of its own (not poker52 with cards
/// removed), 40 cards, suits `oros copas espadas bastos` in that order, ranks
/// [`SPANISH_RANKS`] within each suit, ids from [`spanish_card_id`], no attributes. The
/// order and points of a game (Brisca's as-tres-rey…) are that game's rules.
pub fn spanish40() -> DeckDefinition {
    let cards = SPANISH_SUITS
        .iter()
        .flat_map(|suit| {
            SPANISH_RANKS.iter().map(move |&rank| CardDefinition {
                id: spanish_card_id(suit, rank).expect("suits and ranks are in range"),
                suit: (*suit).to_owned(),
                rank,
                attributes: Attributes::new(),
            })
        })
        .collect();
    DeckDefinition { cards }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn poker52_has_52_distinct_faces_and_ids() {
        let deck = poker52();
        assert_eq!(deck.validate(), Ok(()));
        assert_eq!(deck.cards.len(), 52);
        let faces: BTreeSet<CardFace> = deck.cards.iter().map(CardDefinition::face).collect();
        assert_eq!(faces.len(), 52);
        assert_eq!(deck.cards[0].id, "AC");
        assert_eq!(deck.cards[51].id, "KS");
        assert_eq!(deck.card("10H").unwrap().face(), CardFace { suit: "hearts".into(), rank: 10 });
        assert_eq!(deck.card("AS").unwrap().face(), CardFace { suit: "spades".into(), rank: 1 });
        assert_eq!(poker_card_id("stars", 1), None);
        assert_eq!(poker_card_id("hearts", 0), None);
        assert_eq!(poker_card_id("hearts", 14), None);
    }

    #[test]
    fn spanish40_has_40_distinct_faces_and_no_eights_or_nines() {
        let deck = spanish40();
        assert_eq!(deck.validate(), Ok(()));
        assert_eq!(deck.cards.len(), 40);
        let faces: BTreeSet<CardFace> = deck.cards.iter().map(CardDefinition::face).collect();
        assert_eq!(faces.len(), 40);
        assert!(deck.cards.iter().all(|c| !matches!(c.rank, 8 | 9)));
        assert_eq!(deck.cards[0].id, "1O");
        assert_eq!(deck.cards[39].id, "12B");
        assert_eq!(deck.card("10E").unwrap().face(), CardFace { suit: "espadas".into(), rank: 10 });
        assert_eq!(spanish_card_id("oros", 8), None);
        assert_eq!(spanish_card_id("hearts", 1), None);
    }

    #[test]
    fn card_face_json_is_suit_and_rank() {
        let face = CardFace { suit: "oros".into(), rank: 12 };
        assert_eq!(serde_json::to_value(&face).unwrap(), serde_json::json!({"suit": "oros", "rank": 12}));
    }
}
