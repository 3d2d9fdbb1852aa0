//! What the gateway keeps for the agent seats its MCP server serves ([`AgentSeats`]): per
//! granted seat (match, seat), what the seat is (its game, its profile, the game's declared
//! instructions and limits: [`AgentSeat`]) and a follower of the seat's snapshots — a
//! subscription like any seat's (`subscription.rs`: the sync barrier, the bus, resyncs, the
//! seat's own projection and offers), whose snapshots land in a watch instead of a socket.
//!
//! The tools read the follower's latest snapshot (`get_view`, `legal_actions`), wait on it
//! (`wait_for_turn`: until the seat has an offer or the match is over, never by polling the
//! store) and submit through the match API (`play`). A follower that nobody has asked for
//! [`FOLLOWER_IDLE`] stops, and the next call starts another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use juegoland_api::Controller;
use juegoland_core::GameKey;
use juegoland_protocol::{ContractTuple, ErrorCode, ErrorMessage, ServerMessage, Snapshot, SyncRequest};
use juegoland_sdk::{AgentLimits, AgentProfile};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;
use uuid::Uuid;

use crate::auth::agent_principal;
use crate::gateway::{Gateway, host_error};
use crate::outbox::Outbox;
use crate::subscription::{Viewer, subscribe};

/// How long a follower nobody asked for lives on.
pub(crate) const FOLLOWER_IDLE: Duration = Duration::from_secs(300);
/// Messages a follower's outbox holds before its subscription counts as not reading.
const FOLLOWER_QUEUE: usize = 64;

/// One granted agent seat: what it is, and its follower.
pub(crate) struct AgentSeat {
    pub match_id: Uuid,
    pub seat: String,
    /// `agent:<seat>`: what the match receipts the seat's commands under.
    pub principal: String,
    pub game: GameKey,
    pub profile: AgentProfile,
    pub instructions: String,
    /// The schemas of the game's action payloads, by action type (what a parametrized offer
    /// names by URN).
    pub payload_schemas: HashMap<String, serde_json::Value>,
    seen: watch::Receiver<Seen>,
    /// When a tool last asked for the seat (the follower stops after [`FOLLOWER_IDLE`]).
    last_used: Arc<Mutex<Instant>>,
    _follower: AbortOnDropHandle<()>,
}

/// What the follower has seen of the seat.
#[derive(Clone, Debug)]
pub(crate) enum Seen {
    /// Nothing yet: the first sync is on its way.
    Nothing,
    /// The seat's latest snapshot; `turn_since` is when the seat got its current offers (the
    /// first snapshot of this revision with offers), for the think time.
    Snapshot { snapshot: Arc<Snapshot>, turn_since: Option<std::time::SystemTime> },
    /// The subscription was refused or ended with this error.
    Failed(ErrorMessage),
}

impl Seen {
    pub(crate) fn snapshot(&self) -> Option<&Arc<Snapshot>> {
        match self {
            Seen::Snapshot { snapshot, .. } => Some(snapshot),
            Seen::Nothing | Seen::Failed(_) => None,
        }
    }
}

impl AgentSeat {
    pub(crate) fn limits(&self) -> AgentLimits {
        self.profile.limits
    }

    /// The latest snapshot, waiting up to `timeout` for the first one.
    pub(crate) async fn current(&self, timeout: Duration) -> Result<Seen, ErrorMessage> {
        self.wait_for(timeout, |seen| !matches!(seen, Seen::Nothing)).await
    }

    /// Waits until `ready` holds for what the follower has seen, or `timeout` passes (then
    /// answers what it has seen, whatever it is); a failed follower answers its error.
    pub(crate) async fn wait_for(
        &self,
        timeout: Duration,
        ready: impl Fn(&Seen) -> bool,
    ) -> Result<Seen, ErrorMessage> {
        self.touch();
        let mut seen = self.seen.clone();
        let found = tokio::time::timeout(timeout, seen.wait_for(|s| ready(s) || matches!(s, Seen::Failed(_))))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|s| Seen::clone(&s));
        // Without a match (the time ran out, or the follower ended): what it saw last.
        let current = found.unwrap_or_else(|| self.seen.borrow().clone());
        match current {
            Seen::Failed(e) => Err(e),
            Seen::Nothing => Err(self.unavailable()),
            other => Ok(other),
        }
    }

    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle(&self) -> bool {
        idle(&self.last_used)
    }

    fn unavailable(&self) -> ErrorMessage {
        ErrorMessage::new(ErrorCode::Unavailable).with_match_id(self.match_id)
    }

    /// Whether the follower still runs.
    fn alive(&self) -> bool {
        !matches!(*self.seen.borrow(), Seen::Failed(_)) && self.seen.has_changed().is_ok()
    }
}

/// The followed seats, by match and seat.
type Followed = HashMap<(Uuid, String), Arc<AgentSeat>>;

/// Every agent seat this gateway's MCP server follows.
#[derive(Clone, Default)]
pub(crate) struct AgentSeats {
    seats: Arc<Mutex<Followed>>,
}

