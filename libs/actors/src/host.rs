//! The match host: one supervised actor per active match.
//!
//! The actor is the match's serialization point: it holds the live match, asks the pure
//! engine for a decision, commits it through the store (whose revision compare-and-set is
//! the fence), then answers and dispatches the publications to the bus. Rule rejections are
//! replies, not actor failures; only real faults fail the actor, and the supervisor lets the
//! next request re-activate it from the last committed state. Activation is on first use,
//! passivation after an idle time.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use juegoland_api::{MatchError, Refusal, SyncReply};
use juegoland_bus::Bus;
use juegoland_core::{
    Decision, Engine, GameKey, LifecycleError, LifecycleRequest, LiveMatch, MatchState, Pending, ReceiptKey, SeatHolder,
};
use juegoland_protocol::{Action, CommandEnvelope, ErrorCode, ErrorMessage, Precondition, ServerMessage};
use juegoland_sdk::{ConflictPolicy, Recipient, Seat};
use juegoland_store::{Store, StoreError};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use serde_json::Value;
use tokio::sync::OnceCell;
use tracing::{Instrument, Span, debug, error, info, info_span, warn};
use uuid::Uuid;

use crate::metrics::Metrics;
use crate::shell::{OsEntropy, now_ms, random_uuid, redacted};

/// Host settings, with the defaults a node runs with.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// An actor with no message for this long passivates.
    pub idle_passivation: Duration,
    /// The longest a caller waits for a match actor's answer.
    pub call_timeout: Duration,
    /// How often undispatched outbox rows are swept to the bus.
    pub sweep_interval: Duration,
    /// A match quiet for this long is kept as compact JSON text until its next message.
    pub cool_after: Duration,
    /// Deadlines of an active match due within this get a local timer (the fast path); the
    /// durable scheduler fires the rest, and both go through the same generation check.
    /// `None` leaves every firing to the scheduler.
    pub local_deadline_horizon: Option<Duration>,
    /// Fault injection for crash tests: abort the process right after the N-th successful
    /// commit of a match actor, before answering or publishing. Never set in production.
    pub crash_after_commits: Option<u64>,
    /// Fault injection for delivery tests: the publications of this revision (of every
    /// match) are marked dispatched but never reach the bus, as if lost on the way. Never
    /// set in production.
    pub lose_publications_of_revision: Option<u64>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            idle_passivation: Duration::from_secs(300),
            call_timeout: Duration::from_secs(10),
            sweep_interval: Duration::from_secs(1),
            cool_after: Duration::from_secs(1),
            local_deadline_horizon: Some(Duration::from_secs(60)),
            crash_after_commits: None,
            lose_publications_of_revision: None,
        }
    }
}

pub enum MatchMsg {
    Command {
        principal: String,
        envelope: CommandEnvelope,
        reply: RpcReplyPort<ServerMessage>,
        /// The caller's span (a node's `node.call`, a gateway's `gateway.command`): the
        /// parent of the actor's `match.command` span, so the command stays one trace.
        span: Span,
    },
    Sync {
        principal: String,
        reply: RpcReplyPort<Result<SyncReply, ErrorMessage>>,
    },
    CommandStatus {
        principal: String,
        command_id: Uuid,
        reply: RpcReplyPort<ServerMessage>,
    },
    Lifecycle {
        request: LifecycleRequest,
        reply: RpcReplyPort<Result<u64, MatchError>>,
        /// The caller's span: the parent of the actor's `match.lifecycle` span.
        span: Span,
    },
    /// A bot seat's decision (an action, or none), for the revision it was decided on.
    BotMove {
        seat: Seat,
        revision: u64,
        decided: Option<(String, Value)>,
    },
    IdleCheck,
    /// Keep the match as compact text if it stayed quiet for `HostConfig::cool_after`.
    Cool,
    /// A local timer for the deadline `id` at `generation` is due (the fast path).
    LocalDeadline {
        id: String,
        generation: u64,
    },
    /// The committed state, for tests and admin reads.
    Inspect {
        reply: RpcReplyPort<MatchState>,
    },
    /// The last committed revision (for cursors).
    Revision {
        reply: RpcReplyPort<u64>,
    },
}

struct Shared {
    engine: Arc<Engine>,
    store: Arc<dyn Store>,
    bus: Arc<dyn Bus>,
    metrics: Metrics,
    config: HostConfig,
    slots: parking_lot::Mutex<HashMap<Uuid, Arc<OnceCell<ActorRef<MatchMsg>>>>>,
    /// Successful actor commits so far (for `crash_after_commits`).
    commits: std::sync::atomic::AtomicU64,
    actor_ids: parking_lot::Mutex<HashMap<ActorId, Uuid>>,
    supervisor: OnceLock<ActorRef<()>>,
    /// Dispatched revisions to mark in the outbox, grouped off the actors' path.
    marks: tokio::sync::mpsc::UnboundedSender<(Uuid, u64)>,
}

