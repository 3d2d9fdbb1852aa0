//! The match actor: the match's serialization point. It holds the live match (or, while
//! quiet, its committed state as text), asks the pure engine for a decision, commits it
//! through the store (whose revision compare-and-set is the fence), then answers and
//! dispatches the publications to the bus. Rule rejections are replies, not actor failures;
//! only real faults fail the actor.

use std::sync::Arc;
use std::time::Instant;

use juegoland_api::{MatchError, SyncReply};
use juegoland_core::{
    Decision, Engine, LifecycleError, LifecycleRequest, LiveMatch, MatchState, Pending, Receipt, ReceiptKey,
};
use juegoland_protocol::{CommandEnvelope, ErrorCode, ErrorMessage, ServerMessage};
use juegoland_sdk::{Recipient, Seat};
use juegoland_store::StoreError;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tracing::{Instrument, Span, debug, error, info_span, warn};
use uuid::Uuid;

use crate::host::Shared;
use crate::receipts::Receipts;
use crate::shell::{OsEntropy, now_ms, redacted};

pub enum MatchMsg {
    Command {
        principal: String,
        envelope: CommandEnvelope,
        reply: RpcReplyPort<ServerMessage>,
        /// The caller's span (a node's `node.call`, a gateway's `gateway.command`): the
        /// parent of the actor's `match.command` span, so the command stays one trace.
        span: Span,
        /// A `queue` command's place in the match's FIFO, held until the command is handled.
        ticket: Option<crate::queue::Ticket>,
    },
    Sync {
        principal: String,
        reply: RpcReplyPort<Result<SyncReply, ErrorMessage>>,
    },
    /// An authorized spectator's snapshot (the edge checked the grant).
    Spectate {
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
    /// A paused real-time bot may move again.
    BotWake,
    /// The think time of an agent seat's turn `turn` is over (`agents.rs`).
    AgentThinkTime {
        seat: Seat,
        turn: u64,
    },
    /// Time to forget the seats' presences their gateways stopped renewing (`seats.rs`).
    PresenceLapse,
    /// An agent seat a bot played past its think time has nothing left to do (`agents.rs`).
    AgentReturns {
        seat: Seat,
    },
    /// The host is about to stop this actor (the node drains, the match moved): leave the
    /// committed state as the snapshot first.
    Passivate {
        reply: RpcReplyPort<()>,
    },
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
    /// A seat's subscription synced or ended (`seats.rs`); answers the revision.
    Presence {
        principal: String,
        subscription: String,
        present: bool,
        reply: RpcReplyPort<Result<u64, MatchError>>,
    },
    /// The hand-over grace of an away human ran out (armed at `generation`).
    HandoverDue {
        seat: Seat,
        generation: u64,
    },
    /// A replay match's script plays its next decision.
    ScriptStep,
}

/// The span of one command on its actor: a child of `parent` (the caller's span) or a root
/// (a bot's move). It names the match, the command and the seat, and records the outcome
/// and the revision the command produced or was judged at; never the action or its payload.
pub(crate) fn command_span(
    parent: Option<tracing::Id>,
    state: &MatchActorState,
    principal: &str,
    envelope: &CommandEnvelope,
) -> Span {
    let seat = state.hot.as_ref().and_then(|live| live.state().seat_of(principal));
    info_span!(
        target: juegoland_telemetry::TRACE_ONLY,
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
pub(crate) fn lifecycle_span(parent: Option<tracing::Id>, match_id: Uuid, request: &LifecycleRequest) -> Span {
    let op = match request {
        LifecycleRequest::Withdraw { .. } => "withdraw",
        LifecycleRequest::Cancel { .. } => "cancel",
        LifecycleRequest::FireDeadline { .. } => "fire_deadline",
        LifecycleRequest::Control { .. } => "control",
    };
    info_span!(parent: parent, "match.lifecycle", match_id = %match_id, op)
}

pub(crate) struct MatchActor {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct MatchActorState {
    /// The match while in use (every message but the timers' warms it first).
    pub(crate) hot: Option<LiveMatch>,
    /// The match while quiet: its committed state as compact JSON text, a fraction of the
    /// decoded form's memory (most active matches are between moves most of the time).
    pub(crate) cold: Option<Box<str>>,
    /// A `Cool` message is scheduled.
    pub(crate) cool_scheduled: bool,
    /// The match has a result (seen while hot; a finished match never un-finishes).
    pub(crate) finished: bool,
    /// An `IdleCheck` for the finished match is scheduled.
    pub(crate) finished_check_scheduled: bool,
    /// Deadline generations with a local timer armed.
    pub(crate) armed: std::collections::BTreeSet<(String, u64)>,
    pub(crate) last_activity: Instant,
    /// The revision a bot move is being computed for, if any.
    pub(crate) bot_pending: Option<u64>,
    /// The revision at which a bot had nothing to do (not asked again until it changes).
    pub(crate) bot_idle: Option<u64>,
    /// The bot seat asked last: the next bot seat after it is asked first (bots share the
    /// turnless phases of real-time games fairly).
    pub(crate) bot_last: Option<Seat>,
    /// When each bot seat may send its next `queue` command (`HostConfig::bot_queue_pause`
    /// after its last one): a real-time bot keeps a human pace, and its moves are not all
    /// rejected by a cooldown.
    pub(crate) bot_ready_at: std::collections::BTreeMap<Seat, Instant>,
    /// A `BotWake` is scheduled.
    pub(crate) bot_wake_scheduled: bool,
    /// A rules fault met while handling the current message: after answering, the actor
    /// fails, and the supervisor's next activation starts from the last commit.
    pub(crate) fault: Option<String>,
    /// The match's receipts; `None` until loaded (after cooling or a commit whose outcome
    /// is unknown). See `receipts.rs`.
    pub(crate) receipts: Option<Receipts>,
    /// The human seats' open subscriptions and away humans (hand-over, `seats.rs`).
    pub(crate) presence: crate::seats::Presence,
    /// A replay match's script, once its source's log is read (`seats.rs`).
    pub(crate) script: Option<crate::seats::Script>,
    /// The seats this actor counts in the seats gauge, by controller kind.
    pub(crate) counted: std::collections::BTreeMap<Seat, juegoland_core::ControllerKind>,
    /// The agent seats' limits: their minutes of commands and their turns (`agents.rs`).
    pub(crate) agents: crate::agents::AgentSeats,
}

impl MatchActorState {
    pub(crate) fn live(&self) -> &LiveMatch {
        self.hot.as_ref().expect("every message but the timers' warms the match first")
    }

    pub(crate) fn live_mut(&mut self) -> &mut LiveMatch {
        self.hot.as_mut().expect("every message but the timers' warms the match first")
    }

    /// Decodes a quiet match back into its live form; true if it was quiet.
    fn warm(&mut self, engine: &Engine) -> Result<bool, String> {
        let Some(text) = self.cold.take() else { return Ok(false) };
        let state: MatchState = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        self.hot = Some(engine.load(state).map_err(|f| redacted(&f.0))?);
        Ok(true)
    }

    /// Keeps a quiet match as the JSON text of its committed state (its receipts are read
    /// again when it is next used).
    fn cool(&mut self) -> Result<(), serde_json::Error> {
        if let Some(live) = &self.hot {
            self.cold = Some(serde_json::to_string(live.state())?.into_boxed_str());
            self.hot = None;
            self.receipts = None;
        }
        Ok(())
    }
}

impl Actor for MatchActor {
    type Msg = MatchMsg;
    type State = MatchActorState;
    /// The match, its receipts, and whether it was loaded from the store (`true`) or just
    /// created.
    type Arguments = (LiveMatch, Receipts, bool);

    async fn pre_start(
        &self,
        _: ActorRef<MatchMsg>,
        (live, receipts, activated): (LiveMatch, Receipts, bool),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(MatchActorState {
            hot: Some(live),
            cold: None,
            cool_scheduled: false,
            finished: false,
            finished_check_scheduled: false,
            armed: Default::default(),
            last_activity: Instant::now(),
            bot_pending: None,
            bot_idle: None,
            bot_last: None,
            bot_ready_at: Default::default(),
            bot_wake_scheduled: false,
            fault: None,
            receipts: Some(receipts),
            presence: crate::seats::Presence::new(activated, self.shared.config.presence_lease),
            script: None,
            counted: Default::default(),
            agents: Default::default(),
        })
    }

    async fn post_start(&self, myself: ActorRef<MatchMsg>, state: &mut Self::State) -> Result<(), ActorProcessingErr> {
        self.count_seats(state, false);
        self.maybe_bot(&myself, state);
        self.arm_deadlines(&myself, state);
        self.schedule_script(&myself, state).await;
        self.note_agent_turns(&myself, state);
        self.schedule_cool(&myself, state);
        Ok(())
    }

    async fn post_stop(&self, _: ActorRef<MatchMsg>, state: &mut Self::State) -> Result<(), ActorProcessingErr> {
        // Metrics only: nothing is persisted here.
        self.count_seats(state, true);
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
    pub(crate) fn schedule_cool(&self, myself: &ActorRef<MatchMsg>, state: &mut MatchActorState) {
        if state.hot.is_some() && !state.cool_scheduled {
            state.cool_scheduled = true;
            myself.send_after(self.shared.config.cool_after, || MatchMsg::Cool);
        }
        // A finished match passivates sooner than a live one (`HostConfig::finished_passivation`).
        state.finished |= state.hot.as_ref().is_some_and(|live| live.state().is_finished());
        if state.finished && !state.finished_check_scheduled {
            state.finished_check_scheduled = true;
            myself.send_after(self.shared.config.finished_passivation, || MatchMsg::IdleCheck);
        }
    }

    async fn handle_msg(
        &self,
        myself: ActorRef<MatchMsg>,
        msg: MatchMsg,
        state: &mut MatchActorState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(msg, MatchMsg::IdleCheck | MatchMsg::Cool | MatchMsg::Passivate { .. }) {
            state.last_activity = Instant::now();
            match state.warm(&self.shared.engine) {
                Ok(true) => self.shared.metrics.actor_events.with_label_values(&["warmed"]).inc(),
                Ok(false) => {}
                Err(fault) => return Err(format!("reload a quiet match: {fault}").into()),
            }
            // Whether this message's decisions publish to spectators too.
            let watched = state.presence.watched();
            state.live_mut().set_watched(watched);
        }
        match msg {
            MatchMsg::Command { principal, envelope, reply, span, ticket } => {
                let span = command_span(span.id(), state, &principal, &envelope);
                let answer = self.command(&myself, state, &principal, &envelope).instrument(span).await;
                // Its place in the FIFO is free once it is decided.
                drop(ticket);
                let _ = reply.send(answer);
            }
            MatchMsg::Sync { principal, reply } => {
                let _ = reply.send(self.sync(state, &principal));
            }
            MatchMsg::Spectate { reply } => {
                let answer = self.spectate(state);
                // A spectator follows from this revision: the next ones publish to it.
                if answer.is_ok() {
                    state.presence.spectator_here(self.shared.config.presence_lease);
                }
                let _ = reply.send(answer);
            }
            MatchMsg::CommandStatus { principal, command_id, reply } => {
                let _ = reply.send(self.command_status(state, &principal, command_id).await);
            }
            MatchMsg::Lifecycle { request, reply, span } => {
                let span = lifecycle_span(span.id(), state.live().state().match_id, &request);
                let answer = match Self::refused_on_replay(state, &request) {
                    Some(refused) => Err(refused),
                    None => self.lifecycle(&myself, state, &request).instrument(span).await,
                };
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
            MatchMsg::BotWake => {
                state.bot_wake_scheduled = false;
                self.maybe_bot(&myself, state);
            }
            MatchMsg::AgentThinkTime { seat, turn } => self.agent_think_time(&myself, state, seat, turn).await,
            MatchMsg::AgentReturns { seat } => self.agent_returns(&myself, state, seat).await,
            MatchMsg::IdleCheck => {
                let config = &self.shared.config;
                let idle = if state.finished {
                    state.finished_check_scheduled = false;
                    config.finished_passivation.min(config.idle_passivation)
                } else {
                    config.idle_passivation
                };
                if state.last_activity.elapsed() >= idle && state.bot_pending.is_none() {
                    self.leave_snapshot(state).await;
                    myself.stop(Some("idle".into()));
                }
            }
            MatchMsg::Passivate { reply } => {
                self.leave_snapshot(state).await;
                let _ = reply.send(());
            }
            MatchMsg::Inspect { reply } => {
                let _ = reply.send(state.live().state().clone());
            }
            MatchMsg::Revision { reply } => {
                let _ = reply.send(state.live().state().revision);
            }
            MatchMsg::Presence { principal, subscription, present, reply } => {
                let _ = reply.send(self.presence(&myself, state, &principal, subscription, present).await);
            }
            MatchMsg::PresenceLapse => self.presence_lapse(&myself, state),
            MatchMsg::HandoverDue { seat, generation } => {
                self.handover_due(&myself, state, seat, generation).await;
            }
            MatchMsg::ScriptStep => {
                self.script_step(&myself, state).await;
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

    /// Before the actor stops on purpose: writes the committed state as its match's snapshot
    /// when it lies between snapshot points (`Store::snapshot`), so the next activation, here
    /// or on another node, redoes none of the revisions after the last one. A failure costs
    /// only that: the activation redoes them.
    async fn leave_snapshot(&self, state: &MatchActorState) {
        let quiet;
        let committed = match (&state.hot, &state.cold) {
            (Some(live), _) => live.state(),
            (None, Some(text)) => match serde_json::from_str::<MatchState>(text) {
                Ok(s) => {
                    quiet = s;
                    &quiet
                }
                Err(e) => {
                    warn!(error = %e, "a quiet match's text does not decode; no snapshot left");
                    return;
                }
            },
            (None, None) => return,
        };
        if committed.is_snapshot_point() {
            return;
        }
        match self.shared.store.snapshot(committed).await {
            Ok(true) => self.shared.metrics.actor_events.with_label_values(&["snapshot_left"]).inc(),
            Ok(false) => {}
            Err(e) => {
                warn!(match_id = %committed.match_id, revision = committed.revision, error = %e, "leave a snapshot")
            }
        }
    }

    fn error(&self, code: ErrorCode, match_id: Uuid, command_id: Option<Uuid>) -> ServerMessage {
        let mut e = ErrorMessage::new(code);
        e.match_id = Some(match_id);
        e.command_id = command_id;
        ServerMessage::Error(e)
    }

    pub(crate) async fn command(
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
        let existing = match self.receipt(state, &key).await {
            Ok(r) => r,
            Err(e) => {
                Span::current().record("outcome", "unavailable");
                warn!(match_id = %match_id, error = %e, "receipt lookup failed");
                m.commands.with_label_values(&["unavailable", ""]).inc();
                return self.error(ErrorCode::Unavailable, match_id, command_id);
            }
        };
        // An agent seat's commands are limited per minute (`agents.rs`); a retry answered from
        // its receipt is not counted, and a refusal consumes nothing.
        let agent = crate::agents::agent_seat(state.live(), principal);
        if existing.is_none()
            && let Some((seat, limits)) = &agent
            && state.agents.admit(seat, *limits, Instant::now()).is_err()
        {
            Span::current().record("outcome", "rate_limited");
            m.commands.with_label_values(&["rate_limited", ""]).inc();
            m.agent_limits.with_label_values(&["commands_per_minute"]).inc();
            return self.error(ErrorCode::RateLimited, match_id, command_id);
        }
        if envelope.precondition == juegoland_protocol::Precondition::Queue {
            // A final rejection's sequence is only in its receipt: the next one goes above.
            let last = state.receipts.as_ref().map_or(0, Receipts::last_sequence);
            state.live_mut().note_sequence(last);
        }
        let decided = Instant::now();
        let decision =
            self.shared.engine.command(state.live(), principal, envelope, existing, now_ms(), &mut OsEntropy::new());
        m.command_seconds.with_label_values(&["decide"]).observe(decided.elapsed().as_secs_f64());
        if matches!(decision, Decision::Commit(_)) {
            m.seat_commands.with_label_values(&[controller_of(state.live().state(), principal).as_str()]).inc();
        }
        let applies = |pending: &Pending| {
            matches!(
                pending.commit.receipt.as_ref().map(|r| &r.outcome),
                Some(juegoland_core::ReceiptOutcome::Applied { .. })
            )
        };
        if let (Some((seat, limits)), Decision::Commit(pending)) = (&agent, &decision)
            && applies(pending)
        {
            // The seat answered its turn; the commit opens its next one, if it has one.
            self.agent_answered(state, seat, *limits);
        }
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
                        juegoland_core::ReceiptOutcome::Applied { revision, .. } => {
                            Span::current().record("outcome", "applied").record("revision", revision);
                            debug!(match_id = %match_id, revision, "command applied");
                            m.commands.with_label_values(&["applied", ""]).inc();
                        }
                        juegoland_core::ReceiptOutcome::Rejected { code, revision, .. } => {
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
        if agent.is_some() {
            // A turn closed by a commit whose outcome is unknown opens again here.
            self.note_agent_turns(myself, state);
        }
        answer
    }

    /// Stores a pending operation, advances the live match, dispatches its publications.
    ///
    /// The commit runs in a `store.commit` span (a child of the current `match.command` or
    /// `match.lifecycle`); its W3C context, when the trace is to travel, goes into every
    /// publication, hence into the outbox rows and the stream entries, and the gateways'
    /// deliveries continue it.
    pub(crate) async fn commit(
        &self,
        myself: &ActorRef<MatchMsg>,
        state: &mut MatchActorState,
        mut pending: Pending,
    ) -> Result<juegoland_core::Commit, MatchError> {
        let started = Instant::now();
        let span = info_span!(
            target: juegoland_telemetry::TRACE_ONLY,
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
                // Crash tests: the process dies right after a commit, before it answers or
                // publishes (e.g. `FAILPOINTS=match-after-commit=1*off->return`: the second).
                fail::fail_point!("match-after-commit", |_| {
                    error!("failpoint match-after-commit: aborting right after a commit, before answering");
                    std::process::abort()
                });
            }
            Err(StoreError::Conflict { .. }) => {
                // Another writer moved the match: this actor's view is stale. Stop so the
                // next request reloads from the store.
                warn!(match_id = %pending.commit.match_id, "stale match actor fenced by the store; stopping");
                myself.stop(Some("fenced".into()));
                return Err(MatchError::Unavailable("the match moved; retry the same command".into()));
            }
            Err(e) => {
                // The write may have landed: read the receipts again before judging next.
                state.receipts = None;
                return Err(e.into());
            }
        }
        let commit = state.live_mut().advance(pending);
        if let (Some(receipt), Some(receipts)) = (&commit.receipt, &mut state.receipts) {
            receipts.insert(receipt.clone());
        }
        if let Some(revision) = commit.state.as_ref().map(|s| s.revision)
            && !commit.publications.is_empty()
        {
            let lost = lose_publications_of(revision);
            if lost {
                warn!(match_id = %commit.match_id, revision, "fault injection: publications lost after the commit");
            }
            let published = if lost {
                Ok(())
            } else {
                let span = info_span!(
                    target: juegoland_telemetry::TRACE_ONLY,
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
                    self.shared.mark_dispatched(commit.match_id, revision);
                }
                Err(e) => {
                    self.shared.metrics.dispatch.with_label_values(&["failed"]).inc();
                    warn!(match_id = %commit.match_id, error = %e, "publish failed; the sweeper will resend");
                }
            }
        }
        if commit.state.is_some() {
            self.count_seats(state, false);
            self.maybe_bot(myself, state);
            self.arm_deadlines(myself, state);
            self.note_agent_turns(myself, state);
        }
        Ok(commit)
    }

    pub(crate) fn sync(&self, state: &MatchActorState, principal: &str) -> Result<SyncReply, ErrorMessage> {
        let s = state.live().state();
        let forbidden = || {
            let mut e = ErrorMessage::new(ErrorCode::Forbidden);
            e.match_id = Some(s.match_id);
            e
        };
        let seat = s.seat_of(principal).ok_or_else(forbidden)?;
        self.snapshot_for(state, Recipient::Seat(seat))
    }

    /// A spectator's snapshot; FORBIDDEN (`error.forbidden.no_spectators`) when the game
    /// defines no spectator projection, whatever the grant.
    pub(crate) fn spectate(&self, state: &MatchActorState) -> Result<SyncReply, ErrorMessage> {
        if !state.live().spectators() {
            let mut e = ErrorMessage::new(ErrorCode::Forbidden);
            e.match_id = Some(state.live().state().match_id);
            e.message_key = juegoland_api::NO_SPECTATORS_KEY.into();
            return Err(e);
        }
        self.snapshot_for(state, Recipient::Spectator)
    }

    fn snapshot_for(&self, state: &MatchActorState, recipient: Recipient<'_>) -> Result<SyncReply, ErrorMessage> {
        let s = state.live().state();
        let snapshot = state.live().snapshot(recipient, &self.shared.engine).map_err(|f| {
            error!(match_id = %s.match_id, fault = redacted(&f.0), "snapshot failed");
            let mut e = ErrorMessage::new(ErrorCode::Internal);
            e.match_id = Some(s.match_id);
            e
        })?;
        let d = state.live().game().descriptor();
        Ok(SyncReply {
            seat: recipient.seat().map(str::to_owned),
            revision: s.revision,
            game: s.game.clone(),
            view_schema_version: d.view_schema_version,
            event_schema_version: d.event_schema_version,
            snapshot,
        })
    }

    /// The receipt of `key`, from the actor's receipts (loading them first if needed).
    async fn receipt(&self, state: &mut MatchActorState, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        if state.receipts.is_none() {
            state.receipts = Some(Receipts::new(self.shared.store.receipts(key.match_id).await?));
            self.shared.metrics.actor_events.with_label_values(&["receipts_loaded"]).inc();
        }
        Ok(state.receipts.as_ref().and_then(|r| r.get(key)).cloned())
    }

    pub(crate) async fn command_status(
        &self,
        state: &mut MatchActorState,
        principal: &str,
        command_id: Uuid,
    ) -> ServerMessage {
        let match_id = state.live().state().match_id;
        if state.live().state().seat_of(principal).is_none() {
            return self.error(ErrorCode::Forbidden, match_id, Some(command_id));
        }
        let key = ReceiptKey { match_id, principal: principal.to_owned(), command_id };
        match self.receipt(state, &key).await {
            Ok(Some(r)) => r.ack(true),
            Ok(None) => ServerMessage::CommandUnknown(juegoland_protocol::CommandUnknown { match_id, command_id }),
            Err(_) => self.error(ErrorCode::Unavailable, match_id, Some(command_id)),
        }
    }

    pub(crate) async fn lifecycle(
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
}

/// The kind of seat controller a principal is, as seat metrics label it (`controller`):
/// `human`, `bot`, `handover` (a bot standing in), `replay` or `agent`.
fn controller_of(state: &MatchState, principal: &str) -> juegoland_core::ControllerKind {
    use juegoland_core::ControllerKind as K;
    use juegoland_core::state::{AGENT_PREFIX, BOT_PREFIX, REPLAY_PREFIX};
    match principal {
        p if p.strip_prefix(BOT_PREFIX).is_some_and(|seat| state.stand_ins.contains_key(seat)) => K::Handover,
        p if p.starts_with(BOT_PREFIX) => K::Bot,
        p if p.starts_with(REPLAY_PREFIX) => K::Replay,
        p if p.starts_with(AGENT_PREFIX) => K::Agent,
        _ => K::Human,
    }
}

/// Delivery tests: whether the publications of `revision` (of every match) are lost on the
/// way to the bus, though marked dispatched (`FAILPOINTS=lose-publications-of-revision=return(1)`).
fn lose_publications_of(revision: u64) -> bool {
    fail::fail_point!("lose-publications-of-revision", |arg: Option<String>| {
        arg.and_then(|a| a.parse::<u64>().ok()) == Some(revision)
    });
    let _ = revision;
    false
}
