//! Players: one WebSocket connection per seat, playing a random legal move from the offers
//! of its latest snapshot as soon as it has one, measuring command → ack and command → view
//! of the revision it produced. A dropped connection (or a reconnect-storm drop) reconnects,
//! syncs again and resends the pending command unchanged: its receipt makes that exactly-once.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use juegoland_protocol::{
    AckStatus, Action, ClientMessage, CommandEnvelope, ContractTuple, Precondition, Recovery, ServerMessage, Snapshot,
    SyncRequest, WireOffer,
};
use juegoland_store::audit::SeenApplied;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::TokenSource;
use crate::conn::{Conn, ConnError};
use crate::stats::{Latency, Stats};

/// The games the harness can play, each with its seats, configuration and move policy.
/// `brisca4` is Brisca with four players in two teams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Game {
    Conecta4,
    Hundido,
    Brisca,
    Brisca4,
    Oca,
    Serpientes,
    Laberinto,
}

impl Game {
    /// The catalog id.
    pub fn id(self) -> &'static str {
        match self {
            Game::Conecta4 => "conecta4",
            Game::Hundido => "hundido",
            Game::Brisca | Game::Brisca4 => "brisca",
            Game::Oca => "oca",
            Game::Serpientes => "serpientes",
            Game::Laberinto => "laberinto",
        }
    }

    /// The names `--games` takes.
    pub const NAMES: &'static str = "conecta4, hundido, brisca, brisca4, oca, serpientes, laberinto";

    pub fn parse(s: &str) -> Option<Game> {
        match s {
            "conecta4" => Some(Game::Conecta4),
            "hundido" => Some(Game::Hundido),
            "brisca" => Some(Game::Brisca),
            "brisca4" => Some(Game::Brisca4),
            "oca" => Some(Game::Oca),
            "serpientes" => Some(Game::Serpientes),
            "laberinto" => Some(Game::Laberinto),
            _ => None,
        }
    }

    /// How many seats a match has (one player connection each).
    pub fn seats(self) -> usize {
        match self {
            Game::Brisca4 => 4,
            _ => 2,
        }
    }

    /// The match configuration the harness creates.
    pub fn config(self) -> Value {
        match self {
            Game::Brisca4 => json!({"players": 4}),
            // The default 15×15 maze and 150 ms cooldown, a short countdown.
            Game::Laberinto => json!({"countdownMs": 500}),
            _ => json!({}),
        }
    }

    fn policy(self, rng: &mut Rng) -> Box<dyn Policy> {
        match self {
            Game::Conecta4 => Box::new(AnyConcrete { action: "drop" }),
            Game::Hundido => Box::new(Hundido::new(rng)),
            Game::Brisca | Game::Brisca4 => Box::new(AnyConcrete { action: "play" }),
            Game::Oca | Game::Serpientes => Box::new(AnyConcrete { action: "roll" }),
            Game::Laberinto => Box::new(Wander { last: None }),
        }
    }
}

/// A small splitmix64 generator: the harness's choices need speed, not secrecy.
pub struct Rng(u64);

