//! The decisive case of the spec, through the real engine pipeline: p0 and p1 place with the
//! same epoch and their own actor revisions; p0's placement bumps the global revision and
//! p0's actor revision while p1's pending placement stays valid; the `ready` that starts the
//! battle bumps the epoch, and no old placement command can place a ship again.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    Commit, Decision, Engine, GameKey, LifecycleError, LifecycleRequest, LiveMatch, LogEntry, ReceiptOutcome, Registry,
    SeatHolder,
};
use juegoland_hundido::Hundido;
use juegoland_protocol::{Action, CommandEnvelope, Precondition, RejectionCode};
use juegoland_sdk::SplitMix64;
use serde_json::{Value, json};
use uuid::Uuid;

pub fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(Hundido)).unwrap();
    Arc::new(r)
}

pub struct Match {
    pub engine: Engine,
    pub live: LiveMatch,
    pub log: Vec<LogEntry>,
    /// Every publication of every commit, in order: (recipient, revision, JSON text).
    pub published: Vec<(Option<String>, u64, String)>,
    entropy: SplitMix64,
    /// The captured instant of the last operation; each command runs 10 ms after the last.
    pub now_ms: i64,
    next_id: u128,
}

impl Match {
    pub fn new(config: Value) -> Match {
        Match::with_seed(config, 9)
    }

    pub fn with_seed(config: Value, seed: u64) -> Match {
        let engine = Engine::new(registry());
        let key = GameKey { id: "hundido".into(), rules_version: "1.0.0".into() };
        let seats: BTreeMap<_, _> = [
            ("p0".to_owned(), SeatHolder::Principal("alice".into())),
            ("p1".to_owned(), SeatHolder::Principal("bob".into())),
        ]
        .into();
        let mut entropy = SplitMix64(seed);
        let (pending, mut live) =
            engine.create(Uuid::from_u128(77), &key, seats, &config, 1_000, &mut entropy).expect("create");
        let log = vec![live.advance(pending).log.expect("creation log")];
        Match { engine, live, log, published: Vec::new(), entropy, now_ms: 1_000, next_id: 1 }
    }

    /// Keeps a commit's log entry and publications.
    fn keep(&mut self, commit: Commit) -> Commit {
        if let Some(l) = &commit.log {
            self.log.push(l.clone());
        }
        self.published
            .extend(commit.publications.iter().map(|p| (p.recipient.clone(), p.revision, p.encoded.to_string())));
        commit
    }

    /// The pending clock deadline: (generation, due instant).
    pub fn clock(&self) -> Option<(u64, i64)> {
        self.state().deadlines.get(juegoland_sdk::CLOCK_DEADLINE).map(|d| (d.generation, d.due_ms))
    }

    /// Fires the deadline `id` of `generation` at `at_ms` (never before the last operation)
    /// and commits what the engine decided.
    pub fn fire(&mut self, id: &str, generation: u64, at_ms: i64) -> Result<(), LifecycleError> {
        self.now_ms = self.now_ms.max(at_ms);
        let request = LifecycleRequest::FireDeadline { id: id.into(), generation };
        let pending = self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy)?;
        let commit = self.live.advance(pending);
        self.keep(commit);
        Ok(())
    }

    /// Fires the pending clock deadline when it is due.
    pub fn fire_clock(&mut self) -> Result<(), LifecycleError> {
        let (generation, due) = self.clock().expect("a pending clock deadline");
        self.fire(juegoland_sdk::CLOCK_DEADLINE, generation, due)
    }

    pub fn state(&self) -> &juegoland_core::MatchState {
        self.live.state()
    }

    pub fn position(&self) -> &juegoland_sdk::JsonPosition {
        &self.live.state().position
    }

    /// The actor precondition `seat` would get from an offer right now.
    pub fn actor_precondition(&self, seat: &str) -> Precondition {
        Precondition::Actor {
            phase_epoch: self.state().phase_epoch,
            actor_revision: self.state().actor_revisions[seat],
        }
    }

    pub fn envelope(&mut self, precondition: Precondition, action: &str, payload: Value) -> CommandEnvelope {
        self.next_id += 1;
        CommandEnvelope {
            match_id: self.state().match_id,
            command_id: Uuid::from_u128(self.next_id),
            precondition,
            action: Action { r#type: action.into(), payload },
        }
    }

    /// Runs a command and commits what the engine decided; returns the receipt outcome.
    pub fn run(&mut self, seat: &str, envelope: &CommandEnvelope) -> ReceiptOutcome {
        self.now_ms += 10;
        let principal = if seat == "p0" { "alice" } else { "bob" };
        match self.engine.command(&self.live, principal, envelope, None, self.now_ms, &mut self.entropy) {
            Decision::Commit(p) => {
                let commit = self.live.advance(*p);
                let commit = self.keep(commit);
                commit.receipt.expect("a command always gets a receipt").outcome
            }
            Decision::Fault(f) => panic!("engine fault: {f}"),
            _ => panic!("unexpected decision"),
        }
    }

    pub fn place(&mut self, seat: &str, ship: &str, row: u8, column: u8, orientation: &str) -> ReceiptOutcome {
        let pre = self.actor_precondition(seat);
        let env = self.envelope(pre, "placeShip", placement(ship, row, column, orientation));
        self.run(seat, &env)
    }

    pub fn ready(&mut self, seat: &str) -> ReceiptOutcome {
        let pre = self.actor_precondition(seat);
        let env = self.envelope(pre, "ready", json!({}));
        self.run(seat, &env)
    }

    pub fn withdraw(&mut self, seat: &str) {
        self.now_ms += 10;
        let p = self
            .engine
            .lifecycle(&self.live, &LifecycleRequest::Withdraw { seat: seat.into() }, self.now_ms, &mut self.entropy)
            .expect("withdrawal accepted");
        let commit = self.live.advance(p);
        self.keep(commit);
    }

    /// Fires at the match's revision (a `match` precondition).
    pub fn fire_at(&mut self, seat: &str, row: u8, column: u8) -> ReceiptOutcome {
        let revision = self.state().revision;
        let env = self.envelope(Precondition::Match { revision }, "fire", json!({"row": row, "column": column}));
        self.run(seat, &env)
    }

    pub fn replay(&self) {
        juegoland_core::replay(&self.engine.registry, self.state(), &self.log).expect("replay reaches the same state");
    }
}

