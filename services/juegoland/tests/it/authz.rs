//! The authorization matrix (issue 25), against a real `juegoland dev` over real sockets.
//!
//! Three tables of DATA: [`protocol_matrix`] (every client → server message of the protocol ×
//! every kind of caller → the outcome, run over WebSocket and over Socket.IO),
//! [`http_matrix`] (every route of the HTTP surface × every kind of HTTP caller → the status)
//! and [`mcp_matrix`] (every MCP tool × an agent grant of its own seat and of a human's → a
//! result or the error code). Every cell is run; the test fails listing every cell whose
//! outcome differs from the table. It also fails when a table is incomplete: a message kind of
//! the protocol (`ClientMessage`, whose exhaustive match in [`kind_of`] stops compiling, and
//! the committed `client-message.json` schema), a route of `libs/edge/src/http.rs` or a tool
//! the MCP server lists without its row.
//!
//! Then the scan: the server runs with `RUST_LOG=debug` into a file; every answer a caller
//! other than the owner received (game errors, snapshots, HTTP bodies, MCP results), every log
//! line and every metric sample of the run must carry none of the hidden state — each Hundido
//! seat's unsunk ships and the agent seat's ship, as their own views show them, each Brisca
//! hand, as its seat's snapshot shows it — and no bearer token. Each pattern is first found
//! where its owner legitimately reads it, so the scan can fail.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use juegoland_edge::auth::Tokens;
use juegoland_protocol::ClientMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::{Server, uuid};
use crate::wire::{Conn, Transport};

const SECRET: &str = "authz-matrix-token-secret-of-at-least-32-bytes";
const PLATFORM: &str = "authz-matrix-platform-credential";

/// The kinds of client → server message: one per `ClientMessage` variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Sync,
    Command,
    CommandStatus,
    Unsubscribe,
}

const KINDS: [Kind; 4] = [Kind::Sync, Kind::Command, Kind::CommandStatus, Kind::Unsubscribe];

/// Exhaustive on purpose: a new message kind stops this from compiling until it has a
/// [`Kind`] and a column in [`protocol_matrix`].
fn kind_of(m: &ClientMessage) -> Kind {
    match m {
        ClientMessage::Sync(_) => Kind::Sync,
        ClientMessage::Command(_) => Kind::Command,
        ClientMessage::CommandStatus(_) => Kind::CommandStatus,
        ClientMessage::Unsubscribe(_) => Kind::Unsubscribe,
    }
}

/// Who sends a protocol message, and at which match. M is a Hundido match in its battle,
/// alice (p0) to fire, bob (p1); W a Hundido match whose seat p1 (carol) the platform
/// withdrew (so it is over); O a La Oca match of three whose p2 (dave) was withdrawn and that
/// goes on; A a Hundido match whose p1 is an agent seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Caller {
    /// alice, seat p0 of M, on the connection that holds her subscription.
    Owner,
    /// alice again, on another connection of hers.
    OwnerElsewhere,
    /// bob, seat p1 of M.
    OtherSeat,
    /// mallory, who holds no seat of M.
    NonMember,
    /// carol, withdrawn from seat p1 of W, at W (which her withdrawal ended).
    Withdrawn,
    /// dave, withdrawn from seat p2 of O, a La Oca match of three that goes on without him.
    WithdrawnPlaying,
    /// The platform's spectator grant of M.
    Spectator,
    /// The platform's spectator grant of A, at M.
    SpectatorElsewhere,
    /// A correctly signed agent grant naming M's seat p0 (a human's seat: the platform's
    /// grant route refuses it, only the signing key mints it).
    AgentOtherSeat,
    /// The platform's grant of A's agent seat p1, at M.
    AgentElsewhere,
    /// A correctly signed token whose principal is `agent:p1` with no agent claim, at A
    /// (whose p1 is an agent seat): a platform user named like an engine principal.
    ReservedPrincipal,
    /// alice's token, expired.
    Expired,
    /// alice's token signed with another secret.
    WrongSignature,
}

/// Every caller, in the order of [`position`].
const CALLERS: [Caller; 13] = [
    Caller::Owner,
    Caller::OwnerElsewhere,
    Caller::OtherSeat,
    Caller::NonMember,
    Caller::Withdrawn,
    Caller::WithdrawnPlaying,
    Caller::Spectator,
    Caller::SpectatorElsewhere,
    Caller::AgentOtherSeat,
    Caller::AgentElsewhere,
    Caller::ReservedPrincipal,
    Caller::Expired,
    Caller::WrongSignature,
];

/// Exhaustive on purpose: a new kind of caller stops this from compiling until it is in
/// [`CALLERS`], and then [`check_protocol_complete`] fails until it has its row.
fn position(c: Caller) -> usize {
    match c {
        Caller::Owner => 0,
        Caller::OwnerElsewhere => 1,
        Caller::OtherSeat => 2,
        Caller::NonMember => 3,
        Caller::Withdrawn => 4,
        Caller::WithdrawnPlaying => 5,
        Caller::Spectator => 6,
        Caller::SpectatorElsewhere => 7,
        Caller::AgentOtherSeat => 8,
        Caller::AgentElsewhere => 9,
        Caller::ReservedPrincipal => 10,
        Caller::Expired => 11,
        Caller::WrongSignature => 12,
    }
}