impl Rng {
    pub fn seeded() -> Rng {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("OS entropy");
        Rng(u64::from_le_bytes(b))
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn uuid(&mut self) -> Uuid {
        Uuid::from_u64_pair(self.next(), self.next())
    }
}

/// A move: action type, payload, and the precondition its offer names.
type Move = (String, Value, Precondition);

trait Policy: Send {
    /// The next move from `snap`'s offers, or `None` to wait for the next snapshot.
    fn choose(&mut self, snap: &Snapshot, rng: &mut Rng) -> Option<Move>;
    /// The last chosen move's outcome.
    fn settled(&mut self, _applied: bool) {}
}

/// Any concrete offer of one action type, at random (Conecta 4: a column; Brisca: a card;
/// the dice games: their one roll).
struct AnyConcrete {
    action: &'static str,
}

impl Policy for AnyConcrete {
    fn choose(&mut self, snap: &Snapshot, rng: &mut Rng) -> Option<Move> {
        let offers: Vec<&WireOffer> = snap.actions.iter().filter(|o| o.action_type() == self.action).collect();
        let offer = offers.get(rng.below(offers.len() as u64) as usize)?;
        match offer {
            WireOffer::Concrete(o) => Some((o.r#type.clone(), o.payload.to_value(), o.precondition)),
            WireOffer::Parametrized(_) => None,
        }
    }
}

/// Laberinto: a `queue` move through an open passage of the offers (the way back only at a
/// dead end), so a player sweeps the maze; every move pays the game's cooldown, and a move
/// sent inside it is the game's own rejection.
struct Wander {
    last: Option<String>,
}

impl Policy for Wander {
    fn choose(&mut self, snap: &Snapshot, rng: &mut Rng) -> Option<Move> {
        let back = self.last.as_deref().map(|d| match d {
            "north" => "south",
            "south" => "north",
            "east" => "west",
            _ => "east",
        });
        let moves: Vec<(String, Precondition)> = snap
            .actions
            .iter()
            .filter_map(|o| match o {
                WireOffer::Concrete(c) if c.r#type == "move" => {
                    Some((c.payload.to_value()["direction"].as_str()?.to_owned(), c.precondition))
                }
                _ => None,
            })
            .collect();
        let onward: Vec<&(String, Precondition)> = moves.iter().filter(|(d, _)| Some(d.as_str()) != back).collect();
        let pool: Vec<&(String, Precondition)> = if onward.is_empty() { moves.iter().collect() } else { onward };
        let (direction, precondition) = pool.get(rng.below(pool.len() as u64) as usize)?;
        self.last = Some(direction.clone());
        Some(("move".into(), json!({ "direction": direction }), *precondition))
    }
}

/// Hundido with its default configuration (10×10, five ships, no touching): ship i lies
/// horizontally on row 2i at a random column, which is always legal; then `ready`; then
/// fire at every cell in a random order.
struct Hundido {
    fleet: Vec<(&'static str, u64)>,
    placed: BTreeSet<&'static str>,
    ready: bool,
    targets: Vec<(u64, u64)>,
    pending: Option<Pending>,
}

enum Pending {
    Place(&'static str),
    Ready,
    Fire,
}

impl Hundido {
    const SIZE: u64 = 10;

    fn new(rng: &mut Rng) -> Self {
        let mut targets: Vec<(u64, u64)> = (0..Self::SIZE).flat_map(|r| (0..Self::SIZE).map(move |c| (r, c))).collect();
        for i in (1..targets.len()).rev() {
            targets.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let fleet = vec![("carrier", 5), ("battleship", 4), ("cruiser", 3), ("submarine", 3), ("destroyer", 2)];
        Self { fleet, placed: BTreeSet::new(), ready: false, targets, pending: None }
    }
}

fn offer<'a>(snap: &'a Snapshot, action: &str) -> Option<&'a WireOffer> {
    snap.actions.iter().find(|o| o.action_type() == action)
}

impl Policy for Hundido {
    fn choose(&mut self, snap: &Snapshot, rng: &mut Rng) -> Option<Move> {
        if let Some(o) = offer(snap, "fire") {
            let (row, column) = *self.targets.last()?;
            self.pending = Some(Pending::Fire);
            return Some(("fire".into(), json!({"row": row, "column": column}), o.precondition()));
        }
        if let Some(o) = offer(snap, "placeShip") {
            let next = self.fleet.iter().enumerate().find(|(_, (ship, _))| !self.placed.contains(ship));
            if let Some((i, (ship, len))) = next {
                let column = rng.below(Self::SIZE - len + 1);
                let payload = json!({"ship": ship, "row": 2 * i as u64, "column": column, "orientation": "horizontal"});
                self.pending = Some(Pending::Place(ship));
                return Some(("placeShip".into(), payload, o.precondition()));
            }
        }
        if let Some(o) = offer(snap, "ready")
            && !self.ready
            && self.placed.len() == self.fleet.len()
        {
            self.pending = Some(Pending::Ready);
            return Some(("ready".into(), json!({}), o.precondition()));
        }
        None
    }

