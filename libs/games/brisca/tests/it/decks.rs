//! Acceptance row "two copies of a deck": Brisca's table over two copies of `spanish40`
//! gives 80 instances with distinct identities, and every card stays in exactly one zone
//! through the deal, plays, tricks and draws.

use std::collections::BTreeSet;

use juegoland_brisca::{Config, Table, hand_zone};
use juegoland_sdk::{
    ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, Randomness, SplitMix64,
    check_conservation, spanish40,
};

#[test]
fn two_copies_of_a_deck_distinct_identities_each_card_in_exactly_one_zone() {
    let set = ComponentSet::load(
        vec![ComponentDeclaration {
            component_id: "mainDeck".into(),
            definition: ComponentDefinition::Deck(spanish40()),
            copies: 2,
        }],
        &CustomRegistry::new(),
    )
    .unwrap();
    let ids: BTreeSet<String> = set.instances().iter().map(|i| i.id.to_string()).collect();
    assert_eq!(ids.len(), 80);
    assert!(ids.contains("mainDeck/0/1O") && ids.contains("mainDeck/1/1O"));
    let t = Table::new(&set, 4);
    let mut e = SplitMix64(11);
    let mut data = t.deal(&mut Randomness::live(&mut e)).unwrap();
    check_conservation(&data.zones, set.instances()).unwrap();
    let config = Config { players: 4, ..Config::default() };
    let mut plays = 0;
    loop {
        let seat = t.to_play(&data);
        let Some(card) = t.playable(&config, &data, &seat).first().copied() else { break };
        let step = t.play(&config, &data, &seat, card).unwrap();
        check_conservation(&step.data.zones, set.instances()).unwrap();
        data = step.data;
        plays += 1;
        if step.over {
            break;
        }
    }
    assert_eq!(plays, 80, "every card of both copies is played");
    assert!(t.seats().iter().all(|s| data.zones.count(&hand_zone(s)) == 0));
}