/// What a message gets.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// The answer to a sync: a snapshot for this seat (`None`: a spectator's).
    Snapshot(Option<&'static str>),
    /// A command's receipt: applied.
    Applied,
    /// A command's receipt: rejected with this code.
    Rejected(&'static str),
    /// A command-status answered with the receipt (an ack) of that command.
    Receipt,
    /// `game.command-unknown`.
    Unknown,
    /// `game.error` with this code.
    Error(&'static str),
    /// No answer (an unsubscribe that was carried out).
    Silent,
    /// The connection was refused: `401` at the WebSocket upgrade; on Socket.IO a
    /// `game.error` UNAUTHENTICATED event, then a disconnect.
    Unauthenticated,
    /// Anything else (an unexpected message, written out).
    Other(String),
}

use Outcome::{Applied, Error, Receipt, Rejected, Silent, Snapshot, Unauthenticated, Unknown};

/// THE PROTOCOL MATRIX: per caller, the outcome of (sync, command, command-status,
/// unsubscribe). The command is a shot at M (at W, A for their callers) when it is alice's
/// turn; the command-status asks for alice's applied shot; the unsubscribe names alice's
/// subscription of M (held by her `Owner` connection).
fn protocol_matrix() -> Vec<(Caller, [Outcome; 4])> {
    const FORBIDDEN: Outcome = Error("FORBIDDEN");
    const NOT_FOUND: Outcome = Error("SUBSCRIPTION_NOT_FOUND");
    vec![
        (Caller::Owner, [Snapshot(Some("p0")), Applied, Receipt, Silent]),
        (Caller::OwnerElsewhere, [Snapshot(Some("p0")), Applied, Receipt, NOT_FOUND]),
        (Caller::OtherSeat, [Snapshot(Some("p1")), Rejected("ACTOR_NOT_ENABLED"), Unknown, NOT_FOUND]),
        (Caller::NonMember, [FORBIDDEN, FORBIDDEN, FORBIDDEN, NOT_FOUND]),
        // A withdrawn participant keeps its seat (the engine keeps it as `withdrawn`): it still
        // reads its seat's view and result, and its commands meet the finished match.
        (Caller::Withdrawn, [Snapshot(Some("p1")), Rejected("MATCH_FINISHED"), Unknown, NOT_FOUND]),
        // The rules took it out of the enabled actors: it reads, it never acts.
        (Caller::WithdrawnPlaying, [Snapshot(Some("p2")), Rejected("ACTOR_NOT_ENABLED"), Unknown, NOT_FOUND]),
        (Caller::Spectator, [Snapshot(None), FORBIDDEN, FORBIDDEN, NOT_FOUND]),
        (Caller::SpectatorElsewhere, [FORBIDDEN, FORBIDDEN, FORBIDDEN, NOT_FOUND]),
        (Caller::AgentOtherSeat, [FORBIDDEN, FORBIDDEN, FORBIDDEN, NOT_FOUND]),
        (Caller::AgentElsewhere, [FORBIDDEN, FORBIDDEN, FORBIDDEN, NOT_FOUND]),
        (Caller::ReservedPrincipal, [Unauthenticated, Unauthenticated, Unauthenticated, Unauthenticated]),
        (Caller::Expired, [Unauthenticated, Unauthenticated, Unauthenticated, Unauthenticated]),
        (Caller::WrongSignature, [Unauthenticated, Unauthenticated, Unauthenticated, Unauthenticated]),
    ]
}

/// Who calls the HTTP surface, with what in `Authorization: Bearer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum HttpCaller {
    /// The platform back end's credential (`--platform-token`).
    Platform,
    /// No credential.
    Anonymous,
    /// A wrong platform credential.
    WrongPlatform,
    /// alice's player token.
    Player,
    /// The platform's agent grant of A's seat p1.
    Agent,
    /// The platform's spectator grant of M.
    Spectator,
    /// alice's token, expired.
    Expired,
    /// alice's token signed with another secret.
    WrongSignature,
}

const HTTP_CALLERS: [HttpCaller; 8] = [
    HttpCaller::Platform,
    HttpCaller::Anonymous,
    HttpCaller::WrongPlatform,
    HttpCaller::Player,
    HttpCaller::Agent,
    HttpCaller::Spectator,
    HttpCaller::Expired,
    HttpCaller::WrongSignature,
];

/// Who may call a route.
#[derive(Clone, Copy, Debug)]
enum Policy {
    /// Anyone, with this status.
    Public(u16),
    /// The platform credential only (this status); anyone else `401`.
    Platform(u16),
    /// A valid token of any kind (`101` WebSocket upgrade); anyone else `401`.
    Token,
    /// An agent's grant only (this status); another valid token `403`; anyone else `401`.
    AgentGrant(u16),
}

/// THE HTTP MATRIX: every route the edge serves (method, route as `http.rs` writes it) and
/// who may call it; [`Policy::expected`] turns each row into one expected status per
/// [`HttpCaller`].
fn http_matrix() -> Vec<(&'static str, &'static str, Policy)> {
    use Policy::*;
    vec![
        ("GET", "/", Public(200)),
        ("GET", "/assets/{*path}", Public(404)),
        ("GET", "/games/{*path}", Public(404)),
        ("GET", "/v1/games", Public(200)),
        // Behind the platform token where one is set (or on a listener of their own).
        ("GET", "/metrics", Platform(200)),
        ("GET", "/healthz", Public(200)),
        ("GET", "/readyz", Public(200)),
        ("POST", "/v1/matches", Platform(201)),
        ("GET", "/v1/matches", Platform(200)),
        ("GET", "/v1/matches/{id}", Platform(200)),
        ("GET", "/v1/feed", Platform(200)),
        ("POST", "/v1/matches/{id}/withdrawals", Platform(200)),
        ("POST", "/v1/matches/{id}/spectators", Platform(201)),
        ("POST", "/v1/matches/{id}/replays", Platform(201)),
        ("POST", "/v1/matches/{id}/agents", Platform(201)),
        ("POST", "/v1/matches/{id}/cancellation", Platform(200)),
        ("GET", "/v1/ws", Token),
        ("ANY", "/v1/mcp", AgentGrant(200)),
        // Dev only, and never on a server with a platform token (this one): not served.
        ("POST", "/v1/dev/tokens", Public(404)),
        ("GET", "/v1/packages/{id}", Public(404)),
        ("GET", "/v1/packages/{id}/{version}", Public(404)),
        ("GET", "/v1/packages/{id}/{version}/{*path}", Public(404)),
        ("POST", "/v1/webhooks", Platform(201)),
        ("GET", "/v1/webhooks", Platform(200)),
        ("GET", "/v1/webhooks/{id}", Platform(200)),
        ("PATCH", "/v1/webhooks/{id}", Platform(200)),
        ("DELETE", "/v1/webhooks/{id}", Platform(204)),
        ("POST", "/v1/webhooks/{id}/rotation", Platform(200)),
        ("POST", "/v1/webhooks/{id}/replay", Platform(200)),
        ("POST", "/v1/webhooks/{id}/ping", Platform(200)),
    ]
}

/// Who plays through the MCP server's tools (past its door, which the HTTP matrix's
/// `/v1/mcp` row guards: an agent's grant only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum McpCaller {
    /// The platform's grant of A's agent seat p1.
    OwnSeat,
    /// A correctly signed agent grant naming M's seat p0, a human's (`Caller::AgentOtherSeat`).
    HumanSeat,
}

/// What a tool answers: a result, or a tool error with this code.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ToolOutcome {
    Result,
    ToolError(String),
}

/// THE MCP MATRIX: every tool the server lists, its arguments, and its outcome for
/// ([`McpCaller::OwnSeat`], [`McpCaller::HumanSeat`]). A is in its placement phase, so its
/// agent seat may place a ship.
fn mcp_matrix() -> Vec<(&'static str, Value, [ToolOutcome; 2])> {
    use ToolOutcome::{Result as Ok, ToolError};
    let forbidden = || ToolError("FORBIDDEN".to_owned());
    vec![
        ("instructions", json!({}), [Ok, forbidden()]),
        ("get_view", json!({}), [Ok, forbidden()]),
        ("legal_actions", json!({}), [Ok, forbidden()]),
        ("wait_for_turn", json!({"timeoutMs": 1000}), [Ok, forbidden()]),
        (
            "play",
            json!({"type": "placeShip", "payload": {"ship": "dot", "row": 5, "column": 5, "orientation": "vertical"}}),
            [Ok, forbidden()],
        ),
    ]
}

