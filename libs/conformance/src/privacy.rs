//! The privacy checker.

use juegoland_protocol::WireOffer;
use juegoland_sdk::{EntropySource, JsonPosition};
use serde_json::{Map, Value};

/// Something that must never appear in what a recipient receives.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// A string that must not appear as any JSON string value or object key, nor inside one
    /// (e.g. an internal instance id).
    Text(String),
    /// An object shape that must not appear: any JSON object that has all these keys with
    /// these values (e.g. `{"suit": "hearts", "rank": 5}` for a face-down card).
    Object(Map<String, Value>),
}

impl Pattern {
    /// An object pattern from a JSON object literal.
    pub fn object(v: Value) -> Pattern {
        match v {
            Value::Object(m) => Pattern::Object(m),
            other => panic!("an object pattern needs an object, got {other}"),
        }
    }

    /// Whether the pattern occurs anywhere in `json`, as the checker looks for it in what a
    /// recipient receives; for other outputs that must not leak either (log lines).
    pub fn occurs_in(&self, json: &Value) -> bool {
        contains(json, self)
    }
}

/// The recipient name the checker gives an oracle for the spectators, in games that define a
/// spectator projection: no seat has it, so an oracle that hides from a recipient what belongs
/// to other seats hides all of it from spectators.
pub const SPECTATOR: &str = "*spectator*";

/// The engine's recipient for a name the checker uses: [`SPECTATOR`] or a seat.
pub(crate) fn recipient_of(name: &str) -> juegoland_sdk::Recipient<'_> {
    if name == SPECTATOR { juegoland_sdk::Recipient::Spectator } else { juegoland_sdk::Recipient::Seat(name) }
}

/// A game's knowledge of its own hidden information, for the checker.
pub trait PrivacyOracle {
    /// Patterns that must not appear in anything `recipient` receives while the match is at
    /// `position` (the position after the revision being published). `recipient` is a seat,
    /// or [`SPECTATOR`].
    fn forbidden(&self, position: &JsonPosition, recipient: &str) -> Vec<Pattern>;

    /// A position that differs from `position` only in what `recipient` may not know (a
    /// re-dealt stock, relocated undiscovered ships…), or `None` when there is nothing hidden
    /// to vary. Non-interference: `recipient`'s snapshot must be byte-identical for both.
    fn scramble(
        &self,
        position: &JsonPosition,
        recipient: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<JsonPosition> {
        let _ = (position, recipient, entropy);
        None
    }

    /// The next action `{type, payload}` for `seat` — legal or not; `offers` are the offers
    /// of `seat`'s current snapshot. `None` lets the checker pick one of the offers.
    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let _ = (position, seat, offers, entropy);
        None
    }
}

/// What to play.
#[derive(Clone, Debug)]
pub struct PlayoutConfig {
    pub game: juegoland_core::GameKey,
    pub seats: usize,
    pub config: Value,
    pub playouts: usize,
    pub max_steps: usize,
    pub seed: u64,
}

/// A leak: what a recipient received that it must not have.
#[derive(Clone, Debug, PartialEq)]
pub struct Leak {
    pub playout: usize,
    pub revision: u64,
    pub recipient: String,
    /// `snapshot`, `publication`, `ack`, `error` or `non-interference`.
    pub output: &'static str,
    pub pattern: String,
    pub json: String,
}

/// What a clean run covered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrivacyReport {
    pub outputs_checked: usize,
    pub commands: usize,
    pub scrambles_compared: usize,
    pub finished_matches: usize,
    /// Of `outputs_checked`, the spectators' (sync snapshots and publications); 0 for a game
    /// without a spectator projection.
    pub spectator_outputs_checked: usize,
}

/// Whether `json` contains `pattern` anywhere.
pub(crate) fn contains(json: &Value, pattern: &Pattern) -> bool {
    match json {
        Value::String(s) => matches!(pattern, Pattern::Text(t) if s.contains(t.as_str())),
        Value::Array(items) => items.iter().any(|v| contains(v, pattern)),
        Value::Object(map) => {
            let here = match pattern {
                Pattern::Text(t) => map.keys().any(|k| k.contains(t.as_str())),
                Pattern::Object(fields) => fields.iter().all(|(k, v)| map.get(k) == Some(v)),
            };
            here || map.values().any(|v| contains(v, pattern))
        }
        _ => false,
    }
}