/// A handle to the match host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    shared: Arc<Shared>,
}

impl Host {
    /// Starts the host: its supervisor and its outbox sweeper.
    pub async fn start(
        engine: Arc<Engine>,
        store: Arc<dyn Store>,
        bus: Arc<dyn Bus>,
        metrics: Metrics,
        config: HostConfig,
    ) -> Result<Self, MatchError> {
        let (marks, marks_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            engine,
            store,
            bus,
            metrics,
            config,
            slots: parking_lot::Mutex::new(HashMap::new()),
            commits: std::sync::atomic::AtomicU64::new(0),
            actor_ids: parking_lot::Mutex::new(HashMap::new()),
            supervisor: OnceLock::new(),
            marks,
        });
        spawn_marker(shared.store.clone(), marks_rx);
        let (supervisor, _) = Actor::spawn(None, Supervisor, Arc::downgrade(&shared))
            .await
            .map_err(|e| MatchError::Internal(format!("start supervisor: {e}")))?;
        let _ = shared.supervisor.set(supervisor);
        let host = Host { shared };
        host.spawn_sweeper();
        host.spawn_idle_ticker();
        Ok(host)
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.shared.engine
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.shared.bus
    }

    /// Creates the match `match_id` (revision 0) and activates it, so bot seats start
    /// playing. A creation retried with the same id after an unknown outcome answers the
    /// stored match if it is the same game.
    pub async fn create_match_with_id(
        &self,
        match_id: Uuid,
        game: &GameKey,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
    ) -> Result<Uuid, MatchError> {
        let (pending, live) =
            self.shared.engine.create(match_id, game, seats, config, now_ms(), &mut OsEntropy::new()).map_err(|e| {
                match e {
                    juegoland_core::CreateError::Fault(f) => MatchError::Internal(redacted(&f.0)),
                    other => MatchError::from(other),
                }
            })?;
        let span = info_span!("store.commit", match_id = %match_id, revision = 0u64, publications = pending.commit.publications.len());
        match self.shared.store.commit(&pending.commit).instrument(span).await {
            Ok(()) => {}
            Err(StoreError::Conflict { .. }) => {
                let stored = self.shared.store.load(match_id).await?;
                return match stored {
                    Some(s) if s.game == *game => Ok(match_id),
                    _ => Err(MatchError::Internal(format!("match id {match_id} is taken by another match"))),
                };
            }
            Err(e) => return Err(e.into()),
        }
        info!(match_id = %match_id, game = %game.id, "match created");
        self.activate(match_id, Some(live)).await?;
        Ok(match_id)
    }

    /// Stops the actor of `match_id` if it is active (its match moved to another node, or
    /// the node drains); the next request activates it again from the store.
    pub async fn passivate(&self, match_id: Uuid) {
        let actor = self.shared.slots.lock().get(&match_id).and_then(|s| s.get().cloned());
        if let Some(actor) = actor {
            let _ = actor.stop_and_wait(Some("passivated".into()), Some(self.shared.config.call_timeout)).await;
            self.forget(match_id, actor.get_id());
        }
    }

    /// The matches with an active actor.
    pub fn active_matches(&self) -> Vec<Uuid> {
        self.shared.actor_ids.lock().values().copied().collect()
    }

    /// The committed state of a match (activating it if needed).
    pub async fn inspect(&self, match_id: Uuid) -> Result<MatchState, MatchError> {
        self.ask(match_id, |reply| MatchMsg::Inspect { reply }).await
    }

    /// How many match actors are active.
    pub fn active_actors(&self) -> usize {
        self.shared.actor_ids.lock().len()
    }

    /// Asks the actor of `match_id` (activating it) and waits for its answer.
    pub(crate) async fn ask<T: Send + 'static>(
        &self,
        match_id: Uuid,
        build: impl Fn(RpcReplyPort<T>) -> MatchMsg,
    ) -> Result<T, MatchError> {
        // One retry: the actor may have passivated or failed between lookup and send.
        for attempt in 0..2 {
            let actor = self.actor(match_id).await?;
            match actor.call(&build, Some(self.shared.config.call_timeout)).await {
                Ok(ractor::rpc::CallResult::Success(v)) => return Ok(v),
                Ok(ractor::rpc::CallResult::Timeout) => {
                    return Err(MatchError::Unavailable("the match did not answer in time".into()));
                }
                Ok(ractor::rpc::CallResult::SenderError) => {
                    return Err(MatchError::Unavailable("the match stopped while answering".into()));
                }
                Err(_) if attempt == 0 => self.forget(match_id, actor.get_id()),
                Err(e) => return Err(MatchError::Unavailable(format!("match actor: {e}"))),
            }
        }
        Err(MatchError::Unavailable("the match is restarting".into()))
    }

    fn forget(&self, match_id: Uuid, actor: ActorId) {
        forget(&self.shared, match_id, actor);
    }

    /// The actor of `match_id`, activating it from the store on first use.
    async fn actor(&self, match_id: Uuid) -> Result<ActorRef<MatchMsg>, MatchError> {
        self.activate(match_id, None).await
    }

    /// The actor of `match_id`; a new one starts from `initial` (a match just created) or
    /// else from the store.
    async fn activate(&self, match_id: Uuid, initial: Option<LiveMatch>) -> Result<ActorRef<MatchMsg>, MatchError> {
        let slot = self.shared.slots.lock().entry(match_id).or_default().clone();
        let shared = self.shared.clone();
        let result = slot
            .get_or_try_init(|| async move {
                let live = match initial {
                    Some(live) => live,
                    None => {
                        // Claim first, then load: any commit of a previous owner either
                        // landed before the claim (and is loaded) or fails its fence after.
                        shared.store.claim(match_id).await?.ok_or(MatchError::NotFound)?;
                        let state = shared.store.load(match_id).await?.ok_or(MatchError::NotFound)?;
                        shared.engine.load(state).map_err(|f| MatchError::Internal(redacted(&f.0)))?
                    }
                };
                let supervisor = shared.supervisor.get().expect("supervisor started").get_cell();
                let (actor, _) = Actor::spawn_linked(None, MatchActor { shared: shared.clone() }, live, supervisor)
                    .await
                    .map_err(|e| MatchError::Internal(format!("spawn match actor: {e}")))?;
                shared.actor_ids.lock().insert(actor.get_id(), match_id);
                shared.metrics.active_actors.inc();
                shared.metrics.actor_events.with_label_values(&["activation"]).inc();
                Ok::<_, MatchError>(actor)
            })
            .await
            .cloned();
        if result.is_err() {
            let mut slots = self.shared.slots.lock();
            if slots.get(&match_id).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                slots.remove(&match_id);
            }
        }
        result
    }

    /// One ticker for every actor's idle check (a timer per actor would cost each one its
    /// own task).
    fn spawn_idle_ticker(&self) {
        let weak = Arc::downgrade(&self.shared);
        let period = (self.shared.config.idle_passivation / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                let actors: Vec<ActorRef<MatchMsg>> =
                    shared.slots.lock().values().filter_map(|slot| slot.get().cloned()).collect();
                drop(shared);
                for actor in actors {
                    let _ = actor.cast(MatchMsg::IdleCheck);
                }
            }
        });
    }

    fn spawn_sweeper(&self) {
        let weak = Arc::downgrade(&self.shared);
        let interval = self.shared.config.sweep_interval;
        // The sweeper's owner is the host: it ends when the host is dropped.
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                if let Err(e) = sweep(&shared).await {
                    warn!(error = %e, "outbox sweep failed");
                }
                measure_backlog(&shared).await;
            }
        });
    }
}