impl Policy {
    fn expected(self, caller: HttpCaller) -> u16 {
        let token = matches!(caller, HttpCaller::Player | HttpCaller::Agent | HttpCaller::Spectator);
        match self {
            Policy::Public(s) => s,
            Policy::Platform(s) if caller == HttpCaller::Platform => s,
            Policy::Platform(_) => 401,
            Policy::Token if token => 101,
            Policy::Token => 401,
            Policy::AgentGrant(s) if caller == HttpCaller::Agent => s,
            Policy::AgentGrant(_) if token => 403,
            Policy::AgentGrant(_) => 401,
        }
    }
}

/// Which received message answers the one sent.
type Answers = Box<dyn Fn(&Value) -> bool + Send>;

fn accept(game: &str) -> Value {
    json!([{"id": game, "rulesVersion": "1.0.0", "viewSchemaVersion": 1, "eventSchemaVersion": 1}])
}

fn sync_msg(m: &str, request_id: &str, game: &str) -> Value {
    json!({"protocolVersion":1,"type":"game.sync","requestId":request_id,"matchId":m,"accept":accept(game)})
}

fn command_msg(m: &str, command_id: &str, precondition: Value, action: &str, payload: Value) -> Value {
    json!({"protocolVersion":1,"type":"game.command","matchId":m,"commandId":command_id,
        "precondition":precondition,"action":{"type":action,"payload":payload}})
}

fn fire(m: &str, command_id: &str, revision: u64, cell: (u64, u64)) -> Value {
    command_msg(
        m,
        command_id,
        json!({"kind":"match","revision":revision}),
        "fire",
        json!({"row":cell.0,"column":cell.1}),
    )
}

