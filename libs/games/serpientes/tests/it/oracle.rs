//! The test oracle of spec/games.md: the expected number of rolls of a single player,
//! computed from the layout by a Markov chain, reproduced by many seeded one-player
//! playouts through the engine.
//!
//! Tolerance: the playouts' mean is compared with the chain's expectation within four
//! standard errors, SE = s / √N with s the playouts' own standard deviation (the chain gives
//! σ ≈ 25.2 rolls for `exact` and ≈ 30.3 for `bounce`). With N = 2,000 that is about ±2.3
//! rolls for `exact` and ±2.7 for `bounce`: a correct engine fails it with probability
//! about 6·10⁻⁵ (the seeds are fixed, so the verdict is reproducible), while the rule errors
//! it exists to catch move the mean by much more — ignoring the 87 → 24 snake alone moves it
//! by more than ten rolls, and confusing `exact` with `bounce` by about four.

use juegoland_serpientes::{LADDERS, SNAKES};
use serde_json::json;

use crate::engine::Match;

/// The chain, built from the spec's layout (not from the rules' code): the expectation and
/// the standard deviation of the number of rolls from square 0 to 100.
fn chain(bounce: bool) -> (f64, f64) {
    let jump = |s: u32| LADDERS.iter().chain(SNAKES.iter()).find(|(a, _)| *a == s).map_or(s, |(_, b)| *b);
    let next = |s: u32, r: u32| {
        let t = s + r;
        let t = if t <= 100 {
            t
        } else if bounce {
            200 - t
        } else {
            s
        };
        jump(t)
    };
    // E[s] = 1 + mean E[next]; M[s] = E[T²] = 1 + mean (2 E[next] + M[next]). Solved by
    // Gauss-Seidel sweeps to a fixed point.
    let (mut e, mut m) = (vec![0.0f64; 101], vec![0.0f64; 101]);
    for _ in 0..100_000 {
        let mut delta = 0.0f64;
        for s in 0..100u32 {
            let (mut es, mut ms) = (1.0, 1.0);
            for r in 1..=6 {
                let t = next(s, r) as usize;
                es += e[t] / 6.0;
                ms += (2.0 * e[t] + m[t]) / 6.0;
            }
            delta = delta.max((es - e[s as usize]).abs()).max((ms - m[s as usize]).abs());
            e[s as usize] = es;
            m[s as usize] = ms;
        }
        if delta < 1e-10 {
            break;
        }
    }
    (e[0], (m[0] - e[0] * e[0]).sqrt())
}

const PLAYOUTS: u64 = 2_000;

/// Rolls of `PLAYOUTS` seeded solo matches through the engine.
fn playouts(finish: &str) -> Vec<f64> {
    (0..PLAYOUTS)
        .map(|seed| {
            let mut m = Match::new(1, json!({"finish": finish}), 0x005E_7913 ^ (seed * 0x9E37));
            let mut rolls = 0u32;
            while !m.finished() {
                crate::engine::applied(&m.run("p0", "roll", json!({})));
                rolls += 1;
            }
            assert!(rolls >= 7, "the fewest rolls that reach 100 is 7");
            f64::from(rolls)
        })
        .collect()
}

fn check(finish: &str, spec: f64) {
    let (expected, sigma) = chain(finish == "bounce");
    assert!(
        (expected - spec).abs() < 0.05,
        "the chain gives {expected:.3} for {finish}, spec/games.md says about {spec}"
    );
    let rolls = playouts(finish);
    let n = rolls.len() as f64;
    let mean = rolls.iter().sum::<f64>() / n;
    let sd = (rolls.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let se = sd / n.sqrt();
    println!("{finish}: chain {expected:.3} (σ {sigma:.2}), playouts {mean:.3} (s {sd:.2}, SE {se:.3}, N {n})");
    assert!((sd - sigma).abs() < 0.15 * sigma, "the spread {sd:.2} is not the chain's {sigma:.2}");
    assert!((mean - expected).abs() < 4.0 * se, "{finish}: mean {mean:.3} is not {expected:.3} ± {:.3}", 4.0 * se);
}

#[test]
fn one_player_playouts_average_the_markov_chain_expectation_with_exact_finish() {
    check("exact", 39.2);
}

#[test]
fn one_player_playouts_average_the_markov_chain_expectation_with_bounce_finish() {
    check("bounce", 43.3);
}
