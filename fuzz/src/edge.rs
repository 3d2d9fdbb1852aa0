//! `edge_frames`: one client connection of the gateway, fed through its transport's adapter
//! (WebSocket or Socket.IO, `juegoland_edge::fuzzing`) into the protocol loop, over an
//! in-process match host (`juegoland_actors::Host` with a `MemoryStore`, a `LocalBus` and
//! every catalog game).
//!
//! Input: choices ([`arbitrary::Unstructured`]): the transport, the bearer (a player, or a
//! spectator's grant), the games of matches A and B (the client holds a seat in both), then up
//! to [`MAX_FRAMES`] inputs: syncs (right or wrong contracts, known or unknown matches),
//! commands from the offers of the snapshots received so far (parametrized payloads drawn
//! from the action's schema), commands with any action, payload and precondition, statuses,
//! unsubscribes (known or unknown ids), well-formed messages with bytes changed, any text,
//! binary frames, Socket.IO events under another name or with attachments, pings, waits for
//! the answers, a close.
//!
//! Before them the connection syncs a third match C (Conecta 4, the client's rival to move),
//! which no input names. Holds: no panic; every message the loop sends decodes as the server
//! message its type says, and none is INTERNAL or UNAVAILABLE; each subscription's snapshots
//! never go back in revision; after the inputs (unless they closed the connection) the rival
//! moves in C and the connection delivers C's new snapshot; the loop ends only by the close.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::Matches;
use juegoland_bus::LocalBus;
use juegoland_core::{GameKey, SeatHolder};
use juegoland_edge::GatewayConfig;
use juegoland_edge::auth::{Bearer, Scope, spectator_principal};
use juegoland_edge::fuzzing::{Connection, Edge, Ended, Sent, TransportInput, WsMessage};
use juegoland_protocol::{
    Action, CommandEnvelope, ErrorCode, Precondition, ServerMessage, Snapshot, WireOffer, decode_server,
};
use juegoland_store::MemoryStore;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::json::{arbitrary_string, arbitrary_value};
use crate::schema::Generator;

/// The most inputs one connection gets.
pub const MAX_FRAMES: usize = 48;

const A: Uuid = Uuid::from_u128(0xa000_0000_0000_4000_8000_0000_0000_000a);
const B: Uuid = Uuid::from_u128(0xb000_0000_0000_4000_8000_0000_0000_000b);
/// The bystander match; no input names it.
const C: Uuid = Uuid::from_u128(0xc000_0000_0000_4000_8000_0000_0000_000c);

pub fn run(data: &[u8]) {
    play(data);
}

/// What one input made the connection answer (what the seed generator looks for).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Answers {
    pub applied: u32,
    pub snapshots: u32,
    pub errors: u32,
}

/// Plays one input on a fresh host and connection.
pub fn play(data: &[u8]) -> Answers {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let mut u = Unstructured::new(data);
    let answers = runtime.block_on(async { drive(&mut u).await });
    runtime.shutdown_background();
    answers
}

/// The matches' contracts, as a client accepts them.
fn contract(key: &GameKey) -> Value {
    let game = crate::games::engine().registry.get(key).expect("a catalog game");
    let d = game.game.descriptor();
    json!([{"id": d.id, "rulesVersion": d.rules_version, "viewSchemaVersion": d.view_schema_version,
            "eventSchemaVersion": d.event_schema_version}])
}

struct Session<'c> {
    conn: &'c mut Connection,
    socket_io: bool,
    keys: BTreeMap<Uuid, GameKey>,
    /// The newest snapshot received per match (offers to take).
    snapshots: BTreeMap<Uuid, Snapshot>,
    /// Each subscription's newest revision delivered.
    delivered: BTreeMap<String, u64>,
    subscriptions: Vec<(Uuid, String)>,
    commands: Vec<(Uuid, Uuid)>,
    /// The last texts sent, to send again or change.
    texts: Vec<String>,
    control: Option<String>,
    next_id: u128,
    closed: bool,
    named_control: bool,
    answers: &'c mut Answers,
}

