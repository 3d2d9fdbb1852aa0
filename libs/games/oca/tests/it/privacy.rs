//! Privacy through the real engine. La Oca hides nothing in its position (positions, lost
//! turns, the well, rolls and paths are public), so what must never reach a recipient is
//! what the engine keeps private: the randomness trace (its draw requests and labels).
//! `check_privacy` plays seeded random matches with retries, reused ids, broken payloads and
//! out-of-turn seats and scans every snapshot, publication, receipt and error for it.

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, check_privacy};
use juegoland_sdk::JsonPosition;
use serde_json::json;

struct Oracle;

impl PrivacyOracle for Oracle {
    fn forbidden(&self, _position: &JsonPosition, _recipient: &str) -> Vec<Pattern> {
        vec![Pattern::Text("weights".into()), Pattern::Text("die0".into()), Pattern::Text("die1".into())]
    }
}

#[test]
fn hidden_event_no_recipient_receives_the_randomness_trace() {
    for (seats, dice) in [(2, 1), (4, 2)] {
        let cfg = PlayoutConfig {
            game: crate::engine::key(),
            seats,
            config: json!({"dice": dice}),
            playouts: 6,
            max_steps: 150,
            seed: 0x0CA + seats as u64,
        };
        let report = check_privacy(crate::engine::registry(), &cfg, &Oracle).unwrap_or_else(|leak| panic!("{leak:#?}"));
        assert!(report.commands > 6 * 20, "{report:?}");
        assert!(report.spectator_outputs_checked > report.commands / 2, "spectators are checked: {report:?}");
    }
}
