//! The `default` bot plays complete, legal games: against itself, and against a random
//! shooter, which it should beat almost always.

use juegoland_hundido::{Action, Adjacency, BOT_DEFAULT, Config, Hundido, ShipSpec, Side};
use juegoland_sdk::{EntropySource, Game, Pos, SplitMix64};

use crate::{actors, start, step};

/// Plays a whole match: `bot` seats use the bot, the others place with the bot (so they
/// have a legal fleet) and fire at a random cell they have not fired at. Returns the final
/// position.
fn play(config: Config, bots: [bool; 2], seed: u64) -> Pos<Hundido> {
    let mut e = SplitMix64(seed);
    let mut p = start(config);
    let mut moves = 0;
    while p.result.is_none() {
        moves += 1;
        assert!(moves < 2_000, "the match does not end");
        for side in actors(&p) {
            let seat = side.seat();
            let action = if bots[side.index()] || p.flow.phase == "placement" {
                Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut e).expect("an enabled seat gets a bot move")
            } else {
                random_shot(&p, side, &mut e)
            };
            p = step(&p, seat, &action).unwrap_or_else(|err| panic!("{action:?} by {seat}: {err}"));
            if p.result.is_some() || p.flow.phase != "placement" {
                break;
            }
        }
    }
    p
}

fn random_shot(p: &Pos<Hundido>, side: Side, e: &mut dyn EntropySource) -> Action {
    let free: Vec<(u8, u8)> = (0..p.config.rows)
        .flat_map(|r| (0..p.config.columns).map(move |c| (r, c)))
        .filter(|(r, c)| !p.data.shots.iter().any(|s| s.seat == side && (s.row, s.column) == (*r, *c)))
        .collect();
    let (r, c) = free[(e.next_u64() % free.len() as u64) as usize];
    Action::fire(r, c)
}

fn winner(p: &Pos<Hundido>) -> Side {
    let json = serde_json::to_value(&p.result).unwrap();
    assert_eq!(json["reasonCode"], "fleet-destroyed");
    if json["participants"]["p0"]["outcome"] == "win" { Side::P0 } else { Side::P1 }
}

fn shots_of(p: &Pos<Hundido>, side: Side) -> usize {
    p.data.shots.iter().filter(|s| s.seat == side).count()
}

#[test]
fn the_bot_plays_complete_games_against_itself() {
    let configs = [
        Config::default(),
        Config { adjacency: Adjacency::NoTouch, keep_turn_on_hit: true, ..Config::default() },
        Config {
            rows: 6,
            columns: 7,
            fleet: vec![ShipSpec::new("a", 4), ShipSpec::new("b", 1), ShipSpec::new("c", 1)],
            adjacency: Adjacency::NoTouch,
            keep_turn_on_hit: false,
            clock: None,
        },
        Config {
            rows: 12,
            columns: 12,
            fleet: (0..10).map(|i| ShipSpec::new(&format!("s{i}"), 6)).collect(),
            ..Config::default()
        },
    ];
    for (i, config) in configs.into_iter().enumerate() {
        for seed in 0..3 {
            let p = play(config.clone(), [true, true], 100 * i as u64 + seed);
            let w = winner(&p);
            let cells: usize = p.config.fleet.iter().map(|s| usize::from(s.size)).sum();
            let board = usize::from(p.config.rows) * usize::from(p.config.columns);
            assert!(shots_of(&p, w) >= cells && shots_of(&p, w) <= board);
        }
    }
}

#[test]
fn the_bot_is_deterministic_given_its_entropy() {
    let a = play(Config::default(), [true, true], 42);
    let b = play(Config::default(), [true, true], 42);
    assert_eq!(a.data, b.data);
    let c = play(Config::default(), [true, true], 43);
    assert_ne!(a.data, c.data);
}

#[test]
fn the_bot_beats_a_random_shooter() {
    let mut wins = 0;
    let mut bot_shots = 0;
    let games = 16u64;
    for game in 0..games {
        let bot = if game % 2 == 0 { Side::P0 } else { Side::P1 };
        let mut bots = [false, false];
        bots[bot.index()] = true;
        let p = play(Config::default(), bots, 1_000 + game);
        if winner(&p) == bot {
            wins += 1;
            bot_shots += shots_of(&p, bot);
        }
        assert_eq!(p.result.as_ref().map(|r| matches!(r, juegoland_sdk::MatchResult::Completed { .. })), Some(true));
    }
    // A random shooter needs about 95 shots on the classic board; hunt and target about 50.
    assert!(wins >= games - 1, "the bot won only {wins} of {games}");
    assert!(bot_shots / wins as usize <= 75, "the bot needed {} shots on average", bot_shots / wins as usize);
}
