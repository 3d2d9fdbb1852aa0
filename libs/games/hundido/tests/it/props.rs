//! Property tests: confluence of placement (the proof that `placeShip` and `ready` may use
//! the `actor` policy), and invariants of random play.

use juegoland_hundido::{
    Action, Adjacency, BOT_DEFAULT, Clocks, Config, Hundido, PHASE_PLACEMENT, STAGE_ARRANGE, ShipSpec, Side,
};
use juegoland_sdk::{
    ClockMode, EntropySource, Game, Lifecycle, ParticipantStatus, PhaseClock, Pos, RuleError, SplitMix64,
    TimeoutPolicy, TurnClock,
};
use proptest::prelude::*;

use crate::{commit, random_action, start, step, with_services};

fn config_strategy() -> impl Strategy<Value = Config> {
    prop_oneof![
        Just(Config::default()),
        Just(Config { adjacency: Adjacency::NoTouch, ..Config::default() }),
        // Clocked: placement actions must stay independent of the clocks (they never touch
        // them), and every timed transition keeps the invariants.
        Just(Config {
            clock: Some(Clocks {
                placement: Some(PhaseClock { timeout_ms: 60_000, policy: TimeoutPolicy::DefaultMove }),
                battle: Some(TurnClock {
                    mode: ClockMode::PerPlayer { budget_ms: 60_000, increment_ms: 1_000 },
                    policy: TimeoutPolicy::Skip,
                }),
            }),
            ..Config::default()
        }),
        (6u8..=8, 6u8..=8, any::<bool>(), any::<bool>()).prop_map(|(rows, columns, no_touch, keep)| Config {
            rows,
            columns,
            fleet: vec![ShipSpec::new("a", 3), ShipSpec::new("b", 2), ShipSpec::new("c", 2), ShipSpec::new("d", 1)],
            adjacency: if no_touch { Adjacency::NoTouch } else { Adjacency::Touch },
            keep_turn_on_hit: keep,
            clock: None,
        }),
    ]
}

/// A random reachable placement position: random actions (bot moves, random placements,
/// readies) by random seats, keeping the accepted ones, stopping before the battle.
fn placement_position(config: Config, seed: u64, steps: usize) -> Pos<Hundido> {
    let mut e = SplitMix64(seed);
    let mut p = start(config);
    for _ in 0..steps {
        let side = if e.next_u64().is_multiple_of(2) { Side::P0 } else { Side::P1 };
        let seat = side.seat();
        let action = if e.next_u64().is_multiple_of(3) {
            match Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut e) {
                Some(a) => a,
                None => continue,
            }
        } else {
            random_action(&p, &mut e)
        };
        if let Ok(next) = step(&p, seat, &action) {
            if next.flow.phase != PHASE_PLACEMENT {
                break;
            }
            p = next;
        }
    }
    p
}

/// A valid `actor` action of `seat` at `p`, found by sampling (bot moves, random placements
/// and `ready`), or `None`.
fn valid_actor_action(p: &Pos<Hundido>, seat: &str, e: &mut SplitMix64) -> Option<Action> {
    if p.flow.stage_of(seat) != Some(STAGE_ARRANGE) {
        return None;
    }
    for attempt in 0..200 {
        let a = match attempt % 4 {
            0 => Hundido.bot_action(p, seat, BOT_DEFAULT, e)?,
            1 => Action::ready(),
            _ => random_action(p, e),
        };
        if matches!(a, Action::Fire(_)) {
            continue;
        }
        if with_services(|s| Hundido.apply(p, seat, &a, s)).is_ok() {
            return Some(a);
        }
    }
    None
}