/// Marks dispatched revisions in the outbox, as many per store call as have queued up. The
/// task ends when the host (the sender) is dropped; a failed mark is left to the sweeper.
fn spawn_marker(store: Arc<dyn Store>, mut marks: tokio::sync::mpsc::UnboundedReceiver<(Uuid, u64)>) {
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while marks.recv_many(&mut batch, 1024).await > 0 {
            if let Err(e) = store.mark_dispatched(&batch).await {
                warn!(error = %e, marks = batch.len(), "could not mark the outbox dispatched; the sweeper will resend");
            }
            batch.clear();
        }
    });
}

fn forget(shared: &Shared, match_id: Uuid, actor: ActorId) {
    if shared.actor_ids.lock().remove(&actor).is_some() {
        shared.metrics.active_actors.dec();
    }
    let mut slots = shared.slots.lock();
    if slots.get(&match_id).is_some_and(|s| s.get().is_some_and(|a| a.get_id() == actor)) {
        slots.remove(&match_id);
    }
}

/// The span of one command on its actor: a child of `parent` (the caller's span) or a root
/// (a bot's move). It names the match, the command and the seat, and records the outcome
/// and the revision the command produced or was judged at; never the action or its payload.
fn command_span(
    parent: Option<tracing::Id>,
    state: &MatchActorState,
    principal: &str,
    envelope: &CommandEnvelope,
) -> Span {
    let seat = state.hot.as_ref().and_then(|live| live.state().seat_of(principal));
    info_span!(
        parent: parent,
        "match.command",
        match_id = %envelope.match_id,
        command_id = %envelope.command_id,
        seat,
        outcome = tracing::field::Empty,
        revision = tracing::field::Empty,
    )
}

