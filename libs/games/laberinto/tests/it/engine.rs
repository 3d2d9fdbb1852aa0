//! A Laberinto match driven through the real engine pipeline with a controlled clock: see
//! [`Match`].

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    Decision, Engine, GameKey, LifecycleError, LifecycleRequest, LiveMatch, LogEntry, ReceiptOutcome, Registry,
    SeatHolder,
};
use juegoland_laberinto::{Data, Laberinto};
use juegoland_protocol::{Action, CommandEnvelope, Precondition, RejectionCode};
use juegoland_sdk::{Game, Pos, Position, RawJson, SplitMix64};
use serde_json::{Value, json};
use uuid::Uuid;

pub fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(Laberinto)).unwrap();
    Arc::new(r)
}

pub fn key() -> GameKey {
    GameKey { id: "laberinto".into(), rules_version: "1.0.0".into() }
}

pub const START_MS: i64 = 1_000;

pub struct Match {
    pub engine: Engine,
    pub live: LiveMatch,
    pub log: Vec<LogEntry>,
    /// Every publication of every commit: (recipient, revision, JSON text).
    pub published: Vec<(Option<String>, u64, String)>,
    pub entropy: SplitMix64,
    pub now_ms: i64,
    next_id: u128,
}

impl Match {
    pub fn new(config: Value, seed: u64) -> Match {
        let engine = Engine::new(registry());
        let holders: BTreeMap<_, _> =
            ["p0", "p1"].into_iter().map(|s| (s.to_owned(), SeatHolder::Principal(format!("user-{s}")))).collect();
        let mut entropy = SplitMix64(seed);
        let (pending, mut live) = engine
            .create(Uuid::from_u128(0x1ab + u128::from(seed)), key(), holders, &config, START_MS, &mut entropy)
            .expect("create");
        let log = vec![live.advance(pending).log.expect("creation log")];
        Match { engine, live, log, published: Vec::new(), entropy, now_ms: START_MS, next_id: 1 }
    }

    /// A racing match (no countdown, no cooldown unless asked) on a fully open 7×7 grid
    /// with everything placed by `place`: the scenario tests' board.
    pub fn scenario(config: Value, place: impl FnOnce(&mut Data)) -> Match {
        let mut full = json!({"width": 7, "height": 7, "countdownMs": 0, "cooldownMs": 0, "artifacts": 0});
        for (k, v) in config.as_object().unwrap() {
            full[k] = v.clone();
        }
        let mut m = Match::new(full, 5);
        let mut data = m.data();
        let g = juegoland_laberinto::maze::Grid { width: 7, height: 7 };
        data.cells = vec![0; 49];
        for cell in 0..49 {
            for side in [juegoland_laberinto::Direction::East, juegoland_laberinto::Direction::South] {
                juegoland_laberinto::maze::open(&mut data.cells, g, cell, side);
            }
        }
        place(&mut data);
        m.set_data(data);
        m
    }

    pub fn state(&self) -> &juegoland_core::MatchState {
        self.live.state()
    }

    pub fn data(&self) -> Data {
        self.state().position.data.decode().unwrap()
    }

    pub fn typed(&self) -> Pos<Laberinto> {
        let p = &self.state().position;
        Position {
            config: p.config.decode().unwrap(),
            participants: p.participants.clone(),
            data: self.data(),
            flow: p.flow.clone(),
            result: p.result.clone(),
        }
    }

    /// Replaces the match's data (a crafted position the rules must accept as valid), after
    /// the players have looked at it as the rules make them after every transition.
    pub fn set_data(&mut self, mut data: Data) {
        let config = self.typed().config;
        juegoland_laberinto::memory::look(
            &mut data,
            juegoland_laberinto::maze::Grid { width: config.width, height: config.height },
        );
        let mut state = self.state().clone();
        state.position.data = RawJson::encode(&data).unwrap();
        self.live = self.engine.load(state).expect("a valid crafted position");
        let typed = self.typed();
        Laberinto.validate_position(&typed).expect("the crafted position keeps the invariants");
    }

    pub fn finished(&self) -> bool {
        self.state().is_finished()
    }

    /// `seat` sends `action` at `at_ms` (the captured instant), with the queue precondition.
    pub fn send_at(&mut self, seat: &str, at_ms: i64, action: &str, payload: Value) -> ReceiptOutcome {
        self.now_ms = at_ms;
        self.next_id += 1;
        let envelope = CommandEnvelope {
            match_id: self.state().match_id,
            command_id: Uuid::from_u128(self.next_id),
            precondition: Precondition::Queue,
            action: Action { r#type: action.into(), payload },
        };
        let principal = format!("user-{seat}");
        match self.engine.command(&self.live, &principal, &envelope, None, at_ms, &mut self.entropy) {
            Decision::Commit(p) => {
                let commit = self.live.advance(*p);
                if let Some(l) = &commit.log {
                    self.log.push(l.clone());
                }
                self.published.extend(
                    commit.publications.iter().map(|p| (p.recipient.clone(), p.revision, p.encoded.to_string())),
                );
                commit.receipt.expect("a command always gets a receipt").outcome
            }
            Decision::Fault(f) => panic!("engine fault: {f}"),
            _ => panic!("unexpected decision"),
        }
    }

    pub fn mv_at(&mut self, seat: &str, at_ms: i64, direction: &str) -> ReceiptOutcome {
        self.send_at(seat, at_ms, "move", json!({ "direction": direction }))
    }

    /// Fires the deadline `id` (its current generation) at `at_ms`.
    pub fn fire_at(&mut self, id: &str, at_ms: i64) -> Result<u64, LifecycleError> {
        self.now_ms = at_ms;
        let generation = self.state().deadlines.get(id).map(|d| d.generation).ok_or(LifecycleError::StaleDeadline)?;
        let request = LifecycleRequest::FireDeadline { id: id.into(), generation };
        let p = self.engine.lifecycle(&self.live, &request, at_ms, &mut self.entropy)?;
        let commit = self.live.advance(p);
        if let Some(l) = &commit.log {
            self.log.push(l.clone());
        }
        Ok(self.state().revision)
    }

    pub fn withdraw(&mut self, seat: &str) {
        self.now_ms += 1;
        let request = LifecycleRequest::Withdraw { seat: seat.into() };
        let p = self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy).expect("withdrawal");
        let commit = self.live.advance(p);
        self.log.extend(commit.log);
    }

    pub fn replay(&self) {
        juegoland_core::replay(&self.engine.registry, self.state(), &self.log).expect("replay reaches the same state");
    }

    pub fn result(&self) -> Value {
        serde_json::to_value(&self.state().position.result).unwrap()
    }

    /// The view of `seat` (or an observer with `None`) as JSON.
    pub fn view(&self, seat: Option<&str>) -> juegoland_laberinto::View {
        let recipient = seat.map_or(juegoland_sdk::Recipient::Spectator, juegoland_sdk::Recipient::Seat);
        Laberinto.project(&self.typed(), recipient).view
    }
}

pub fn applied(o: &ReceiptOutcome) -> u64 {
    match o {
        ReceiptOutcome::Applied { revision, .. } => *revision,
        other => panic!("expected an applied command, got {other:?}"),
    }
}

pub fn rejected(o: &ReceiptOutcome) -> RejectionCode {
    match o {
        ReceiptOutcome::Rejected { code, .. } => *code,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// The index of (row, column) on the 7×7 scenario board.
pub fn at(row: u32, col: u32) -> u32 {
    row * 7 + col
}
