//! The shared registry of nodes on PostgreSQL (`nodes`, migration 0003), with leases
//! measured by the DATABASE clock, so the nodes' clocks do not matter.
//!
//! # Which piece to use
//!
//! - A node serving matches: [`join`] to get a [`Lease`], then [`Heartbeat::start`] to keep
//!   it; stop committing as soon as the heartbeat reports [`LeaseLost`] (self-fencing), and
//!   on a graceful stop [`Lease::set_draining`] (routers stop sending new work), hand the
//!   matches over, [`Heartbeat::stop`] and [`Lease::release`].
//! - Anyone placing matches (routers, nodes forwarding a call): [`Membership::start`], then
//!   [`Membership::ring`] for each lookup, or [`Membership::subscribe`] to react to changes;
//!   [`Membership::refresh_now`] after a peer answers that it does not own a match.
//! - A one-off listing: [`live_members`].
//!
//! A node is a live member while `lease_until > now()` on the database and it is not
//! draining. Every node computes the same [`Ring`] from the same rows, so two routers that
//! read the registry at the same moment agree; between two reloads they may briefly
//! disagree, which is why a node must check ownership (and the store's fence) itself.
//!
//! The `nodes` table is created by the workspace migrations, which `juegoland_store::PgStore`
//! runs when it connects; this module assumes they have run on the pool it is given.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus::{IntCounter, IntGauge, Registry};
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info, info_span, warn};
use uuid::Uuid;

use crate::ring::{Member, Ring};

/// How long one reload of the member list may take before it counts as a failure.
const LOAD_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    /// The database cannot be reached, is restarting, or the statement lost a race; retry
    /// later.
    #[error("membership registry unavailable: {0}")]
    Unavailable(String),
    /// The database refused the statement for a reason no retry fixes (a missing `nodes`
    /// table, a bad argument), or a row does not decode; a human must look.
    #[error("membership registry error: {0}")]
    Corrupt(String),
}

/// Maps a sqlx error met while doing `action` (`"renew the lease"`).
fn db_error(action: &str, e: sqlx::Error) -> MembershipError {
    use sqlx::Error as E;
    let transient = match &e {
        E::Io(_) | E::Tls(_) | E::Protocol(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::BeginFailed => {
            true
        }
        // SQLSTATE: 08 connection exception, 53 insufficient resources, 57P01..57P03 shutdown
        // and start-up, 57014 statement timeout or cancel, 40001 serialization failure,
        // 40P01 deadlock, 55P03 lock not available.
        E::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08")
                || code.starts_with("53")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "57014" | "40001" | "40P01" | "55P03")
        }),
        _ => false,
    };
    if transient {
        MembershipError::Unavailable(format!("{action}: {e}"))
    } else {
        MembershipError::Corrupt(format!("{action}: {e}"))
    }
}

/// A lease's time to live in seconds, as the SQL statements take it.
fn ttl_secs(ttl: Duration) -> Result<f64, MembershipError> {
    if ttl.is_zero() {
        return Err(MembershipError::Corrupt("a lease needs a positive ttl".to_owned()));
    }
    Ok(ttl.as_secs_f64())
}