/// The span of one lifecycle operation on its actor (withdraw, cancel, fire a deadline).
fn lifecycle_span(parent: Option<tracing::Id>, match_id: Uuid, request: &LifecycleRequest) -> Span {
    let op = match request {
        LifecycleRequest::Withdraw { .. } => "withdraw",
        LifecycleRequest::Cancel { .. } => "cancel",
        LifecycleRequest::FireDeadline { .. } => "fire_deadline",
    };
    info_span!(parent: parent, "match.lifecycle", match_id = %match_id, op)
}

/// Re-dispatches outbox rows left undispatched (after a crash or a bus failure).
async fn sweep(shared: &Shared) -> Result<(), MatchError> {
    const LIMIT: usize = 512;
    let rows = shared.store.undispatched(LIMIT).await?;
    let full = rows.len() == LIMIT;
    let mut by_revision: BTreeMap<(Uuid, u64), Vec<juegoland_core::Publication>> = BTreeMap::new();
    for row in rows {
        by_revision.entry((row.publication.match_id, row.publication.revision)).or_default().push(row.publication);
    }
    // A full page may end in the middle of a revision: leave the last revision for the next
    // round rather than publish part of it and mark all of it (unless it is all there is).
    if full && by_revision.len() > 1 {
        by_revision.pop_last();
    }
    for ((match_id, revision), pubs) in by_revision {
        // The re-dispatch joins the trace of the commit that wrote the rows; the publications
        // keep that commit's context, so the deliveries continue it too.
        let span =
            info_span!(parent: None, "outbox.redispatch", match_id = %match_id, revision, publications = pubs.len());
        if let Some(trace_context) = pubs.first().and_then(|p| p.trace_context.as_deref()) {
            juegoland_telemetry::set_parent_from_text(&span, trace_context);
        }
        match shared.bus.publish(&pubs).instrument(span).await {
            Ok(()) => {
                shared.store.mark_dispatched(&[(match_id, revision)]).await?;
                shared.metrics.dispatch.with_label_values(&["swept"]).inc();
            }
            Err(e) => {
                shared.metrics.dispatch.with_label_values(&["failed"]).inc();
                return Err(MatchError::Unavailable(e.to_string()));
            }
        }
    }
    Ok(())
}

/// Sets the outbox backlog gauges from the store (left as they were when it cannot answer).
async fn measure_backlog(shared: &Shared) {
    match shared.store.outbox_backlog().await {
        Ok(backlog) => {
            // The age first: a reader that sees no rows sees no age either.
            shared.metrics.outbox_backlog_age.set(backlog.oldest_age.map_or(0.0, |age| age.as_secs_f64()));
            shared.metrics.outbox_backlog.set(i64::try_from(backlog.rows).unwrap_or(i64::MAX));
        }
        Err(e) => warn!(error = %e, "could not measure the outbox backlog"),
    }
}

/// Watches match actors: a stopped or failed actor is forgotten, and the next request
/// re-activates it from the last committed state.
struct Supervisor;

impl Actor for Supervisor {
    type Msg = ();
    type State = std::sync::Weak<Shared>;
    type Arguments = std::sync::Weak<Shared>;

    async fn pre_start(&self, _: ActorRef<()>, args: Self::Arguments) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let Some(shared) = state.upgrade() else { return Ok(()) };
        let (cell, failed) = match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            _ => return Ok(()),
        };
        let id = cell.get_id();
        let match_id = shared.actor_ids.lock().get(&id).copied();
        if let Some(match_id) = match_id {
            match failed {
                Some(err) => {
                    error!(match_id = %match_id, error = %err, "match actor failed; it restarts from the last commit on next use");
                    shared.metrics.actor_events.with_label_values(&["failure"]).inc();
                }
                None => shared.metrics.actor_events.with_label_values(&["passivation"]).inc(),
            }
            forget(&shared, match_id, id);
        }
        Ok(())
    }
}

struct MatchActor {
    shared: Arc<Shared>,
}

pub struct MatchActorState {
    /// The match while in use (every message but the timers' warms it first).
    hot: Option<LiveMatch>,
    /// The match while quiet: its committed state as compact JSON text, a fraction of the
    /// decoded form's memory (most active matches are between moves most of the time).
    cold: Option<Box<str>>,
    /// A `Cool` message is scheduled.
    cool_scheduled: bool,
    /// Deadline generations with a local timer armed.
    armed: std::collections::BTreeSet<(String, u64)>,
    last_activity: Instant,
    /// The revision a bot move is being computed for, if any.
    bot_pending: Option<u64>,
    /// The revision at which a bot had nothing to do (not asked again until it changes).
    bot_idle: Option<u64>,
    /// A rules fault met while handling the current message: after answering, the actor
    /// fails, and the supervisor's next activation starts from the last commit.
    fault: Option<String>,
}

impl MatchActorState {
    fn live(&self) -> &LiveMatch {
        self.hot.as_ref().expect("every message but the timers' warms the match first")
    }

