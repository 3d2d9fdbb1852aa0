//! Commits made by the real engine playing Conecta 4, so the suite stores what the match
//! actor stores.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    Commit, Deadline, Decision, Engine, GameKey, LiveMatch, LoggedOp, Pending, PublishedGame, PublishedPackages,
    Registry, SeatHolder,
};
use juegoland_protocol::{Action, CommandEnvelope, Precondition};
use juegoland_sdk::{Lifecycle, SplitMix64};
use serde_json::json;
use uuid::Uuid;

/// An engine with Conecta 4.
pub fn engine() -> Engine {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).expect("register conecta4");
    registry.register(juegoland_sdk::erase(juegoland_laberinto::Laberinto)).expect("register laberinto");
    Engine::new(Arc::new(registry))
}

/// A Laberinto match racing at once and three of p0's `queue` moves, each commit in order:
/// creation, a move north from the top-left corner (a final rejection with sequence 1),
/// then east and south (sequences 2 and 3, at least one of them applied: a corner cell of a
/// perfect maze has a passage).
pub fn queue_commits(match_id: Uuid) -> Vec<Commit> {
    let engine = engine();
    let key = GameKey { id: "laberinto".into(), rules_version: "1.0.0".into() };
    let seats = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ]);
    let mut entropy = SplitMix64(11);
    let config = json!({"width": 5, "height": 5, "countdownMs": 0, "cooldownMs": 0});
    let (pending, mut live) = engine.create(match_id, key, seats, &config, 1_000, &mut entropy).expect("create");
    let mut commits = vec![live.advance(pending)];
    for (i, direction) in ["north", "east", "south"].into_iter().enumerate() {
        let envelope = CommandEnvelope {
            match_id,
            command_id: Uuid::from_u128(0x9_0000 + i as u128),
            precondition: Precondition::Queue,
            action: Action { r#type: "move".into(), payload: json!({ "direction": direction }) },
        };
        match engine.command(&live, "alice", &envelope, None, 2_000 + i as i64, &mut entropy) {
            Decision::Commit(p) => commits.push(live.advance(*p)),
            _ => panic!("the engine did not decide a commit"),
        }
    }
    commits
}

/// Publications fixed in memory: `(id, version)` → lock digest. The store keeps whatever pin
/// the engine decided; these tests need only what a registry answers, not its files.
pub struct Publications(pub BTreeMap<(String, String), String>);

impl PublishedPackages for Publications {
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String> {
        Ok(self.0.get(&(id.to_owned(), version.to_owned())).cloned())
    }

    /// Each publication's rules version is its package version.
    fn game_versions(&self, id: &str) -> Result<Vec<PublishedGame>, String> {
        let published = self.0.iter().filter(|((i, _), _)| i == id);
        Ok(published
            .map(|((_, v), d)| PublishedGame { version: v.clone(), rules_version: v.clone(), lock_digest: d.clone() })
            .collect())
    }
}

/// An engine with Conecta 4 whose registry publishes its package `1.0.0` with `lock_digest`,
/// or publishes nothing.
pub fn engine_publishing(lock_digest: Option<&str>) -> Engine {
    let published =
        lock_digest.map(|d| (("conecta4".to_owned(), "1.0.0".to_owned()), d.to_owned())).into_iter().collect();
    engine().with_packages(Arc::new(Publications(published)))
}

/// What `store` holds of match `id` made live: the snapshot with the revisions after it
/// recovered by the rules; `None` for an unknown match.
pub async fn current(store: &dyn juegoland_store::Store, id: Uuid) -> Option<juegoland_core::MatchState> {
    let stored = store.load(id).await.expect("load the match")?;
    Some(engine().restore(stored).expect("the stored match restores").state().clone())
}

pub struct Game {
    engine: Engine,
    live: LiveMatch,
    entropy: SplitMix64,
    now_ms: i64,
    next_command: u128,
}

impl Game {
    /// A new Conecta 4 match (alice in `p0`, bob in `p1`) and its creation commit.
    pub fn create(match_id: Uuid) -> (Game, Commit) {
        Self::create_on(engine(), match_id)
    }

    /// A new Conecta 4 match created by `engine` (which may pin a package).
    pub fn create_on(engine: Engine, match_id: Uuid) -> (Game, Commit) {
        let seats = BTreeMap::from([
            ("p0".to_string(), SeatHolder::Principal("alice".into())),
            ("p1".to_string(), SeatHolder::Principal("bob".into())),
        ]);
        Self::create_seated(engine, match_id, seats)
    }

    /// A new Conecta 4 match with `seats` (moves assume alice and bob: see [`Game::to_move`]).
    pub fn create_seated(engine: Engine, match_id: Uuid, seats: BTreeMap<String, SeatHolder>) -> (Game, Commit) {
        let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
        let mut entropy = SplitMix64(7);
        let (pending, mut live) =
            engine.create(match_id, &key, seats, &json!({}), 1_000, &mut entropy).expect("create a match");
        let commit = live.advance(pending);
        (Game { engine, live, entropy, now_ms: 1_000, next_command: 1 }, commit)
    }

