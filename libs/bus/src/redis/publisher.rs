//! Group publishing: the publications of every match that publishes while a write to Redis is
//! on its way go together in the next write, one pipeline and one round trip for all of them,
//! the way the stores' group commits share one transaction.
//!
//! Each match's entries stay one `MULTI`/`EXEC` of their own inside the pipeline (a reader
//! still sees a revision's entries together, and a match's transaction touches only its own
//! hash-tagged key), and each match gets its own answer: a refused stale id is counted as done
//! for its match alone, a real failure fails its match alone, and a write Redis does not answer
//! fails every match of it. A node under load otherwise paid one round trip per revision: the
//! client's encoding, a wake-up of the connection's task, two system calls and Redis's own
//! per-read work (`docs/benchmarks.md`, issue 19, has the measurements).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use ::redis::aio::ConnectionManager;
use ::redis::{RedisError, RedisResult, Value};
use juegoland_core::Publication;
use tokio::sync::{mpsc, oneshot};
use tracing::debug;
use uuid::Uuid;

use super::{
    EntryId, FIELD_COUNT, FIELD_ENCODED, FIELD_MAC, FIELD_PUBLISHED, FIELD_RECIPIENT, FIELD_REVISION,
    FIELD_TRACEPARENT, RedisBus, RedisBusConfig, Tagged, bounded, is_stale_id,
};
use crate::BusError;

/// The most matches one write carries (each a few kilobytes of snapshots).
const MAX_MATCHES: usize = 256;

/// One match's publications and who waits for them.
struct Job {
    publications: Vec<Publication>,
    reply: oneshot::Sender<Result<(), BusError>>,
}

/// The group publisher of a [`RedisBus`]: a task, started with the first publication inside
/// the caller's runtime, that writes what is queued whenever its previous write is answered.
pub(super) struct Publisher {
    conn: ConnectionManager,
    config: RedisBusConfig,
    /// Until when publishes fail at once, after one that Redis did not answer
    /// ([`RedisBusConfig::publish_pause`]).
    paused_until: Arc<Mutex<Option<tokio::time::Instant>>>,
    jobs: OnceLock<mpsc::UnboundedSender<Job>>,
    /// Writes sent so far (tests read it).
    writes: Arc<AtomicU64>,
}

impl Publisher {
    pub(super) fn new(conn: ConnectionManager, config: RedisBusConfig) -> Self {
        Self { conn, config, paused_until: Arc::default(), jobs: OnceLock::new(), writes: Arc::default() }
    }

    /// How many writes (round trips) publishing took so far.
    pub(super) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Appends `publications` (in revision order, grouped by match) to their streams with the
    /// next write; returns once it is answered, with the first match's failure if any failed.
    pub(super) async fn publish(&self, publications: &[Publication]) -> Result<(), BusError> {
        let closed = || BusError::Unavailable("publish to the match streams: the publisher stopped".into());
        let jobs = self.jobs.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let writer = Writer {
                conn: self.conn.clone(),
                config: self.config.clone(),
                paused_until: self.paused_until.clone(),
                writes: self.writes.clone(),
            };
            tokio::spawn(writer.run(rx));
            tx
        });
        let mut answers = Vec::new();
        for run in publications.chunk_by(|a, b| a.match_id == b.match_id) {
            let (reply, answer) = oneshot::channel();
            jobs.send(Job { publications: run.to_vec(), reply }).map_err(|_| closed())?;
            answers.push(answer);
        }
        let mut first_failure = Ok(());
        for answer in answers {
            let result = answer.await.unwrap_or_else(|_| Err(closed()));
            if first_failure.is_ok() {
                first_failure = result;
            }
        }
        first_failure
    }
}

/// The task's side of the [`Publisher`].
struct Writer {
    conn: ConnectionManager,
    config: RedisBusConfig,
    paused_until: Arc<Mutex<Option<tokio::time::Instant>>>,
    writes: Arc<AtomicU64>,
}

