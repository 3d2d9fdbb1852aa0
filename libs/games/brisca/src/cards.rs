//! The deck and Brisca's own order and points. The deck is `spanish-cards/spanish40`, a
//! definition of its own; its ranks decide nothing here: the order (as, tres, rey, caballo,
//! sota, 7, 6, 5, 4, 2) and the points (as 11, tres 10, rey 4, caballo 3, sota 2, others 0;
//! 120 in all) are this game's rules.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use juegoland_sdk::{ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, InstanceId, spanish40};

use crate::model::{Face, Suit};

/// The component id of the deck.
pub const MAIN_DECK: &str = "mainDeck";
/// Every card's points add up to this.
pub const TOTAL_POINTS: u32 = 120;

/// The declared components: `mainDeck`, one copy of `spanish-cards/spanish40`.
pub fn components() -> Vec<ComponentDeclaration> {
    vec![ComponentDeclaration {
        component_id: MAIN_DECK.to_owned(),
        definition: ComponentDefinition::Deck(spanish40()),
        copies: 1,
    }]
}

static SET: LazyLock<ComponentSet> =
    LazyLock::new(|| ComponentSet::load(components(), &CustomRegistry::new()).expect("spanish40 is a valid deck"));

/// The loaded `mainDeck`: 40 instances `mainDeck/0/1O`…`mainDeck/0/12B`, loaded once.
pub fn main_deck() -> &'static ComponentSet {
    &SET
}

/// The points of a rank.
pub fn points(rank: u8) -> u32 {
    match rank {
        1 => 11,
        3 => 10,
        12 => 4,
        11 => 3,
        10 => 2,
        _ => 0,
    }
}

/// The strength of a rank within its suit: higher wins (as 10 … 2 1).
pub fn strength(rank: u8) -> u8 {
    match rank {
        1 => 10,
        3 => 9,
        12 => 8,
        11 => 7,
        10 => 6,
        7 => 5,
        6 => 4,
        5 => 3,
        4 => 2,
        _ => 1,
    }
}

/// The face of an instance of `set`, if it is a Spanish card.
pub fn face_in(set: &ComponentSet, id: &InstanceId) -> Option<Face> {
    let f = set.face(id)?;
    Some(Face { suit: Suit::parse(&f.suit)?, rank: f.rank })
}

/// Every instance of `set` with its face (the Spanish cards among them).
pub fn faces_of(set: &ComponentSet) -> BTreeMap<InstanceId, Face> {
    set.instances().iter().filter_map(|i| face_in(set, &i.id).map(|f| (i.id.clone(), f))).collect()
}

static MAIN_FACES: LazyLock<BTreeMap<InstanceId, Face>> = LazyLock::new(|| faces_of(main_deck()));

/// The faces of `mainDeck`'s instances, built once (a lookup allocates nothing).
pub fn main_faces() -> &'static BTreeMap<InstanceId, Face> {
    &MAIN_FACES
}

/// The face of a `mainDeck` instance.
pub fn face(id: &InstanceId) -> Option<Face> {
    main_faces().get(id).copied()
}

/// Whether `card` beats `best` (the trick's winning card so far), under `trump`.
pub fn beats(card: Face, best: Face, trump: Suit) -> bool {
    if card.suit == best.suit { strength(card.rank) > strength(best.rank) } else { card.suit == trump }
}

/// The index of the winning card of a complete trick (the first card led).
pub fn trick_winner(cards: &[Face], trump: Suit) -> usize {
    let mut best = 0;
    for (i, card) in cards.iter().enumerate().skip(1) {
        if beats(*card, cards[best], trump) {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(suit: Suit, rank: u8) -> Face {
        Face { suit, rank }
    }

    #[test]
    fn the_deck_holds_120_points_in_brisca_order() {
        let total: u32 = main_deck().instances().iter().map(|i| points(face(&i.id).unwrap().rank)).sum();
        assert_eq!(total, TOTAL_POINTS);
        let order = [1, 3, 12, 11, 10, 7, 6, 5, 4, 2];
        assert!(order.windows(2).all(|w| strength(w[0]) > strength(w[1])));
    }

    #[test]
    fn the_highest_trump_wins_else_the_highest_of_the_suit_led() {
        use Suit::*;
        assert_eq!(trick_winner(&[f(Oros, 2), f(Oros, 1)], Bastos), 1);
        assert_eq!(trick_winner(&[f(Oros, 1), f(Copas, 1)], Bastos), 0, "another suit never wins");
        assert_eq!(trick_winner(&[f(Oros, 1), f(Bastos, 2)], Bastos), 1, "the lowest trump beats the as");
        assert_eq!(trick_winner(&[f(Oros, 3), f(Oros, 12), f(Bastos, 4), f(Bastos, 7)], Bastos), 3);
        assert_eq!(trick_winner(&[f(Oros, 7), f(Oros, 10), f(Copas, 3), f(Oros, 11)], Espadas), 3);
    }
}
