//! Privacy through the real engine. Serpientes hides nothing in its position (positions,
//! rolls and paths are public), so what must never reach a recipient is what the engine
//! keeps private: the randomness trace (its draw requests and labels). `check_privacy` plays
//! seeded random matches with retries, reused ids, broken payloads and out-of-turn seats and
//! scans every snapshot, publication, receipt and error for it.

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, check_privacy};
use juegoland_sdk::JsonPosition;
use serde_json::json;

struct Oracle;

impl PrivacyOracle for Oracle {
    fn forbidden(&self, _position: &JsonPosition, _recipient: &str) -> Vec<Pattern> {
        vec![Pattern::Text("weights".into()), Pattern::Object(json!({"kind": "weighted"}).as_object().unwrap().clone())]
    }
}

#[test]
fn hidden_event_no_recipient_receives_the_randomness_trace() {
    for (seats, finish) in [(2, "exact"), (4, "bounce")] {
        let cfg = PlayoutConfig {
            game: crate::engine::key(),
            seats,
            config: json!({"finish": finish}),
            playouts: 6,
            max_steps: 120,
            seed: 0x5E1 + seats as u64,
        };
        let report = check_privacy(crate::engine::registry(), &cfg, &Oracle).unwrap_or_else(|leak| panic!("{leak:#?}"));
        assert!(report.commands > 6 * 20 && report.finished_matches > 0, "{report:?}");
        assert!(report.spectator_outputs_checked > report.commands / 2, "spectators are checked: {report:?}");
    }
}