    fn live_mut(&mut self) -> &mut LiveMatch {
        self.hot.as_mut().expect("every message but the timers' warms the match first")
    }

    /// Decodes a quiet match back into its live form; true if it was quiet.
    fn warm(&mut self, engine: &Engine) -> Result<bool, String> {
        let Some(text) = self.cold.take() else { return Ok(false) };
        let state: MatchState = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        self.hot = Some(engine.load(state).map_err(|f| redacted(&f.0))?);
        Ok(true)
    }

    /// Keeps a quiet match as the JSON text of its committed state.
    fn cool(&mut self) -> Result<(), serde_json::Error> {
        if let Some(live) = &self.hot {
            self.cold = Some(serde_json::to_string(live.state())?.into_boxed_str());
            self.hot = None;
        }
        Ok(())
    }
}

impl Actor for MatchActor {
    type Msg = MatchMsg;
    type State = MatchActorState;
    type Arguments = LiveMatch;

    async fn pre_start(&self, _: ActorRef<MatchMsg>, live: LiveMatch) -> Result<Self::State, ActorProcessingErr> {
        Ok(MatchActorState {
            hot: Some(live),
            cold: None,
            cool_scheduled: false,
            armed: Default::default(),
            last_activity: Instant::now(),
            bot_pending: None,
            bot_idle: None,
            fault: None,
        })
    }

    async fn post_start(&self, myself: ActorRef<MatchMsg>, state: &mut Self::State) -> Result<(), ActorProcessingErr> {
        self.maybe_bot(&myself, state);
        self.arm_deadlines(&myself, state);
        self.schedule_cool(&myself, state);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<MatchMsg>,
        msg: MatchMsg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Boxed: ractor keeps the handler's future inline in each actor's task for the
        // actor's whole life, and this one (store, engine, bus calls) is kilobytes.
        Box::pin(self.handle_msg(myself, msg, state)).await
    }
}

impl MatchActor {
    /// A live match gets a `Cool` check after `cool_after` (one pending at a time).
    fn schedule_cool(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        if state.hot.is_some() && !state.cool_scheduled {
            state.cool_scheduled = true;
            myself.send_after(self.shared.config.cool_after, || MatchMsg::Cool);
        }
    }

    async fn handle_msg(
        &self,
        myself: ActorRef<MatchMsg>,
        msg: MatchMsg,
        state: &mut MatchActorState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(msg, MatchMsg::IdleCheck | MatchMsg::Cool) {
            state.last_activity = Instant::now();
            match state.warm(&self.shared.engine) {
                Ok(true) => self.shared.metrics.actor_events.with_label_values(&["warmed"]).inc(),
                Ok(false) => {}
                Err(fault) => return Err(format!("reload a quiet match: {fault}").into()),
            }
        }
        match msg {
            MatchMsg::Command { principal, envelope, reply, span } => {
                let span = command_span(span.id(), state, &principal, &envelope);
                let answer = self.command(&myself, state, &principal, &envelope).instrument(span).await;
                let _ = reply.send(answer);
            }
            MatchMsg::Sync { principal, reply } => {
                let _ = reply.send(self.sync(state, &principal));
            }
            MatchMsg::CommandStatus { principal, command_id, reply } => {
                let _ = reply.send(self.command_status(state, &principal, command_id).await);
            }
            MatchMsg::Lifecycle { request, reply, span } => {
                let span = lifecycle_span(span.id(), state.live().state().match_id, &request);
                let answer = self.lifecycle(&myself, state, &request).instrument(span).await;
                let _ = reply.send(answer);
            }
            MatchMsg::BotMove { seat, revision, decided } => {
                state.bot_pending = None;
                let current = revision == state.live().state().revision;
                match decided {
                    Some((action_type, payload)) if current => {
                        self.bot_move(&myself, state, &seat, action_type, payload).await;
                    }
                    Some(_) => {}
                    None => {
                        warn!(match_id = %state.live().state().match_id, seat, revision, "bot had no move");
                        state.bot_idle = Some(revision);
                    }
                }
                self.maybe_bot(&myself, state);
            }
            MatchMsg::LocalDeadline { id, generation } => {
                self.fire_local(&myself, state, id, generation).await;
            }
            MatchMsg::Cool => {
                state.cool_scheduled = false;
                if state.last_activity.elapsed() >= self.shared.config.cool_after && state.bot_pending.is_none() {
                    if let Err(e) = state.cool() {
                        return Err(format!("store a quiet match as text: {e}").into());
                    }
                    self.shared.metrics.actor_events.with_label_values(&["cooled"]).inc();
                }
            }
            MatchMsg::IdleCheck => {
                if state.last_activity.elapsed() >= self.shared.config.idle_passivation && state.bot_pending.is_none() {
                    myself.stop(Some("idle".into()));
                }
            }
            MatchMsg::Inspect { reply } => {
                let _ = reply.send(state.live().state().clone());
            }
            MatchMsg::Revision { reply } => {
                let _ = reply.send(state.live().state().revision);
            }
        }
        self.schedule_cool(&myself, state);
        match state.fault.take() {
            // Failing hands the actor to its supervisor: this match alone restarts, from its
            // last commit, on its next use.
            Some(fault) => Err(format!("rules fault: {fault}").into()),
            None => Ok(()),
        }
    }

