//! Properties of random play at the rules level: from any seed, seat count and dice count
//! rule, bot rolls interleaved with out-of-turn rolls and withdrawals keep every invariant
//! of `validate_position`, never fault, never move the counters backwards, and every
//! recipient's view names the seat to roll (`turn`) as the rules do.

use std::collections::BTreeMap;

use juegoland_oca::{Action, Config, Oca, actor};
use juegoland_sdk::{
    Game, Lifecycle, Participant, ParticipantStatus, Pos, Position, Randomness, Recipient, RuleError, Services, Setup,
    SplitMix64, seat_ids,
};
use proptest::prelude::*;

/// Every seat's and a spectator's view say whose turn it is exactly as the rules decide it
/// (nobody's once the match is over).
fn turn_is_told(p: &Pos<Oca>) -> Result<(), TestCaseError> {
    let recipients = p.participants.keys().map(|s| Recipient::Seat(s.as_str())).chain([Recipient::Spectator]);
    for r in recipients {
        let view = Oca.project(p, r).view;
        prop_assert_eq!(view.turn.as_deref(), actor(p), "{:?}", r);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts_keep_every_invariant(
        seed in any::<u64>(),
        seats in 2usize..=4,
        two in any::<bool>(),
        script in prop::collection::vec(0u8..20, 0..400),
    ) {
        let config = Config { dice: if two { 2 } else { 1 }, clock: None };
        let participants: BTreeMap<String, Participant> =
            seat_ids(seats).into_iter().map(|s| (s, Participant::active())).collect();
        let mut e = SplitMix64(seed);
        let t = Oca.setup(&Setup { config, participants: participants.clone() }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
        let mut p = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
        prop_assert!(Oca.validate_position(&p).is_ok());
        turn_is_told(&p)?;
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
                    let t = Oca.on_lifecycle(&q, &Lifecycle::Withdrawal { seat: leaver }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
                    p = Position { data: t.data, flow: t.flow, result: t.result, ..q };
                    prop_assert!(Oca.validate_position(&p).is_ok(), "{:?}", Oca.validate_position(&p));
                    turn_is_told(&p)?;
                    continue;
                }
                _ => actor(&p).unwrap().to_owned(),
            };
            let before = (p.flow.round, p.flow.turn);
            match Oca.apply(&p, &seat, &Action::roll(), &mut Services::new(0, Randomness::live(&mut e))) {
                Ok(t) => {
                    p = Position { data: t.data, flow: t.flow, result: t.result, ..p };
                    prop_assert!(Oca.validate_position(&p).is_ok(), "{:?}", Oca.validate_position(&p));
                    prop_assert!((p.flow.round, p.flow.turn) > before);
                    turn_is_told(&p)?;
                }
                Err(RuleError::Illegal { .. }) => prop_assert_ne!(Some(seat.as_str()), actor(&p)),
                Err(fault) => prop_assert!(false, "fault {fault}"),
            }
        }
    }
}
