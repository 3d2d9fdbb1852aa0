//! Prometheus metrics of the match host.

use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

#[derive(Clone)]
pub struct Metrics {
    /// Commands by outcome: applied, rejected (with code), duplicate, reused, forbidden,
    /// fault, unavailable, rate_limited (an agent seat over its commands per minute).
    pub commands: IntCounterVec,
    /// Seconds per command by stage: decide (rules and projections), commit, total.
    pub command_seconds: HistogramVec,
    pub active_actors: IntGauge,
    /// Actor lifecycle: activation, passivation, failure (a panic or real fault), a quiet
    /// match cooled to compact text or warmed back for a message, and its receipts read from
    /// the store (`receipts_loaded`: at activation, and again after cooling or a commit of
    /// unknown outcome; never per command), `snapshot_left` (a stopping actor wrote its state
    /// as the snapshot, `Store::snapshot`), `queue_full` (a `queue` command refused
    /// `RATE_LIMITED`: its match's FIFO was full).
    pub actor_events: IntCounterVec,
    /// Outbox dispatch results: ok, failed (a stream publish failed; the sweeper resends),
    /// swept.
    pub dispatch: IntCounterVec,
    /// Undispatched outbox rows, measured by the sweeper after each round. The sweeper
    /// reads the whole store, so every node of a cluster reports the same backlog.
    pub outbox_backlog: IntGauge,
    /// Seconds since the oldest undispatched outbox row was written (0 when none waits).
    pub outbox_backlog_age: Gauge,
    /// Deadlines fired by the actor's local fast-path timer: fired, stale (the durable
    /// scheduler or a newer generation got there first), failed.
    pub local_deadlines: IntCounterVec,
    /// Seconds from a deadline's due instant to its committed transition, local path.
    pub local_deadline_lag: Histogram,
    /// The seats of active matches by what answers them: human, bot, handover (a bot standing
    /// in for an away human), replay (a replay match's script), agent.
    pub seats: IntGaugeVec,
    /// Commands judged (applied or rejected with a receipt; not retries answered from a
    /// receipt, nor refusals), by the kind of seat controller that sent them: `human`, `bot`,
    /// `agent`.
    pub seat_commands: IntCounterVec,
    /// Agent seats' declared limits met, by limit: `commands_per_minute` (a command refused
    /// RATE_LIMITED), `think_time` (a turn still open when its think time ran out).
    pub agent_limits: IntCounterVec,
    /// Seconds an agent seat took from the start of its turn to its applied command.
    pub agent_think_seconds: Histogram,
    /// Agent seats' applied commands that came after their think time.
    pub agent_late_commands: IntCounter,
}

impl Metrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let commands = IntCounterVec::new(
            Opts::new("juegoland_commands_total", "Commands handled by match actors, by outcome and code"),
            &["outcome", "code"],
        )?;
        let command_seconds = HistogramVec::new(
            HistogramOpts::new("juegoland_command_seconds", "Time per command by stage")
                .buckets(vec![0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0]),
            &["stage"],
        )?;
        let active_actors = IntGauge::new("juegoland_active_match_actors", "Match actors currently active")?;
        let actor_events =
            IntCounterVec::new(Opts::new("juegoland_actor_events_total", "Match actor lifecycle events"), &["event"])?;
        let dispatch = IntCounterVec::new(
            Opts::new("juegoland_outbox_dispatch_total", "Outbox publications dispatched to the bus, by result"),
            &["result"],
        )?;
        let local_deadlines = IntCounterVec::new(
            Opts::new("juegoland_local_deadlines_total", "Deadlines fired by active matches' local timers, by outcome"),
            &["outcome"],
        )?;
        let local_deadline_lag = Histogram::with_opts(
            HistogramOpts::new(
                "juegoland_local_deadline_lag_seconds",
                "Due instant to committed transition for deadlines fired by the local fast path",
            )
            .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0]),
        )?;
        let outbox_backlog =
            IntGauge::new("juegoland_outbox_backlog", "Undispatched outbox rows, measured by the outbox sweeper")?;
        let outbox_backlog_age = Gauge::new(
            "juegoland_outbox_backlog_age_seconds",
            "Age of the oldest undispatched outbox row (0 when none waits), measured by the outbox sweeper",
        )?;
        let seats = IntGaugeVec::new(
            Opts::new("juegoland_seats", "Seats of active matches, by what answers them (controller kind)"),
            &["controller"],
        )?;
        let seat_commands = IntCounterVec::new(
            Opts::new("juegoland_seat_commands_total", "Commands judged by match actors, by seat controller kind"),
            &["controller"],
        )?;
        let agent_limits = IntCounterVec::new(
            Opts::new("juegoland_agent_limits_total", "Agent seats' declared limits met, by limit"),
            &["limit"],
        )?;
        let agent_think_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "juegoland_agent_think_seconds",
                "Start of an agent seat's turn to its applied command, on the match's actor",
            )
            .buckets(vec![0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0]),
        )?;
        let agent_late_commands = IntCounter::new(
            "juegoland_agent_late_commands_total",
            "Agent seats' applied commands that came after their declared think time",
        )?;
        for kind in juegoland_core::ControllerKind::ALL {
            seats.with_label_values(&[kind.as_str()]);
            seat_commands.with_label_values(&[kind.as_str()]);
        }
        for limit in ["commands_per_minute", "think_time"] {
            agent_limits.with_label_values(&[limit]);
        }
        // The label values are known in advance: every series exists from the start, at 0.
        for outcome in ["applied", "duplicate", "reused", "forbidden", "fault", "unavailable", "rate_limited"] {
            commands.with_label_values(&[outcome, ""]);
        }
        for event in [
            "activation",
            "passivation",
            "failure",
            "cooled",
            "warmed",
            "receipts_loaded",
            "snapshot_left",
            "queue_full",
            "handover_taken",
            "handover_returned",
            "handover_forfeit",
            "handover_cancelled",
            "replay_step",
            "replay_diverged",
        ] {
            actor_events.with_label_values(&[event]);
        }
        for result in ["ok", "failed", "swept"] {
            dispatch.with_label_values(&[result]);
        }
        for outcome in ["fired", "stale", "failed"] {
            local_deadlines.with_label_values(&[outcome]);
        }
        registry.register(Box::new(outbox_backlog.clone()))?;
        registry.register(Box::new(outbox_backlog_age.clone()))?;
        registry.register(Box::new(local_deadlines.clone()))?;
        registry.register(Box::new(local_deadline_lag.clone()))?;
        registry.register(Box::new(commands.clone()))?;
        registry.register(Box::new(command_seconds.clone()))?;
        registry.register(Box::new(active_actors.clone()))?;
        registry.register(Box::new(actor_events.clone()))?;
        registry.register(Box::new(dispatch.clone()))?;
        registry.register(Box::new(seats.clone()))?;
        registry.register(Box::new(seat_commands.clone()))?;
        registry.register(Box::new(agent_limits.clone()))?;
        registry.register(Box::new(agent_think_seconds.clone()))?;
        registry.register(Box::new(agent_late_commands.clone()))?;
        Ok(Self {
            commands,
            command_seconds,
            active_actors,
            actor_events,
            dispatch,
            outbox_backlog,
            outbox_backlog_age,
            local_deadlines,
            local_deadline_lag,
            seats,
            seat_commands,
            agent_limits,
            agent_think_seconds,
            agent_late_commands,
        })
    }
}
