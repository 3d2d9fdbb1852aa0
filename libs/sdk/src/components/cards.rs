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
    fn card_face_json_is_suit_and_rank() {
        let face = CardFace { suit: "oros".into(), rank: 12 };
        assert_eq!(serde_json::to_value(&face).unwrap(), serde_json::json!({"suit": "oros", "rank": 12}));
    }
}