/// A new random (version 4) incarnation id from the operating system's entropy.
fn new_incarnation() -> Result<Uuid, MembershipError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| MembershipError::Corrupt(format!("draw an incarnation id from the os entropy source: {e}")))?;
    Ok(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

/// Registers this node as `node_id` at `address` (its gRPC URL) with a NEW incarnation and
/// a lease of `ttl` on the database clock, and clears draining.
///
/// A row of the same `node_id` is taken over whatever its state: the previous incarnation
/// (a crashed run of this node) is fenced, since its [`Lease::renew`] then returns false.
pub async fn join(pool: &PgPool, node_id: &str, address: &str, ttl: Duration) -> Result<Lease, MembershipError> {
    let secs = ttl_secs(ttl)?;
    let incarnation = new_incarnation()?;
    // Taken before the statement: the database's now() is later, so the lease cannot lapse
    // on the database before `sent + ttl` on this node's monotonic clock.
    let sent = Instant::now();
    sqlx::query(
        "INSERT INTO nodes (node_id, incarnation, address, lease_until, draining, started_at) \
         VALUES ($1, $2, $3, now() + make_interval(secs => $4), false, now()) \
         ON CONFLICT (node_id) DO UPDATE SET incarnation = excluded.incarnation, address = excluded.address, \
         lease_until = excluded.lease_until, draining = false, started_at = excluded.started_at",
    )
    .bind(node_id)
    .bind(incarnation)
    .bind(address)
    .bind(secs)
    .execute(pool)
    .await
    .map_err(|e| db_error("join the cluster", e))?;
    info!(node_id, %incarnation, address, "joined the cluster");
    Ok(Lease {
        node_id: node_id.to_owned(),
        incarnation,
        address: address.to_owned(),
        ttl,
        valid_until: Mutex::new(sent + ttl),
    })
}

/// The live members: rows whose lease has not lapsed on the database clock and that are
/// not draining, sorted by `node_id`.
pub async fn live_members(pool: &PgPool) -> Result<Vec<Member>, MembershipError> {
    let rows: Vec<(String, Uuid, String)> = sqlx::query_as(
        "SELECT node_id, incarnation, address FROM nodes WHERE lease_until > now() AND NOT draining ORDER BY node_id",
    )
    .fetch_all(pool)
    .await
    .map_err(|e| db_error("list the live members", e))?;
    Ok(rows.into_iter().map(|(node_id, incarnation, address)| Member { node_id, incarnation, address }).collect())
}

/// This node's claim on its row of the registry: valid while its incarnation is the row's
/// and the lease has not lapsed. Only [`join`] makes one.
#[derive(Debug)]
pub struct Lease {
    node_id: String,
    incarnation: Uuid,
    address: String,
    ttl: Duration,
    /// The local instant after which the lease may have lapsed on the database (the send
    /// time of the last successful join or renewal, plus the ttl).
    valid_until: Mutex<Instant>,
}

impl Lease {
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn incarnation(&self) -> Uuid {
        self.incarnation
    }

    /// The node's gRPC URL, as registered.
    pub fn address(&self) -> &str {
        &self.address
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The member this lease makes this node, as [`live_members`] lists it.
    pub fn member(&self) -> Member {
        Member { node_id: self.node_id.clone(), incarnation: self.incarnation, address: self.address.clone() }
    }

    /// The instant, on this node's monotonic clock, until which the lease is surely held:
    /// the send time of the last successful [`join`] or [`Lease::renew`] plus the ttl. The
    /// database's expiry is never earlier (its `now()` runs after the send), as long as the
    /// two clocks run at the same rate.
    pub fn valid_until(&self) -> Instant {
        *self.valid_until.lock()
    }

    /// Whether the lease is surely still held now (see [`Lease::valid_until`]). A node checks
    /// this before work that must not happen after its lease lapsed.
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until()
    }

    /// Extends the lease to `now() + ttl` on the database clock. Returns false when the row
    /// is gone, belongs to another incarnation, or the lease already lapsed on the database
    /// (others may have placed this node's matches elsewhere meanwhile): the node must then
    /// stop serving, and [`join`] again to come back as a new incarnation.
    pub async fn renew(&self, pool: &PgPool) -> Result<bool, MembershipError> {
        let sent = Instant::now();
        let renewed = sqlx::query(
            "UPDATE nodes SET lease_until = now() + make_interval(secs => $3) \
             WHERE node_id = $1 AND incarnation = $2 AND lease_until > now()",
        )
        .bind(&self.node_id)
        .bind(self.incarnation)
        .bind(ttl_secs(self.ttl)?)
        .execute(pool)
        .await
        .map_err(|e| db_error("renew the lease", e))?
        .rows_affected()
            == 1;
        if renewed {
            let mut until = self.valid_until.lock();
            *until = (*until).max(sent + self.ttl);
        } else {
            // Whatever the local estimate said, the lease is gone.
            *self.valid_until.lock() = sent;
        }
        Ok(renewed)
    }

    /// Marks the node as draining: it keeps its lease (keep renewing) but is no longer a
    /// live member, so no new match is placed on it. Returns false when the lease is no
    /// longer this incarnation's.
    pub async fn set_draining(&self, pool: &PgPool) -> Result<bool, MembershipError> {
        let done = sqlx::query("UPDATE nodes SET draining = true WHERE node_id = $1 AND incarnation = $2")
            .bind(&self.node_id)
            .bind(self.incarnation)
            .execute(pool)
            .await
            .map_err(|e| db_error("mark the node draining", e))?
            .rows_affected()
            == 1;
        if done {
            info!(node_id = %self.node_id, incarnation = %self.incarnation, "node draining");
        }
        Ok(done)
    }

    /// Deletes this incarnation's row (never another incarnation's). Returns false when
    /// there was none left to delete.
    pub async fn release(self, pool: &PgPool) -> Result<bool, MembershipError> {
        let done = sqlx::query("DELETE FROM nodes WHERE node_id = $1 AND incarnation = $2")
            .bind(&self.node_id)
            .bind(self.incarnation)
            .execute(pool)
            .await
            .map_err(|e| db_error("release the lease", e))?
            .rows_affected()
            == 1;
        info!(node_id = %self.node_id, incarnation = %self.incarnation, removed = done, "left the cluster");
        Ok(done)
    }
}

/// Why a [`Heartbeat`] gave its lease up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseLost {
    /// A renewal found the row gone, taken by another incarnation, or already lapsed.
    Taken,
    /// No renewal succeeded before the lease's local deadline ([`Lease::valid_until`]):
    /// the database may already consider the node dead.
    Expired,
}

