//! `game_commands`: every catalog game through the real engine (`juegoland_core::Engine`
//! over `juegoland_catalog::registry()`), from creation through positions the input reaches.
//!
//! Input: a sequence of choices ([`arbitrary::Unstructured`]): the game, the seats (players
//! and bots), the config (`{}`, or drawn from the config schema, with or without noise),
//! the entropy seed, then up to [`MAX_STEPS`] steps, each one of: a seat takes one of its
//! offers (a concrete one as offered, a parametrized one with a payload drawn from the
//! action's schema); a bot decides for an actor seat (at most [`MAX_BOT_STEPS`]); any seat
//! sends any action type (the game's, or not) with a payload from the schema with noise, or
//! any JSON, and a precondition right or wrong; a command is sent again unchanged or changed
//! under its id; a stranger or the wrong bot principal sends; a deadline fires (current or
//! stale generation); time passes; a seat withdraws; the match is cancelled; the state goes
//! through JSON and is loaded again.
//!
//! Holds: no panic and no `Fault` (a rules panic, an output that fails its validation);
//! creation refusals and lifecycle refusals typed; a concrete offer or a bot's action (not a
//! `queue` one: those are judged on the instant; not while a deadline is due) sent as is, at
//! once, is applied; a retry is `Duplicate` with the stored receipt, a changed envelope under
//! a used id `IdReused`, a principal without a seat `Forbidden`; every publication is a
//! snapshot of the new revision for its recipient; every seat (and a spectator, when the game
//! has them) can sync (checked when the state is reloaded, and at the end); a stored state
//! loads and projects the same; the whole log replays to the final state.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use arbitrary::{Result, Unstructured};
use juegoland_core::{
    CreateError, Decision, Engine, LifecycleError, LifecycleRequest, LiveMatch, LogEntry, Receipt, ReceiptOutcome,
    SeatHolder,
};
use juegoland_protocol::{
    Action, CommandEnvelope, Precondition, RejectionCode, ServerMessage, Snapshot, WireOffer, decode_server,
};
use juegoland_sdk::{ConflictPolicy, Recipient, SplitMix64};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::json::arbitrary_value;
use crate::schema::Generator;

/// The most steps one input plays.
pub const MAX_STEPS: usize = 160;

/// The most bot decisions one input asks for: a bot may search (Conecta 4's negamax takes
/// milliseconds a move), and the fuzzer's time is better spent on more inputs.
pub const MAX_BOT_STEPS: u32 = 12;

/// The engine with every catalog game, built once (compiling the schemas is the slow part).
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(Arc::new(juegoland_catalog::registry().expect("the catalog registers"))))
}

pub fn run(data: &[u8]) {
    play(data);
}

/// Plays one input; the game and the revision its match reached (what the seed generator
/// looks for).
pub fn play(data: &[u8]) -> Option<(String, u64)> {
    let mut u = Unstructured::new(data);
    let mut m = Match::create(&mut u).ok()?;
    for _ in 0..MAX_STEPS {
        if u.is_empty() || m.step(&mut u).is_err() {
            break;
        }
    }
    m.finish();
    let state = m.live.state();
    Some((state.game.id.clone(), state.revision))
}

/// One match being played, with what a store and a client would keep.
struct Match {
    engine: &'static Engine,
    live: LiveMatch,
    log: Vec<LogEntry>,
    receipts: BTreeMap<(String, Uuid), Receipt>,
    /// Every command sent, with its principal, for retries.
    sent: Vec<(String, CommandEnvelope)>,
    /// What the newest snapshots offer, by seat: the publications of the last revision.
    offers: Vec<(String, WireOffer)>,
    entropy: SplitMix64,
    now_ms: i64,
    next_id: u128,
    bot_steps: u32,
}