    fn settled(&mut self, applied: bool) {
        match (self.pending.take(), applied) {
            (Some(Pending::Place(ship)), true) => {
                self.placed.insert(ship);
            }
            (Some(Pending::Ready), true) => self.ready = true,
            (Some(Pending::Fire), true) => {
                self.targets.pop();
            }
            _ => {}
        }
    }
}

/// What every player of a run shares.
pub struct PlayContext {
    pub stats: Arc<Stats>,
    pub tokens: TokenSource,
    pub ws_urls: Vec<String>,
    /// The platform API that says which node's edge serves each match without a hop
    /// (`--ws-owner`); `None`: players pick among `ws_urls`.
    pub owner_edge: Option<crate::api::Endpoint>,
    /// Routers to play through over gRPC instead of WebSocket (empty: WebSocket).
    pub grpc: Vec<tonic::transport::Channel>,
    /// How often a gRPC player asks for the match's revision while it waits for a view.
    pub grpc_poll: Duration,
    /// Stamps gRPC players' calls (`--cluster-secret`).
    pub cluster_key: Option<juegoland_rpc::credential::ClusterKey>,
    pub accept: Vec<ContractTuple>,
    pub think: Duration,
    /// Drop the connection after about one in this many applied moves (reconnect storm).
    pub reconnect_every: Option<u64>,
    /// How long a player waits for any message before it counts a stall and resyncs.
    pub patience: Duration,
    /// Set when the run is over: players stop after their pending command settles.
    pub stop: AtomicBool,
}

/// How a player's part in a match ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    Finished,
    Stopped,
    Failed,
}

struct Player<'a> {
    ctx: &'a PlayContext,
    match_id: Uuid,
    principal: String,
    game: Game,
    conn: Option<Conn>,
    latest: Option<Box<Snapshot>>,
    rng: Rng,
    syncs: u64,
    /// Where the creation said the match is served without a hop: the first connection's
    /// (later ones ask the platform API again, the owner may have changed).
    client_url: Option<String>,
}

/// Plays `principal`'s seat of `match_id` to the end of the match or of the run;
/// `client_url` is where its creation said the match is served without a hop.
pub async fn play(
    ctx: &PlayContext,
    match_id: Uuid,
    game: Game,
    principal: String,
    client_url: Option<String>,
) -> Ending {
    let mut rng = Rng::seeded();
    let mut policy = game.policy(&mut rng);
    let mut p = Player { ctx, match_id, principal, game, conn: None, latest: None, rng, syncs: 0, client_url };
    let mut failures = 0;
    loop {
        match p.step(&mut *policy).await {
            Ok(Some(ending)) => return ending,
            Ok(None) => failures = 0,
            Err(e) => {
                ctx.stats.error(e.key());
                p.conn = None;
                failures += 1;
                if failures > 20 {
                    ctx.stats.error("player gave up");
                    return Ending::Failed;
                }
                tokio::time::sleep(Duration::from_millis(50 * failures.min(20))).await;
            }
        }
    }
}

impl Player<'_> {
    /// One move (or one wait for the rival's). `Some` when this seat is done.
    async fn step(&mut self, policy: &mut dyn Policy) -> Result<Option<Ending>, ConnError> {
        if self.conn.is_none() {
            self.sync().await?;
        }
        let snap = self.latest.as_ref().expect("a synced player has a snapshot");
        if snap.result.is_some() {
            return Ok(Some(Ending::Finished));
        }
        if self.ctx.stop.load(Ordering::Relaxed) {
            return Ok(Some(Ending::Stopped));
        }
        let Some((action_type, payload, precondition)) = policy.choose(snap, &mut self.rng) else {
            self.wait_for_news().await?;
            return Ok(None);
        };
        let envelope = CommandEnvelope {
            match_id: self.match_id,
            command_id: self.rng.uuid(),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        let applied = self.submit(&envelope).await?;
        policy.settled(applied);
        if applied
            && let Some(n) = self.ctx.reconnect_every
            && self.rng.below(n) == 0
        {
            // The reconnect storm: drop the socket without a close frame, as a phone
            // losing its network would, and come back with a sync.
            self.conn = None;
            let dropped = Instant::now();
            self.sync().await?;
            self.ctx.stats.latency(Latency::Resync, dropped.elapsed());
            self.ctx.stats.count(&self.ctx.stats.reconnects);
        }
        if !self.ctx.think.is_zero() {
            tokio::time::sleep(self.ctx.think).await;
        }
        Ok(None)
    }

    /// Connects and syncs; the answer becomes the latest snapshot.
    async fn sync(&mut self) -> Result<(), ConnError> {
        let mut conn = if self.ctx.grpc.is_empty() {
            let token = self.ctx.tokens.token(&self.principal).await.map_err(|e| ConnError::Connect(e.to_string()))?;
            let url = match self.owner_ws().await {
                Some(url) => url,
                None => self.ctx.ws_urls[self.rng.below(self.ctx.ws_urls.len() as u64) as usize].clone(),
            };
            Conn::connect(&url, &token).await?
        } else {
            let channel = self.ctx.grpc[self.rng.below(self.ctx.grpc.len() as u64) as usize].clone();
            Conn::grpc(channel, self.principal.clone(), self.ctx.grpc_poll, self.ctx.cluster_key.clone())
        };
        self.syncs += 1;
        let request_id = format!("s{}", self.syncs);
        let accept = self.ctx.accept.iter().filter(|t| t.id == self.game.id()).cloned().collect();
        let sync = SyncRequest { request_id: request_id.clone(), match_id: self.match_id, accept };
        conn.send(&ClientMessage::Sync(sync)).await?;
        loop {
            match conn.recv(self.ctx.patience).await? {
                ServerMessage::Snapshot(s) if s.request_id.as_deref() == Some(&request_id) => {
                    self.latest = Some(s);
                    self.conn = Some(conn);
                    return Ok(());
                }
                ServerMessage::Error(e) if e.request_id.as_deref() == Some(&request_id) => {
                    self.ctx.stats.error(format!("sync {}", e.code.as_str()));
                    return Err(ConnError::Closed);
                }
                _ => {}
            }
        }
    }

    /// The WebSocket URL of the client edge of the node that owns the match, when asked to
    /// connect there (`--ws-owner`) and the owner serves clients itself.
    async fn owner_ws(&mut self) -> Option<String> {
        let endpoint = self.ctx.owner_edge.as_ref()?;
        let base = match self.client_url.take() {
            Some(url) => url,
            None => {
                let mut api = crate::api::Api::new(endpoint.clone());
                match api.call("GET", &format!("/v1/matches/{}", self.match_id), None).await {
                    Ok(summary) => summary["clientUrl"].as_str()?.to_owned(),
                    Err(e) => {
                        self.ctx.stats.error(format!("read the match's edge: {e}"));
                        return None;
                    }
                }
            }
        };
        let base = base.trim_end_matches('/');
        let ws = base
            .strip_prefix("https://")
            .map(|rest| format!("wss://{rest}"))
            .or_else(|| base.strip_prefix("http://").map(|rest| format!("ws://{rest}")))?;
        Some(format!("{ws}/v1/ws"))
    }

    fn conn(&mut self) -> Result<&mut Conn, ConnError> {
        self.conn.as_mut().ok_or(ConnError::Closed)
    }

    /// Keeps a snapshot of this match if it is newer than the latest.
    fn keep(&mut self, s: Box<Snapshot>) -> (u64, Instant) {
        let at = (s.revision, Instant::now());
        if s.match_id == self.match_id && self.latest.as_ref().is_none_or(|l| s.revision > l.revision) {
            self.latest = Some(s);
        }
        at
    }

    /// Waits for the rival's move (a newer snapshot), or for the end of the run: a rival
    /// that saw the run stop before its move never makes it, and that is not a stall.
    async fn wait_for_news(&mut self) -> Result<(), ConnError> {
        let seen = self.latest.as_ref().map_or(0, |l| l.revision);
        let stalled_at = Instant::now() + self.ctx.patience;
        loop {
            let slice = stalled_at.saturating_duration_since(Instant::now()).min(Duration::from_millis(500));
            match self.conn()?.recv(slice).await {
                Ok(ServerMessage::Snapshot(s)) => {
                    let (revision, _) = self.keep(s);
                    if revision > seen {
                        return Ok(());
                    }
                }
                Ok(_) => {}
                Err(ConnError::Timeout) if self.ctx.stop.load(Ordering::Relaxed) => return Ok(()),
                Err(ConnError::Timeout) if Instant::now() < stalled_at => {}
                Err(ConnError::Timeout) => {
                    // Nothing for a long time: resync rather than wait forever.
                    self.ctx.stats.error("stalled");
                    self.conn = None;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends `envelope` until it settles; `true` when it was applied. A lost connection
    /// resends the same envelope after a sync: a duplicate answers with the original receipt.
    async fn submit(&mut self, envelope: &CommandEnvelope) -> Result<bool, ConnError> {
        let sent = Instant::now();
        let mut arrivals: Vec<(u64, Instant)> = Vec::new();
        let mut attempts = 0u32;
        'send: loop {
            attempts += 1;
            if attempts > 30 {
                self.ctx.stats.error("command abandoned");
                return Ok(false);
            }
            if self.conn.is_none() {
                self.sync().await?;
                let latest = self.latest.as_ref().expect("synced");
                arrivals.push((latest.revision, Instant::now()));
            }
            self.conn()?.send(&ClientMessage::Command(envelope.clone())).await?;
            let mut acked: Option<u64> = None;
            loop {
                let patience = self.ctx.patience;
                let msg = match self.conn()?.recv(patience).await {
                    Ok(m) => m,
                    Err(e) => {
                        let waiting = if acked.is_some() { "waiting for the view" } else { "waiting for the ack" };
                        self.ctx.stats.error(format!("{} {waiting}", e.key()));
                        self.conn = None;
                        continue 'send;
                    }
                };
                match msg {
                    ServerMessage::Snapshot(s) => {
                        let (revision, at) = self.keep(s);
                        arrivals.push((revision, at));
                    }
                    ServerMessage::Ack(a) if a.command_id == envelope.command_id => {
                        self.ctx.stats.latency(Latency::CommandToAck, sent.elapsed());
                        match (a.status, a.revision) {
                            (AckStatus::Applied, Some(revision)) => {
                                self.ctx.stats.applied(SeenApplied {
                                    match_id: self.match_id,
                                    principal: self.principal.clone(),
                                    command_id: envelope.command_id,
                                    revision,
                                });
                                acked = Some(revision);
                            }
                            _ => {
                                let code = a.code.map_or("-", |c| c.as_str());
                                self.ctx.stats.error(format!("rejected {code}"));
                                self.ctx.stats.count(&self.ctx.stats.rejected);
                                return Ok(false);
                            }
                        }
                    }
                    ServerMessage::Error(e) if e.command_id.is_none_or(|c| c == envelope.command_id) => {
                        self.ctx.stats.error(e.code.as_str());
                        match e.recovery {
                            Recovery::RetrySameCommand => {
                                tokio::time::sleep(Duration::from_millis(20 << attempts.min(6))).await;
                                continue 'send;
                            }
                            Recovery::Sync => {
                                self.conn = None;
                                continue 'send;
                            }
                            _ => return Ok(false),
                        }
                    }
                    _ => {}
                }
                if let Some(revision) = acked
                    && let Some((_, at)) = arrivals.iter().find(|(r, _)| *r >= revision)
                {
                    self.ctx.stats.latency(Latency::CommandToView, at.duration_since(sent));
                    return Ok(true);
                }
            }
        }
    }
}