fn placement(ship: &str, row: u8, column: u8, orientation: &str) -> Value {
    json!({"ship": ship, "row": row, "column": column, "orientation": orientation})
}

const CLASSIC: [&str; 5] = ["carrier", "battleship", "cruiser", "submarine", "destroyer"];

fn applied(o: &ReceiptOutcome) -> u64 {
    match o {
        ReceiptOutcome::Applied { revision, .. } => *revision,
        other => panic!("expected an applied command, got {other:?}"),
    }
}

fn rejected(o: &ReceiptOutcome) -> RejectionCode {
    match o {
        ReceiptOutcome::Rejected { code, .. } => *code,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

fn fleet_of(m: &Match, seat: usize) -> Value {
    m.position().data.to_value()["players"][seat]["fleet"].clone()
}

#[test]
fn independent_placement_then_the_battle_barrier() {
    let mut m = Match::new(json!({}));
    assert_eq!((m.state().revision, m.state().phase_epoch), (0, 0));
    assert_eq!(m.state().actor_revisions, BTreeMap::from([("p0".into(), 0), ("p1".into(), 0)]));

    // Both seats build a command from the same snapshot (revision 0, epoch 0).
    let p0_pre = m.actor_precondition("p0");
    let p1_pre = m.actor_precondition("p1");
    let p0_cmd = m.envelope(p0_pre, "placeShip", placement("carrier", 0, 0, "horizontal"));
    let p1_cmd = m.envelope(p1_pre, "placeShip", placement("carrier", 5, 5, "vertical"));

    // p0's placement bumps the global revision and only p0's actor revision.
    assert_eq!(applied(&m.run("p0", &p0_cmd)), 1);
    assert_eq!(m.state().phase_epoch, 0);
    assert_eq!(m.state().actor_revisions, BTreeMap::from([("p0".into(), 1), ("p1".into(), 0)]));

    // p1's pending placement was built on revision 0 and still applies.
    assert_eq!(applied(&m.run("p1", &p1_cmd)), 2);
    assert_eq!(m.state().phase_epoch, 0);
    assert_eq!(m.state().actor_revisions, BTreeMap::from([("p0".into(), 1), ("p1".into(), 1)]));
    assert_eq!(fleet_of(&m, 0)["carrier"], json!({"row": 0, "column": 0, "orientation": "horizontal"}));
    assert_eq!(fleet_of(&m, 1)["carrier"], json!({"row": 5, "column": 5, "orientation": "vertical"}));

    // A replayed old revision of p0's own counter is stale (its own revision moved on).
    let stale_own = m.envelope(p0_pre, "placeShip", placement("destroyer", 9, 0, "horizontal"));
    assert_eq!(rejected(&m.run("p0", &stale_own)), RejectionCode::StaleRevision);

    // The rest of both fleets, interleaved.
    for (i, ship) in CLASSIC.iter().enumerate().skip(1) {
        applied(&m.place("p0", ship, 2 * i as u8, 0, "horizontal"));
        applied(&m.place("p1", ship, 0, 2 * i as u8 - 1, "vertical"));
    }
    // p0's ready changes only its own stage: no barrier.
    let epoch = m.state().phase_epoch;
    let p1_rev = m.state().actor_revisions["p1"];
    applied(&m.ready("p0"));
    assert_eq!(m.state().phase_epoch, epoch);
    assert_eq!(m.state().actor_revisions["p1"], p1_rev);
    assert_eq!(m.position().flow.actors["p0"], "waiting");
    assert_eq!(m.position().flow.actors["p1"], "arrange");

    // p1 prepares a late placement with a precondition that is current right now...
    let late_pre = m.actor_precondition("p1");
    let late = m.envelope(late_pre, "placeShip", placement("destroyer", 9, 8, "horizontal"));
    // ...and a p0 placement from before its ready.
    let p0_late = m.envelope(
        Precondition::Actor { phase_epoch: epoch, actor_revision: m.state().actor_revisions["p0"] },
        "placeShip",
        placement("destroyer", 9, 8, "horizontal"),
    );

    // p1's ready is the barrier: battle starts, the epoch and every actor revision move.
    let revs_before = m.state().actor_revisions.clone();
    applied(&m.ready("p1"));
    assert_eq!(m.position().flow.phase, "battle");
    assert_eq!(m.state().phase_epoch, epoch + 1);
    for (seat, r) in &m.state().actor_revisions {
        assert!(*r > revs_before[seat], "{seat}'s actor revision must move at the barrier");
    }

    // No old placement command can place a ship again.
    let fleets = (fleet_of(&m, 0), fleet_of(&m, 1));
    assert_eq!(rejected(&m.run("p1", &late)), RejectionCode::StaleEpoch);
    assert_eq!(rejected(&m.run("p0", &p0_late)), RejectionCode::StaleEpoch);
    assert_eq!(rejected(&m.run("p1", &p1_cmd)), RejectionCode::StaleEpoch);
    // Even with fresh counters, placement is over.
    let fresh = m.actor_precondition("p1");
    let env = m.envelope(fresh, "placeShip", placement("destroyer", 9, 8, "horizontal"));
    assert_eq!(rejected(&m.run("p1", &env)), RejectionCode::ActorNotEnabled);
    assert_eq!((fleet_of(&m, 0), fleet_of(&m, 1)), fleets);

    // The battle runs on match revisions.
    let revision = m.state().revision;
    let shot = m.envelope(Precondition::Match { revision }, "fire", json!({"row": 5, "column": 5}));
    assert_eq!(applied(&m.run("p0", &shot)), revision + 1);
    assert_eq!(m.position().data.to_value()["shots"][0]["outcome"], "hit");
    let old = m.envelope(Precondition::Match { revision }, "fire", json!({"row": 1, "column": 1}));
    assert_eq!(rejected(&m.run("p1", &old)), RejectionCode::StaleRevision);
    m.replay();
}

#[test]
fn illegal_placements_are_final_rejections_that_change_nothing() {
    let mut m = Match::new(json!({"adjacency": "no-touch"}));
    applied(&m.place("p0", "carrier", 0, 0, "horizontal"));
    let revision = m.state().revision;
    let revs = m.state().actor_revisions.clone();
    assert_eq!(rejected(&m.place("p0", "battleship", 1, 0, "horizontal")), RejectionCode::IllegalAction);
    assert_eq!(rejected(&m.place("p0", "battleship", 9, 8, "horizontal")), RejectionCode::IllegalAction);
    assert_eq!(rejected(&m.ready("p0")), RejectionCode::IllegalAction);
    let pre = m.actor_precondition("p0");
    let env = m.envelope(pre, "placeShip", json!({"ship": "carrier", "row": 0, "column": 0}));
    assert_eq!(rejected(&m.run("p0", &env)), RejectionCode::InvalidPayload);
    let env = m.envelope(Precondition::Match { revision }, "placeShip", placement("battleship", 5, 0, "horizontal"));
    assert_eq!(
        rejected(&m.run("p0", &env)),
        RejectionCode::PreconditionMismatch,
        "placeShip needs an actor precondition"
    );
    assert_eq!((m.state().revision, &m.state().actor_revisions), (revision, &revs));
    m.replay();
}

#[test]
fn withdrawal_through_the_engine() {
    let mut m = Match::new(json!({}));
    applied(&m.place("p1", "carrier", 0, 0, "horizontal"));
    m.withdraw("p1");
    assert_eq!(m.position().result, Some(juegoland_sdk::MatchResult::cancelled("withdrawal-in-placement")));
    assert!(m.position().flow.actors.is_empty());
    assert_eq!(rejected(&m.place("p0", "carrier", 0, 0, "horizontal")), RejectionCode::MatchFinished);
    m.replay();
}

/// A clocked match through the real engine: the placement deadline fires and auto-places,
/// each shot replaces the battle clock (a new generation; the old one is refused as stale), a
/// skipped turn passes the turn, a late shot is refused, the last sinking shot cancels the
/// clock, and the log replays to the same state (auto-placement draws included).
#[test]
fn a_clocked_match_through_the_engine() {
    let config = json!({
        "rows": 6, "columns": 6,
        "fleet": [{"ship": "long", "size": 3}, {"ship": "short", "size": 2}],
        "clock": {
            "placement": {"timeoutMs": 60000, "policy": "defaultMove"},
            "battle": {"mode": {"kind": "perTurn", "turnMs": 20000}, "policy": "skip"},
        },
    });
    let mut m = Match::new(config);
    assert_eq!(m.clock(), Some((1, 61_000)));
    assert_eq!(m.state().deadlines["clock"].payload, json!({"serial": 1}));

    // A placement changes no deadline.
    applied(&m.place("p0", "long", 0, 0, "horizontal"));
    assert_eq!(m.clock(), Some((1, 61_000)));
    // Placing after the deadline is refused; the deadline then places for both.
    m.now_ms = 61_000;
    assert_eq!(rejected(&m.place("p0", "short", 2, 0, "horizontal")), RejectionCode::IllegalAction);
    m.fire_clock().unwrap();
    assert_eq!(m.position().flow.phase, "battle");
    assert_eq!(fleet_of(&m, 0)["long"], json!({"row": 0, "column": 0, "orientation": "horizontal"}));
    assert_eq!(m.clock(), Some((2, 81_010)), "the battle clock starts when the deadline fired");
    assert_eq!(m.state().deadlines["clock"].payload, json!({"serial": 2, "seat": "p0"}));
    assert_eq!(m.fire("clock", 1, 81_000), Err(LifecycleError::StaleDeadline));

    // A shot in time replaces the clock: generation 3 for p1; generation 2 is stale.
    m.now_ms = 70_000;
    let p1_fleet = fleet_of(&m, 1);
    applied(&m.fire_at("p0", 5, 5));
    assert_eq!(m.clock(), Some((3, 90_010)));
    assert_eq!(m.fire("clock", 2, 90_010), Err(LifecycleError::StaleDeadline));

    // p1 lets its turn go: skipped, and p0 is to fire with a fresh clock.
    m.fire_clock().unwrap();
    assert_eq!(m.position().flow.actors.keys().collect::<Vec<_>>(), ["p0"]);
    assert_eq!(m.position().data.to_value()["skips"], json!([{"seat": "p1", "shots": 1}]));
    assert_eq!(m.clock(), Some((4, 110_010)));
    // A shot at the due instant is too late (refused; the clock still runs).
    m.now_ms = 110_000;
    assert_eq!(rejected(&m.fire_at("p0", 4, 4)), RejectionCode::IllegalAction);
    m.now_ms = 100_000;

    // p0 sinks p1's auto-placed fleet, p1 firing at water... or skipping, in between.
    let mut targets: Vec<(u8, u8)> = Vec::new();
    for (ship, size) in [("long", 3u8), ("short", 2)] {
        let at = &p1_fleet[ship];
        let (r, c) = (at["row"].as_u64().unwrap() as u8, at["column"].as_u64().unwrap() as u8);
        for k in 0..size {
            targets.push(if at["orientation"] == "horizontal" { (r, c + k) } else { (r + k, c) });
        }
    }
    for (i, (r, c)) in targets.iter().enumerate() {
        applied(&m.fire_at("p0", *r, *c));
        if i + 1 < targets.len() {
            if i % 2 == 0 {
                m.fire_clock().unwrap();
            } else {
                applied(&m.fire_at("p1", 5, i as u8));
            }
        }
    }
    let result = m.position().result.clone().expect("finished");
    assert_eq!(
        result,
        juegoland_sdk::MatchResult::completed(
            "fleet-destroyed",
            [("p0", juegoland_sdk::Outcome::Win), ("p1", juegoland_sdk::Outcome::Loss)],
        )
    );
    assert!(m.state().deadlines.is_empty(), "the finishing shot cancelled the clock");
    m.replay();
}
