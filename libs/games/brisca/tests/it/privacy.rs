//! Acceptance row "hidden event": Brisca's privacy through the real engine, for every
//! recipient (partners included), and the same checks failing on deliberately leaky
//! variants of the game.
//!
//! Hidden from a recipient: every card in the stock (faces and order) and every card in
//! another seat's hand, a partner's too. No output may carry one of their faces or any
//! instance id; and a recipient's snapshot must not change, by a byte, when those hidden
//! identities are permuted among themselves (which re-orders the stock and re-deals the
//! other hands).

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_brisca::{Action, BOT_DEFAULT, Brisca, Config, Data, MAIN_DECK, hand_zone, main_deck};
use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, SPECTATOR, check_privacy};
use juegoland_core::Registry;
use juegoland_protocol::WireOffer;
use juegoland_sdk::{
    Corrupt, Descriptor, EntropySource, Game, InstanceId, JsonPosition, Lifecycle, Offer, Pos, Position, Projection,
    Recipient, RuleError, Services, Setup, Trans, below,
};
use serde_json::{Value, json};

pub struct Oracle;

fn data(position: &JsonPosition) -> Data {
    position.data.decode().expect("a Brisca position")
}

/// The cards hidden from `recipient`: the stock, then every other seat's hand.
fn hidden(position: &JsonPosition, recipient: &str) -> Vec<InstanceId> {
    let data = data(position);
    let mut ids: Vec<InstanceId> = data.zones.zone("stock").map(|z| z.cards.clone()).unwrap_or_default();
    for seat in position.participants.keys().filter(|s| s.as_str() != recipient) {
        ids.extend(data.zones.zone(&hand_zone(seat)).map(|z| z.cards.clone()).unwrap_or_default());
    }
    ids
}

impl PrivacyOracle for Oracle {
    fn forbidden(&self, position: &JsonPosition, recipient: &str) -> Vec<Pattern> {
        let mut patterns: Vec<Pattern> = hidden(position, recipient)
            .iter()
            .map(|id| {
                let face = main_deck().face(id).expect("a card of the deck");
                Pattern::object(json!({"suit": face.suit, "rank": face.rank}))
            })
            .collect();
        patterns.push(Pattern::Text(format!("{MAIN_DECK}/")));
        patterns
    }

    fn scramble(
        &self,
        position: &JsonPosition,
        recipient: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<JsonPosition> {
        let hidden = hidden(position, recipient);
        if hidden.len() < 2 {
            return None;
        }
        let mut permuted = hidden.clone();
        for i in (1..permuted.len()).rev() {
            permuted.swap(i, below(entropy, i as u64 + 1) as usize);
        }
        let rename: BTreeMap<&InstanceId, &InstanceId> = hidden.iter().zip(permuted.iter()).collect();
        let mut json = serde_json::to_value(data(position)).unwrap();
        rename_ids(&mut json, &rename);
        let scrambled: Data = serde_json::from_value(json).unwrap();
        Some(Position { data: juegoland_sdk::RawJson::encode(&scrambled).unwrap(), ..position.clone() })
    }

    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        _offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let typed: Pos<Brisca> = Position {
            config: position.config.decode().ok()?,
            participants: position.participants.clone(),
            data: data(position),
            flow: position.flow.clone(),
            result: position.result.clone(),
        };
        let action = match below(entropy, 10) {
            // A random face, probably not in the hand: an illegal move must not leak either.
            0 => {
                let suits = ["oros", "copas", "espadas", "bastos"];
                let ranks = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12];
                return Some((
                    "play".into(),
                    json!({"card": {"suit": suits[below(entropy, 4) as usize], "rank": ranks[below(entropy, 10) as usize]}}),
                ));
            }
            1 => Action::exchange_trump(),
            _ => Brisca.bot_action(&typed, seat, BOT_DEFAULT, entropy)?,
        };
        let value = serde_json::to_value(&action).unwrap();
        Some((value["type"].as_str()?.to_owned(), value["payload"].clone()))
    }
}

fn rename_ids(json: &mut Value, rename: &BTreeMap<&InstanceId, &InstanceId>) {
    match json {
        Value::String(s) => {
            if let Some((_, to)) = rename.iter().find(|(from, _)| from.as_str() == s) {
                *s = to.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_ids(v, rename)),
        Value::Object(map) => map.values_mut().for_each(|v| rename_ids(v, rename)),
        _ => {}
    }
}

fn playouts(players: usize, config: Value) -> PlayoutConfig {
    PlayoutConfig {
        game: crate::engine::key(),
        seats: players,
        config,
        playouts: 6,
        max_steps: 140,
        seed: 0x00B2_15CA + players as u64,
    }
}

fn registry_of<G: Game>(game: G) -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(game)).unwrap();
    Arc::new(r)
}