fn check(
    json: &Value,
    patterns: &[Pattern],
    playout: usize,
    revision: u64,
    recipient: &str,
    output: &'static str,
) -> Result<(), Leak> {
    match patterns.iter().find(|p| contains(json, p)) {
        None => Ok(()),
        Some(p) => Err(Leak {
            playout,
            revision,
            recipient: recipient.to_owned(),
            output,
            pattern: format!("{p:?}"),
            json: json.to_string(),
        }),
    }
}

/// Plays `cfg.playouts` random matches through the real engine and checks every output
/// each recipient receives: its sync snapshot at every revision, every live publication,
/// every receipt and error it gets. The recipients are the seats and, when the game defines a
/// spectator projection, the spectators ([`SPECTATOR`]: their sync snapshot and its
/// non-interference at every revision, their publications); a game without one must publish
/// nothing for spectators and refuse their snapshot. Commands are the oracle's proposals or random offers;
/// some are sent by a seat that may not act, some are exact retries, some re-use an id with
/// another payload, some carry a broken payload. Returns the first leak.
pub fn check_privacy(
    registry: std::sync::Arc<juegoland_core::Registry>,
    cfg: &PlayoutConfig,
    oracle: &dyn PrivacyOracle,
) -> Result<PrivacyReport, Leak> {
    use crate::playout::{Playout, json};
    use juegoland_sdk::Recipient;

    let mut report = PrivacyReport::default();
    let spectators = registry.get(&cfg.game).is_some_and(|g| g.game.spectators());
    for index in 0..cfg.playouts {
        let mut p = Playout::start(registry.clone(), cfg, index);
        let seats = p.seats();
        let recipients: Vec<String> = seats.iter().cloned().chain(spectators.then(|| SPECTATOR.to_owned())).collect();
        let mut last: Option<(String, juegoland_protocol::CommandEnvelope)> = None;
        for _ in 0..=cfg.max_steps {
            // Every recipient's sync snapshot at this revision, and non-interference.
            let revision = p.live.state().revision;
            if !spectators && p.live.snapshot(Recipient::Spectator, &p.engine).is_ok() {
                return Err(unwanted_spectators(index, revision, "snapshot"));
            }
            for seat in &recipients {
                if seat == SPECTATOR {
                    report.spectator_outputs_checked += 1;
                }
                let snapshot = p.live.snapshot(recipient_of(seat), &p.engine).expect("a snapshot");
                let text = juegoland_protocol::encode(&snapshot);
                let value: Value = serde_json::from_str(&text).expect("JSON");
                let forbidden = oracle.forbidden(&p.live.state().position, seat);
                check(&value, &forbidden, index, revision, seat, "snapshot")?;
                report.outputs_checked += 1;
                let scrambled = oracle.scramble(&p.live.state().position, seat, &mut p.rng);
                if let Some(position) = scrambled {
                    let mut state = p.live.state().clone();
                    state.position = position;
                    let other = p
                        .engine
                        .load(state)
                        .unwrap_or_else(|f| panic!("the oracle's scrambled position is invalid: {f}"));
                    let other_text =
                        juegoland_protocol::encode(&other.snapshot(recipient_of(seat), &p.engine).expect("a snapshot"));
                    if other_text != text {
                        return Err(Leak {
                            playout: index,
                            revision,
                            recipient: seat.clone(),
                            output: "non-interference",
                            pattern: "the snapshot changed with hidden state only".into(),
                            json: format!("{text}\n--- with scrambled hidden state ---\n{other_text}"),
                        });
                    }
                    report.scrambles_compared += 1;
                }
            }
            if p.live.state().is_finished() {
                report.finished_matches += 1;
                break;
            }
            // The next command.
            let actors: Vec<String> = p.live.state().position.flow.actors.keys().cloned().collect();
            let seat = if p.chance(85) { p.pick(&actors).cloned() } else { p.pick(&seats).cloned() };
            let Some(seat) = seat else { break };
            let envelope = match (&last, below100(&mut p)) {
                // An exact retry of the last command.
                (Some((s, env)), 0..=4) if *s == seat => env.clone(),
                // The last command's id with another payload.
                (Some((s, env)), 5..=7) if *s == seat => {
                    let mut env = env.clone();
                    env.action.payload = serde_json::json!({ "tampered": true });
                    env
                }
                (_, r) => {
                    let Some((action_type, mut payload)) = p.propose(oracle, &seat) else { continue };
                    if r >= 95 {
                        payload = serde_json::json!({ "broken": [1, 2, 3] });
                    }
                    let precondition = p.precondition(&seat, &action_type);
                    p.envelope(precondition, action_type, payload)
                }
            };
            let outcome = p.run(&seat, &envelope);
            report.commands += 1;
            let position = p.live.state().position.clone();
            let revision = p.live.state().revision;
            let answer = json(&outcome.answer);
            let kind = if answer["type"] == "game.error" { "error" } else { "ack" };
            check(&answer, &oracle.forbidden(&position, &seat), index, revision, &seat, kind)?;
            report.outputs_checked += 1;
            for (recipient, publication) in &outcome.publications {
                check_recipient(spectators, index, revision, recipient, &mut report)?;
                check(publication, &oracle.forbidden(&position, recipient), index, revision, recipient, "publication")?;
                report.outputs_checked += 1;
            }
            last = Some((seat, envelope));
            // Now and then the platform withdraws someone: results and withdrawal views.
            if p.chance(2) {
                let active: Vec<String> = position.active_seats().map(str::to_owned).collect();
                if let Some(seat) = p.pick(&active).cloned() {
                    let request = juegoland_core::LifecycleRequest::Withdraw { seat };
                    if let Ok(pending) = p.engine.lifecycle(&p.live, &request, p.now_ms, &mut p.rng) {
                        let commit = p.live.advance(pending);
                        let position = p.live.state().position.clone();
                        for publication in &commit.publications {
                            let recipient = publication.recipient.clone().unwrap_or_else(|| SPECTATOR.to_owned());
                            let revision = p.live.state().revision;
                            check_recipient(spectators, index, revision, &recipient, &mut report)?;
                            let value: Value = serde_json::from_str(&publication.encoded).expect("JSON");
                            let forbidden = oracle.forbidden(&position, &recipient);
                            check(&value, &forbidden, index, p.live.state().revision, &recipient, "publication")?;
                            report.outputs_checked += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(report)
}

/// The failure of a game without a spectator projection that gave spectators something.
fn unwanted_spectators(playout: usize, revision: u64, output: &'static str) -> Leak {
    Leak {
        playout,
        revision,
        recipient: SPECTATOR.to_owned(),
        output,
        pattern: "an output for spectators of a game that defines no spectator projection".into(),
        json: String::new(),
    }
}

/// Counts a spectators' publication, or fails when the game defines no spectator projection.
fn check_recipient(
    spectators: bool,
    playout: usize,
    revision: u64,
    recipient: &str,
    report: &mut PrivacyReport,
) -> Result<(), Leak> {
    if recipient == SPECTATOR {
        if !spectators {
            return Err(unwanted_spectators(playout, revision, "publication"));
        }
        report.spectator_outputs_checked += 1;
    }
    Ok(())
}

fn below100(p: &mut crate::playout::Playout) -> u64 {
    juegoland_sdk::below(&mut p.rng, 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_match_anywhere_and_only_whole_fields() {
        let doc =
            json!({"view": {"cols": [[{"suit": "hearts", "rank": 5, "up": true}], []]}, "ids": ["mainDeck/0/5H"]});
        assert!(contains(&doc, &Pattern::object(json!({"suit": "hearts", "rank": 5}))));
        assert!(!contains(&doc, &Pattern::object(json!({"suit": "hearts", "rank": 6}))));
        assert!(contains(&doc, &Pattern::Text("5H".into())));
        assert!(contains(&json!({"mainDeck/0/AS": 1}), &Pattern::Text("AS".into())), "keys count too");
        assert!(!contains(&json!({"n": 5}), &Pattern::Text("5".into())), "numbers are not text");
    }
}