impl Writer {
    /// Ends when the bus (every sender) is gone and the queue is empty.
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Job>) {
        while let Some(first) = rx.recv().await {
            let mut jobs = vec![first];
            while jobs.len() < MAX_MATCHES {
                match rx.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(_) => break,
                }
            }
            let results = self.write(&jobs).await;
            for (job, result) in jobs.into_iter().zip(results) {
                // A publisher that stopped waiting needs no answer.
                let _ = job.reply.send(result);
            }
        }
    }

    /// Writes every job's entries in one pipeline; one result per job, in order.
    async fn write(&self, jobs: &[Job]) -> Vec<Result<(), BusError>> {
        if let Err(e) = self.check_pause() {
            return jobs.iter().map(|_| Err(e.clone())).collect();
        }
        let published = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros()).to_string();
        let mut pipe = ::redis::pipe();
        // `ignore_errors` returns each `EXEC`'s answer, so one match's refusal or failure is
        // told apart from the others'.
        pipe.ignore_errors();
        for job in jobs {
            self.add(&mut pipe, &job.publications, &published);
        }
        let mut conn = self.conn.clone();
        self.writes.fetch_add(1, Ordering::Relaxed);
        let sent: Result<Vec<RedisResult<Value>>, BusError> =
            bounded(self.config.call_timeout, "publish to the match streams", pipe.query_async(&mut conn)).await;
        {
            let mut until = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
            *until = match &sent {
                Ok(_) => None,
                Err(_) if self.config.publish_pause.is_zero() => None,
                Err(_) => Some(tokio::time::Instant::now() + self.config.publish_pause),
            };
        }
        match sent {
            Ok(answers) if answers.len() == jobs.len() => {
                jobs.iter().zip(answers).map(|(job, answer)| outcome(job.publications[0].match_id, answer)).collect()
            }
            Ok(answers) => {
                let e = BusError::Unavailable(format!(
                    "publish to the match streams: {} answers for {} transactions",
                    answers.len(),
                    jobs.len()
                ));
                jobs.iter().map(|_| Err(e.clone())).collect()
            }
            Err(e) => jobs.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    /// One match's transaction: its entries with explicit ids, then the stream's expiry. Only
    /// the `EXEC`'s answer is kept.
    fn add(&self, pipe: &mut ::redis::Pipeline, publications: &[Publication], published: &str) {
        let key = RedisBus::stream_key(publications[0].match_id);
        pipe.cmd("MULTI").ignore();
        for revision in publications.chunk_by(|a, b| a.revision == b.revision) {
            let count = revision.len();
            for (n, p) in (1..).zip(revision) {
                let id = EntryId { revision: p.revision, seq: n };
                pipe.cmd("XADD")
                    .arg(&key)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(self.config.max_len)
                    .arg(id.to_string())
                    .arg(FIELD_REVISION)
                    .arg(p.revision)
                    .arg(FIELD_RECIPIENT)
                    .arg(p.recipient.as_deref().unwrap_or(""))
                    .arg(FIELD_COUNT)
                    .arg(count)
                    .arg(FIELD_ENCODED)
                    .arg(&*p.encoded)
                    .arg(FIELD_PUBLISHED)
                    .arg(published);
                if let Some(traceparent) = &p.trace_context {
                    pipe.arg(FIELD_TRACEPARENT).arg(&**traceparent);
                }
                if let Some(secret) = &self.config.secret {
                    let recipient = p.recipient.as_deref().unwrap_or("");
                    let traced = p.trace_context.as_deref().unwrap_or("");
                    let entry = Tagged {
                        match_id: p.match_id,
                        id,
                        count: count as u64,
                        recipient,
                        traceparent: traced,
                        encoded: &p.encoded,
                    };
                    let tag = secret.tag(&entry);
                    pipe.arg(FIELD_MAC).arg(tag);
                }
                pipe.ignore();
            }
        }
        if let Some(ttl) = self.config.stream_ttl {
            pipe.cmd("EXPIRE").arg(&key).arg(ttl.as_secs()).ignore();
        }
        pipe.cmd("EXEC");
    }

    /// Paused: fail at once. A pause that ran out starts one probe in the background and
    /// keeps failing at once until the probe is answered.
    fn check_pause(&self) -> Result<(), BusError> {
        let mut until = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        let Some(t) = *until else { return Ok(()) };
        let now = tokio::time::Instant::now();
        if now >= t {
            *until = Some(now + self.config.call_timeout);
            let (mut conn, paused_until, config) = (self.conn.clone(), self.paused_until.clone(), self.config.clone());
            tokio::spawn(async move {
                let answered =
                    bounded(config.call_timeout, "ping", ::redis::cmd("PING").query_async::<String>(&mut conn))
                        .await
                        .is_ok();
                let mut until = paused_until.lock().unwrap_or_else(|p| p.into_inner());
                *until = (!answered).then(|| tokio::time::Instant::now() + config.publish_pause);
            });
        }
        Err(BusError::Unavailable(
            "publish to the match stream: redis did not answer a recent publish; not waiting on it".into(),
        ))
    }
}

/// What one match's `EXEC` answer means: every entry appended or already there (a refused
/// stale id), or the first real failure.
fn outcome(match_id: Uuid, answer: RedisResult<Value>) -> Result<(), BusError> {
    let failed = |e: &dyn std::fmt::Display| BusError::Unavailable(format!("publish to the match stream: {e}"));
    let results = match answer {
        Ok(Value::Array(results)) => results,
        Ok(other) => return Err(failed(&format!("an EXEC answered {other:?}"))),
        Err(e) => return Err(failed(&e)),
    };
    let mut stale = 0;
    for result in results {
        if let Value::ServerError(e) = result {
            let e = RedisError::from(e);
            if !is_stale_id(&e) {
                return Err(failed(&e));
            }
            stale += 1;
        }
    }
    if stale > 0 {
        debug!(match_id = %match_id, stale, "skipped publications the stream already holds or has moved past");
    }
    Ok(())
}