    fn error(&self, code: ErrorCode, match_id: Uuid, command_id: Option<Uuid>) -> ServerMessage {
        let mut e = ErrorMessage::new(code);
        e.match_id = Some(match_id);
        e.command_id = command_id;
        ServerMessage::Error(e)
    }

    async fn command(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        principal: &str,
        envelope: &CommandEnvelope,
    ) -> ServerMessage {
        let started = Instant::now();
        let m = &self.shared.metrics;
        let match_id = state.live().state().match_id;
        let command_id = Some(envelope.command_id);
        let key = ReceiptKey { match_id, principal: principal.to_owned(), command_id: envelope.command_id };
        let existing = match self.shared.store.receipt(&key).await {
            Ok(r) => r,
            Err(e) => {
                Span::current().record("outcome", "unavailable");
                warn!(match_id = %match_id, error = %e, "receipt lookup failed");
                m.commands.with_label_values(&["unavailable", ""]).inc();
                return self.error(ErrorCode::Unavailable, match_id, command_id);
            }
        };
        let decided = Instant::now();
        let decision =
            self.shared.engine.command(state.live(), principal, envelope, existing, now_ms(), &mut OsEntropy::new());
        m.command_seconds.with_label_values(&["decide"]).observe(decided.elapsed().as_secs_f64());
        let answer = match decision {
            Decision::Duplicate(receipt) => {
                Span::current().record("outcome", "duplicate");
                m.commands.with_label_values(&["duplicate", ""]).inc();
                receipt.ack(true)
            }
            Decision::IdReused => {
                Span::current().record("outcome", "reused");
                m.commands.with_label_values(&["reused", ""]).inc();
                self.error(ErrorCode::CommandIdReused, match_id, command_id)
            }
            Decision::Forbidden => {
                Span::current().record("outcome", "forbidden");
                m.commands.with_label_values(&["forbidden", ""]).inc();
                self.error(ErrorCode::Forbidden, match_id, command_id)
            }
            Decision::Fault(f) => {
                Span::current().record("outcome", "fault");
                let fault = redacted(&f.0);
                error!(match_id = %match_id, command_id = %envelope.command_id, fault, "command failed internally; nothing committed");
                m.commands.with_label_values(&["fault", ""]).inc();
                state.fault = Some(fault);
                self.error(ErrorCode::Internal, match_id, command_id)
            }
            Decision::Commit(pending) => match self.commit(myself, state, *pending).await {
                Ok(commit) => {
                    let receipt = commit.receipt.as_ref().expect("a command commit carries its receipt");
                    match &receipt.outcome {
                        juegoland_core::ReceiptOutcome::Applied { revision } => {
                            Span::current().record("outcome", "applied").record("revision", revision);
                            debug!(match_id = %match_id, revision, "command applied");
                            m.commands.with_label_values(&["applied", ""]).inc();
                        }
                        juegoland_core::ReceiptOutcome::Rejected { code, revision } => {
                            Span::current().record("outcome", "rejected").record("revision", revision);
                            debug!(match_id = %match_id, revision, code = code.as_str(), "command rejected");
                            m.commands.with_label_values(&["rejected", code.as_str()]).inc();
                        }
                    }
                    receipt.ack(false)
                }
                Err(e) => {
                    Span::current().record("outcome", "unavailable");
                    m.commands.with_label_values(&["unavailable", ""]).inc();
                    let mut msg = e.to_error_message(Some(match_id));
                    msg.command_id = command_id;
                    ServerMessage::Error(msg)
                }
            },
        };
        m.command_seconds.with_label_values(&["total"]).observe(started.elapsed().as_secs_f64());
        answer
    }

