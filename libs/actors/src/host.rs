//! The match host's handle: start-up, creation, activation of a match's actor on first use
//! (claiming the match in the store first), passivation, asking an actor and waiting for its
//! answer, and the supervisor that forgets a stopped or failed actor so the next request
//! re-activates it from the last committed state.
//!
//! The actor itself is `actor.rs`; the outbox's dispatch marks and sweeper `outbox.rs`;
//! local deadline timers and the idle ticker `timers.rs`; bot seats `bots.rs`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use juegoland_api::{Created, MatchError};
use juegoland_bus::Bus;
use juegoland_core::{CreateError, CreateOptions, Engine, GameChoice, LiveMatch, MatchState, Pending, SeatHolder};
use juegoland_sdk::Seat;
use juegoland_store::{Store, StoreError};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use serde_json::Value;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, error, info_span};
use uuid::Uuid;

use crate::actor::{MatchActor, MatchMsg};
use crate::metrics::Metrics;
use crate::outbox::spawn_marker;
use crate::receipts::Receipts;
use crate::shell::{OsEntropy, now_ms, redacted};

/// Host settings, with the defaults a node runs with.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// An actor with no message for this long passivates.
    pub idle_passivation: Duration,
    /// A finished match's actor (the match has a result) with no message for this long
    /// passivates: nothing changes the match again, and a late read or retry activates it
    /// from the store. Without it every match finished in the last `idle_passivation` stays
    /// in memory (docs/benchmarks.md, abuse at the edge: a load test finishing 300 matches a
    /// second grew by hundreds of MiB).
    pub finished_passivation: Duration,
    /// The longest a caller waits for a match actor's answer.
    pub call_timeout: Duration,
    /// How often undispatched outbox rows are swept to the bus.
    pub sweep_interval: Duration,
    /// How long dispatched marks gather before one store call writes them (the newest
    /// revision of each match): a lost or late mark only means a re-dispatch, and the
    /// sweeper writes the gathered marks before it reads, so it never re-sends them.
    pub mark_interval: Duration,
    /// The sweeper sends again what has waited this long undispatched, not younger rows: a
    /// revision dispatched a moment ago may have its mark still gathering on whichever node
    /// dispatched it (several times `mark_interval`).
    pub redispatch_after: Duration,
    /// A match quiet for this long is kept as compact JSON text until its next message.
    pub cool_after: Duration,
    /// Deadlines of an active match due within this get a local timer (the fast path); the
    /// durable scheduler fires the rest, and both go through the same generation check.
    /// `None` leaves every firing to the scheduler.
    pub local_deadline_horizon: Option<Duration>,
    /// How many `queue` commands (real-time input) of one match may wait for its actor at
    /// once; the next is refused with `RATE_LIMITED` (`queue.rs`).
    pub queue_capacity: usize,
    /// How long a bot seat waits after each of its `queue` commands (real-time games).
    pub bot_queue_pause: Duration,
    /// How long a seat's subscription counts present after its gateway last said so
    /// (`juegoland_api::PRESENCE_LEASE`; the gateways renew every `PRESENCE_RENEW`).
    pub presence_lease: Duration,
}

/// The engine spec's default FIFO of `queue` commands per match.
pub const QUEUE_CAPACITY: usize = 16;

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            idle_passivation: Duration::from_secs(300),
            finished_passivation: Duration::from_secs(10),
            call_timeout: Duration::from_secs(10),
            sweep_interval: Duration::from_secs(1),
            mark_interval: Duration::from_millis(200),
            redispatch_after: Duration::from_secs(1),
            cool_after: Duration::from_secs(1),
            local_deadline_horizon: Some(Duration::from_secs(60)),
            queue_capacity: QUEUE_CAPACITY,
            bot_queue_pause: Duration::from_millis(200),
            presence_lease: juegoland_api::PRESENCE_LEASE,
        }
    }
}