/// Keeps a [`Lease`] alive: renews it every ttl/3 and reports, once, when it is lost.
///
/// Self-fencing: a node whose lease is lost must stop committing at once — another node
/// may own its matches already. The heartbeat only reports ([`Heartbeat::lost`],
/// [`Heartbeat::subscribe`]); the caller decides how to stop. After a loss the task ends;
/// coming back takes a new [`join`]. Dropping the heartbeat stops renewing too (the lease
/// then lapses after its ttl); [`Heartbeat::stop`] also gives the lease back.
pub struct Heartbeat {
    lease: Arc<Lease>,
    lost: watch::Receiver<Option<LeaseLost>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Heartbeat {
    /// Starts renewing `lease` on `pool` every ttl/3 (a failed renewal is retried sooner,
    /// until the lease's local deadline passes). Call it right after [`join`].
    pub fn start(pool: PgPool, lease: Lease) -> Heartbeat {
        let every = lease.ttl / 3;
        let lease = Arc::new(lease);
        let (lost_tx, lost) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(false);
        let span = info_span!("lease_heartbeat", node_id = %lease.node_id, incarnation = %lease.incarnation);
        let task = tokio::spawn(heartbeat(pool, lease.clone(), every, lost_tx, stop_rx).instrument(span));
        Heartbeat { lease, lost, stop, task }
    }

    /// The lease being kept.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Why the lease was lost, or `None` while it is held.
    pub fn is_lost(&self) -> Option<LeaseLost> {
        *self.lost.borrow()
    }

    /// Waits until the lease is lost. Never returns if the heartbeat is stopped first.
    pub async fn lost(&self) -> LeaseLost {
        let mut rx = self.lost.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(lost) => lost.expect("waited for a loss"),
            Err(_) => std::future::pending().await,
        }
    }

    /// A receiver that changes to `Some(reason)` when the lease is lost.
    pub fn subscribe(&self) -> watch::Receiver<Option<LeaseLost>> {
        self.lost.clone()
    }

    /// Stops renewing and gives the lease back (to [`Lease::set_draining`] or
    /// [`Lease::release`]).
    pub async fn stop(self) -> Lease {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
        Arc::into_inner(self.lease).expect("the heartbeat task has ended, so its handle holds the only reference")
    }
}

async fn heartbeat(
    pool: PgPool,
    lease: Arc<Lease>,
    every: Duration,
    lost: watch::Sender<Option<LeaseLost>>,
    mut stop: watch::Receiver<bool>,
) {
    let retry = (every / 4).max(Duration::from_millis(10));
    let mut wait = every;
    let reason = loop {
        let deadline = tokio::time::Instant::from_std(lease.valid_until());
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep_until(deadline) => break LeaseLost::Expired,
            _ = tokio::time::sleep(wait) => {}
        }
        // A renewal still in flight at the deadline is too late whatever it answers.
        match tokio::time::timeout_at(deadline, lease.renew(&pool)).await {
            Err(_) => break LeaseLost::Expired,
            Ok(Ok(true)) => wait = every,
            // On a busy runtime the answer and the deadline can both be ready when this task
            // runs again, and the answer is looked at first: a lease that lapsed while the
            // renewal waited is expired, not taken.
            Ok(Ok(false)) if tokio::time::Instant::now() >= deadline => break LeaseLost::Expired,
            Ok(Ok(false)) => break LeaseLost::Taken,
            Ok(Err(e)) => {
                warn!(error = %e, remaining_ms = lease.valid_until().saturating_duration_since(Instant::now()).as_millis() as u64, "lease renewal failed; retrying");
                wait = retry;
            }
        }
    };
    warn!(reason = ?reason, "lease lost: this node must stop serving");
    let _ = lost.send(Some(reason));
}

/// Prometheus metrics of a [`Membership`] watcher.
#[derive(Clone, Debug)]
struct Metrics {
    members: IntGauge,
    changes: IntCounter,
}

impl Metrics {
    fn new() -> Metrics {
        Metrics {
            members: IntGauge::new("juegoland_ring_members", "Live members in the placement ring")
                .expect("a valid metric"),
            changes: IntCounter::new(
                "juegoland_ring_changes_total",
                "Changes of the placement ring's member set (rebalances) after the first load",
            )
            .expect("a valid metric"),
        }
    }
}

/// Watches the registry and publishes the placement [`Ring`] of the live members.
///
/// Cheap to clone; the task ends when every clone is dropped or on
/// [`Membership::shutdown`]. While the registry cannot be read the last ring stays
/// published (and a warning is logged), so routing goes on with what was last known.
#[derive(Clone)]
pub struct Membership {
    inner: Arc<Handle>,
}

