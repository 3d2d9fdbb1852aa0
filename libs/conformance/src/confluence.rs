//! The confluence check the engine spec demands before a game may use the `actor` policy:
//! valid `actor` actions of different players, applied in both orders, give the same
//! logical state.

use juegoland_protocol::Precondition;
use juegoland_sdk::ConflictPolicy;

use crate::playout::Playout;
use crate::privacy::{PlayoutConfig, PrivacyOracle};

/// A seat's proposed `actor` action: (seat, type, payload, precondition).
type Pick = (String, String, serde_json::Value, Precondition);

/// What a confluence run covered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfluenceReport {
    /// Pairs of independently valid actions checked in both orders.
    pub pairs: usize,
}

/// Plays random matches; wherever two different seats both have a valid `actor` action,
/// applies them in both orders from the same state and requires both to apply in either
/// order and to reach the same logical state (the position: data, flow, result,
/// participants). Counters are not compared: a barrier bumps them in an order-dependent way.
pub fn check_confluence(
    registry: std::sync::Arc<juegoland_core::Registry>,
    cfg: &PlayoutConfig,
    oracle: &dyn PrivacyOracle,
) -> Result<ConfluenceReport, String> {
    let mut report = ConfluenceReport::default();
    for index in 0..cfg.playouts {
        let mut p = Playout::start(registry.clone(), cfg, index);
        for _ in 0..cfg.max_steps {
            if p.live.state().is_finished() {
                break;
            }
            let actors: Vec<String> = p.live.state().position.flow.actors.keys().cloned().collect();
            // Two seats' actor actions, each proposed on the same state.
            let mut picks = Vec::new();
            for seat in &actors {
                if let Some((t, payload)) = p.propose(oracle, seat) {
                    let policy = p.live.game().descriptor().action(&t).map(|a| a.policy);
                    if policy == Some(ConflictPolicy::Actor) {
                        let pre = p.precondition(seat, &t);
                        if matches!(pre, Precondition::Actor { .. }) {
                            picks.push((seat.clone(), t, payload, pre));
                        }
                    }
                }
            }
            if picks.len() >= 2 {
                let (a, b) = (picks[0].clone(), picks[1].clone());
                let state = p.live.state().clone();
                let run = |first: &Pick, second: &Pick, p: &Playout| {
                    let mut q = p.fork(p.engine.load(state.clone()).expect("reload the same state"));
                    let e1 = q.envelope(first.3, first.1.clone(), first.2.clone());
                    let r1 = q.run(&first.0, &e1).applied;
                    let e2 = q.envelope(second.3, second.1.clone(), second.2.clone());
                    let r2 = q.run(&second.0, &e2).applied;
                    (r1, r2, q.live.state().clone())
                };
                // Each alone must be valid for the pair to count.
                let (a_alone, _, _) = run(&a, &a, &p);
                let (b_alone, _, _) = run(&b, &b, &p);
                if a_alone && b_alone {
                    let (ab1, ab2, s_ab) = run(&a, &b, &p);
                    let (ba1, ba2, s_ba) = run(&b, &a, &p);
                    if !(ab1 && ab2 && ba1 && ba2) {
                        return Err(format!(
                            "playout {index}, revision {}: {:?} and {:?} are each valid but not in both orders ({ab1},{ab2},{ba1},{ba2})",
                            state.revision,
                            (&a.0, &a.1, &a.2),
                            (&b.0, &b.1, &b.2)
                        ));
                    }
                    // The logical state must agree. The counters need not: when the second
                    // action is a barrier (the last `ready` starting a battle), which seat's
                    // revision was bumped once more depends on the order, by the counter rules.
                    if s_ab.position != s_ba.position {
                        return Err(format!(
                            "playout {index}, revision {}: {:?} then {:?} differs from the reverse order",
                            state.revision,
                            (&a.0, &a.1, &a.2),
                            (&b.0, &b.1, &b.2)
                        ));
                    }
                    report.pairs += 1;
                }
            }
            // Advance the match by one random proposal of a random actor.
            let Some(seat) = p.pick(&actors).cloned() else { break };
            let Some((t, payload)) = p.propose(oracle, &seat) else { continue };
            let pre = p.precondition(&seat, &t);
            let env = p.envelope(pre, t, payload);
            p.run(&seat, &env);
        }
    }
    Ok(report)
}
