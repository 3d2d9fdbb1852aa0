//! The shared driver: a match run through the real engine with seeded randomness, the way a
//! match actor runs it (receipts kept, commits advanced).

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    CreateError, Decision, Engine, Fault, LiveMatch, LogEntry, Receipt, ReceiptKey, Registry, SeatHolder,
};
use juegoland_protocol::{Action, CommandEnvelope, Precondition, ServerMessage, WireOffer};
use juegoland_sdk::{EntropySource, Recipient, SplitMix64, below, seat_ids};
use serde_json::Value;
use uuid::Uuid;

use crate::privacy::{PlayoutConfig, PrivacyOracle};

pub(crate) fn principal(seat: &str) -> String {
    format!("player-{seat}")
}

pub(crate) struct Playout {
    pub engine: Engine,
    pub live: LiveMatch,
    pub receipts: BTreeMap<ReceiptKey, Receipt>,
    pub rng: SplitMix64,
    pub now_ms: i64,
    /// The match's log, from its creation: what a replay re-runs.
    pub log: Vec<LogEntry>,
    next_command: u128,
}

/// The result of one command, as its sender sees it.
pub(crate) struct Outcome {
    /// The ack or error the sender receives.
    pub answer: ServerMessage,
    /// The publications of an accepted change: (recipient seat or `SPECTATOR`, snapshot JSON).
    pub publications: Vec<(String, Value)>,
    pub applied: bool,
}

impl Playout {
    pub fn start(registry: Arc<Registry>, cfg: &PlayoutConfig, index: usize) -> Playout {
        Self::try_start(registry, cfg, index).unwrap_or_else(|e| panic!("the playout's match cannot be created: {e}"))
    }