struct Handle {
    ring: watch::Receiver<Arc<Ring>>,
    requests: mpsc::Sender<oneshot::Sender<()>>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
    metrics: Metrics,
}

impl Membership {
    /// Spawns the watcher: it loads the live members at once and then every `refresh`.
    /// Until the first load completes [`Membership::ring`] is empty; await
    /// [`Membership::refresh_now`] to start with a loaded ring.
    pub fn start(pool: PgPool, refresh: Duration) -> Membership {
        let (ring_tx, ring) = watch::channel(Arc::new(Ring::empty()));
        let (requests, requests_rx) = mpsc::channel(16);
        let (stop, stop_rx) = watch::channel(false);
        let metrics = Metrics::new();
        let watcher = Watcher { pool, refresh, ring: ring_tx, metrics: metrics.clone(), loaded: false, failing: false };
        let task = tokio::spawn(watcher.run(requests_rx, stop_rx).instrument(info_span!("membership_watcher")));
        Membership { inner: Arc::new(Handle { ring, requests, stop, task: Mutex::new(Some(task)), metrics }) }
    }

    /// Registers `juegoland_ring_members` (gauge) and `juegoland_ring_changes_total`
    /// (counter) on `registry`.
    pub fn register(&self, registry: &Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.inner.metrics.members.clone()))?;
        registry.register(Box::new(self.inner.metrics.changes.clone()))
    }

    /// The current ring.
    pub fn ring(&self) -> Arc<Ring> {
        self.inner.ring.borrow().clone()
    }

    /// A receiver of every new ring (its `changed()` fails once the watcher has stopped).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Ring>> {
        self.inner.ring.clone()
    }

    /// How many times the ring's member set changed after the first successful load.
    pub fn changes(&self) -> u64 {
        self.inner.metrics.changes.get()
    }

    /// Reloads the live members now and returns once the result is published (or the load
    /// failed and the last ring was kept). Returns at once if the watcher has stopped.
    pub async fn refresh_now(&self) {
        let (done, wait) = oneshot::channel();
        if self.inner.requests.send(done).await.is_ok() {
            let _ = wait.await;
        }
    }

    /// Stops the watcher and waits for it to end; the last ring stays readable.
    pub async fn shutdown(&self) {
        let _ = self.inner.stop.send(true);
        let task = self.inner.task.lock().take();
        if let Some(task) = task
            && let Err(e) = task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

struct Watcher {
    pool: PgPool,
    refresh: Duration,
    ring: watch::Sender<Arc<Ring>>,
    metrics: Metrics,
    /// Whether a load has succeeded yet (the first one is not counted as a change).
    loaded: bool,
    /// Whether the last load failed (so a long outage logs one warning, not one per period).
    failing: bool,
}

impl Watcher {
    async fn run(mut self, mut requests: mpsc::Receiver<oneshot::Sender<()>>, mut stop: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(self.refresh);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let mut waiting = Vec::new();
            tokio::select! {
                // A stop request, or every handle dropped.
                _ = stop.changed() => return,
                request = requests.recv() => match request {
                    Some(done) => waiting.push(done),
                    None => return,
                },
                _ = tick.tick() => {}
            }
            // One load answers every request queued meanwhile.
            while let Ok(done) = requests.try_recv() {
                waiting.push(done);
            }
            self.load().await;
            for done in waiting {
                let _ = done.send(());
            }
        }
    }

    async fn load(&mut self) {
        let members = match tokio::time::timeout(LOAD_TIMEOUT, live_members(&self.pool)).await {
            Ok(Ok(members)) => members,
            Ok(Err(e)) => return self.failed(&e.to_string()),
            Err(_) => return self.failed(&format!("listing the live members took over {LOAD_TIMEOUT:?}")),
        };
        if self.failing {
            info!("membership registry readable again");
            self.failing = false;
        }
        let ring = Ring::new(members);
        self.metrics.members.set(ring.len() as i64);
        if **self.ring.borrow() == ring {
            self.loaded = true;
            return;
        }
        if self.loaded {
            self.metrics.changes.inc();
        }
        self.loaded = true;
        let nodes: Vec<&str> = ring.members().iter().map(|m| m.node_id.as_str()).collect();
        info!(members = ring.len(), nodes = ?nodes, "placement ring changed");
        self.ring.send_replace(Arc::new(ring));
    }

    fn failed(&mut self, error: &str) {
        if self.failing {
            debug!(error, "membership reload still failing; keeping the last ring");
        } else {
            warn!(error, "membership reload failed; keeping the last ring");
            self.failing = true;
        }
    }
}
