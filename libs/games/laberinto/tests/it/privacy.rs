//! Privacy through the real engine: a player never receives a cell, an object or the rival
//! outside its Chebyshev square — in snapshots, publications (events included), receipts
//! and errors — and its snapshot does not change by a byte when the hidden rival moves
//! elsewhere out of sight. The same check fails on a variant made to leak.

use std::sync::Arc;

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, SPECTATOR, check_privacy};
use juegoland_core::Registry;
use juegoland_laberinto::maze::Grid;
use juegoland_laberinto::memory;
use juegoland_laberinto::model::{Bearing, CellSet, Memory, Sighting};
use juegoland_laberinto::view::radius;
use juegoland_laberinto::{Action, Config, Context, Data, Event, Laberinto, View, Visible};
use juegoland_protocol::WireOffer;
use juegoland_sdk::{
    Corrupt, Descriptor, EntropySource, Game, JsonPosition, Lifecycle, Offer, Pos, Position, Projection, RawJson,
    Recipient, RuleError, Services, Setup, Trans, below,
};
use serde_json::{Value, json};

struct Oracle;

fn decode(position: &JsonPosition) -> (Config, Data) {
    (position.config.decode().unwrap(), position.data.decode().unwrap())
}

fn rival(seat: &str) -> &'static str {
    if seat == "p0" { "p1" } else { "p0" }
}

impl PrivacyOracle for Oracle {
    fn forbidden(&self, position: &JsonPosition, recipient: &str) -> Vec<Pattern> {
        if recipient == SPECTATOR {
            // Observers see the whole maze, every object and both players.
            return vec![];
        }
        let (config, data) = decode(position);
        let g = Grid { width: config.width, height: config.height };
        let me = data.players[recipient].cell;
        let r = radius(&data, recipient);
        let mut patterns: Vec<Pattern> = (0..g.len())
            .filter(|c| g.chebyshev(me, *c) > r)
            .flat_map(|c| [Pattern::object(json!({"index": c})), Pattern::object(json!({"cell": c}))])
            .collect();
        let other = &data.players[rival(recipient)];
        if other.exited_ms.is_some() || g.chebyshev(me, other.cell) > r {
            patterns.push(Pattern::Text("opponent".into()));
            patterns.push(Pattern::object(json!({"variant": "carried"})));
        }
        patterns
    }

    /// The hidden state: the rival's cell while out of sight, and both players' memories
    /// (never projected, to anyone: observers included).
    fn scramble(
        &self,
        position: &JsonPosition,
        recipient: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<JsonPosition> {
        let (config, mut data) = decode(position);
        let g = Grid { width: config.width, height: config.height };
        if recipient != SPECTATOR {
            let me = data.players[recipient].cell;
            let r = radius(&data, recipient);
            let other = data.players.get_mut(rival(recipient)).unwrap();
            if other.exited_ms.is_none() && g.chebyshev(me, other.cell) > r {
                let hidden: Vec<u32> = (0..g.len()).filter(|c| g.chebyshev(me, *c) > r).collect();
                other.cell = hidden[below(entropy, hidden.len() as u64) as usize];
            }
        }
        for seat in ["p0", "p1"] {
            let bearing = g.bearing(data.compasses[seat], data.exits[seat].cell);
            forge_memory(&mut data.players.get_mut(seat).unwrap().memory, g, bearing, entropy);
        }
        // The rules' look makes the forged memories valid again: each player's square seen
        // and swept, and what lies in it sighted as it is.
        memory::look(&mut data, g);
        Some(Position { data: RawJson::encode(&data).unwrap(), ..position.clone() })
    }

    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        _offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let (config, data) = decode(position);
        let typed: Pos<Laberinto> = Position {
            config,
            participants: position.participants.clone(),
            data,
            flow: position.flow.clone(),
            result: position.result.clone(),
        };
        let action = match below(entropy, 4) {
            0 => {
                let d = ["north", "east", "south", "west"][below(entropy, 4) as usize];
                return Some(("move".into(), json!({"direction": d})));
            }
            _ => Laberinto.bot_action(&typed, seat, "default", entropy)?,
        };
        let value = serde_json::to_value(&action).unwrap();
        Some((value["type"].as_str()?.to_owned(), value["payload"].clone()))
    }
}