async fn drive(u: &mut Unstructured<'_>) -> Answers {
    let engine = Arc::new(crate::games::engine().clone());
    let store: Arc<dyn juegoland_store::Store> = Arc::new(MemoryStore::new());
    let bus = Arc::new(LocalBus::default());
    let metrics = Metrics::new(&prometheus::Registry::new()).expect("fresh metrics register");
    let host = Host::start(engine, store, bus.clone(), metrics, HostConfig::default()).await.expect("a host starts");
    let mut answers = Answers::default();
    let _ = session(u, &host, bus, &mut answers).await;
    host.stop().await;
    answers
}

async fn session(u: &mut Unstructured<'_>, host: &Host, bus: Arc<LocalBus>, answers: &mut Answers) -> Result<()> {
    let registry = &crate::games::engine().registry;
    let games: Vec<GameKey> = registry.games().map(|g| g.key()).collect();
    let mut keys = BTreeMap::new();
    for id in [A, B] {
        let key = u.choose(&games)?.clone();
        let d = registry.get(&key).expect("a catalog game").game.descriptor().clone();
        let n = d.min_seats.max(2).min(d.max_seats) as usize;
        let alice = u.choose_index(n)?;
        let seats = juegoland_sdk::seat_ids(n)
            .into_iter()
            .enumerate()
            .map(|(i, s)| (s, SeatHolder::Principal(if i == alice { "alice".into() } else { format!("rival-{i}") })))
            .collect();
        host.create_match_with_id(id, &(&key).into(), seats, &json!({}), &Default::default())
            .await
            .expect("a match is created");
        keys.insert(id, key);
    }
    let conecta4 = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = BTreeMap::from([
        ("p0".to_owned(), SeatHolder::Principal("bob".into())),
        ("p1".to_owned(), SeatHolder::Principal("alice".into())),
    ]);
    host.create_match_with_id(C, &(&conecta4).into(), seats, &json!({}), &Default::default())
        .await
        .expect("the bystander is created");

    let limits = juegoland_edge::EdgeLimits {
        messages_per_second: 100_000,
        burst: 100_000,
        ..juegoland_edge::EdgeLimits::default()
    };
    let config = GatewayConfig { limits, ..GatewayConfig::default() };
    let edge = Edge::new(Arc::new(host.clone()) as Arc<dyn Matches>, bus, config);
    let bearer = if u.ratio(1, 8)? {
        Bearer { principal: spectator_principal(A), scope: Scope::Spectate(A) }
    } else {
        Bearer::seats("alice")
    };
    let spectator = bearer.spectating().is_some();
    let mut conn = edge.connect(bearer, 4096);
    let mut s = Session {
        conn: &mut conn,
        socket_io: u.arbitrary()?,
        keys,
        snapshots: BTreeMap::new(),
        delivered: BTreeMap::new(),
        subscriptions: Vec::new(),
        commands: Vec::new(),
        texts: Vec::new(),
        control: None,
        next_id: 1,
        closed: false,
        named_control: false,
        answers,
    };
    if !spectator {
        s.sync_control(&conecta4).await;
    }
    for _ in 0..MAX_FRAMES {
        if u.is_empty() || s.closed {
            break;
        }
        s.input(u).await?;
    }
    s.settle().await;
    if !s.closed && !spectator && !s.named_control {
        s.bystander_moves(host).await;
    }
    let closed = s.closed;
    let (ended, rest) = conn.finish().await;
    assert_eq!(ended, Ended::Closed, "the loop ended by itself (closed by the input: {closed})");
    for sent in rest {
        check_sent(&sent);
    }
    Ok(())
}

/// Every message the loop sends is the server message its type says, and no fault.
fn check_sent(sent: &Sent) -> ServerMessage {
    let message = decode_server(sent.text.as_bytes())
        .unwrap_or_else(|e| panic!("the loop sent {:?}, which does not decode: {e:?}", sent.text));
    assert_eq!(message.message_type(), sent.kind, "a message sent under another type");
    if let ServerMessage::Error(e) = &message {
        assert!(!matches!(e.code, ErrorCode::Internal | ErrorCode::Unavailable), "the loop answered {:?}", e.code);
    }
    message
}