/// One HTTP/1.1 request with optional bearer and extra headers; (status, body text).
async fn http(
    addr: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(b) = bearer {
        head.push_str(&format!("Authorization: Bearer {b}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.expect("write");
    s.write_all(body.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {text:?}"));
    (status, body.to_owned())
}

/// The platform's calls of the test itself.
struct Platform {
    addr: String,
}

impl Platform {
    async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let body = if body.is_null() { String::new() } else { body.to_string() };
        let (status, text) = http(&self.addr, method, path, Some(PLATFORM), &[], &body).await;
        assert!((200..300).contains(&status), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    async fn create(&self, game: &str, seats: Value, config: Value) -> String {
        let body = self.call("POST", "/v1/matches", json!({"game": game, "seats": seats, "config": config})).await;
        body["matchId"].as_str().expect("matchId").to_owned()
    }

    async fn revision(&self, m: &str) -> u64 {
        self.call("GET", &format!("/v1/matches/{m}"), Value::Null).await["revision"].as_u64().expect("revision")
    }
}

/// A small Hundido: three ships on a 6 × 6 board, the turn always passes.
fn small_hundido() -> Value {
    json!({"rows": 6, "columns": 6, "fleet": [{"ship":"long","size":3},{"ship":"mid","size":2},{"ship":"dot","size":1}]})
}

/// alice's fleet (all horizontal, in rows 0, 2 and 4) and bob's (all vertical, in
/// columns 5 and 3): no cell of one is a cell the other fires at.
const ALICE_FLEET: [(&str, u64, u64, &str); 3] =
    [("long", 2, 2, "horizontal"), ("mid", 4, 1, "horizontal"), ("dot", 0, 1, "horizontal")];
const BOB_FLEET: [(&str, u64, u64, &str); 3] =
    [("long", 0, 5, "vertical"), ("mid", 0, 3, "vertical"), ("dot", 4, 3, "vertical")];

/// Places `fleet` from `c` (synced: `snap` is its snapshot) and readies, each command
/// awaited.
async fn place_fleet(c: &mut Conn, m: &str, snap: &Value, fleet: &[(&str, u64, u64, &str)]) {
    let offer = snap["actions"].as_array().unwrap().iter().find(|o| o["type"] == "placeShip").expect("may place");
    let mut pre = offer["precondition"].clone();
    let mut seen = Vec::new();
    for &(ship, row, column, orientation) in fleet {
        let id = uuid();
        let payload = json!({"ship":ship,"row":row,"column":column,"orientation":orientation});
        c.send(&command_msg(m, &id, pre.clone(), "placeShip", payload)).await;
        let ack =
            c.answer(Duration::from_secs(5), &mut seen, |v| v["commandId"] == id.as_str()).await.expect("a receipt");
        assert_eq!(ack["status"], "applied", "{ack}");
        pre["actorRevision"] = json!(pre["actorRevision"].as_u64().unwrap() + 1);
    }
    let id = uuid();
    c.send(&command_msg(m, &id, pre, "ready", json!({}))).await;
    let ack = c.answer(Duration::from_secs(5), &mut seen, |v| v["commandId"] == id.as_str()).await.expect("a receipt");
    assert_eq!(ack["status"], "applied", "{ack}");
}

/// Syncs `m` on `c` and returns the answer.
async fn sync_on(c: &mut Conn, m: &str, request_id: &str, game: &str) -> Value {
    c.send(&sync_msg(m, request_id, game)).await;
    let mut seen = Vec::new();
    c.answer(Duration::from_secs(5), &mut seen, |v| v["requestId"] == request_id).await.expect("a sync answer")
}

struct World {
    addr: String,
    platform: Platform,
    /// Match under test, its withdrawn twin and the agent match.
    m: String,
    w: String,
    a: String,
    o: String,
    /// Each caller's token.
    tokens: BTreeMap<Caller, String>,
    /// alice's connection that holds her subscription of M, and that subscription.
    owner: Conn,
    owner_subscription: Option<String>,
    /// bob's connection (to pass the turn back to alice).
    bob: Conn,
    /// An applied command of alice in M.
    alice_command: String,
    /// Water cells of bob's board (alice's shots) and of alice's (bob's).
    alice_water: Vec<(u64, u64)>,
    bob_water: Vec<(u64, u64)>,
    /// Every text each caller received, for the scan.
    received: BTreeMap<Caller, Vec<String>>,
    /// The transport of the cells being run.
    transport: Transport,
}

impl World {
    /// The match `caller` addresses, and its game.
    fn target(&self, caller: Caller) -> (&str, &'static str) {
        match caller {
            Caller::Withdrawn => (self.w.as_str(), "hundido"),
            Caller::WithdrawnPlaying => (self.o.as_str(), "oca"),
            Caller::ReservedPrincipal => (self.a.as_str(), "hundido"),
            _ => (self.m.as_str(), "hundido"),
        }
    }

    /// Bob fires at water, so that it is alice's turn again.
    async fn pass_turn_back(&mut self) {
        let revision = self.platform.revision(&self.m).await;
        let id = uuid();
        let cell = self.bob_water.remove(0);
        self.bob.send(&fire(&self.m, &id, revision, cell)).await;
        let mut seen = Vec::new();
        let ack = self.bob.answer(Duration::from_secs(5), &mut seen, |v| v["commandId"] == id.as_str()).await;
        let ack = ack.expect("bob's receipt");
        assert_eq!(ack["status"], "applied", "bob passes the turn back: {ack}");
    }

    /// Whether alice's subscription of M (on her `Owner` connection) delivers the next
    /// revision within `wait`: alice fires from another connection, bob passes the turn back.
    async fn subscription_delivers(&mut self, wait: Duration) -> bool {
        let revision = self.platform.revision(&self.m).await;
        let mut other = Conn::open(&self.addr, &self.tokens[&Caller::OwnerElsewhere]).await.expect("alice connects");
        let id = uuid();
        let cell = self.alice_water.remove(0);
        other.send(&fire(&self.m, &id, revision, cell)).await;
        let ack = other.answer(Duration::from_secs(5), &mut Vec::new(), |v| v["commandId"] == id.as_str()).await;
        assert_eq!(ack.expect("alice's receipt")["status"], "applied");
        self.pass_turn_back().await;
        let sub = self.owner_subscription.clone().expect("alice's subscription");
        let seen = self.received.entry(Caller::Owner).or_default();
        let next = revision + 1;
        let delivered =
            |v: &Value| v["type"] == "game.snapshot" && v["subscriptionId"] == sub.as_str() && v["revision"] == next;
        self.owner.answer(wait, seen, delivered).await.is_some()
    }

    /// Runs one cell: `kind` sent by `caller`; its outcome.
    async fn run(&mut self, kind: Kind, caller: Caller) -> Outcome {
        let (target, game) = self.target(caller);
        let target = target.to_owned();
        let token = self.tokens[&caller].clone();
        let mut fresh;
        let conn = if caller == Caller::Owner {
            &mut self.owner
        } else {
            match Conn::open_on(self.transport, &self.addr, &token).await {
                Ok(c) => {
                    fresh = c;
                    &mut fresh
                }
                Err(crate::wire::Refused) => return Unauthenticated,
            }
        };
        let seen = self.received.entry(caller).or_default();
        let (message, wait, answers): (Value, Duration, Answers) = match kind {
            Kind::Sync => {
                let rid = format!("authz-{}", uuid());
                let r = rid.clone();
                (
                    sync_msg(&target, &rid, game),
                    Duration::from_secs(5),
                    Box::new(move |v: &Value| v["requestId"] == r.as_str()),
                )
            }
            Kind::Command => {
                let revision = self.platform.revision(&target).await;
                let id = uuid();
                // Taken from the list once a shot at it applied.
                let cell = self.alice_water[0];
                let i = id.clone();
                (
                    match game {
                        "oca" => {
                            command_msg(&target, &id, json!({"kind":"match","revision":revision}), "roll", json!({}))
                        }
                        _ => fire(&target, &id, revision, cell),
                    },
                    Duration::from_secs(5),
                    Box::new(move |v: &Value| v["commandId"] == i.as_str()),
                )
            }
            Kind::CommandStatus => {
                let id = self.alice_command.clone();
                let i = id.clone();
                let msg = json!({"protocolVersion":1,"type":"game.command-status","matchId":target,"commandId":id});
                (msg, Duration::from_secs(5), Box::new(move |v: &Value| v["commandId"] == i.as_str()))
            }
            Kind::Unsubscribe => {
                let sid = self.owner_subscription.clone().expect("alice's subscription of M");
                let s = sid.clone();
                let msg = json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":self.m,"subscriptionId":sid});
                (
                    msg,
                    Duration::from_secs(2),
                    Box::new(move |v: &Value| v["subscriptionId"] == s.as_str() && v["type"] == "game.error"),
                )
            }
        };
        conn.send(&message).await;
        let Some(answer) = conn.answer(wait, seen, answers).await else {
            return if kind == Kind::Unsubscribe { Silent } else { Outcome::Other("no answer".into()) };
        };
        let outcome = classify(kind, &answer);
        if outcome == Applied {
            self.alice_water.remove(0);
        }
        if kind == Kind::Sync && caller == Caller::Owner {
            self.owner_subscription = answer["subscriptionId"].as_str().map(str::to_owned);
        }
        outcome
    }
}

fn classify(kind: Kind, v: &Value) -> Outcome {
    let code = |v: &Value| -> &'static str { Box::leak(v["code"].as_str().unwrap_or("?").to_owned().into_boxed_str()) };
    match (kind, v["type"].as_str().unwrap_or("")) {
        (Kind::Sync, "game.snapshot") => {
            Snapshot(v["seat"].as_str().map(|s| &*Box::leak(s.to_owned().into_boxed_str())))
        }
        (Kind::Command, "game.ack") if v["status"] == "applied" => Applied,
        (Kind::Command, "game.ack") => Rejected(code(v)),
        (Kind::CommandStatus, "game.ack") => Receipt,
        (Kind::CommandStatus, "game.command-unknown") => Unknown,
        (_, "game.error") => Error(code(v)),
        _ => Outcome::Other(v.to_string()),
    }
}

#[tokio::test]
async fn the_authorization_matrix_holds_and_nothing_hidden_leaks() {
    let log = std::env::temp_dir().join(format!("juegoland-authz-{}-{}.log", std::process::id(), uuid()));
    let registry = crate::client::data_dir();
    let server = Server::start_logged(
        &["--jwt-secret", SECRET, "--platform-token", PLATFORM, "--registry", registry.to_str().unwrap()],
        &[("RUST_LOG", "debug")],
        &log,
    );
    let addr = server.addr.to_string();
    let platform = Platform { addr: addr.clone() };
    let minted = Tokens::new(SECRET.as_bytes(), 3600).unwrap();

    // M: alice and bob, both fleets placed, alice fires first.
    let m = platform.create("hundido", json!({"p0":"alice","p1":"bob"}), small_hundido()).await;
    let mut owner = Conn::open(&addr, &minted.issue("alice").unwrap()).await.unwrap();
    let mut bob = Conn::open(&addr, &minted.issue("bob").unwrap()).await.unwrap();
    let a0 = sync_on(&mut owner, &m, "setup-a", "hundido").await;
    let b0 = sync_on(&mut bob, &m, "setup-b", "hundido").await;
    place_fleet(&mut owner, &m, &a0, &ALICE_FLEET).await;
    place_fleet(&mut bob, &m, &b0, &BOB_FLEET).await;
    // Water, and never a cell of a hidden ship (of M's seats or of A's agent at (5, 5)), so
    // that a public shot never looks like a hidden cell.
    let alice_water: Vec<(u64, u64)> =
        [(3, 0), (3, 1), (3, 2), (3, 3), (3, 4), (3, 5), (5, 0), (5, 1), (5, 2), (5, 4), (4, 4), (4, 5)].into();
    let bob_water: Vec<(u64, u64)> = (0..5).flat_map(|c| [(1, c), (3, c), (5, c)]).collect();
    let mut world = World {
        addr: addr.clone(),
        platform,
        m: m.clone(),
        w: String::new(),
        a: String::new(),
        o: String::new(),
        tokens: BTreeMap::new(),
        owner,
        owner_subscription: None,
        bob,
        alice_command: String::new(),
        alice_water,
        bob_water,
        received: BTreeMap::new(),
        transport: Transport::WebSocket,
    };
    // alice's first shot (its receipt is what command-status asks for), then bob's.
    let revision = world.platform.revision(&m).await;
    let id = uuid();
    let cell = world.alice_water.remove(0);
    world.owner.send(&fire(&m, &id, revision, cell)).await;
    let ack = world.owner.answer(Duration::from_secs(5), &mut Vec::new(), |v| v["commandId"] == id.as_str()).await;
    assert_eq!(ack.expect("alice's receipt")["status"], "applied");
    world.alice_command = id;
    world.pass_turn_back().await;

    // W: alice and carol; the platform withdraws carol (the match is over).
    world.w = world.platform.create("hundido", json!({"p0":"alice","p1":"carol"}), small_hundido()).await;
    world.platform.call("POST", &format!("/v1/matches/{}/withdrawals", world.w), json!({"seat":"p1"})).await;
    // O: La Oca among alice, bob and dave; the platform withdraws dave, the others play on.
    world.o = world.platform.create("oca", json!({"p0":"alice","p1":"bob","p2":"dave"}), json!({})).await;
    world.platform.call("POST", &format!("/v1/matches/{}/withdrawals", world.o), json!({"seat":"p2"})).await;
    // A: alice and an agent seat.
    world.a = world.platform.create("hundido", json!({"p0":"alice","p1":{"agent":"default"}}), small_hundido()).await;
    let agent_grant =
        world.platform.call("POST", &format!("/v1/matches/{}/agents", world.a), json!({"seat":"p1"})).await;
    let agent_grant = agent_grant["token"].as_str().unwrap().to_owned();
    let spectator_m = world.platform.call("POST", &format!("/v1/matches/{m}/spectators"), Value::Null).await;
    let spectator_m = spectator_m["token"].as_str().unwrap().to_owned();
    let spectator_a = world.platform.call("POST", &format!("/v1/matches/{}/spectators", world.a), Value::Null).await;
    let spectator_a = spectator_a["token"].as_str().unwrap().to_owned();
    let expired = expired_token("alice");
    let wrong = Tokens::new(b"another-secret-nobody-here-shares-with-us", 3600).unwrap().issue("alice").unwrap();
    let m_id: uuid::Uuid = m.parse().unwrap();
    world.tokens = BTreeMap::from([
        (Caller::Owner, minted.issue("alice").unwrap()),
        (Caller::OwnerElsewhere, minted.issue("alice").unwrap()),
        (Caller::OtherSeat, minted.issue("bob").unwrap()),
        (Caller::NonMember, minted.issue("mallory").unwrap()),
        (Caller::Withdrawn, minted.issue("carol").unwrap()),
        (Caller::WithdrawnPlaying, minted.issue("dave").unwrap()),
        (Caller::Spectator, spectator_m.clone()),
        (Caller::SpectatorElsewhere, spectator_a),
        (Caller::AgentOtherSeat, minted.issue_agent(m_id, "p0").unwrap()),
        (Caller::AgentElsewhere, agent_grant.clone()),
        (Caller::ReservedPrincipal, minted.issue("agent:p1").unwrap()),
        (Caller::Expired, expired.clone()),
        (Caller::WrongSignature, wrong.clone()),
    ]);

    // The protocol matrix: complete, then every cell (alice's own cells last in each column,
    // so that her applied shot and unsubscribe come after everyone else's attempts).
    let matrix = protocol_matrix();
    check_protocol_complete(&matrix);
    let mut mismatches = Vec::new();
    for transport in [Transport::WebSocket, Transport::SocketIo] {
        if transport == Transport::SocketIo {
            // Alice's subscription-holding connection is of the transport too.
            world.transport = transport;
            world.owner = Conn::open_on(transport, &addr, &world.tokens[&Caller::Owner]).await.expect("alice connects");
        }
        for (k, kind) in KINDS.iter().enumerate() {
            let mut rows: Vec<&(Caller, [Outcome; 4])> = matrix.iter().collect();
            rows.sort_by_key(|(caller, _)| *caller == Caller::Owner && *kind != Kind::Sync);
            for (caller, expected) in rows {
                let owner_unsubscribes = *kind == Kind::Unsubscribe && *caller == Caller::Owner;
                // alice's subscription outlives everyone else's unsubscribe, and ends with hers.
                if owner_unsubscribes && !world.subscription_delivers(Duration::from_secs(5)).await {
                    mismatches.push("alice's subscription of M stopped delivering before she unsubscribed".to_owned());
                }
                let got = world.run(*kind, *caller).await;
                if owner_unsubscribes && got == Silent && world.subscription_delivers(Duration::from_millis(1500)).await
                {
                    mismatches.push("alice's subscription of M still delivers after her unsubscribe".to_owned());
                }
                if got == Applied && world.target(*caller).0 == m {
                    world.pass_turn_back().await;
                }
                if got != expected[k] {
                    mismatches
                        .push(format!("{transport:?}: {kind:?} × {caller:?}: expected {:?}, got {got:?}", expected[k]));
                }
            }
        }
    }

    // The HTTP matrix.
    let http_rows = http_matrix();
    check_http_complete(&http_rows);
    let http_tokens: BTreeMap<HttpCaller, Option<String>> = BTreeMap::from([
        (HttpCaller::Platform, Some(PLATFORM.to_owned())),
        (HttpCaller::Anonymous, None),
        (HttpCaller::WrongPlatform, Some("not-the-platform-credential".to_owned())),
        (HttpCaller::Player, Some(minted.issue("alice").unwrap())),
        (HttpCaller::Agent, Some(agent_grant.clone())),
        (HttpCaller::Spectator, Some(spectator_m.clone())),
        (HttpCaller::Expired, Some(expired.clone())),
        (HttpCaller::WrongSignature, Some(wrong.clone())),
    ]);
    let mut http_received: Vec<(HttpCaller, String)> = Vec::new();
    for (method, route, policy) in &http_rows {
        // A scratch match per row (a withdrawal or a cancellation changes it), its p1 an
        // agent seat (a grant needs one); the platform's own call comes last.
        let scratch =
            world.platform.create("hundido", json!({"p0":"alice","p1":{"agent":"default"}}), small_hundido()).await;
        let mut callers = HTTP_CALLERS.to_vec();
        callers.rotate_left(1);
        for caller in callers {
            let bearer = http_tokens[&caller].as_deref();
            let (status, body) = http_cell(&addr, method, route, &scratch, bearer).await;
            http_received.push((caller, body.clone()));
            let expected = policy.expected(caller);
            if status != expected {
                mismatches.push(format!("{method} {route} × {caller:?}: expected {expected}, got {status} {body}"));
            }
        }
    }

    // The MCP matrix: every tool the server lists has its row; each runs for each caller.
    let mcp_rows = mcp_matrix();
    let mcp_tokens = [
        (McpCaller::OwnSeat, agent_grant.clone()),
        (McpCaller::HumanSeat, world.tokens[&Caller::AgentOtherSeat].clone()),
    ];
    for (i, (caller, token)) in mcp_tokens.iter().enumerate() {
        let agent = crate::agents::Agent::connect_to(&addr, token).await;
        let listed: BTreeSet<String> =
            agent.client.list_all_tools().await.expect("the tools").into_iter().map(|t| t.name.to_string()).collect();
        let table: BTreeSet<String> = mcp_rows.iter().map(|(tool, _, _)| (*tool).to_owned()).collect();
        assert_eq!(listed, table, "mcp_matrix must list exactly the tools the MCP server lists");
        for (tool, arguments, expected) in &mcp_rows {
            let answer = agent.call(tool, arguments.clone()).await;
            let got = match &answer {
                Ok(_) => ToolOutcome::Result,
                Err(e) => ToolOutcome::ToolError(e["code"].as_str().unwrap_or("?").to_owned()),
            };
            let text = match answer {
                Ok(v) | Err(v) => v.to_string(),
            };
            if *caller == McpCaller::HumanSeat {
                world.received.entry(Caller::AgentOtherSeat).or_default().push(text.clone());
            }
            if got != expected[i] {
                mismatches.push(format!("MCP {tool} × {caller:?}: expected {:?}, got {got:?} {text}", expected[i]));
            }
        }
    }

    // What the agent of A keeps hidden: the ship it placed, as its own view shows it.
    let own_agent = crate::agents::Agent::connect_to(&addr, &agent_grant).await;
    let agent_view = own_agent.call("get_view", json!({})).await.expect("the agent's view");
    let agent_hidden = hidden_of(&agent_view, "vertical", &[]);

    // The scan's Brisca part: every seat's hand, and what the others received meanwhile.
    let b = world.platform.create("brisca", json!({"p0":"alice","p1":"bob"}), json!({})).await;
    let mut hands: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (who, seat) in [("alice", "p0"), ("bob", "p1")] {
        let mut c = Conn::open(&addr, &minted.issue(who).unwrap()).await.unwrap();
        let snap = sync_on(&mut c, &b, "hand", "brisca").await;
        assert_eq!(snap["seat"], seat, "{snap}");
        let hand = snap["view"]["hand"].as_array().expect("a hand").iter().map(|c| c.to_string()).collect::<Vec<_>>();
        assert!(!hand.is_empty(), "{snap}");
        hands.insert(seat, hand);
    }
    for (caller, token) in [(Caller::NonMember, world.tokens[&Caller::NonMember].clone())] {
        let mut c = Conn::open(&addr, &token).await.unwrap();
        let answer = sync_on(&mut c, &b, "peek", "brisca").await;
        world.received.entry(caller).or_default().push(answer.to_string());
    }
    let brisca_spectator = world.platform.call("POST", &format!("/v1/matches/{b}/spectators"), Value::Null).await;
    let mut c = Conn::open(&addr, brisca_spectator["token"].as_str().unwrap()).await.unwrap();
    let watched = sync_on(&mut c, &b, "watch", "brisca").await;
    world.received.entry(Caller::Spectator).or_default().push(watched.to_string());
    let mut c = Conn::open(&addr, &world.tokens[&Caller::OtherSeat]).await.unwrap();
    let bobs = sync_on(&mut c, &b, "bob", "brisca").await;
    world.received.entry(Caller::OtherSeat).or_default().push(bobs.to_string());

    // The scan. Hidden: each Hundido seat's ships as its own snapshot shows them, each
    // Brisca hand; and every token of the run.
    let alice_view =
        sync_on(&mut Conn::open(&addr, &minted.issue("alice").unwrap()).await.unwrap(), &m, "own-a", "hundido").await;
    let bob_view =
        sync_on(&mut Conn::open(&addr, &minted.issue("bob").unwrap()).await.unwrap(), &m, "own-b", "hundido").await;
    let alice_hidden = hidden_of(&alice_view, "horizontal", &hands["p0"]);
    let bob_hidden = hidden_of(&bob_view, "vertical", &hands["p1"]);
    // The scan can fail: each form of hidden value is found where its owner legitimately
    // reads it (alice's ships in her own snapshots, bob's hand in his Brisca snapshot).
    let owner_texts: String = world.received[&Caller::Owner].iter().map(|t| compact(t)).collect();
    for h in alice_hidden
        .iter()
        .filter(|h| h.starts_with('"') || h.starts_with('{'))
        .filter(|h| !h.contains("suit") && !h.starts_with(r#"{"column""#))
    {
        assert!(owner_texts.contains(h.as_str()), "the scan's pattern {h} is not how the server writes alice's ships");
    }
    let bob_texts: String = world.received[&Caller::OtherSeat].iter().map(|t| compact(t)).collect();
    assert!(
        bob_hidden.iter().any(|h| h.contains(r#""suit""#) && bob_texts.contains(h.as_str())),
        "the scan's card patterns are not how the server writes bob's hand: {bob_hidden:?} in {bob_texts}"
    );
    let mut leaks = Vec::new();
    for (caller, texts) in &world.received {
        let hidden: Vec<&String> = match caller {
            Caller::Owner | Caller::OwnerElsewhere => agent_hidden.iter().collect(),
            Caller::OtherSeat => alice_hidden.iter().chain(&agent_hidden).collect(),
            _ => alice_hidden.iter().chain(&bob_hidden).chain(&agent_hidden).collect(),
        };
        for text in texts {
            for h in &hidden {
                if compact(text).contains(h.as_str()) {
                    leaks.push(format!("{caller:?} received {h} in {}", around(text, h)));
                }
            }
        }
    }
    for (caller, body) in &http_received {
        for h in alice_hidden.iter().chain(&bob_hidden).chain(&agent_hidden) {
            if compact(body).contains(h.as_str()) {
                leaks.push(format!("HTTP {caller:?} received {h} in {}", around(body, h)));
            }
        }
    }
    let (status, metrics) = http(&addr, "GET", "/metrics", Some(PLATFORM), &[], "").await;
    assert_eq!(status, 200);
    drop(server);
    let logs = std::fs::read_to_string(&log).expect("the server's log");
    let _ = std::fs::remove_file(&log);
    assert!(
        logs.lines().count() > 100 && logs.contains("DEBUG"),
        "the server logged at debug: {} lines",
        logs.lines().count()
    );
    let tokens: Vec<String> =
        world.tokens.values().cloned().chain(http_tokens.values().flatten().cloned()).chain([spectator_m]).collect();
    for (what, text) in [("log", &logs), ("metrics", &metrics)] {
        for line in text.lines() {
            let line_c = compact(line);
            for h in alice_hidden.iter().chain(&bob_hidden).chain(&agent_hidden) {
                if line_c.contains(h.as_str()) {
                    leaks.push(format!("{what} line carries {h}: {}", around(line, h)));
                }
            }
            for t in &tokens {
                if line.contains(t.as_str()) {
                    leaks.push(format!("{what} line carries a token: {}", around(line, t)));
                }
            }
        }
    }
    let total = 2 * matrix.len() * KINDS.len() + http_rows.len() * HTTP_CALLERS.len() + mcp_rows.len() * 2;
    eprintln!(
        "authorization matrix: {total} cells, {} mismatching; scan of {} log lines: {} leaks",
        mismatches.len(),
        logs.lines().count(),
        leaks.len()
    );
    assert!(
        mismatches.is_empty() && leaks.is_empty(),
        "mismatching cells:\n{}\nleaks:\n{}",
        mismatches.join("\n"),
        leaks.join("\n")
    );
}

/// A valid message of each kind (the ids need not name anything).
fn sample(kind: Kind) -> Value {
    let m = uuid();
    match kind {
        Kind::Sync => sync_msg(&m, "r", "hundido"),
        Kind::Command => fire(&m, &uuid(), 0, (0, 0)),
        Kind::CommandStatus => json!({"protocolVersion":1,"type":"game.command-status","matchId":m,"commandId":uuid()}),
        Kind::Unsubscribe => json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":"s-1"}),
    }
}

/// Every caller has one row, and every message kind of the protocol — each variant of
/// `ClientMessage` ([`kind_of`]) and each type of the committed `client-message.json`
/// schema — has its column.
fn check_protocol_complete(matrix: &[(Caller, [Outcome; 4])]) {
    let callers: BTreeSet<Caller> = matrix.iter().map(|(c, _)| *c).collect();
    assert_eq!(callers.len(), matrix.len(), "a caller with two rows");
    for (i, c) in CALLERS.iter().enumerate() {
        assert_eq!(position(*c), i, "CALLERS is in the order of `position`");
    }
    let all: BTreeSet<Caller> = CALLERS.into_iter().collect();
    assert_eq!(callers, all, "every kind of caller has a row of protocol_matrix");
    let mut covered = BTreeSet::new();
    for kind in KINDS {
        let decoded = juegoland_protocol::decode_client(sample(kind).to_string().as_bytes()).expect("a valid sample");
        assert_eq!(kind_of(&decoded), kind);
        covered.insert(decoded.message_type().to_owned());
    }
    let schema = concat!(env!("CARGO_MANIFEST_DIR"), "/../../libs/protocol/schemas/client-message.json");
    let schema = std::fs::read_to_string(schema).expect("the client message schema");
    let schema: Value = serde_json::from_str(&schema).expect("JSON");
    let mut published = BTreeSet::new();
    collect_type_consts(&schema, &mut published);
    assert!(!published.is_empty(), "no message type found in client-message.json");
    assert_eq!(
        published, covered,
        "every client message type of the protocol has a column in protocol_matrix (add a `Kind`, its sample and its outcomes)"
    );
}

fn collect_type_consts(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(c)) = o.get("properties").and_then(|p| p.get("type")).and_then(|t| t.get("const"))
            {
                out.insert(c.clone());
            }
            o.values().for_each(|v| collect_type_consts(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_type_consts(v, out)),
        _ => {}
    }
}

/// The routes `libs/edge/src/http.rs` serves: each `.route("path", get(…).post(…))` with its
/// methods, and each `.nest_service("path", …)` as `ANY`.
fn served_routes() -> BTreeSet<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../libs/edge/src/");
    let src = ["http.rs", "webhook_routes.rs"]
        .map(|file| std::fs::read_to_string(format!("{dir}{file}")).expect("the edge's routes"))
        .concat();
    let mut out = BTreeSet::new();
    for (marker, nested) in [(".route(\"", false), (".nest_service(\"", true)] {
        for (i, _) in src.match_indices(marker) {
            let rest = &src[i + marker.len()..];
            let path = &rest[..rest.find('"').expect("a closing quote")];
            if nested {
                out.insert(("ANY".to_owned(), path.to_owned()));
                continue;
            }
            let args = &rest[path.len() + 1..];
            let mut depth = 1;
            let end = args
                .char_indices()
                .find(|&(_, ch)| {
                    match ch {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|(j, _)| j)
                .expect("the call's closing parenthesis");
            let call = &args[..end];
            for method in ["get", "post", "put", "patch", "delete", "head", "options", "any"] {
                for (j, _) in call.match_indices(&format!("{method}(")) {
                    if matches!(call[..j].chars().last(), None | Some(' ' | ',' | '.' | '(')) {
                        out.insert((method.to_uppercase(), path.to_owned()));
                    }
                }
            }
        }
    }
    out
}

fn check_http_complete(rows: &[(&'static str, &'static str, Policy)]) {
    let table: BTreeSet<(String, String)> = rows.iter().map(|(m, r, _)| ((*m).to_owned(), (*r).to_owned())).collect();
    assert_eq!(table.len(), rows.len(), "a route with two rows");
    let served = served_routes();
    assert!(served.len() > 10, "http.rs parsed to {served:?}");
    let missing: Vec<_> = served.difference(&table).collect();
    let stale: Vec<_> = table.difference(&served).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "http_matrix must list exactly the routes of libs/edge/src/http.rs: add a row for {missing:?}, remove {stale:?}"
    );
}

/// One cell of the HTTP matrix: `route` probed by a request that would succeed for its
/// rightful caller, on the row's `scratch` match.
async fn http_cell(addr: &str, method: &str, route: &str, scratch: &str, bearer: Option<&str>) -> (u16, String) {
    let (path, body) = match route {
        "/" | "/v1/games" | "/metrics" | "/healthz" | "/readyz" | "/v1/feed" => (route.to_owned(), String::new()),
        "/assets/{*path}" => ("/assets/authz-none.js".to_owned(), String::new()),
        "/games/{*path}" => ("/games/authz/none.js".to_owned(), String::new()),
        "/v1/matches" if method == "POST" => {
            let body = json!({"game":"hundido","seats":{"p0":"alice","p1":"bob"},"config":small_hundido()});
            (route.to_owned(), body.to_string())
        }
        "/v1/matches" => ("/v1/matches?principal=alice".to_owned(), String::new()),
        "/v1/matches/{id}" => (format!("/v1/matches/{scratch}"), String::new()),
        "/v1/matches/{id}/withdrawals" => {
            (format!("/v1/matches/{scratch}/withdrawals"), json!({"seat":"p0"}).to_string())
        }
        "/v1/matches/{id}/spectators" => (format!("/v1/matches/{scratch}/spectators"), String::new()),
        "/v1/matches/{id}/replays" => (format!("/v1/matches/{scratch}/replays"), String::new()),
        "/v1/matches/{id}/agents" => (format!("/v1/matches/{scratch}/agents"), json!({"seat":"p1"}).to_string()),
        "/v1/matches/{id}/cancellation" => {
            (format!("/v1/matches/{scratch}/cancellation"), json!({"reasonCode":"authz"}).to_string())
        }
        "/v1/dev/tokens" => (route.to_owned(), json!({"principal":"dave"}).to_string()),
        "/v1/packages/{id}" => ("/v1/packages/hundido".to_owned(), String::new()),
        "/v1/packages/{id}/{version}" => ("/v1/packages/hundido/1.0.0".to_owned(), String::new()),
        "/v1/packages/{id}/{version}/{*path}" => ("/v1/packages/hundido/1.0.0/game.json".to_owned(), String::new()),
        "/v1/ws" => {
            use tokio_tungstenite::tungstenite::client::IntoClientRequest;
            let mut request = format!("ws://{addr}/v1/ws").into_client_request().expect("a request");
            if let Some(b) = bearer {
                request.headers_mut().insert("Authorization", format!("Bearer {b}").parse().expect("a header"));
            }
            return match tokio_tungstenite::connect_async(request).await {
                Ok(_) => (101, String::new()),
                Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
                    let body = r.body().as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
                    (r.status().as_u16(), body)
                }
                Err(e) => panic!("websocket connect: {e}"),
            };
        }
        "/v1/mcp" => {
            let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"authz","version":"0"}}});
            let headers = [("Accept", "application/json, text/event-stream")];
            return http(addr, "POST", "/v1/mcp", bearer, &headers, &body.to_string()).await;
        }
        "/v1/webhooks" if method == "POST" => {
            let body = json!({"id": format!("r-{scratch}"), "url": "http://127.0.0.1:9/"});
            (route.to_owned(), body.to_string())
        }
        "/v1/webhooks" => (route.to_owned(), String::new()),
        webhook if webhook.starts_with("/v1/webhooks/{id}") => {
            // The row's endpoint, registered by the platform (again: 409) before the probe.
            let id = format!("w-{scratch}");
            let register = json!({"id": id, "url": "http://127.0.0.1:9/"}).to_string();
            let (status, body) = http(addr, "POST", "/v1/webhooks", Some(PLATFORM), &[], &register).await;
            assert!(status == 201 || status == 409, "register {id}: {status} {body}");
            let path = webhook.replace("{id}", &id);
            let body = match webhook {
                "/v1/webhooks/{id}" if method == "PATCH" => json!({"url": "http://127.0.0.1:9/moved"}).to_string(),
                "/v1/webhooks/{id}/replay" => json!({"after": "0-0"}).to_string(),
                _ => String::new(),
            };
            (path, body)
        }
        other => panic!("no probe for route {other}: add one to http_cell"),
    };
    http(addr, method, &path, bearer, &[], &body).await
}

/// `principal`'s token signed with the server's secret, expired an hour ago.
fn expired_token(principal: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"sub": principal, "iat": now - 7200, "exp": now - 3600});
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), &claims, &key).unwrap()
}