    /// Stores a pending operation, advances the live match, dispatches its publications.
    ///
    /// The commit runs in a `store.commit` span (a child of the current `match.command` or
    /// `match.lifecycle`); its W3C context, when the trace is to travel, goes into every
    /// publication, hence into the outbox rows and the stream entries, and the gateways'
    /// deliveries continue it.
    async fn commit(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        mut pending: Pending,
    ) -> Result<juegoland_core::Commit, MatchError> {
        let started = Instant::now();
        let span = info_span!(
            "store.commit",
            match_id = %pending.commit.match_id,
            revision = pending.commit.revision_after(),
            publications = pending.commit.publications.len(),
        );
        if !pending.commit.publications.is_empty()
            && let Some(trace_context) = juegoland_telemetry::trace_context(&span)
        {
            for p in &mut pending.commit.publications {
                p.trace_context = Some(trace_context.clone());
            }
        }
        let result = self.shared.store.commit(&pending.commit).instrument(span).await;
        self.shared.metrics.command_seconds.with_label_values(&["commit"]).observe(started.elapsed().as_secs_f64());
        match result {
            Ok(()) => {
                let n = self.shared.commits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if self.shared.config.crash_after_commits == Some(n) {
                    error!(commits = n, "fault injection: aborting right after a commit, before answering");
                    std::process::abort();
                }
            }
            Err(StoreError::Conflict { .. }) => {
                // Another writer moved the match: this actor's view is stale. Stop so the
                // next request reloads from the store.
                warn!(match_id = %pending.commit.match_id, "stale match actor fenced by the store; stopping");
                myself.stop(Some("fenced".into()));
                return Err(MatchError::Unavailable("the match moved; retry the same command".into()));
            }
            Err(e) => return Err(e.into()),
        }
        let commit = state.live_mut().advance(pending);
        if let Some(revision) = commit.state.as_ref().map(|s| s.revision)
            && !commit.publications.is_empty()
        {
            let lost = self.shared.config.lose_publications_of_revision == Some(revision);
            if lost {
                warn!(match_id = %commit.match_id, revision, "fault injection: publications lost after the commit");
            }
            let published = if lost {
                Ok(())
            } else {
                let span = info_span!(
                    "bus.publish",
                    match_id = %commit.match_id,
                    revision,
                    publications = commit.publications.len(),
                );
                self.shared.bus.publish(&commit.publications).instrument(span).await
            };
            match published {
                Ok(()) => {
                    self.shared.metrics.dispatch.with_label_values(&["ok"]).inc();
                    // Marked in the background with other matches' marks: the answer does not
                    // wait for it, and a mark lost in a crash only means a re-dispatch.
                    let _ = self.shared.marks.send((commit.match_id, revision));
                }
                Err(e) => {
                    self.shared.metrics.dispatch.with_label_values(&["failed"]).inc();
                    warn!(match_id = %commit.match_id, error = %e, "publish failed; the sweeper will resend");
                }
            }
        }
        if commit.state.is_some() {
            self.maybe_bot(myself, state);
            self.arm_deadlines(myself, state);
        }
        Ok(commit)
    }

    fn sync(&self, state: &MatchActorState, principal: &str) -> Result<SyncReply, ErrorMessage> {
        let s = state.live().state();
        let forbidden = || {
            let mut e = ErrorMessage::new(ErrorCode::Forbidden);
            e.match_id = Some(s.match_id);
            e
        };
        let seat = s.seat_of(principal).ok_or_else(forbidden)?;
        let snapshot = state.live().snapshot(Recipient::Seat(seat), &self.shared.engine).map_err(|f| {
            error!(match_id = %s.match_id, fault = redacted(&f.0), "snapshot failed");
            let mut e = ErrorMessage::new(ErrorCode::Internal);
            e.match_id = Some(s.match_id);
            e
        })?;
        let d = state.live().game().descriptor();
        Ok(SyncReply {
            seat: seat.to_owned(),
            revision: s.revision,
            game: s.game.clone(),
            view_schema_version: d.view_schema_version,
            event_schema_version: d.event_schema_version,
            snapshot,
        })
    }

    async fn command_status(&self, state: &MatchActorState, principal: &str, command_id: Uuid) -> ServerMessage {
        let match_id = state.live().state().match_id;
        if state.live().state().seat_of(principal).is_none() {
            return self.error(ErrorCode::Forbidden, match_id, Some(command_id));
        }
        let key = ReceiptKey { match_id, principal: principal.to_owned(), command_id };
        match self.shared.store.receipt(&key).await {
            Ok(Some(r)) => r.ack(true),
            Ok(None) => ServerMessage::CommandUnknown(juegoland_protocol::CommandUnknown { match_id, command_id }),
            Err(_) => self.error(ErrorCode::Unavailable, match_id, Some(command_id)),
        }
    }

    async fn lifecycle(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        request: &LifecycleRequest,
    ) -> Result<u64, MatchError> {
        let pending =
            self.shared.engine.lifecycle(state.live(), request, now_ms(), &mut OsEntropy::new()).map_err(|e| {
                let e = match e {
                    LifecycleError::Fault(f) => LifecycleError::Fault(juegoland_core::Fault(redacted(&f.0))),
                    other => other,
                };
                if let LifecycleError::Fault(f) = &e {
                    state.fault = Some(f.0.clone());
                }
                MatchError::from(e)
            })?;
        let commit = self.commit(myself, state, pending).await?;
        Ok(commit.state.map(|s| s.revision).unwrap_or_default())
    }