/// A memory some player could have had: random cells seen, a random part of them swept,
/// each key sighted on one of them or not at all, the compass's bearing or none.
fn forge_memory(memory: &mut Memory, g: Grid, bearing: Option<Bearing>, entropy: &mut dyn EntropySource) {
    let mut seen = CellSet::empty(g.len());
    let mut swept = CellSet::empty(g.len());
    for cell in 0..g.len() {
        if below(entropy, 2) == 0 {
            seen.insert(cell);
            if below(entropy, 2) == 0 {
                swept.insert(cell);
            }
        }
    }
    let cells: Vec<u32> = (0..g.len()).filter(|c| seen.contains(*c)).collect();
    memory.keys.clear();
    for owner in ["p0", "p1"] {
        if !cells.is_empty() && below(entropy, 3) > 0 {
            let cell = cells[below(entropy, cells.len() as u64) as usize];
            memory.keys.insert(owner.into(), Sighting { cell, carried: below(entropy, 2) == 0 });
        }
    }
    (memory.seen, memory.swept) = (seen, swept);
    memory.bearing = bearing.filter(|_| below(entropy, 2) == 0);
}

fn playouts() -> PlayoutConfig {
    PlayoutConfig {
        game: crate::engine::key(),
        seats: 2,
        config: json!({"width": 9, "height": 9, "countdownMs": 0, "cooldownMs": 0, "artifacts": 3, "loops": 4}),
        playouts: 6,
        max_steps: 400,
        seed: 0x1ab_0001,
    }
}

fn registry_of<G: Game>(game: G) -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(game)).unwrap();
    Arc::new(r)
}

#[test]
fn no_player_receives_what_lies_outside_its_square() {
    let report = check_privacy(crate::engine::registry(), &playouts(), &Oracle).unwrap_or_else(|l| panic!("{l:#?}"));
    assert!(report.finished_matches > 0 && report.scrambles_compared > 100, "{report:?}");
    assert!(report.spectator_outputs_checked > 0, "observers are checked too: {report:?}");
}

/// Laberinto with one deliberate leak.
#[derive(Clone, Copy)]
enum Leaky {
    /// The view always names the opponent.
    Opponent,
    /// The view tells how many cells the rival has seen (under a name no pattern forbids:
    /// only the memory's scramble can catch it).
    RivalMemory,
}

impl Game for Leaky {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = Visible;

    fn descriptor(&self) -> Descriptor {
        Laberinto.descriptor()
    }
    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Laberinto.setup(input, services)
    }
    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt> {
        Laberinto.validate_position(position)
    }
    fn apply(&self, p: &Pos<Self>, actor: &str, a: &Action, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Laberinto.apply(p, actor, a, s)
    }
    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        Laberinto.available_actions(position, recipient)
    }
    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let mut p = Laberinto.project(position, recipient);
        if let Some(seat) = recipient.seat() {
            let other = &position.data.players[rival(seat)];
            match self {
                Leaky::Opponent => p.view.records[0].players.insert("opponent".into(), other.cell),
                Leaky::RivalMemory => {
                    p.view.records[0].players.insert("explored".into(), other.memory.seen.len() as u32)
                }
            };
        }
        p
    }
    fn project_event(&self, before: &Pos<Self>, after: &Pos<Self>, e: &Event, r: Recipient<'_>) -> Vec<Visible> {
        Laberinto.project_event(before, after, e, r)
    }
    fn on_lifecycle(&self, p: &Pos<Self>, e: &Lifecycle, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        Laberinto.on_lifecycle(p, e, s)
    }
    fn bot_action(&self, p: &Pos<Self>, seat: &str, profile: &str, e: &mut dyn EntropySource) -> Option<Action> {
        Laberinto.bot_action(p, seat, profile, e)
    }
    fn spectators(&self) -> bool {
        Laberinto.spectators()
    }
}

#[test]
fn the_privacy_check_fails_on_a_game_made_to_leak() {
    let leak = check_privacy(registry_of(Leaky::Opponent), &playouts(), &Oracle).expect_err("the leak is caught");
    assert!(leak.pattern.contains("opponent"), "{leak:?}");
}

#[test]
fn the_privacy_check_fails_on_a_game_that_leaks_a_memory() {
    let leak = check_privacy(registry_of(Leaky::RivalMemory), &playouts(), &Oracle).expect_err("the leak is caught");
    assert_eq!(leak.output, "non-interference", "{leak:?}");
}