impl AgentSeats {
    /// The agent seat `seat` of `match_id`, following it from now on if nobody did. Refused
    /// FORBIDDEN when that seat is not (or no longer) an agent's, MATCH_NOT_FOUND and the
    /// like as the match API answers.
    pub(crate) async fn seat(
        &self,
        gateway: &Gateway,
        match_id: Uuid,
        seat: &str,
    ) -> Result<Arc<AgentSeat>, ErrorMessage> {
        let key = (match_id, seat.to_owned());
        if let Some(found) = self.lock().get(&key).filter(|s| s.alive()).cloned() {
            found.touch();
            return Ok(found);
        }
        let forbidden = || {
            let mut e = ErrorMessage::new(ErrorCode::Forbidden).with_match_id(match_id);
            e.message_key = juegoland_api::AGENT_ONLY_KEY.into();
            e
        };
        let summary = gateway.matches.describe(match_id).await.map_err(|e| host_error(gateway, &e, Some(match_id)))?;
        let Some(Controller::Agent { profile }) = summary.seats.iter().find(|s| s.seat == seat).map(|s| &s.controller)
        else {
            return Err(forbidden());
        };
        let registry = gateway.matches.registry();
        let loaded = registry.get(&summary.game).ok_or_else(forbidden)?;
        let d = loaded.descriptor();
        let agents = d.agents.as_ref().ok_or_else(forbidden)?;
        let profile = agents.profile(profile).ok_or_else(forbidden)?.clone();
        let tuple = ContractTuple {
            id: d.id.clone(),
            rules_version: d.rules_version.clone(),
            view_schema_version: d.view_schema_version,
            event_schema_version: d.event_schema_version,
        };
        let principal = agent_principal(seat);
        let (tx, rx) = watch::channel(Seen::Nothing);
        let last_used = Arc::new(Mutex::new(Instant::now()));
        let follower = tokio::spawn(follow(gateway.clone(), principal.clone(), match_id, tuple, tx, last_used.clone()));
        let found = Arc::new(AgentSeat {
            match_id,
            seat: seat.to_owned(),
            principal,
            game: summary.game.clone(),
            profile,
            instructions: agents.instructions.clone(),
            payload_schemas: d.actions.iter().map(|a| (a.action_type.clone(), a.payload_schema.clone())).collect(),
            seen: rx,
            last_used,
            _follower: AbortOnDropHandle::new(follower),
        });
        let mut seats = self.lock();
        // Idle followers go when another seat is followed (at most one sweep per new seat).
        seats.retain(|_, s| !s.idle() && s.alive());
        // Two first calls at once: the first one in is kept.
        Ok(seats.entry(key).or_insert(found).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Followed> {
        self.seats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn idle(last_used: &Mutex<Instant>) -> bool {
    last_used.lock().unwrap_or_else(|p| p.into_inner()).elapsed() >= FOLLOWER_IDLE
}

/// The follower: one subscription of the seat, its outbox drained into the watch, until no
/// tool has asked for the seat for [`FOLLOWER_IDLE`].
async fn follow(
    gateway: Gateway,
    principal: String,
    match_id: Uuid,
    tuple: ContractTuple,
    seen: watch::Sender<Seen>,
    last_used: Arc<Mutex<Instant>>,
) {
    let (out, mut rx) = Outbox::channel(FOLLOWER_QUEUE);
    let request =
        SyncRequest { request_id: format!("mcp-{}", juegoland_api::random_uuid()), match_id, accept: vec![tuple] };
    let subscription_id = format!("s-{}", juegoland_api::random_uuid());
    let _subscription = AbortOnDropHandle::new(tokio::spawn(subscribe(
        gateway,
        Viewer::Seat(principal),
        request,
        subscription_id,
        out,
    )));
    let mut idle_check = tokio::time::interval(FOLLOWER_IDLE / 5);
    loop {
        let message = tokio::select! {
            message = rx.recv() => match message {
                Some(message) => message,
                None => break,
            },
            _ = idle_check.tick() => {
                if idle(&last_used) {
                    // Nobody asks any more: the next call starts another follower.
                    seen.send_replace(Seen::Failed(ErrorMessage::new(ErrorCode::Unavailable).with_match_id(match_id)));
                    return;
                }
                continue;
            }
        };
        match juegoland_protocol::decode_server(message.text.as_bytes()) {
            Ok(ServerMessage::Snapshot(snapshot)) => seen.send_modify(|s| {
                // A resync of the same revision keeps the turn's start; a new revision with
                // offers starts a new one (the seat's own move included, as the match counts).
                let turn_since = match s {
                    Seen::Snapshot { snapshot: previous, turn_since }
                        if previous.revision == snapshot.revision && !snapshot.actions.is_empty() =>
                    {
                        turn_since.or_else(|| Some(std::time::SystemTime::now()))
                    }
                    _ if !snapshot.actions.is_empty() => Some(std::time::SystemTime::now()),
                    _ => None,
                };
                *s = Seen::Snapshot { snapshot: Arc::new(*snapshot), turn_since };
            }),
            Ok(ServerMessage::Error(e)) => {
                seen.send_replace(Seen::Failed(e));
                return;
            }
            // Cursors are progress readings; the subscription resyncs by itself.
            Ok(_) => {}
            Err(e) => {
                tracing::error!(match_id = %match_id, error = %e, "a follower could not read its own subscription");
                seen.send_replace(Seen::Failed(ErrorMessage::new(ErrorCode::Internal).with_match_id(match_id)));
                return;
            }
        }
    }
    // The subscription ended (the bus ended it, or the gateway shuts down).
    seen.send_replace(Seen::Failed(ErrorMessage::new(ErrorCode::Unavailable).with_match_id(match_id)));
}