    /// Arms a local timer for each current deadline generation due within the horizon.
    fn arm_deadlines(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let (Some(live), Some(horizon)) = (&state.hot, self.shared.config.local_deadline_horizon) else { return };
        let deadlines = &live.state().deadlines;
        state.armed.retain(|(id, g)| deadlines.get(id).is_some_and(|d| d.generation == *g));
        let horizon = i64::try_from(horizon.as_millis()).unwrap_or(i64::MAX);
        let now = now_ms();
        let due: Vec<(String, u64, i64)> = deadlines
            .iter()
            .filter(|(id, d)| d.due_ms - now <= horizon && !state.armed.contains(&((*id).clone(), d.generation)))
            .map(|(id, d)| (id.clone(), d.generation, d.due_ms))
            .collect();
        for (id, generation, due_ms) in due {
            let delay = Duration::from_millis(u64::try_from(due_ms - now).unwrap_or(0));
            state.armed.insert((id.clone(), generation));
            myself.send_after(delay, move || MatchMsg::LocalDeadline { id: id.clone(), generation });
        }
    }

    /// Fires a deadline from its local timer, through the same generation check as the
    /// durable scheduler's firing: whichever comes second is stale.
    async fn fire_local(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState, id: String, generation: u64) {
        state.armed.remove(&(id.clone(), generation));
        let m = &self.shared.metrics;
        let due_ms = state.live().state().deadlines.get(&id).filter(|d| d.generation == generation).map(|d| d.due_ms);
        let request = LifecycleRequest::FireDeadline { id, generation };
        let span = lifecycle_span(None, state.live().state().match_id, &request);
        match self.lifecycle(myself, state, &request).instrument(span).await {
            Ok(_) => {
                m.local_deadlines.with_label_values(&["fired"]).inc();
                if let Some(due_ms) = due_ms {
                    m.local_deadline_lag.observe((now_ms() - due_ms).max(0) as f64 / 1000.0);
                }
            }
            Err(MatchError::Refused { refusal: Refusal::StaleDeadline | Refusal::MatchFinished, .. }) => {
                m.local_deadlines.with_label_values(&["stale"]).inc();
            }
            Err(e) => {
                warn!(match_id = %state.live().state().match_id, error = %e, "local deadline firing failed; the scheduler will fire it");
                m.local_deadlines.with_label_values(&["failed"]).inc();
            }
        }
    }

    /// Starts computing a bot seat's move off the actor, if a bot is to act.
    fn maybe_bot(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        let s = state.live().state();
        if state.bot_pending.is_some() || s.is_finished() || state.bot_idle == Some(s.revision) {
            return;
        }
        // A bot seat whose stage allows some action (a seat waiting for others has none).
        let d = state.live().game().descriptor();
        let phase = d.phase(&s.position.flow.phase);
        let can_act =
            |stage: &str| phase.is_some_and(|p| p.stages.iter().any(|st| st.id == stage && !st.actions.is_empty()));
        let Some((seat, profile)) = s.position.flow.actors.iter().find_map(|(seat, stage)| match s.seats.get(seat) {
            Some(SeatHolder::Bot(profile)) if can_act(stage) => Some((seat.clone(), profile.clone())),
            _ => None,
        }) else {
            return;
        };
        let revision = s.revision;
        let game = state.live().game().clone();
        let position = s.position.clone();
        state.bot_pending = Some(revision);
        let myself = myself.clone();
        tokio::task::spawn_blocking(move || {
            let decided = game
                .game
                .decode_position(&position)
                .ok()
                .and_then(|p| game.game.bot_action(&p, &seat, &profile, &mut OsEntropy::new()));
            // The actor may have stopped meanwhile; then there is nobody to tell.
            let _ = myself.cast(MatchMsg::BotMove { seat, revision, decided });
        });
    }

    async fn bot_move(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        seat: &str,
        action_type: String,
        payload: Value,
    ) {
        let s = state.live().state();
        let policy = state.live().game().descriptor().action(&action_type).map(|a| a.policy);
        let precondition = match policy {
            Some(ConflictPolicy::Actor) => Precondition::Actor {
                phase_epoch: s.phase_epoch,
                actor_revision: s.actor_revisions.get(seat).copied().unwrap_or_default(),
            },
            _ => Precondition::Match { revision: s.revision },
        };
        let envelope = CommandEnvelope {
            match_id: s.match_id,
            command_id: random_uuid(),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        let principal = format!("{}{seat}", juegoland_core::state::BOT_PREFIX);
        // A bot's move starts a trace of its own.
        let span = command_span(None, state, &principal, &envelope);
        let answer = self.command(myself, state, &principal, &envelope).instrument(span).await;
        if let ServerMessage::Error(e) = answer {
            warn!(match_id = %envelope.match_id, seat, code = ?e.code, "bot command failed");
        }
    }
}