impl Match {
    fn create(u: &mut Unstructured<'_>) -> Result<Match> {
        let engine = engine();
        let games: Vec<_> = engine.registry.games().collect();
        let game = Arc::clone(*u.choose(&games)?);
        let d = game.game.descriptor().clone();
        let n = u.int_in_range(d.min_seats..=d.max_seats.min(6))? as usize;
        let mut seats = BTreeMap::new();
        for seat in juegoland_sdk::seat_ids(n) {
            let holder = if !d.bots.is_empty() && u.ratio(1, 4)? {
                SeatHolder::Bot(u.choose(&d.bots)?.clone())
            } else {
                SeatHolder::Principal(format!("user-{seat}"))
            };
            seats.insert(seat, holder);
        }
        let schema = &game.game.schemas().config;
        let config = match u.int_in_range(0..=3u8)? {
            0 | 1 => json!({}),
            2 => Generator::new(schema, 0).value(u)?,
            _ => Generator::new(schema, 6).value(u)?,
        };
        let mut entropy = SplitMix64(u.arbitrary()?);
        let key = juegoland_core::GameKey { id: d.id.clone(), rules_version: d.rules_version.clone() };
        let match_id = Uuid::from_u128(0xf022);
        let now_ms = 1_000_000;
        let mut created = engine.create(match_id, key.clone(), seats.clone(), &config, now_ms, &mut entropy);
        if matches!(created, Err(CreateError::InvalidConfig(_))) && config != json!({}) {
            created = engine.create(match_id, key, seats, &json!({}), now_ms, &mut entropy);
        }
        let created = match created {
            Ok(c) => c,
            Err(CreateError::Fault(f)) => panic!("creating {} faulted: {f}", d.id),
            Err(CreateError::Choice(e)) => {
                panic!("{} is in the catalog, but creating it refused the choice: {e}", d.id)
            }
            // The game's default hand-over, no expiry and no replay: none can be refused.
            Err(
                e @ (CreateError::InvalidHandover(_) | CreateError::InvalidExpiry(_) | CreateError::InvalidReplay(_)),
            ) => {
                panic!("creating {} with its defaults was refused: {e}", d.id)
            }
            // A config that does not fit the seats (Brisca's `players`) is refused, typed.
            Err(CreateError::InvalidConfig(_) | CreateError::InvalidSeats(_)) => {
                return Err(arbitrary::Error::IncorrectFormat);
            }
        };
        let (pending, mut live) = created;
        let log = vec![live.advance(pending).log.expect("a creation logs")];
        let mut m = Match {
            engine,
            live,
            log,
            receipts: BTreeMap::new(),
            sent: Vec::new(),
            offers: Vec::new(),
            entropy,
            now_ms,
            next_id: 1,
            bot_steps: 0,
        };
        m.check_syncs();
        // A creation publishes nothing: the first offers come from each seat's sync.
        for seat in m.seats() {
            if let ServerMessage::Snapshot(s) = m.sync(Recipient::Seat(&seat)) {
                m.offers.extend(s.actions.into_iter().map(|o| (seat.clone(), o)));
            }
        }
        Ok(m)
    }

    fn seats(&self) -> Vec<String> {
        self.live.state().seats.keys().cloned().collect()
    }

    /// The principal that holds `seat` (`bot:pN` for a bot seat).
    fn principal(&self, seat: &str) -> String {
        match &self.live.state().seats[seat] {
            SeatHolder::Principal(p) => p.clone(),
            SeatHolder::Bot(_) => format!("{}{seat}", juegoland_core::state::BOT_PREFIX),
            SeatHolder::Replay => format!("{}{seat}", juegoland_core::state::REPLAY_PREFIX),
            SeatHolder::Agent(_) => format!("{}{seat}", juegoland_core::state::AGENT_PREFIX),
        }
    }

    fn policy(&self, action_type: &str) -> Option<ConflictPolicy> {
        self.live.game().descriptor().action(action_type).map(|a| a.policy)
    }

    /// Whether an action offered now must be applied if sent now: not a `queue` one (judged
    /// on the instant it meets), and no deadline due (a turn clock refuses a move at or after
    /// its due instant, `out-of-time`, until the deadline fires).
    fn must_apply(&self, action_type: &str) -> bool {
        let overdue = self.live.state().deadlines.values().any(|d| self.now_ms >= d.due_ms);
        !overdue && self.policy(action_type) != Some(ConflictPolicy::Queue)
    }

    fn envelope(&mut self, action_type: &str, payload: Value, precondition: Precondition) -> CommandEnvelope {
        self.next_id += 1;
        CommandEnvelope {
            match_id: self.live.state().match_id,
            command_id: Uuid::from_u128(self.next_id),
            precondition,
            action: Action { r#type: action_type.to_owned(), payload },
        }
    }

    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        self.now_ms += i64::from(u.int_in_range(0..=40u16)?);
        match u.int_in_range(0..=99u8)? {
            0..=51 => self.take_offer(u),
            52..=57 => self.bot(u),
            58..=71 => self.raw(u),
            72..=77 => self.retry(u),
            78..=81 => self.stranger(u),
            82..=89 => self.fire(u),
            90..=94 => {
                self.now_ms += i64::from(u.int_in_range(0..=120_000u32)?);
                Ok(())
            }
            95..=97 => self.withdraw(u),
            98 => self.cancel(u),
            _ => {
                self.reload();
                Ok(())
            }
        }
    }

