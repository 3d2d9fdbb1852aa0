//! A match of one game driven through the real engine pipeline, for the games' own tests:
//! create, commands at the current revision, withdrawals, the clock deadline, replay of the
//! whole log, and every publication kept with its recipient ([`EngineMatch`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    Decision, Engine, GameKey, LifecycleRequest, LiveMatch, LogEntry, ReceiptOutcome, Registry, SeatHolder,
};
use juegoland_protocol::{Action, CommandEnvelope, Precondition};
use juegoland_sdk::{EntropySource, Game, SplitMix64};
use serde_json::Value;
use uuid::Uuid;

/// A match of the game `G` (its `Default` value is the module) in an engine of its own.
pub struct EngineMatch<G> {
    pub engine: Engine,
    pub live: LiveMatch,
    pub log: Vec<LogEntry>,
    /// Every publication of every commit, in order: (recipient, revision, JSON text).
    pub published: Vec<(Option<String>, u64, String)>,
    pub entropy: Box<dyn EntropySource>,
    pub now_ms: i64,
    next_id: u128,
    game: std::marker::PhantomData<G>,
}

impl<G: Game + Default> EngineMatch<G> {
    /// A registry with the game alone.
    pub fn registry() -> Arc<Registry> {
        let mut r = Registry::new();
        r.register(juegoland_sdk::erase(G::default())).expect("register the game");
        Arc::new(r)
    }

    /// The game's key.
    pub fn key() -> GameKey {
        let d = G::default().descriptor();
        GameKey { id: d.id, rules_version: d.rules_version }
    }

    /// A match of `seats` principals (`user-p0`, …) on `config`, its randomness seeded.
    pub fn new(seats: usize, config: Value, seed: u64) -> Self {
        Self::with_entropy(seats, config, Box::new(SplitMix64(seed)))
    }

    /// A match of `seats` principals on `config`, drawing from `entropy`.
    pub fn with_entropy(seats: usize, config: Value, mut entropy: Box<dyn EntropySource>) -> Self {
        let engine = Engine::new(Self::registry());
        let holders: BTreeMap<_, _> = juegoland_sdk::seat_ids(seats)
            .into_iter()
            .map(|s| (s.clone(), SeatHolder::Principal(format!("user-{s}"))))
            .collect();
        let (pending, mut live) =
            engine.create(Uuid::from_u128(77), Self::key(), holders, &config, 1_000, entropy.as_mut()).expect("create");
        let log = vec![live.advance(pending).log.expect("creation log")];
        EngineMatch {
            engine,
            live,
            log,
            published: Vec::new(),
            entropy,
            now_ms: 1_000,
            next_id: 1,
            game: std::marker::PhantomData,
        }
    }

    pub fn state(&self) -> &juegoland_core::MatchState {
        self.live.state()
    }

    pub fn finished(&self) -> bool {
        self.state().is_finished()
    }

    /// The one actor, if any.
    pub fn actor(&self) -> Option<String> {
        self.state().position.flow.actors.keys().next().cloned()
    }

    fn keep(&mut self, commit: juegoland_core::Commit) -> juegoland_core::Commit {
        if let Some(l) = &commit.log {
            self.log.push(l.clone());
        }
        self.published
            .extend(commit.publications.iter().map(|p| (p.recipient.clone(), p.revision, p.encoded.to_string())));
        commit
    }

    /// Runs `seat`'s command at the current revision and commits what the engine decided.
    pub fn run(&mut self, seat: &str, action: &str, payload: Value) -> ReceiptOutcome {
        self.now_ms += 10;
        self.next_id += 1;
        let envelope = CommandEnvelope {
            match_id: self.state().match_id,
            command_id: Uuid::from_u128(self.next_id),
            precondition: Precondition::Match { revision: self.state().revision },
            action: Action { r#type: action.into(), payload },
        };
        let principal = format!("user-{seat}");
        match self.engine.command(&self.live, &principal, &envelope, None, self.now_ms, self.entropy.as_mut()) {
            Decision::Commit(p) => {
                let commit = self.live.advance(*p);
                let commit = self.keep(commit);
                commit.receipt.expect("a command always gets a receipt").outcome
            }
            Decision::Fault(f) => panic!("engine fault: {f}"),
            _ => panic!("unexpected decision"),
        }
    }

    /// Fires the pending clock deadline at its due instant and commits what the engine
    /// decided.
    pub fn fire_clock(&mut self) -> Result<(), juegoland_core::LifecycleError> {
        let d = self.state().deadlines.get(juegoland_sdk::CLOCK_DEADLINE).expect("a pending clock deadline").clone();
        self.now_ms = self.now_ms.max(d.due_ms);
        let request =
            LifecycleRequest::FireDeadline { id: juegoland_sdk::CLOCK_DEADLINE.into(), generation: d.generation };
        let pending = self.engine.lifecycle(&self.live, &request, self.now_ms, self.entropy.as_mut())?;
        let commit = self.live.advance(pending);
        self.keep(commit);
        Ok(())
    }

    pub fn withdraw(&mut self, seat: &str) {
        self.now_ms += 10;
        let p = self
            .engine
            .lifecycle(
                &self.live,
                &LifecycleRequest::Withdraw { seat: seat.into() },
                self.now_ms,
                self.entropy.as_mut(),
            )
            .expect("withdrawal accepted");
        let commit = self.live.advance(p);
        self.keep(commit);
    }

    /// Replays the whole log from the pinned module and the traces.
    pub fn replay(&self) {
        juegoland_core::replay(&self.engine.registry, self.state(), &self.log).expect("replay reaches the same state");
    }

    /// The match's result as JSON.
    pub fn result(&self) -> Value {
        serde_json::to_value(&self.state().position.result).unwrap()
    }
}

/// The revision an applied command made; panics on anything else.
pub fn applied(o: &ReceiptOutcome) -> u64 {
    match o {
        ReceiptOutcome::Applied { revision, .. } => *revision,
        other => panic!("expected an applied command, got {other:?}"),
    }
}
