//! The whole in-process pipeline for Conecta 4, and its stages; then the same `whole` and
//! stages for Brisca (two and four players), La Oca and Serpientes y escaleras
//! ([`other_games`]), so each game's cost per command stands next to Conecta 4's.
//!
//! `whole`: command bytes in → strict decode → receipt check and fingerprint (JCS + SHA-256)
//! → precondition, actor, stage, payload schema → rules → position validation → snapshots
//! with visible events and offers for both seats and the spectators, each validated →
//! outgoing bytes (the ack and the three live snapshots); `whole/unwatched` without the
//! spectators' (a match nobody watches). Store and bus are not in it (they are IO, measured by the
//! load-test harness). Run: `cargo bench -p juegoland-core --bench pipeline`.

// A benchmark is the shell: it reads the clock to time the steady-state loop.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use juegoland_core::{Decision, Engine, GameKey, LiveMatch, MatchState, Registry, SeatHolder};
use juegoland_protocol::{ClientMessage, decode_client, encode_into, fingerprint};
use juegoland_sdk::{Recipient, SplitMix64};
use serde_json::json;
use uuid::Uuid;

// The same allocator as the `juegoland` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Fixture {
    engine: Engine,
    /// The match state before each move, and that move's command bytes.
    steps: Vec<(MatchState, Vec<u8>)>,
}

fn principal(seat: &str) -> &'static str {
    if seat == "p0" { "alice" } else { "bob" }
}

/// A long game with no result: at each turn, the lowest column that does not end the game.
fn fixture() -> Fixture {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    let engine = Engine::new(Arc::new(registry));
    let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ]);
    let mut entropy = SplitMix64(1);
    let (_, mut live) = engine.create(Uuid::from_u128(7), &key, seats, &json!({}), 0, &mut entropy).unwrap();
    let mut steps = Vec::new();
    'moves: for n in 0..40u128 {
        let state = live.state().clone();
        let seat = state.position.flow.actors.keys().next().unwrap().clone();
        for column in 0..7 {
            let bytes = json!({
                "protocolVersion": 1, "type": "game.command", "matchId": state.match_id,
                "commandId": Uuid::from_u128(1000 + n * 10 + column), "precondition": {"kind":"match","revision": state.revision},
                "action": {"type": "drop", "payload": {"column": column}}
            })
            .to_string()
            .into_bytes();
            let Ok(ClientMessage::Command(env)) = decode_client(&bytes) else { panic!("decode") };
            let Decision::Commit(p) = engine.command(&live, principal(&seat), &env, None, 0, &mut entropy) else {
                panic!("a commit")
            };
            let applied = p.commit.state.is_some();
            let ends = p.commit.state.as_ref().is_some_and(|s| s.is_finished());
            if applied && !ends {
                live.advance(*p);
                steps.push((state, bytes));
                continue 'moves;
            }
        }
        break;
    }
    assert!(steps.len() >= 20, "a long enough game: {}", steps.len());
    Fixture { engine, steps }
}

/// Times `iters` steps of a steady-state loop, as in a match actor: one live match advances
/// move after move (`step(live, k)` plays the k-th of the `n` recorded moves); when the
/// recording runs out, `load` starts it again from its first state, outside the timing.
fn steady(
    iters: u64,
    n: usize,
    load: impl Fn() -> LiveMatch,
    mut step: impl FnMut(&mut LiveMatch, usize),
) -> std::time::Duration {
    let mut total = std::time::Duration::ZERO;
    let mut k = n;
    let mut live = None;
    for _ in 0..iters {
        if k == n {
            live = Some(load());
            k = 0;
        }
        let live = live.as_mut().expect("loaded");
        let started = std::time::Instant::now();
        step(live, k);
        total += started.elapsed();
        k += 1;
    }
    total
}

