//! Integration tests of Hundido through its public API and through the real engine: the
//! decisive concurrency case (independent placement, the barrier into battle), confluence of
//! `actor` actions, random play, the bot, the erased form with its generated schemas, the
//! privacy oracle, and the clocks.

mod bots;
mod clock;
mod engine;
mod erased;
mod privacy;
mod props;

use std::collections::BTreeMap;

use juegoland_hundido::{Action, Hundido, Side};
use juegoland_sdk::{
    EntropySource, Game, Participant, Pos, Position, Randomness, RuleError, Services, Setup, SplitMix64, Trans,
};

pub fn with_services<T>(f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(0);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    f(&mut services)
}

pub fn participants() -> BTreeMap<String, Participant> {
    [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into()
}

pub fn start(config: juegoland_hundido::Config) -> Pos<Hundido> {
    let t =
        with_services(|s| Hundido.setup(&Setup { config: config.clone(), participants: participants() }, s)).unwrap();
    Position { config, participants: participants(), data: t.data, flow: t.flow, result: t.result }
}

pub fn commit(p: &Pos<Hundido>, t: Trans<Hundido>) -> Pos<Hundido> {
    Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() }
}

/// Applies `action` by `seat` and validates the result.
pub fn step(p: &Pos<Hundido>, seat: &str, action: &Action) -> Result<Pos<Hundido>, RuleError> {
    let next = commit(p, with_services(|s| Hundido.apply(p, seat, action, s))?);
    if let Err(e) = Hundido.validate_position(&next) {
        panic!("{e} after {action:?} by {seat}");
    }
    Ok(next)
}

/// A random action for `seat`, legal or not: a placement of a random ship anywhere on a
/// slightly oversized board, `ready`, or a shot anywhere on it.
pub fn random_action(p: &Pos<Hundido>, e: &mut dyn EntropySource) -> Action {
    let config = &p.config;
    let rows = u64::from(config.rows) + 1;
    let columns = u64::from(config.columns) + 1;
    let row = (e.next_u64() % rows) as u8;
    let column = (e.next_u64() % columns) as u8;
    match e.next_u64() % 10 {
        0 => Action::ready(),
        1..=5 => {
            let ship = &config.fleet[(e.next_u64() % config.fleet.len() as u64) as usize].ship;
            let orientation = if e.next_u64().is_multiple_of(2) {
                juegoland_hundido::Orientation::Horizontal
            } else {
                juegoland_hundido::Orientation::Vertical
            };
            Action::place(ship, row, column, orientation)
        }
        _ => Action::fire(row, column),
    }
}

/// The seats that may act now.
pub fn actors(p: &Pos<Hundido>) -> Vec<Side> {
    p.flow
        .actors
        .iter()
        .filter(|(_, stage)| stage.as_str() != juegoland_hundido::STAGE_WAITING)
        .filter_map(|(s, _)| Side::from_seat(s))
        .collect()
}