    pub fn match_id(&self) -> Uuid {
        self.live.state().match_id
    }

    pub fn revision(&self) -> u64 {
        self.live.state().revision
    }

    pub fn live(&self) -> &LiveMatch {
        &self.live
    }

    /// The principal whose turn it is.
    pub fn to_move(&self) -> &'static str {
        match self.live.state().position.flow.actors.keys().next().map(String::as_str) {
            Some("p0") => "alice",
            Some("p1") => "bob",
            other => panic!("no seat to move: {other:?}"),
        }
    }

    pub fn fresh_command_id(&mut self) -> Uuid {
        self.next_command += 1;
        Uuid::from_u128(0xc0de_0000 + self.next_command)
    }

    /// Decides (without advancing the match) `drop column` by `principal`, with the command
    /// id and the precondition revision given, as if no receipt were stored for it.
    pub fn decide(&mut self, principal: &str, command_id: Uuid, revision: u64, column: u8) -> Pending {
        self.now_ms += 10;
        let envelope = CommandEnvelope {
            match_id: self.match_id(),
            command_id,
            precondition: Precondition::Match { revision },
            action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
        };
        match self.engine.command(&self.live, principal, &envelope, None, self.now_ms, &mut self.entropy) {
            Decision::Commit(p) => *p,
            _ => panic!("the engine did not decide a commit"),
        }
    }

    /// Decides the next legal drop on `column` by whoever is to move (not advanced).
    pub fn decide_drop(&mut self, column: u8) -> Pending {
        let (principal, id, revision) = (self.to_move(), self.fresh_command_id(), self.revision());
        self.decide(principal, id, revision, column)
    }

    /// Decides and advances the platform's cancellation of the match.
    pub fn cancel(&mut self) -> Commit {
        let request = juegoland_core::LifecycleRequest::Cancel { reason_code: "platform.test".into() };
        let pending = self.engine.lifecycle(&self.live, &request, 2_000, &mut SplitMix64(9)).expect("a cancellation");
        self.live.advance(pending)
    }

    /// Advances the match past a decision the store accepted.
    pub fn advance(&mut self, pending: Pending) -> Commit {
        self.live.advance(pending)
    }

    /// Decides and advances a drop that does not end the match, if there is one (the first
    /// such column from the left), else any legal drop; the caller stores the commit.
    pub fn drop_without_ending(&mut self) -> Commit {
        self.drop_preferring(false)
    }

    /// Decides and advances a drop that ends the match, if there is one, else any legal drop.
    pub fn drop_ending(&mut self) -> Commit {
        self.drop_preferring(true)
    }

    fn drop_preferring(&mut self, ending: bool) -> Commit {
        let mut any = None;
        for column in 0..7 {
            let (principal, id, revision) = (self.to_move(), self.fresh_command_id(), self.revision());
            self.now_ms += 10;
            let envelope = CommandEnvelope {
                match_id: self.match_id(),
                command_id: id,
                precondition: Precondition::Match { revision },
                action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
            };
            let Decision::Commit(p) =
                self.engine.command(&self.live, principal, &envelope, None, self.now_ms, &mut self.entropy)
            else {
                continue;
            };
            match &p.commit.state {
                Some(state) if state.is_finished() == ending => return self.advance(*p),
                Some(_) => any = any.or(Some(p)),
                None => {}
            }
        }
        self.advance(*any.expect("a legal drop"))
    }

    /// Decides and advances a drop; the caller stores the commit.
    pub fn drop_disc(&mut self, column: u8) -> Commit {
        let pending = self.decide_drop(column);
        self.advance(pending)
    }
}

/// `commit` with its new state's pending deadlines replaced by `deadlines` (id, generation,
/// due). Conecta 4 schedules none, so deadline tests dress engine commits this way.
pub fn with_deadlines(commit: &Commit, deadlines: &[(&str, u64, i64)]) -> Commit {
    let mut commit = commit.clone();
    let mut state = commit.state.as_deref().expect("a commit with a state").clone();
    state.deadlines = deadlines
        .iter()
        .map(|(id, generation, due_ms)| {
            (id.to_string(), Deadline { generation: *generation, due_ms: *due_ms, payload: json!({ "id": id }) })
        })
        .collect();
    state.next_generation = deadlines.iter().map(|d| d.1 + 1).max().unwrap_or(state.next_generation);
    commit.state = Some(Arc::new(state));
    commit
}

/// `commit` as the firing of deadline `id` at `generation`: its log entry is the lifecycle
/// event that consumed it (what `Engine::lifecycle` logs), so the store closes that
/// generation as `fired`.
pub fn firing(commit: &Commit, id: &str, generation: u64) -> Commit {
    let mut commit = commit.clone();
    let log = commit.log.as_mut().expect("a commit with a log entry");
    log.op = LoggedOp::Lifecycle {
        event: Lifecycle::DeadlineExpired { id: id.into(), payload: json!({ "id": id }) },
        generation: Some(generation),
    };
    commit
}