pub(crate) struct Shared {
    pub(crate) engine: Arc<Engine>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) bus: Arc<dyn Bus>,
    pub(crate) metrics: Metrics,
    pub(crate) config: HostConfig,
    pub(crate) slots: parking_lot::Mutex<HashMap<Uuid, Arc<OnceCell<ActorRef<MatchMsg>>>>>,
    pub(crate) actor_ids: parking_lot::Mutex<HashMap<ActorId, Uuid>>,
    pub(crate) supervisor: OnceLock<ActorRef<()>>,
    /// Dispatched revisions to mark in the outbox, gathered off the actors' path: the newest
    /// dispatched revision of each match (`outbox.rs`).
    pub(crate) marks: parking_lot::Mutex<BTreeMap<Uuid, u64>>,
    /// The FIFOs of `queue` commands, one per match (`queue.rs`).
    pub(crate) queues: crate::queue::Queues,
    /// The host's background tasks (outbox marker and sweeper, idle ticker), stopped by
    /// [`Host::stop`] and otherwise ended when the last handle is dropped.
    pub(crate) tasks: TaskTracker,
    pub(crate) cancel: CancellationToken,
}

/// A handle to the match host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) shared: Arc<Shared>,
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
        let shared = Arc::new(Shared {
            engine,
            store,
            bus,
            metrics,
            config,
            slots: parking_lot::Mutex::new(HashMap::new()),
            actor_ids: parking_lot::Mutex::new(HashMap::new()),
            supervisor: OnceLock::new(),
            marks: parking_lot::Mutex::new(BTreeMap::new()),
            queues: Default::default(),
            tasks: TaskTracker::new(),
            cancel: CancellationToken::new(),
        });
        spawn_marker(&shared);
        let (supervisor, _) = Actor::spawn(None, Supervisor, Arc::downgrade(&shared))
            .await
            .map_err(|e| MatchError::Internal(format!("start supervisor: {e}")))?;
        let _ = shared.supervisor.set(supervisor);
        let host = Host { shared };
        host.spawn_sweeper();
        host.spawn_idle_ticker();
        Ok(host)
    }

    /// Stops the background tasks: the marker first marks what is queued, the sweeper and
    /// the idle ticker end. Actors are not touched (passivate them first when draining).
    pub async fn stop(&self) {
        self.shared.cancel.cancel();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
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
    /// stored match if it is the same game. Answers what the match pinned.
    pub async fn create_match_with_id(
        &self,
        match_id: Uuid,
        game: &GameChoice,
        seats: BTreeMap<Seat, SeatHolder>,
        config: &Value,
        options: &CreateOptions,
    ) -> Result<Created, MatchError> {
        let created = self.shared.engine.create_with(
            match_id,
            game.clone(),
            seats,
            config,
            options,
            now_ms(),
            &mut OsEntropy::new(),
        );
        let (pending, live) = created.map_err(creation_error)?;
        let created = self.store_creation(pending, live, |s| game.admits(&s.game, s.package.as_ref())).await?;
        debug!(match_id = %match_id, game = %game.id, "match created");
        Ok(created)
    }

    /// Creates the replay match `match_id` of the stored match `source`
    /// (`juegoland_core::ReplayOf`) and activates it: its script starts playing. A creation
    /// retried with the same id answers the stored match if it replays the same source.
    pub async fn create_replay_with_id(
        &self,
        match_id: Uuid,
        source: Uuid,
        speed_percent: u32,
    ) -> Result<Created, MatchError> {
        let stored = self.shared.store.load(source).await?.ok_or(MatchError::NotFound)?;
        let log = self.shared.store.log(source).await?;
        let first = log.first().ok_or_else(|| MatchError::Internal(format!("match {source} has no log")))?;
        let created = self.shared.engine.create_replay(match_id, &stored.snapshot, first, speed_percent, now_ms());
        let (pending, live) = created.map_err(creation_error)?;
        let created =
            self.store_creation(pending, live, |s| s.replay_of.as_ref().is_some_and(|r| r.source == source)).await?;
        debug!(match_id = %match_id, source = %source, speed_percent, "replay match created");
        Ok(created)
    }

    /// Stores a creation and activates the match. When the id is taken (a retried creation
    /// whose first attempt landed), answers the stored match if `same` says it is the one
    /// asked for.
    async fn store_creation(
        &self,
        pending: Pending,
        live: LiveMatch,
        same: impl Fn(&MatchState) -> bool,
    ) -> Result<Created, MatchError> {
        let match_id = pending.commit.match_id;
        let span = info_span!(target: juegoland_telemetry::TRACE_ONLY, "store.commit", match_id = %match_id, revision = 0u64, publications = pending.commit.publications.len());
        match self.shared.store.commit(&pending.commit).instrument(span).await {
            Ok(()) => {}
            Err(StoreError::Conflict { .. }) => {
                let stored = self.shared.store.load(match_id).await?;
                return match stored {
                    Some(s) if same(&s.snapshot) => Ok(Created::of(&s.snapshot)),
                    _ => Err(MatchError::Internal(format!("match id {match_id} is taken by another match"))),
                };
            }
            Err(e) => return Err(e.into()),
        }
        let created = Created::of(live.state());
        self.activate(match_id, Some(live)).await?;
        Ok(created)
    }

    /// Stops the actor of `match_id` if it is active (its match moved to another node, or
    /// the node drains), after it left its state as the match's snapshot; the next request
    /// activates it again from the store.
    pub async fn passivate(&self, match_id: Uuid) {
        let actor = self.shared.slots.lock().get(&match_id).and_then(|s| s.get().cloned());
        if let Some(actor) = actor {
            let timeout = Some(self.shared.config.call_timeout);
            // A failed or slow snapshot only means the next activation redoes the tail.
            let _ = actor.call(|reply| MatchMsg::Passivate { reply }, timeout).await;
            let _ = actor.stop_and_wait(Some("passivated".into()), timeout).await;
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
                let (live, receipts, activated) = match initial {
                    // Just created: no command has a receipt yet.
                    Some(live) => (live, Receipts::default(), false),
                    None => {
                        // Claim first, then load: any commit of a previous owner either
                        // landed before the claim (and is loaded) or fails its fence after.
                        shared.store.claim(match_id).await?.ok_or(MatchError::NotFound)?;
                        let stored = shared.store.load(match_id).await?.ok_or(MatchError::NotFound)?;
                        let receipts = Receipts::new(shared.store.receipts(match_id).await?);
                        shared.metrics.actor_events.with_label_values(&["receipts_loaded"]).inc();
                        // A match pinned to a publication the registry no longer holds as
                        // it was is refused before any rules code runs. The reason names
                        // packages and digests only (no game state), so it is logged whole.
                        shared.engine.check_pin(&stored.snapshot).map_err(|e| {
                            error!(match_id = %match_id, error = %e, "a pinned match cannot be loaded");
                            MatchError::Internal(e.to_string())
                        })?;
                        // The snapshot and the revisions after it, recovered with the
                        // pinned rules (never decided anew).
                        let live = shared.engine.restore(stored).map_err(|f| MatchError::Internal(redacted(&f.0)))?;
                        (live, receipts, true)
                    }
                };
                let supervisor = shared.supervisor.get().expect("supervisor started").get_cell();
                let (actor, _) = Actor::spawn_linked(
                    None,
                    MatchActor { shared: shared.clone() },
                    (live, receipts, activated),
                    supervisor,
                )
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
}

/// A creation's refusal as the match API tells it (a fault's text redacted).
fn creation_error(e: CreateError) -> MatchError {
    match e {
        CreateError::Fault(f) => MatchError::Internal(redacted(&f.0)),
        other => MatchError::from(other),
    }
}

pub(crate) fn forget(shared: &Shared, match_id: Uuid, actor: ActorId) {
    if shared.actor_ids.lock().remove(&actor).is_some() {
        shared.metrics.active_actors.dec();
    }
    let mut slots = shared.slots.lock();
    if slots.get(&match_id).is_some_and(|s| s.get().is_some_and(|a| a.get_id() == actor)) {
        slots.remove(&match_id);
        shared.queues.forget(match_id);
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