impl Session<'_> {
    fn receive(&mut self, sent: Sent) {
        let message = check_sent(&sent);
        match &message {
            ServerMessage::Ack(ack) if ack.status == juegoland_protocol::AckStatus::Applied => {
                self.answers.applied += 1
            }
            ServerMessage::Snapshot(_) => self.answers.snapshots += 1,
            ServerMessage::Error(_) => self.answers.errors += 1,
            _ => {}
        }
        if let ServerMessage::Snapshot(snapshot) = message {
            let last = self.delivered.entry(snapshot.subscription_id.clone()).or_insert(0);
            assert!(
                snapshot.revision >= *last,
                "subscription {} went back from revision {last} to {}",
                snapshot.subscription_id,
                snapshot.revision
            );
            *last = snapshot.revision;
            let known = (snapshot.match_id, snapshot.subscription_id.clone());
            if snapshot.match_id != C && !self.subscriptions.contains(&known) {
                self.subscriptions.push(known);
            }
            if snapshot.match_id == C && snapshot.request_id.as_deref() == Some("control") {
                self.control = Some(snapshot.subscription_id.clone());
            }
            self.snapshots.insert(snapshot.match_id, *snapshot);
        }
    }

    /// Lets the host, the bus and the loop work, taking in what the loop sends, until it has
    /// been quiet for a while. Everything they do runs on this runtime's one thread and waits
    /// for no clock, so yielding is enough: each yield lets every ready task run once.
    async fn settle(&mut self) {
        let mut quiet = 0;
        for _ in 0..5_000 {
            let mut got = false;
            while let Some(sent) = self.conn.try_recv() {
                self.receive(sent);
                got = true;
            }
            quiet = if got { 0 } else { quiet + 1 };
            if quiet >= 64 {
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    /// Settles until `done` holds, waiting a millisecond between tries, for at most two
    /// seconds.
    async fn settle_until(&mut self, done: impl Fn(&Self) -> bool) -> bool {
        for _ in 0..2_000 {
            self.settle().await;
            if done(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        false
    }

    /// Sends one message's text the transport's way, as its own type's event on Socket.IO.
    fn send_text(&mut self, text: String, event: Option<&str>) {
        if self.keys_named_control(&text) {
            self.named_control = true;
        }
        let input = if self.socket_io {
            let name = serde_json::to_string(event.unwrap_or("game.command")).expect("a string serializes");
            TransportInput::SocketIo { data: format!("[{name},{text}]"), attachments: 0 }
        } else {
            TransportInput::WebSocket(WsMessage::Text(text.clone()))
        };
        self.texts.push(text);
        self.conn.send(input);
    }

    fn keys_named_control(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        lower.contains(&C.hyphenated().to_string()) || lower.contains(&C.simple().to_string())
    }

    async fn sync_control(&mut self, key: &GameKey) {
        let message = json!({"protocolVersion": 1, "type": "game.sync", "requestId": "control", "matchId": C,
                             "accept": contract(key)});
        let input = if self.socket_io {
            TransportInput::SocketIo { data: json!(["game.sync", message]).to_string(), attachments: 0 }
        } else {
            TransportInput::WebSocket(WsMessage::Text(message.to_string()))
        };
        assert!(self.conn.send(input));
        assert!(self.settle_until(|s| s.control.is_some()).await, "the control match's sync was not answered");
    }

    fn pick_match(&self, u: &mut Unstructured<'_>) -> Result<Uuid> {
        Ok(match u.int_in_range(0..=7u8)? {
            0..=3 => A,
            4..=6 => B,
            _ => Uuid::from_u128(u.arbitrary()?),
        })
    }

    fn command_id(&mut self, u: &mut Unstructured<'_>, match_id: Uuid) -> Result<Uuid> {
        let used: Vec<Uuid> = self.commands.iter().filter(|(m, _)| *m == match_id).map(|(_, c)| *c).collect();
        if !used.is_empty() && u.ratio(1, 8)? {
            return Ok(*u.choose(&used)?);
        }
        self.next_id += 1;
        let id = Uuid::from_u128((0xc0de << 64) | self.next_id);
        self.commands.push((match_id, id));
        Ok(id)
    }

    async fn input(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=99u8)? {
            0..=14 => {
                let match_id = self.pick_match(u)?;
                let accept = match (self.keys.get(&match_id), u.int_in_range(0..=5u8)?) {
                    (Some(key), 0..=3) => contract(key),
                    (_, 4) => json!([{"id": arbitrary_string(u)?, "rulesVersion": "1.0.0", "viewSchemaVersion": 1,
                                      "eventSchemaVersion": u.int_in_range(0..=2u32)?}]),
                    _ => arbitrary_value(u, 2)?,
                };
                let request_id =
                    if u.ratio(7, 8)? { format!("r{}", u.int_in_range(0..=9u8)?) } else { arbitrary_string(u)? };
                let m = json!({"protocolVersion": 1, "type": "game.sync", "requestId": request_id, "matchId": match_id,
                               "accept": accept});
                self.send_text(m.to_string(), Some("game.sync"));
            }
            15..=44 => self.offer_command(u)?,
            45..=54 => {
                let match_id = self.pick_match(u)?;
                let command_id = self.command_id(u, match_id)?;
                let action_type = match self.keys.get(&match_id) {
                    Some(key) if u.ratio(3, 4)? => {
                        let game = crate::games::engine().registry.get(key).expect("a catalog game");
                        let actions = &game.game.descriptor().actions;
                        u.choose(actions)?.action_type.clone()
                    }
                    _ => arbitrary_string(u)?,
                };
                let precondition = match u.int_in_range(0..=2u8)? {
                    0 => Precondition::Match { revision: u.int_in_range(0..=4)? },
                    1 => Precondition::Actor {
                        phase_epoch: u.int_in_range(0..=4)?,
                        actor_revision: u.int_in_range(0..=4)?,
                    },
                    _ => Precondition::Queue,
                };
                let payload = match arbitrary_value(u, 3)? {
                    object @ Value::Object(_) => object,
                    other => json!({ "value": other }),
                };
                self.send_command(match_id, command_id, action_type, payload, precondition);
            }
            55..=59 => {
                let known = !self.commands.is_empty() && u.ratio(3, 4)?;
                let (match_id, command_id) = if known {
                    *u.choose(&self.commands)?
                } else {
                    (self.pick_match(u)?, Uuid::from_u128(u.arbitrary()?))
                };
                let m = json!({"protocolVersion": 1, "type": "game.command-status", "matchId": match_id, "commandId": command_id});
                self.send_text(m.to_string(), Some("game.command-status"));
            }
            60..=64 => {
                let known = !self.subscriptions.is_empty() && u.ratio(3, 4)?;
                let (match_id, subscription_id) = if known {
                    let (m, s) = u.choose(&self.subscriptions)?.clone();
                    (if u.ratio(7, 8)? { m } else { self.pick_match(u)? }, s)
                } else {
                    (self.pick_match(u)?, format!("s-{}", arbitrary_string(u)?))
                };
                let m = json!({"protocolVersion": 1, "type": "game.unsubscribe", "matchId": match_id,
                               "subscriptionId": subscription_id});
                self.send_text(m.to_string(), Some("game.unsubscribe"));
            }
            65..=74 if !self.texts.is_empty() => {
                let text = u.choose(&self.texts)?.clone();
                let changed = change_bytes(u, &text)?;
                let event =
                    *u.choose(&["game.sync", "game.command", "game.command-status", "game.unsubscribe", "x"])?;
                self.send_text(changed, Some(event));
            }
            65..=82 => {
                let text: String = u.arbitrary()?;
                let event = *u.choose(&["game.sync", "game.command", "nope"])?;
                if self.socket_io && u.ratio(1, 2)? {
                    self.conn.send(TransportInput::SocketIo { data: text, attachments: 0 });
                } else {
                    self.send_text(text, Some(event));
                }
            }
            83..=85 => {
                let input = if self.socket_io {
                    let text = self.texts.last().cloned().unwrap_or_else(|| "{}".into());
                    if u.arbitrary()? {
                        TransportInput::SocketIo { data: format!(r#"["game.sync",{text}]"#), attachments: 1 }
                    } else {
                        TransportInput::SocketIo { data: format!(r#"["game.sync",{text},{text}]"#), attachments: 0 }
                    }
                } else {
                    TransportInput::WebSocket(WsMessage::Binary(u.arbitrary()?))
                };
                self.conn.send(input);
            }
            86..=87 => {
                if self.socket_io {
                    self.conn.send(TransportInput::SocketIo { data: arbitrary_string(u)?, attachments: 0 });
                } else {
                    self.conn.send(TransportInput::WebSocket(WsMessage::Ping(u.arbitrary()?)));
                }
            }
            88..=96 => self.settle().await,
            97 => {
                if self.socket_io {
                    // A Socket.IO client closes by disconnecting: the input ends.
                    self.closed = true;
                } else {
                    self.conn.send(TransportInput::WebSocket(WsMessage::Close));
                    self.closed = true;
                }
            }
            _ => {
                if let Some(text) = self.texts.last().cloned() {
                    self.send_text(text, Some("game.command"));
                }
            }
        }
        Ok(())
    }

    /// A command built from an offer of the newest snapshot of a match.
    fn offer_command(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let offers: Vec<(Uuid, WireOffer)> = self
            .snapshots
            .iter()
            .filter(|(m, _)| **m != C)
            .flat_map(|(m, s)| s.actions.iter().map(|o| (*m, o.clone())))
            .collect();
        if offers.is_empty() {
            return Ok(());
        }
        let (match_id, offer) = u.choose(&offers)?.clone();
        let command_id = self.command_id(u, match_id)?;
        match offer {
            WireOffer::Concrete(o) => {
                let payload: Value = serde_json::from_str(o.payload.get()).expect("an offered payload is JSON");
                self.send_command(match_id, command_id, o.r#type, payload, o.precondition);
            }
            WireOffer::Parametrized(o) => {
                let key = &self.keys[&match_id];
                let game = crate::games::engine().registry.get(key).expect("a catalog game");
                let spec = game.game.descriptor().action(&o.r#type).expect("an offer of a declared action");
                let payload = Generator::new(&spec.payload_schema, if u.ratio(3, 4)? { 0 } else { 12 }).value(u)?;
                self.send_command(match_id, command_id, o.r#type, payload, o.precondition);
            }
        }
        Ok(())
    }

    fn send_command(
        &mut self,
        match_id: Uuid,
        command_id: Uuid,
        action_type: String,
        payload: Value,
        precondition: Precondition,
    ) {
        let envelope =
            CommandEnvelope { match_id, command_id, precondition, action: Action { r#type: action_type, payload } };
        let text = juegoland_protocol::encode_client(&juegoland_protocol::ClientMessage::Command(envelope));
        self.send_text(text, Some("game.command"));
    }

    /// The rival moves in C; the connection delivers C's next snapshot.
    async fn bystander_moves(&mut self, host: &Host) {
        let state = host.inspect(C).await.expect("the bystander match is there");
        let envelope = CommandEnvelope {
            match_id: C,
            command_id: Uuid::from_u128(0xb0b),
            precondition: Precondition::Match { revision: state.revision },
            action: Action { r#type: "drop".into(), payload: json!({"column": 3}) },
        };
        match host.command("bob", envelope).await.expect("the rival's move is answered") {
            ServerMessage::Ack(ack) if ack.revision == Some(state.revision + 1) => {}
            other => panic!("the rival's move in C was not applied: {other:?}"),
        }
        let control = self.control.clone().expect("the control subscription");
        let delivered = self.settle_until(|s| s.delivered.get(&control).is_some_and(|r| *r > state.revision)).await;
        assert!(delivered, "the connection stopped serving C: its revision {} never arrived", state.revision + 1);
    }
}

/// `text` with a few bytes changed: removed, repeated, replaced, or a member duplicated.
fn change_bytes(u: &mut Unstructured<'_>, text: &str) -> Result<String> {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..u.int_in_range(1..=4u8)? {
        if bytes.is_empty() {
            break;
        }
        let at = u.choose_index(bytes.len())?;
        match u.int_in_range(0..=4u8)? {
            0 => {
                bytes.remove(at);
            }
            1 => {
                let b = bytes[at];
                bytes.insert(at, b);
            }
            2 => bytes[at] = u.arbitrary()?,
            3 => bytes.insert(at, *u.choose(b"{}[]\",:\\0e-.")?),
            _ => {
                // Repeat a span: often a duplicated member or nesting.
                let end = (at + u.int_in_range(1..=24usize)?).min(bytes.len());
                let span = bytes[at..end].to_vec();
                bytes.splice(at..at, span);
            }
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