#[test]
fn hidden_event_no_recipient_sees_another_hand_the_stock_or_anothers_draw() {
    for (players, config) in [
        (2, json!({})),
        (2, json!({"trumpExchange": "seven", "twoTakesLow": true, "mustFollow": true})),
        (4, json!({"players": 4})),
        (4, json!({"players": 4, "trumpExchange": "seven", "mustFollow": true})),
    ] {
        let report = check_privacy(crate::engine::registry(), &playouts(players, config.clone()), &Oracle)
            .unwrap_or_else(|leak| panic!("leak with {config}: {leak:#?}"));
        assert!(report.finished_matches > 0 && report.scrambles_compared > 100, "{config}: {report:?}");
        assert!(report.spectator_outputs_checked > 100, "{config}: {report:?}");
    }
}

/// How a leaky variant leaks.
#[derive(Clone, Copy, Debug)]
enum Leak {
    /// The view shows the partner's (or, with two players, the rival's) hand as one's own.
    PartnerHand,
    /// Every recipient sees the face of every drawn card.
    DrawnFace,
    /// The view shows the stock's top card as the trump (the stock order).
    StockTop,
    /// The spectators' view shows the first seat's hand.
    SpectatorHand,
}

/// Brisca with one deliberate leak; everything else delegates to the real rules.
struct Leaky(Leak);

impl Game for Leaky {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = juegoland_brisca::Event;
    type View = juegoland_brisca::View;
    type Context = juegoland_brisca::Context;
    type VisibleEvent = juegoland_brisca::VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Brisca.descriptor()
    }
    fn spectators(&self) -> bool {
        Brisca.spectators()
    }
    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Brisca.setup(input, services)
    }
    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        Brisca.validate_position(position)
    }
    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        Brisca.apply(position, actor, action, services)
    }
    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        Brisca.available_actions(position, recipient)
    }
    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<Self::View, Self::Context> {
        let mut p = Brisca.project(position, recipient);
        let t = juegoland_brisca::table(&position.config);
        if let Some(seat) = recipient.seat() {
            let n = usize::from(position.config.players);
            let i: usize = seat[1..].parse().unwrap();
            match self.0 {
                Leak::PartnerHand => p.view.hand.extend(t.hand(&position.data, &format!("p{}", (i + n / 2) % n))),
                Leak::StockTop => {
                    if let Some(top) = t.cards(&position.data, "stock").last() {
                        p.view.trump = t.face(top).ok();
                    }
                }
                Leak::DrawnFace | Leak::SpectatorHand => {}
            }
        }
        if let (Leak::SpectatorHand, Recipient::Spectator) = (self.0, recipient) {
            p.view.hand.extend(t.hand(&position.data, "p0"));
        }
        p
    }
    fn project_event(
        &self,
        before: &Pos<Self>,
        after: &Pos<Self>,
        event: &Self::Event,
        recipient: Recipient<'_>,
    ) -> Vec<Self::VisibleEvent> {
        match (self.0, event) {
            (Leak::DrawnFace, juegoland_brisca::Event::CardDrawn { seat, card }) => {
                vec![juegoland_brisca::VisibleEvent::CardDrawn(juegoland_brisca::CardDrawn {
                    seat: seat.clone(),
                    card: Some(*card),
                })]
            }
            _ => Brisca.project_event(before, after, event, recipient),
        }
    }
    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        Brisca.on_lifecycle(position, event, services)
    }
    fn bot_action(
        &self,
        position: &Pos<Self>,
        seat: &str,
        profile: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<Action> {
        Brisca.bot_action(position, seat, profile, entropy)
    }
}

#[test]
fn hidden_event_the_privacy_check_fails_on_a_game_made_to_leak() {
    for leak in [Leak::PartnerHand, Leak::DrawnFace, Leak::StockTop, Leak::SpectatorHand] {
        for (players, config) in [(2, json!({})), (4, json!({"players": 4}))] {
            let found = check_privacy(registry_of(Leaky(leak)), &playouts(players, config), &Oracle);
            let leaked = found.expect_err(&format!("{leak:?} with {players} players was not caught"));
            if let Leak::SpectatorHand = leak {
                assert_eq!(leaked.recipient, SPECTATOR, "only the spectators were leaked to: {leaked:?}");
            }
            println!("{leak:?}/{players}: caught in {} to {} ({})", leaked.output, leaked.recipient, leaked.pattern);
        }
    }
}