    /// [`Playout::start`], or why the engine refused to create the match.
    pub fn try_start(registry: Arc<Registry>, cfg: &PlayoutConfig, index: usize) -> Result<Playout, CreateError> {
        let engine = Engine::new(registry);
        let mut rng = SplitMix64(cfg.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let seats: BTreeMap<_, _> =
            seat_ids(cfg.seats).into_iter().map(|s| (s.clone(), SeatHolder::Principal(principal(&s)))).collect();
        let match_id = Uuid::from_u128(0xC0FF_EE00_0000 + index as u128);
        let (pending, mut live) = engine.create(match_id, &cfg.game, seats, &cfg.config, 1_000, &mut rng)?;
        let log = live.advance(pending).log.into_iter().collect();
        Ok(Playout { engine, live, receipts: BTreeMap::new(), rng, now_ms: 1_000, log, next_command: 1 })
    }

    /// Another playout of the same match from `live` (a reloaded state), with the same
    /// receipts and a copy of the randomness, for trying alternatives.
    pub fn fork(&self, live: LiveMatch) -> Playout {
        Playout {
            engine: self.engine.clone(),
            live,
            receipts: self.receipts.clone(),
            rng: self.rng.clone(),
            now_ms: self.now_ms,
            log: self.log.clone(),
            next_command: self.next_command,
        }
    }

    pub fn seats(&self) -> Vec<String> {
        self.live.state().seats.keys().cloned().collect()
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        below(&mut self.rng, 100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { items.get(below(&mut self.rng, items.len() as u64) as usize) }
    }

    /// `seat`'s current offers.
    pub fn offers(&self, seat: &str) -> Vec<WireOffer> {
        self.try_offers(seat).unwrap_or_else(|f| panic!("a snapshot failed: {f}"))
    }

    /// `seat`'s current offers, or why the engine could not make its snapshot.
    pub fn try_offers(&self, seat: &str) -> Result<Vec<WireOffer>, Fault> {
        match self.live.snapshot(Recipient::Seat(seat), &self.engine)? {
            ServerMessage::Snapshot(s) => Ok(s.actions),
            _ => Ok(Vec::new()),
        }
    }

    /// The action `seat` tries next: the oracle's proposal, or a random offer.
    pub fn propose(&mut self, oracle: &dyn PrivacyOracle, seat: &str) -> Option<(String, Value)> {
        let offers = self.offers(seat);
        self.propose_from(oracle, seat, &offers)
    }

    /// [`Playout::propose`] from `offers`, `seat`'s current ones.
    pub fn propose_from(
        &mut self,
        oracle: &dyn PrivacyOracle,
        seat: &str,
        offers: &[WireOffer],
    ) -> Option<(String, Value)> {
        let position = self.live.state().position.clone();
        if let Some(a) = oracle.propose(&position, seat, offers, &mut self.rng as &mut dyn EntropySource) {
            return Some(a);
        }
        let concrete: Vec<_> = offers
            .iter()
            .filter_map(|o| match o {
                WireOffer::Concrete(c) => Some((c.r#type.clone(), c.payload.to_value())),
                WireOffer::Parametrized(_) => None,
            })
            .collect();
        self.pick(&concrete).cloned()
    }

    /// The precondition an honest client sends for `action_type`: the one its offer carries,
    /// else the current counters for the action's policy.
    pub fn precondition(&self, seat: &str, action_type: &str) -> Precondition {
        self.precondition_from(seat, action_type, &self.offers(seat))
    }

    /// [`Playout::precondition`] from `offers`, `seat`'s current ones.
    pub fn precondition_from(&self, seat: &str, action_type: &str, offers: &[WireOffer]) -> Precondition {
        if let Some(o) = offers.iter().find(|o| o.action_type() == action_type) {
            return o.precondition();
        }
        self.live.precondition(seat, action_type)
    }

    pub fn envelope(&mut self, precondition: Precondition, action_type: String, payload: Value) -> CommandEnvelope {
        self.next_command += 1;
        CommandEnvelope {
            match_id: self.live.state().match_id,
            command_id: Uuid::from_u128(self.next_command),
            precondition,
            action: Action { r#type: action_type, payload },
        }
    }

    /// Runs one command as `seat` (through its principal) and advances on a commit.
    pub fn run(&mut self, seat: &str, envelope: &CommandEnvelope) -> Outcome {
        self.try_run(seat, envelope).unwrap_or_else(|f| panic!("the engine reported a rules fault (a bug): {f}"))
    }

    /// [`Playout::run`], or the engine's fault (a bug of the rules: a broken invariant, data
    /// that fails its schema, a panic); nothing is committed then.
    pub fn try_run(&mut self, seat: &str, envelope: &CommandEnvelope) -> Result<Outcome, Fault> {
        self.now_ms += 250;
        let principal = principal(seat);
        let key =
            ReceiptKey { match_id: envelope.match_id, principal: principal.clone(), command_id: envelope.command_id };
        let existing = self.receipts.get(&key).cloned();
        let decision = self.engine.command(
            &self.live,
            &principal,
            envelope,
            existing,
            self.now_ms,
            &mut self.rng as &mut dyn EntropySource,
        );
        let error = |code| {
            ServerMessage::Error(
                juegoland_protocol::ErrorMessage::new(code)
                    .with_match_id(envelope.match_id)
                    .with_command_id(envelope.command_id),
            )
        };
        Ok(match decision {
            Decision::Duplicate(r) => Outcome { answer: r.ack(true), publications: vec![], applied: false },
            Decision::IdReused => Outcome {
                answer: error(juegoland_protocol::ErrorCode::CommandIdReused),
                publications: vec![],
                applied: false,
            },
            Decision::Forbidden => Outcome {
                answer: error(juegoland_protocol::ErrorCode::Forbidden),
                publications: vec![],
                applied: false,
            },
            Decision::Fault(f) => return Err(f),
            Decision::Commit(p) => {
                let commit = self.live.advance(*p);
                self.log.extend(commit.log.clone());
                let receipt = commit.receipt.expect("a command commit has a receipt");
                self.receipts.insert(receipt.key.clone(), receipt.clone());
                let publications = commit
                    .publications
                    .iter()
                    .map(|p| {
                        let json = serde_json::from_str(&p.encoded).expect("publications are JSON");
                        (p.recipient.clone().unwrap_or_else(|| crate::privacy::SPECTATOR.to_owned()), json)
                    })
                    .collect();
                let applied = commit.state.is_some();
                Outcome { answer: receipt.ack(false), publications, applied }
            }
        })
    }
}

/// The JSON text a recipient would receive for `msg`.
pub(crate) fn json(msg: &ServerMessage) -> Value {
    serde_json::from_str(&juegoland_protocol::encode(msg)).expect("protocol messages are JSON")
}