/// One full command: decode, decide, advance, and encode every outgoing message.
fn whole(engine: &Engine, live: &mut LiveMatch, bytes: &[u8], out: &mut Vec<u8>) -> usize {
    let Ok(ClientMessage::Command(env)) = decode_client(bytes) else { panic!("decode") };
    let seat = live.state().position.flow.actors.keys().next().unwrap().clone();
    let mut entropy = SplitMix64(2);
    let Decision::Commit(p) = engine.command(live, principal(&seat), &env, None, 0, &mut entropy) else {
        panic!("a commit")
    };
    let commit = live.advance(*p);
    out.clear();
    encode_into(&commit.receipt.as_ref().unwrap().ack(false), out);
    for publication in &commit.publications {
        out.extend_from_slice(publication.for_subscription("s-0123456789").as_bytes());
    }
    out.len()
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    let n = f.steps.len();
    let mut g = c.benchmark_group("conecta4");
    g.throughput(Throughput::Elements(1));

    let mut out = Vec::with_capacity(16 * 1024);
    // Steady state (`steady`). `whole` publishes to spectators too (a spectator follows the match); `whole/unwatched`
    // to the two seats alone (nobody watches: `LiveMatch::set_watched(false)`).
    for (name, watched) in [("whole", true), ("whole/unwatched", false)] {
        let load = || {
            let mut live = f.engine.load(f.steps[0].0.clone()).unwrap();
            live.set_watched(watched);
            live
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                steady(iters, n, load, |live, k| {
                    std::hint::black_box(whole(&f.engine, live, &f.steps[k].1, &mut out));
                })
            })
        });
    }

    let bytes = f.steps[n / 2].1.clone();
    g.bench_function("stage/decode", |b| b.iter(|| decode_client(&bytes).unwrap()));
    let Ok(ClientMessage::Command(env)) = decode_client(&bytes) else { panic!() };
    g.bench_function("stage/fingerprint", |b| b.iter(|| fingerprint(&env)));

    let mid = f.engine.load(f.steps[n / 2].0.clone()).unwrap();
    let seat = mid.state().position.flow.actors.keys().next().unwrap().clone();
    g.bench_function("stage/decide", |b| {
        let mut entropy = SplitMix64(3);
        b.iter(|| f.engine.command(&mid, principal(&seat), &env, None, 0, &mut entropy))
    });
    g.bench_function("stage/rules-apply", |b| {
        let game = &mid.game().game;
        let action = game.decode_action("drop", &env.action.payload).unwrap();
        let mut entropy = SplitMix64(4);
        b.iter(|| {
            let mut services = juegoland_sdk::Services::new(0, juegoland_sdk::Randomness::live(&mut entropy));
            game.apply(mid.loaded(), &seat, &action, &mut services).unwrap()
        })
    });
    g.bench_function("stage/snapshot-one-seat", |b| b.iter(|| mid.snapshot(Recipient::Seat("p1"), &f.engine).unwrap()));
    let snap = mid.snapshot(Recipient::Seat("p1"), &f.engine).unwrap();
    g.bench_function("stage/encode-one-snapshot", |b| {
        b.iter(|| {
            out.clear();
            encode_into(&snap, &mut out);
            out.len()
        })
    });
    g.bench_function("stage/load-match", |b| {
        b.iter_batched(|| f.steps[n / 2].0.clone(), |s| f.engine.load(s).unwrap(), BatchSize::SmallInput)
    });
    g.finish();
}

/// A recorded match of another game: the state before each move, that move's command bytes,
/// the seat that sent it and the entropy seed its draws used (so a replayed move rolls the
/// same dice and the steady-state loop follows the recorded match).
struct GameFixture {
    name: &'static str,
    engine: Engine,
    steps: Vec<(MatchState, Vec<u8>, String, u64)>,
}

/// Plays `game` from its creation, each move the actor's first offered `action`, for at
/// most `moves` moves or until the match ends.
fn game_fixture(
    name: &'static str,
    game: &str,
    seats: usize,
    config: serde_json::Value,
    action: &str,
    moves: usize,
) -> GameFixture {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_brisca::Brisca)).unwrap();
    registry.register(juegoland_sdk::erase(juegoland_oca::Oca)).unwrap();
    registry.register(juegoland_sdk::erase(juegoland_serpientes::Serpientes)).unwrap();
    let engine = Engine::new(Arc::new(registry));
    let key = GameKey { id: game.into(), rules_version: "1.0.0".into() };
    let holders = juegoland_sdk::seat_ids(seats)
        .into_iter()
        .map(|s| (s.clone(), SeatHolder::Principal(format!("u-{s}"))))
        .collect();
    let mut entropy = SplitMix64(5);
    let (_, mut live) = engine.create(Uuid::from_u128(9), &key, holders, &config, 0, &mut entropy).unwrap();
    let mut steps = Vec::new();
    for n in 0..moves as u64 {
        let state = live.state().clone();
        let Some(seat) = state.position.flow.actors.keys().next().cloned() else { break };
        let snapshot = live.snapshot(Recipient::Seat(&seat), &engine).unwrap();
        let offer = serde_json::to_value(&snapshot).unwrap()["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["type"] == action)
            .cloned()
            .expect("an offer");
        let bytes = json!({
            "protocolVersion": 1, "type": "game.command", "matchId": state.match_id,
            "commandId": Uuid::from_u128(5000 + u128::from(n)), "precondition": offer["precondition"],
            "action": {"type": action, "payload": offer["payload"]}
        })
        .to_string()
        .into_bytes();
        let Ok(ClientMessage::Command(env)) = decode_client(&bytes) else { panic!("decode") };
        let seed = 100 + n;
        let Decision::Commit(p) = engine.command(&live, &format!("u-{seat}"), &env, None, 0, &mut SplitMix64(seed))
        else {
            panic!("a commit")
        };
        assert!(p.commit.state.is_some(), "{name}: the offered move is applied");
        let ends = p.commit.state.as_ref().is_some_and(|s| s.is_finished());
        live.advance(*p);
        steps.push((state, bytes, seat, seed));
        if ends {
            break;
        }
    }
    assert!(steps.len() >= 10, "{name}: a long enough match: {}", steps.len());
    GameFixture { name, engine, steps }
}

