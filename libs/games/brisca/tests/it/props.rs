//! Properties of random play at the rules level: from any seed and configuration, bot
//! moves interleaved with random (mostly illegal) plays, exchanges and out-of-turn seats
//! keep every invariant of `validate_position` (every card in exactly one zone, 120 points,
//! turn order), an illegal move is a rejection and never a fault, and the counters never go
//! back; a complete hand always ends with the sides' points adding up to 120.

use std::collections::BTreeMap;

use juegoland_brisca::{Action, BOT_DEFAULT, Brisca, Config, Face, Suit, TrumpExchange, actor};
use juegoland_sdk::{Game, Participant, Position, Randomness, RuleError, Services, Setup, SplitMix64, seat_ids};
use proptest::prelude::*;

fn config() -> impl Strategy<Value = Config> {
    (prop::sample::select(vec![2u8, 4]), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(players, seven, low, follow)| Config {
            players,
            trump_exchange: if seven { TrumpExchange::Seven } else { TrumpExchange::None },
            two_takes_low: seven && low,
            must_follow: follow,
        },
    )
}

fn face() -> impl Strategy<Value = Face> {
    (
        prop::sample::select(vec![Suit::Oros, Suit::Copas, Suit::Espadas, Suit::Bastos]),
        prop::sample::select(vec![1u8, 2, 3, 4, 5, 6, 7, 10, 11, 12]),
    )
        .prop_map(|(suit, rank)| Face { suit, rank })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts_keep_every_invariant(
        seed in any::<u64>(),
        config in config(),
        noise in prop::collection::vec((0u8..10, face(), 0usize..4), 0..120),
    ) {
        let n = usize::from(config.players);
        let participants: BTreeMap<String, Participant> = seat_ids(n).into_iter().map(|s| (s, Participant::active())).collect();
        let mut e = SplitMix64(seed);
        let t = Brisca.setup(&Setup { config, participants: participants.clone() }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
        let mut p = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
        prop_assert!(Brisca.validate_position(&p).is_ok());
        let mut noise = noise.into_iter();
        for _ in 0..200 {
            if p.result.is_some() {
                break;
            }
            let (seat, action) = match noise.next() {
                Some((0..=2, card, who)) => (format!("p{}", who % n), Action::play(card)),
                Some((3, _, who)) => (format!("p{}", who % n), Action::exchange_trump()),
                _ => {
                    let seat = actor(&p).unwrap().to_owned();
                    let a = Brisca.bot_action(&p, &seat, BOT_DEFAULT, &mut e).unwrap();
                    (seat, a)
                }
            };
            let before = (p.flow.round, p.flow.turn);
            match Brisca.apply(&p, &seat, &action, &mut Services::new(0, Randomness::live(&mut e))) {
                Ok(t) => {
                    p = Position { data: t.data, flow: t.flow, result: t.result, ..p };
                    prop_assert!(Brisca.validate_position(&p).is_ok(), "{:?} after {:?}", Brisca.validate_position(&p), action);
                    prop_assert!((p.flow.round, p.flow.turn) >= before);
                }
                Err(RuleError::Illegal { .. }) => {}
                Err(fault) => prop_assert!(false, "fault {fault} on {action:?}"),
            }
        }
        prop_assert!(p.result.is_some(), "a hand ends within 200 moves");
        let r = serde_json::to_value(&p.result).unwrap();
        let total: i64 = ["p0", "p1"].iter().map(|s| r["participants"][*s]["score"].as_i64().unwrap()).sum();
        prop_assert_eq!(total, 120);
    }
}
