//! Properties of random play at the rules level: from any seed, seat count and finish
//! rule, bot rolls interleaved with out-of-turn rolls and withdrawals keep every invariant
//! of `validate_position`, never fault, and never move the counters backwards.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, Participant, ParticipantStatus, Position, Randomness, RuleError, Services, Setup, SplitMix64,
    seat_ids,
};
use juegoland_serpientes::{Action, Config, Finish, Serpientes, actor};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts_keep_every_invariant(
        seed in any::<u64>(),
        seats in 1usize..=6,
        bounce in any::<bool>(),
        script in prop::collection::vec(0u8..20, 0..400),
    ) {
        let config = Config { finish: if bounce { Finish::Bounce } else { Finish::Exact }, clock: None };
        let participants: BTreeMap<String, Participant> =
            seat_ids(seats).into_iter().map(|s| (s, Participant::active())).collect();
        let mut e = SplitMix64(seed);
        let t = Serpientes.setup(&Setup { config, participants: participants.clone() }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
        let mut p = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
        prop_assert!(Serpientes.validate_position(&p).is_ok());
        for step in script {
            if p.result.is_some() {
                break;
            }
            let seat = match step {
                // Someone out of turn.
                0 => format!("p{}", seed as usize % seats),
                // A withdrawal.
                1 => {
                    let leaver = format!("p{}", (seed as usize >> 3) % seats);
                    if !p.participants[&leaver].is_active() {
                        continue;
                    }
                    let mut q = p.clone();
                    q.participants.get_mut(&leaver).unwrap().status = ParticipantStatus::Withdrawn;
                    let t = Serpientes.on_lifecycle(&q, &Lifecycle::Withdrawal { seat: leaver }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
                    p = Position { data: t.data, flow: t.flow, result: t.result, ..q };
                    prop_assert!(Serpientes.validate_position(&p).is_ok(), "{:?}", Serpientes.validate_position(&p));
                    continue;
                }
                _ => actor(&p).unwrap().to_owned(),
            };
            let before = (p.flow.round, p.flow.turn);
            match Serpientes.apply(&p, &seat, &Action::roll(), &mut Services::new(0, Randomness::live(&mut e))) {
                Ok(t) => {
                    p = Position { data: t.data, flow: t.flow, result: t.result, ..p };
                    prop_assert!(Serpientes.validate_position(&p).is_ok(), "{:?}", Serpientes.validate_position(&p));
                    prop_assert!((p.flow.round, p.flow.turn) > before);
                }
                Err(RuleError::Illegal { .. }) => prop_assert_ne!(Some(seat.as_str()), actor(&p)),
                Err(fault) => prop_assert!(false, "fault {fault}"),
            }
        }
    }
}