fn then(p: &Pos<Hundido>, first: (&str, &Action), second: (&str, &Action)) -> Pos<Hundido> {
    let a = step(p, first.0, first.1).expect("the first action is valid");
    step(&a, second.0, second.1)
        .unwrap_or_else(|e| panic!("{:?} by {} became invalid after {:?}: {e}", second.1, second.0, first.1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Valid `actor` actions of different players commute: both orders give the same data,
    /// flow and result (and each stays valid after the other).
    #[test]
    fn placement_actions_of_different_players_commute(
        config in config_strategy(),
        seed in any::<u64>(),
        steps in 0usize..40,
    ) {
        let p = placement_position(config, seed, steps);
        prop_assume!(p.flow.phase == PHASE_PLACEMENT && p.result.is_none());
        let mut e = SplitMix64(seed ^ 0x5eed);
        let a0 = valid_actor_action(&p, "p0", &mut e);
        let a1 = valid_actor_action(&p, "p1", &mut e);
        let (Some(a0), Some(a1)) = (a0, a1) else { return Err(TestCaseError::reject("a seat has no valid action")) };
        let x = then(&p, ("p0", &a0), ("p1", &a1));
        let y = then(&p, ("p1", &a1), ("p0", &a0));
        prop_assert_eq!(&x.data, &y.data);
        prop_assert_eq!(&x.flow, &y.flow);
        prop_assert_eq!(&x.result, &y.result);
        // And each changes only its author's part of the data.
        let only0 = step(&p, "p0", &a0).unwrap();
        prop_assert_eq!(&only0.data.players[1], &p.data.players[1]);
        let only1 = step(&p, "p1", &a1).unwrap();
        prop_assert_eq!(&only1.data.players[0], &p.data.players[0]);
    }

}

proptest! {
    // Whole matches in a debug build: fewer cases.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random actions by random seats never fault, never mutate their input, and every
    /// accepted one leaves a valid position with monotonic counters.
    #[test]
    fn random_play_keeps_every_invariant(config in config_strategy(), seed in any::<u64>()) {
        let mut e = SplitMix64(seed);
        let mut p = start(config);
        for _ in 0..400 {
            if p.result.is_some() {
                break;
            }
            let seat = if e.next_u64().is_multiple_of(2) { "p0" } else { "p1" };
            let action = if e.next_u64().is_multiple_of(2) {
                Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut e).unwrap_or_else(|| random_action(&p, &mut e))
            } else {
                random_action(&p, &mut e)
            };
            let before = p.clone();
            match with_services(|s| Hundido.apply(&p, seat, &action, s)) {
                Ok(t) => {
                    let next = commit(&p, t);
                    if let Err(err) = Hundido.validate_position(&next) {
                        return Err(TestCaseError::fail(format!("{err} after {action:?} by {seat}")));
                    }
                    prop_assert!(next.flow.turn >= p.flow.turn && next.flow.round >= p.flow.round);
                    prop_assert_eq!(next.flow.actors.is_empty(), next.result.is_some());
                    p = next;
                }
                Err(RuleError::Illegal { .. }) => prop_assert_eq!(&p, &before),
                Err(err) => return Err(TestCaseError::fail(format!("not an illegal-action rejection: {err}"))),
            }
        }
        // Withdrawal is accepted exactly while the match is active.
        let mut marked = p.clone();
        marked.participants.get_mut("p0").unwrap().status = ParticipantStatus::Withdrawn;
        match with_services(|s| Hundido.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p0".into() }, s)) {
            Ok(t) => {
                prop_assert!(p.result.is_none());
                Hundido.validate_position(&commit(&marked, t)).unwrap();
            }
            Err(err) => {
                prop_assert!(p.result.is_some());
                prop_assert_eq!(err, RuleError::illegal("match-finished"));
            }
        }
    }

    /// The bot's action is always legal wherever the seat may act.
    #[test]
    fn the_bot_is_always_legal(config in config_strategy(), seed in any::<u64>(), steps in 0usize..200) {
        let mut e = SplitMix64(seed);
        let mut p = start(config);
        for _ in 0..steps {
            if p.result.is_some() {
                break;
            }
            for side in crate::actors(&p) {
                let seat = side.seat();
                let a = Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut e);
                let a = a.ok_or_else(|| TestCaseError::fail(format!("no bot move for {seat} at {:?}", p.flow)))?;
                match step(&p, seat, &a) {
                    Ok(next) => p = next,
                    Err(err) => return Err(TestCaseError::fail(format!("bot move {a:?} by {seat} rejected: {err}"))),
                }
                if p.result.is_some() || p.flow.stage_of(seat).is_none() {
                    break;
                }
            }
            // Random noise from the other seat sometimes.
            let a = random_action(&p, &mut e);
            if let Ok(next) = step(&p, if e.next_u64().is_multiple_of(2) { "p0" } else { "p1" }, &a) {
                p = next;
            }
        }
    }
}
