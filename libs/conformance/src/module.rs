//! The bounded conformance run `juegoland publish` makes of a game's compiled rules module
//! (spec/packages.md, "Publish pipeline", steps 5 and 6): the checkers of the games' own
//! suites, played a few times with the module's default configuration and fewest seats.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use juegoland_core::{GameKey, Registry};
use juegoland_packages::publish::ModuleFailure;
use juegoland_sdk::{ConflictPolicy, ErasedGame, JsonPosition, Recipient};

use crate::confluence::check_confluence;
use crate::playout::Playout;
use crate::privacy::{Pattern, PlayoutConfig, PrivacyOracle, check_privacy};

/// Seeded random playouts of each check: a publish of a catalog game stays well under a
/// second in a debug build.
const PLAYOUTS: usize = 3;
/// Commands per playout, at most.
const MAX_STEPS: usize = 80;
const SEED: u64 = 0x9AC4_A6E5;

/// What only the game knows is hidden: without the game's oracle, the privacy check forbids
/// no pattern of the position and proposes random offers.
struct NoOracle;

impl PrivacyOracle for NoOracle {
    fn forbidden(&self, _position: &JsonPosition, _recipient: &str) -> Vec<Pattern> {
        Vec::new()
    }
}

/// Runs `module` through the engine, as publishing asks (a [`ModuleTests`] of
/// `juegoland_packages`), on its default configuration (`{}`) with its fewest seats:
///
/// 1. seeded random playouts of offered actions: every decided revision passes the rules'
///    invariants (`validate_position`) and the data schema, and the rules neither fault nor
///    panic ([`ModuleFailure::Rules`], step 5);
/// 2. at every revision, every seat's sync snapshot, and the spectators' when the game
///    defines a spectator projection, is a protocol message whose view, context and offers
///    pass their schemas ([`ModuleFailure::Protocol`], step 6);
/// 3. each playout's log, replayed with its randomness traces, reaches the same state
///    ([`ModuleFailure::Replay`], step 5);
/// 4. [`check_privacy`] (retries, reused command ids, broken payloads, out-of-turn seats,
///    withdrawals): a game without a spectator projection gives spectators nothing, and no
///    output faults ([`ModuleFailure::Privacy`] for a leak, [`ModuleFailure::Rules`] for a
///    fault). Which facts of a position are hidden only the game's own [`PrivacyOracle`]
///    knows: its suite runs that part;
/// 5. for a game with `actor` actions, [`check_confluence`] ([`ModuleFailure::Confluence`]).
///
/// [`ModuleTests`]: juegoland_packages::publish::ModuleTests
pub fn check_module(module: &Arc<dyn ErasedGame>) -> Result<(), ModuleFailure> {
    let d = module.descriptor();
    let mut registry = Registry::new();
    registry.register(module.clone()).map_err(|e| ModuleFailure::Rules(format!("register the module: {e}")))?;
    let registry = Arc::new(registry);
    let cfg = PlayoutConfig {
        game: GameKey { id: d.id.clone(), rules_version: d.rules_version.clone() },
        seats: d.min_seats as usize,
        config: serde_json::json!({}),
        playouts: PLAYOUTS,
        max_steps: MAX_STEPS,
        seed: SEED,
    };
    for index in 0..cfg.playouts {
        play_and_replay(&registry, &cfg, index, module.spectators())?;
    }
    let privacy = catch_fault(|| check_privacy(registry.clone(), &cfg, &NoOracle))?;
    privacy.map_err(|leak| {
        ModuleFailure::Privacy(format!(
            "playout {}, revision {}: the {} to {} ({})",
            leak.playout, leak.revision, leak.output, leak.recipient, leak.pattern
        ))
    })?;
    if d.actions.iter().any(|a| a.policy == ConflictPolicy::Actor) {
        catch_fault(|| check_confluence(registry.clone(), &cfg, &NoOracle))?.map_err(ModuleFailure::Confluence)?;
    }
    Ok(())
}

/// One random playout (checks 1 and 2), then its replay (check 3).
fn play_and_replay(
    registry: &Arc<Registry>,
    cfg: &PlayoutConfig,
    index: usize,
    spectators: bool,
) -> Result<(), ModuleFailure> {
    let mut p = Playout::try_start(registry.clone(), cfg, index).map_err(|e| {
        ModuleFailure::Rules(format!("playout {index}: the default configuration {} makes no match: {e}", cfg.config))
    })?;
    let at = |p: &Playout| format!("playout {index}, revision {}", p.live.state().revision);
    for _ in 0..=cfg.max_steps {
        let seats = p.seats();
        for seat in &seats {
            p.live
                .snapshot(Recipient::Seat(seat), &p.engine)
                .map_err(|f| ModuleFailure::Protocol(format!("{}: {seat}'s snapshot: {f}", at(&p))))?;
        }
        if spectators {
            p.live
                .snapshot(Recipient::Spectator, &p.engine)
                .map_err(|f| ModuleFailure::Protocol(format!("{}: the spectators' snapshot: {f}", at(&p))))?;
        }
        if p.live.state().is_finished() {
            break;
        }
        let actors: Vec<String> = p.live.state().position.flow.actors.keys().cloned().collect();
        let Some(seat) = p.pick(&actors).cloned() else { break };
        let offers =
            p.try_offers(&seat).map_err(|f| ModuleFailure::Protocol(format!("{}: {seat}'s offers: {f}", at(&p))))?;
        let Some((action_type, payload)) = p.propose_from(&NoOracle, &seat, &offers) else { continue };
        let precondition = p.precondition_from(&seat, &action_type, &offers);
        let envelope = p.envelope(precondition, action_type.clone(), payload);
        let before = at(&p);
        p.try_run(&seat, &envelope)
            .map_err(|f| ModuleFailure::Rules(format!("{before}: {seat}'s {action_type:?}: {f}")))?;
    }
    juegoland_core::replay(registry, p.live.state(), &p.log)
        .map_err(|e| ModuleFailure::Replay(format!("playout {index}: {e}")))
}

/// Runs a checker that panics on an engine fault (a bug of the rules), and reports such a
/// panic as [`ModuleFailure::Rules`].
fn catch_fault<T>(check: impl FnOnce() -> T) -> Result<T, ModuleFailure> {
    catch_unwind(AssertUnwindSafe(check)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a checker panicked");
        ModuleFailure::Rules(message.to_owned())
    })
}
