//! A minimal shell around the pure engine: receipts and log in memory, commit = apply.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    Decision, Engine, GameKey, LifecycleRequest, LiveMatch, LogEntry, MatchState, Publication, Receipt, ReceiptKey,
    Registry, SeatHolder,
};
use juegoland_protocol::{Action, CommandEnvelope, Precondition, ServerMessage};
use juegoland_sdk::{EntropySource, SplitMix64};
use serde_json::{Value, json};
use uuid::Uuid;

pub fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_brisca::Brisca)).unwrap();
    r.register(juegoland_sdk::erase(crate::fixture::Prep)).unwrap();
    r.register(juegoland_sdk::erase(crate::tap::Tap)).unwrap();
    Arc::new(r)
}

/// What a command produced, as the actor would answer it.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Ack(ServerMessage),
    Reused,
    Forbidden,
    Fault(String),
}

impl Answer {
    pub fn ack(&self) -> &juegoland_protocol::Ack {
        match self {
            Answer::Ack(ServerMessage::Ack(a)) => a,
            other => panic!("expected an ack, got {other:?}"),
        }
    }
}

pub struct Harness {
    pub engine: Engine,
    pub live: LiveMatch,
    pub receipts: BTreeMap<ReceiptKey, Receipt>,
    pub log: Vec<LogEntry>,
    /// Every committed state, by revision.
    pub states: Vec<MatchState>,
    pub publications: Vec<Publication>,
    pub entropy: SplitMix64,
    pub now_ms: i64,
}

impl Harness {
    pub fn new(game: &str, seats: &[(&str, &str)], config: Value, seed: u64) -> Harness {
        let seats: BTreeMap<_, _> =
            seats.iter().map(|(s, p)| (s.to_string(), SeatHolder::Principal(p.to_string()))).collect();
        Harness::with_seats(game, seats, config, seed)
    }

    pub fn with_seats(game: &str, seats: BTreeMap<String, SeatHolder>, config: Value, seed: u64) -> Harness {
        Harness::with_options(game, seats, config, seed, &juegoland_core::CreateOptions::default())
    }

    /// A match created with `options` (its hand-over policy, its expiry).
    pub fn with_options(
        game: &str,
        seats: BTreeMap<String, SeatHolder>,
        config: Value,
        seed: u64,
        options: &juegoland_core::CreateOptions,
    ) -> Harness {
        let engine = Engine::new(registry());
        let key = GameKey { id: game.into(), rules_version: "1.0.0".into() };
        let mut entropy = SplitMix64(seed);
        let match_id = Uuid::from_u128(0x1234_5678 + seed as u128);
        let (pending, live) =
            engine.create_with(match_id, &key, seats, &config, options, 1_000, &mut entropy).expect("create");
        let mut live = live;
        let commit = live.advance(pending);
        let log = vec![commit.log.expect("creation log")];
        let states = vec![live.state().clone()];
        Harness {
            engine,
            live,
            receipts: BTreeMap::new(),
            log,
            states,
            publications: Vec::new(),
            entropy,
            now_ms: 1_000,
        }
    }

    pub fn conecta4() -> Harness {
        Harness::new("conecta4", &[("p0", "alice"), ("p1", "bob")], json!({}), 1)
    }

    /// Conecta 4 with `alice` at p0 and `p1` as given.
    pub fn conecta4_with(p1: SeatHolder) -> Harness {
        let seats = BTreeMap::from([("p0".to_owned(), SeatHolder::Principal("alice".into())), ("p1".to_owned(), p1)]);
        Harness::with_seats("conecta4", seats, json!({}), 1)
    }

    pub fn state(&self) -> &MatchState {
        self.live.state()
    }

    pub fn envelope(
        &self,
        command_id: Uuid,
        precondition: Precondition,
        action: &str,
        payload: Value,
    ) -> CommandEnvelope {
        CommandEnvelope {
            match_id: self.state().match_id,
            command_id,
            precondition,
            action: Action { r#type: action.into(), payload },
        }
    }

    /// Runs a command through the engine and "stores" what it decided.
    pub fn run(&mut self, principal: &str, envelope: &CommandEnvelope) -> Answer {
        self.now_ms += 10;
        let key =
            ReceiptKey { match_id: envelope.match_id, principal: principal.into(), command_id: envelope.command_id };
        let existing = self.receipts.get(&key).cloned();
        let before = self.state().clone();
        let decision = self.engine.command(
            &self.live,
            principal,
            envelope,
            existing,
            self.now_ms,
            &mut self.entropy as &mut dyn EntropySource,
        );
        // Deciding never mutates the live match: only `advance` does, after the commit.
        assert_eq!(self.state(), &before, "the engine mutated its input");
        match decision {
            Decision::Duplicate(r) => Answer::Ack(r.ack(true)),
            Decision::IdReused => Answer::Reused,
            Decision::Forbidden => Answer::Forbidden,
            Decision::Fault(f) => Answer::Fault(f.0),
            Decision::Commit(p) => {
                let commit = self.live.advance(*p);
                self.store(&commit);
                Answer::Ack(commit.receipt.expect("receipt").ack(false))
            }
        }
    }

    pub fn lifecycle(&mut self, request: LifecycleRequest) -> Result<u64, juegoland_core::LifecycleError> {
        self.now_ms += 10;
        let p = self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy)?;
        let commit = self.live.advance(p);
        self.store(&commit);
        Ok(self.state().revision)
    }

    fn store(&mut self, commit: &juegoland_core::Commit) {
        if let Some(r) = &commit.receipt {
            assert!(self.receipts.insert(r.key.clone(), r.clone()).is_none(), "a receipt was overwritten");
        }
        if let Some(l) = &commit.log {
            self.log.push(l.clone());
            self.states.push(self.live.state().clone());
        }
        self.publications.extend(commit.publications.iter().cloned());
    }

    /// `drop` on `column` by the seat whose turn it is, at the current revision.
    pub fn drop_disc(&mut self, column: u8) -> Answer {
        let seat = self.state().position.flow.actors.keys().next().expect("an actor").clone();
        let principal = if seat == "p0" { "alice" } else { "bob" };
        let env = self.envelope(
            Uuid::from_u128(self.now_ms as u128),
            Precondition::Match { revision: self.state().revision },
            "drop",
            json!({ "column": column }),
        );
        self.run(principal, &env)
    }

    /// The state recovered from the stored state of revision `from` and the log after it.
    pub fn recovered(&self, from: usize) -> Result<MatchState, juegoland_core::Fault> {
        let mut live = self.engine.load(self.states[from].clone())?;
        for entry in &self.log[from + 1..] {
            live = self.engine.recover(live, entry)?;
        }
        Ok(live.state().clone())
    }

    pub fn replay(&self) -> Result<(), juegoland_core::ReplayError> {
        juegoland_core::replay(&self.engine.registry, self.state(), &self.log)
    }
}