/// Text as the scan compares it: no whitespace, no escaping backslashes.
fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace() && *c != '\\').collect()
}

/// What a seat keeps hidden, in the forms it may leak in (JSON as the server writes it,
/// Rust's debug format of a log line), compacted: each of its unsunk ships' placement and
/// cells (from its own Hundido snapshot), its ships' orientation (the test gives each seat
/// its own), and each card of its Brisca hand.
fn hidden_of(own_view: &Value, orientation: &str, hand: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut capital = orientation.to_owned();
    capital[..1].make_ascii_uppercase();
    let ships = own_view["view"]["own"]["ships"].as_array().expect("the seat's own ships");
    assert!(!ships.is_empty(), "{own_view}");
    for ship in ships {
        assert_eq!(ship["sunk"], false, "{ship}");
        let (r, c) = (&ship["row"], &ship["column"]);
        out.push(format!(r#""row":{r},"column":{c},"orientation":"{orientation}""#));
        out.push(format!("row:{r},column:{c},orientation:{capital}"));
        for cell in ship["cells"].as_array().unwrap() {
            let (r, c) = (&cell["row"], &cell["column"]);
            // In the struct's order, and sorted (a `serde_json::Value` written out).
            out.push(format!(r#"{{"row":{r},"column":{c}}}"#));
            out.push(format!(r#"{{"column":{c},"row":{r}}}"#));
            out.push(format!("Cell{{row:{r},column:{c}}}"));
        }
    }
    for card in hand {
        let card: Value = serde_json::from_str(card).unwrap();
        let (suit, rank) = (card["suit"].as_str().expect("a suit"), &card["rank"]);
        out.push(format!(r#""suit":"{suit}","rank":{rank}"#));
        out.push(format!(r#""rank":{rank},"suit":"{suit}""#));
        let mut capital = suit.to_owned();
        capital[..1].make_ascii_uppercase();
        out.push(format!("suit:{capital},rank:{rank}"));
    }
    out
}

/// Up to 200 characters of `text` around the first place `needle` appears in its compact
/// form (the whole text's start when it appears only there).
fn around(text: &str, needle: &str) -> String {
    let text = compact(text);
    let at = text.find(needle).unwrap_or(0);
    let start = text.floor_char_boundary(at.saturating_sub(100));
    let end = text.ceil_char_boundary((at + needle.len() + 100).min(text.len()));
    text[start..end].to_owned()
}