/// Each other game's `whole` (as Conecta 4's: decode, decide, advance, encode the ack and
/// every seat's publication) and the stages that differ by game.
fn other_games(c: &mut Criterion) {
    let fixtures = [
        game_fixture("brisca", "brisca", 2, json!({}), "play", 40),
        game_fixture("brisca4", "brisca", 4, json!({"players": 4}), "play", 40),
        game_fixture("oca", "oca", 4, json!({}), "roll", 60),
        game_fixture("serpientes", "serpientes", 4, json!({}), "roll", 60),
    ];
    let mut out = Vec::with_capacity(16 * 1024);
    for f in &fixtures {
        let n = f.steps.len();
        let mut g = c.benchmark_group(f.name);
        g.throughput(Throughput::Elements(1));
        g.bench_function("whole", |b| {
            b.iter_custom(|iters| {
                steady(
                    iters,
                    n,
                    || f.engine.load(f.steps[0].0.clone()).unwrap(),
                    |live, k| {
                        let (_, bytes, seat, seed) = &f.steps[k];
                        let Ok(ClientMessage::Command(env)) = decode_client(bytes) else { panic!("decode") };
                        let Decision::Commit(p) =
                            f.engine.command(live, &format!("u-{seat}"), &env, None, 0, &mut SplitMix64(*seed))
                        else {
                            panic!("a commit")
                        };
                        let commit = live.advance(*p);
                        out.clear();
                        encode_into(&commit.receipt.as_ref().unwrap().ack(false), &mut out);
                        for publication in &commit.publications {
                            out.extend_from_slice(publication.for_subscription("s-0123456789").as_bytes());
                        }
                        std::hint::black_box(out.len());
                    },
                )
            })
        });
        let (state, bytes, seat, seed) = &f.steps[n / 2];
        let Ok(ClientMessage::Command(env)) = decode_client(bytes) else { panic!() };
        let mid = f.engine.load(state.clone()).unwrap();
        let principal = format!("u-{seat}");
        g.bench_function("stage/decide", |b| {
            b.iter(|| f.engine.command(&mid, &principal, &env, None, 0, &mut SplitMix64(*seed)))
        });
        g.bench_function("stage/rules-apply", |b| {
            let game = &mid.game().game;
            let action = game.decode_action(&env.action.r#type, &env.action.payload).unwrap();
            b.iter(|| {
                let mut entropy = SplitMix64(*seed);
                let mut services = juegoland_sdk::Services::new(0, juegoland_sdk::Randomness::live(&mut entropy));
                game.apply(mid.loaded(), seat, &action, &mut services).unwrap()
            })
        });
        g.bench_function("stage/snapshot-one-seat", |b| {
            b.iter(|| mid.snapshot(Recipient::Seat("p1"), &f.engine).unwrap())
        });
        g.bench_function("stage/validate-position", |b| {
            b.iter(|| mid.game().game.validate_position(mid.loaded()).unwrap())
        });
        g.bench_function("stage/encode-position", |b| {
            b.iter(|| mid.game().game.encode_position(mid.loaded()).unwrap())
        });
        g.bench_function("stage/load-match", |b| {
            b.iter_batched(|| state.clone(), |s| f.engine.load(s).unwrap(), BatchSize::SmallInput)
        });
        g.finish();
    }
}

criterion_group!(benches, bench, other_games);
criterion_main!(benches);