    /// A seat sends one of the offers its newest snapshot carries.
    fn take_offer(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.offers.is_empty() {
            return self.fire(u);
        }
        let (seat, offer) = u.choose(&self.offers)?.clone();
        match offer {
            WireOffer::Concrete(o) => {
                let payload: Value = serde_json::from_str(o.payload.get()).expect("an offered payload is JSON");
                let envelope = self.envelope(&o.r#type, payload, o.precondition);
                let must_apply = self.must_apply(&o.r#type);
                let outcome = self.command(&self.principal(&seat), envelope);
                if must_apply {
                    assert!(
                        matches!(outcome, Some(ReceiptOutcome::Applied { .. })),
                        "{seat}'s concrete offer {} {} was not applied: {outcome:?}",
                        o.r#type,
                        o.payload.get()
                    );
                }
            }
            WireOffer::Parametrized(o) => {
                let spec = self.live.game().descriptor().action(&o.r#type).expect("an offer of a declared action");
                let schema = spec.payload_schema.clone();
                let noise = if u.ratio(3, 4)? { 0 } else { 16 };
                let payload = Generator::new(&schema, noise).value(u)?;
                let envelope = self.envelope(&o.r#type, payload, o.precondition);
                self.command(&self.principal(&seat), envelope);
            }
        }
        Ok(())
    }

    /// A bot decides for an actor seat (whoever holds it), and its action is applied.
    fn bot(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let actors: Vec<String> = self.live.state().position.flow.actors.keys().cloned().collect();
        let bots = self.live.game().descriptor().bots.clone();
        if actors.is_empty() || bots.is_empty() || self.bot_steps >= MAX_BOT_STEPS {
            return self.take_offer(u);
        }
        self.bot_steps += 1;
        let seat = u.choose(&actors)?.clone();
        let profile = u.choose(&bots)?.clone();
        let decided = self.live.game().game.bot_action(self.live.loaded(), &seat, &profile, &mut self.entropy);
        let Some((action_type, payload)) = decided else { return Ok(()) };
        let precondition = self.live.precondition(&seat, &action_type);
        let envelope = self.envelope(&action_type, payload.clone(), precondition);
        let must_apply = self.must_apply(&action_type);
        let outcome = self.command(&self.principal(&seat), envelope);
        if must_apply {
            assert!(
                matches!(outcome, Some(ReceiptOutcome::Applied { .. })),
                "bot {profile} chose {action_type} {payload} for actor {seat}, refused: {outcome:?}"
            );
        } else if let Some(ReceiptOutcome::Rejected { code, .. }) = outcome {
            assert!(
                !matches!(code, RejectionCode::UnknownAction | RejectionCode::InvalidPayload),
                "bot {profile} chose {action_type} {payload}, refused as {code:?}"
            );
        }
        Ok(())
    }

    /// Any seat sends any action with any payload and a precondition right or wrong.
    fn raw(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let seats = self.seats();
        let seat = u.choose(&seats)?.clone();
        let actions = self.live.game().descriptor().actions.clone();
        let (action_type, payload) = if u.ratio(7, 8)? && !actions.is_empty() {
            let spec = u.choose(&actions)?;
            let payload =
                if u.ratio(3, 4)? { Generator::new(&spec.payload_schema, 4).value(u)? } else { arbitrary_value(u, 3)? };
            (spec.action_type.clone(), payload)
        } else {
            let name: String = u.arbitrary()?;
            (name, arbitrary_value(u, 3)?)
        };
        let right = self.live.precondition(&seat, &action_type);
        let state = self.live.state();
        let precondition = match u.int_in_range(0..=5u8)? {
            0..=2 => right,
            3 => Precondition::Match { revision: state.revision.wrapping_add(u.int_in_range(0..=2)?).wrapping_sub(1) },
            4 => Precondition::Actor {
                phase_epoch: state.phase_epoch.wrapping_add(u.int_in_range(0..=2)?).wrapping_sub(1),
                actor_revision: u.int_in_range(0..=3)?,
            },
            _ => Precondition::Queue,
        };
        let envelope = self.envelope(&action_type, payload, precondition);
        self.command(&self.principal(&seat), envelope);
        Ok(())
    }

    /// A command sent before, again: unchanged (a retry) or changed under the same id.
    fn retry(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.sent.is_empty() {
            return self.raw(u);
        }
        let (principal, mut envelope) = u.choose(&self.sent)?.clone();
        let stored = self.receipts.get(&(principal.clone(), envelope.command_id)).cloned();
        let stored = stored.expect("every command sent got a receipt");
        if u.ratio(1, 2)? {
            envelope.action.payload = crate::json::mutate(u, &envelope.action.payload)?;
        }
        let same = juegoland_protocol::fingerprint_hex(&envelope) == stored.fingerprint;
        let decision = self.engine.command(
            &self.live,
            &principal,
            &envelope,
            Some(stored.clone()),
            self.now_ms,
            &mut self.entropy,
        );
        match decision {
            Decision::Duplicate(receipt) => {
                assert!(same, "a changed envelope under a used id was taken for a retry");
                assert_eq!(receipt, stored, "a retry got another receipt");
            }
            Decision::IdReused => assert!(!same, "an exact retry was refused as a reused id"),
            Decision::Fault(f) => panic!("engine fault on a retry: {f}"),
            _ => panic!("a command with a stored receipt was decided again"),
        }
        Ok(())
    }

    /// A principal without a seat: nobody's, or `bot:` naming a human's seat.
    fn stranger(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let seats = self.seats();
        let seat = u.choose(&seats)?.clone();
        let principal = match &self.live.state().seats[&seat] {
            SeatHolder::Principal(_) if u.arbitrary()? => format!("{}{seat}", juegoland_core::state::BOT_PREFIX),
            _ => "user-stranger".to_owned(),
        };
        let actions = self.live.game().descriptor().actions.clone();
        let action_type = if actions.is_empty() { "x".to_owned() } else { u.choose(&actions)?.action_type.clone() };
        let precondition = self.live.precondition(&seat, &action_type);
        let envelope = self.envelope(&action_type, json!({}), precondition);
        let decision = self.engine.command(&self.live, &principal, &envelope, None, self.now_ms, &mut self.entropy);
        assert!(matches!(decision, Decision::Forbidden), "{principal} holds no seat but was not refused");
        Ok(())
    }

    /// Decides and commits one command; the outcome of its receipt.
    fn command(&mut self, principal: &str, envelope: CommandEnvelope) -> Option<ReceiptOutcome> {
        let decision = self.engine.command(&self.live, principal, &envelope, None, self.now_ms, &mut self.entropy);
        match decision {
            Decision::Commit(pending) => {
                let receipt = pending.commit.receipt.clone().expect("a command's commit has a receipt");
                let had_state = pending.commit.state.is_some();
                self.commit(*pending);
                if let ReceiptOutcome::Rejected { code, .. } = &receipt.outcome {
                    assert!(!had_state, "a rejected command ({code:?}) changed the state");
                }
                self.receipts.insert((principal.to_owned(), envelope.command_id), receipt.clone());
                self.sent.push((principal.to_owned(), envelope));
                Some(receipt.outcome)
            }
            Decision::Fault(f) => panic!("engine fault on {} {}: {f}", envelope.action.r#type, envelope.action.payload),
            Decision::Forbidden => panic!("{principal} holds a seat but was refused"),
            Decision::Duplicate(_) | Decision::IdReused => panic!("a new command id was taken for a used one"),
        }
    }

    /// Commits what the engine decided, as the actor does once the store took it, and
    /// checks what it publishes.
    fn commit(&mut self, pending: juegoland_core::Pending) {
        let before = self.live.state().revision;
        let commit = self.live.advance(pending);
        let Some(state) = &commit.state else { return };
        assert_eq!(state.revision, before + 1, "a commit does not make the next revision");
        self.log.push(commit.log.clone().expect("a new revision is logged"));
        self.offers.clear();
        // One publication a revision, in turn, through the client's strict decoder (the whole
        // message); the others through the snapshot's own reader, for their offers.
        let strict = state.revision as usize % commit.publications.len().max(1);
        for (i, p) in commit.publications.iter().enumerate() {
            assert_eq!(p.revision, state.revision);
            let snapshot = if i == strict {
                match decode_server(p.encoded.as_bytes()) {
                    Ok(ServerMessage::Snapshot(s)) => *s,
                    other => panic!("a publication is not a snapshot: {other:?}"),
                }
            } else {
                let body = p.encoded.split_once(r#","type":"game.snapshot","#).map(|(_, b)| format!("{{{b}"));
                let body = body.unwrap_or_else(|| panic!("a publication is not a snapshot: {}", p.encoded));
                serde_json::from_str::<Snapshot>(&body).unwrap_or_else(|e| panic!("a publication does not read: {e}"))
            };
            assert_eq!(snapshot.revision, state.revision, "a publication of another revision");
            assert_eq!(snapshot.seat, p.recipient, "a publication for another recipient");
            if let Some(seat) = snapshot.seat {
                self.offers.extend(snapshot.actions.into_iter().map(|o| (seat.clone(), o)));
            }
        }
    }

    fn sync(&self, recipient: Recipient<'_>) -> ServerMessage {
        self.live.snapshot(recipient, self.engine).unwrap_or_else(|f| panic!("sync for {recipient:?} faulted: {f}"))
    }

    /// Every seat, and a spectator where the game has them, can sync.
    fn check_syncs(&self) {
        for seat in self.seats() {
            self.sync(Recipient::Seat(&seat));
        }
        if self.live.spectators() {
            self.sync(Recipient::Spectator);
        }
    }

    /// The current deadline fires at its due instant, or a stale generation is refused.
    fn fire(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let deadlines: Vec<_> = self.live.state().deadlines.iter().map(|(k, d)| (k.clone(), d.clone())).collect();
        if deadlines.is_empty() {
            return Ok(());
        }
        let (id, deadline) = u.choose(&deadlines)?.clone();
        let current = u.ratio(4, 5)?;
        let generation = if current { deadline.generation } else { deadline.generation + 1 + u.int_in_range(0..=2)? };
        if current {
            self.now_ms = self.now_ms.max(deadline.due_ms);
        }
        let request = LifecycleRequest::FireDeadline { id, generation };
        match self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy) {
            Ok(pending) => {
                assert!(current, "a stale deadline generation fired");
                self.commit(pending);
            }
            Err(LifecycleError::StaleDeadline) => assert!(!current, "the current deadline generation was refused"),
            Err(e) => self.lifecycle_refused(e),
        }
        Ok(())
    }

    fn withdraw(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let mut seats = self.seats();
        seats.push("p9".into());
        let seat = u.choose(&seats)?.clone();
        let request = LifecycleRequest::Withdraw { seat };
        match self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy) {
            Ok(pending) => self.commit(pending),
            Err(e) => self.lifecycle_refused(e),
        }
        Ok(())
    }

    fn cancel(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let reason_code = if u.arbitrary()? { "abandoned".to_owned() } else { u.arbitrary()? };
        let request = LifecycleRequest::Cancel { reason_code };
        match self.engine.lifecycle(&self.live, &request, self.now_ms, &mut self.entropy) {
            Ok(pending) => self.commit(pending),
            Err(e) => self.lifecycle_refused(e),
        }
        Ok(())
    }

    fn lifecycle_refused(&self, e: LifecycleError) {
        assert!(e.code().is_some(), "a lifecycle operation faulted: {e}");
    }

    /// The state through JSON (what a store keeps) and loaded again projects the same.
    fn reload(&self) {
        self.check_syncs();
        let text = serde_json::to_string(self.live.state()).expect("a state serializes");
        let state = serde_json::from_str(&text).expect("a stored state reads back");
        let loaded = self.engine.load(state).unwrap_or_else(|f| panic!("a stored state does not load: {f}"));
        for seat in self.seats() {
            let again = loaded.snapshot(Recipient::Seat(&seat), self.engine).expect("a loaded match syncs");
            assert_eq!(again, self.sync(Recipient::Seat(&seat)), "{seat}'s snapshot changed through the store");
        }
    }

    /// Every recipient syncs at the end, and the whole log replays to the final state.
    fn finish(&self) {
        self.check_syncs();
        juegoland_core::replay(&self.engine.registry, self.live.state(), &self.log)
            .unwrap_or_else(|e| panic!("the match does not replay: {e}"));
    }
}
