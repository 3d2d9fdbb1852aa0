//! Setup, the move resolution order, drops, the finish window, lifecycle and invariants.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Corrupt, DeadlineOp, Flow, Lifecycle, MatchResult, Outcome, Pos, RuleError, Seat, Services, Setup, Trans,
    Transition,
};

use crate::maze::{self, Grid};
use crate::memory;
use crate::model::{Action, Config, Data, Direction, Event, Exit, FinishWindow};
use crate::view;
use crate::{
    COUNTDOWN, COUNTDOWN_DEADLINE, FINISH_DEADLINE, FINISH_WINDOW_MS, Laberinto, OUT, RACE, RACING, VISION_MOVES,
};

pub(crate) fn grid(config: &Config) -> Grid {
    Grid { width: config.width, height: config.height }
}

fn other(seat: &str) -> &'static str {
    if seat == "p0" { "p1" } else { "p0" }
}

fn racing_flow(data: &Data) -> Flow {
    let actors = data
        .players
        .iter()
        .map(|(seat, p)| (seat.clone(), if p.exited_ms.is_some() { OUT } else { RACE }.to_owned()))
        .collect();
    Flow { phase: RACING.into(), round: 1, turn: 0, actors }
}

/// The exits' placement rule (the crate root states it, so a player knows it): p0's exit is
/// a non-corner cell of the bottom border, leading south; p1's of the top border, leading
/// north. Returns the row and the outward side.
pub(crate) fn exit_border(g: Grid, seat: &str) -> (u32, Direction) {
    if seat == "p0" { (g.height - 1, Direction::South) } else { (0, Direction::North) }
}

/// Every cell where the placement rule may put `seat`'s exit.
pub(crate) fn exit_candidates(g: Grid, seat: &str) -> impl Iterator<Item = u32> {
    let (row, _) = exit_border(g, seat);
    (1..g.width - 1).map(move |col| g.index(row, col))
}

/// A transition whose players have looked at its position (see [`memory::look`]).
fn looked(config: &Config, mut t: Trans<Laberinto>) -> Trans<Laberinto> {
    memory::look(&mut t.data, grid(config));
    t
}

pub(crate) fn setup(input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Laberinto>, RuleError> {
    let config = &input.config;
    if input.participants.keys().map(String::as_str).ne(["p0", "p1"]) {
        return Err(RuleError::illegal("two-players"));
    }
    let g = grid(config);
    let cells = maze::generate(g, config.loops, services)?;
    // Placement (the crate root documents it): p0 starts top-left and leaves through the
    // bottom border, p1 starts bottom-right and leaves through the top border; each exit is
    // a drawn non-corner cell of its border. Keys, compasses and artifacts go on distinct
    // drawn cells that are neither a start nor an exit.
    let (w, h) = (config.width, config.height);
    let starts = [g.index(0, 0), g.index(h - 1, w - 1)];
    let mut exits = Vec::new();
    for seat in ["p0", "p1"] {
        let col = services.random.uniform(&format!("exit.{seat}"), 1, i64::from(w) - 2)? as u32;
        let (row, side) = exit_border(g, seat);
        exits.push(Exit { cell: g.index(row, col), side, open: false });
    }
    let taken: Vec<u32> = starts.iter().copied().chain(exits.iter().map(|e| e.cell)).collect();
    let free: Vec<u32> = (0..g.len()).filter(|c| !taken.contains(c)).collect();
    let needed = 4 + config.artifacts as usize;
    let shuffled = services.random.shuffle("objects", &free)?;
    let mut spots = shuffled.into_iter().take(needed);
    let mut next = || spots.next().ok_or_else(|| RuleError::illegal("maze-too-small"));
    let (key0, key1, compass0, compass1) = (next()?, next()?, next()?, next()?);
    let artifacts = (0..config.artifacts).map(|_| next()).collect::<Result<Vec<_>, _>>()?;

    let player = |cell| memory::newcomer(cell, g);
    let starts_ms = services.now_ms() + config.countdown_ms;
    let mut data = Data {
        seq: 0,
        meeting_seq: 0,
        cells,
        players: BTreeMap::from([("p0".into(), player(starts[0])), ("p1".into(), player(starts[1]))]),
        ground_keys: BTreeMap::from([("p0".into(), Some(key0)), ("p1".into(), Some(key1))]),
        compasses: BTreeMap::from([("p0".into(), compass0), ("p1".into(), compass1)]),
        exits: BTreeMap::from([("p0".into(), exits[0]), ("p1".into(), exits[1])]),
        artifacts,
        starts_ms,
        finish: None,
    };
    memory::look(&mut data, g);
    if config.countdown_ms == 0 {
        let flow = racing_flow(&data);
        return Ok(Transition { data, flow, result: None, events: vec![Event::RaceStarted], deadlines: vec![] });
    }
    Ok(Transition {
        data,
        flow: Flow { phase: COUNTDOWN.into(), round: 0, turn: 0, actors: BTreeMap::new() },
        result: None,
        events: vec![],
        deadlines: vec![DeadlineOp::Schedule {
            id: COUNTDOWN_DEADLINE.into(),
            due_ms: starts_ms,
            payload: serde_json::json!({}),
        }],
    })
}

/// The result when the finish window of `window` has closed at `now`: its first wins.
fn window_closed(window: &FinishWindow, now: i64) -> bool {
    now > window.at_ms + FINISH_WINDOW_MS
}

fn finished(
    p: &Pos<Laberinto>,
    mut data: Data,
    result: MatchResult,
    reason: &str,
    mut events: Vec<Event>,
) -> Trans<Laberinto> {
    data.seq += 1;
    events.push(Event::Finished { reason: reason.into() });
    Transition {
        data,
        flow: p.flow.terminal(),
        result: Some(result),
        events,
        deadlines: vec![DeadlineOp::Cancel { id: FINISH_DEADLINE.into() }],
    }
}

fn winner(p: &Pos<Laberinto>, seat: &str, reason: &str) -> MatchResult {
    let outcome = |s: &str| if s == seat { Outcome::Win } else { Outcome::Loss };
    MatchResult::completed(reason, p.participants.keys().map(|s| (s.as_str(), outcome(s))))
}

pub(crate) fn apply(
    p: &Pos<Laberinto>,
    actor: &str,
    action: &Action,
    services: &mut Services<'_>,
) -> Result<Trans<Laberinto>, RuleError> {
    command(p, actor, action, services).map(|t| looked(&p.config, t))
}

fn command(
    p: &Pos<Laberinto>,
    actor: &str,
    action: &Action,
    services: &mut Services<'_>,
) -> Result<Trans<Laberinto>, RuleError> {
    let now = services.now_ms();
    let mut data = p.data.clone();
    if p.flow.phase != RACING {
        return Err(RuleError::illegal("countdown"));
    }
    // The clock has passed the finish window: the first out wins, whatever this command was.
    if let Some(window) = &data.finish
        && window_closed(window, now)
    {
        let result = winner(p, &window.first, "exit");
        return Ok(finished(p, data, result, "exit", vec![]));
    }
    let me = data.players.get(actor).ok_or_else(|| RuleError::illegal("not-a-player"))?.clone();
    if me.exited_ms.is_some() {
        return Err(RuleError::illegal("exited"));
    }
    if me.last_ms.is_some_and(|last| now < last) {
        return Err(RuleError::illegal("out-of-order"));
    }
    let g = grid(&p.config);
    let mut events = vec![];
    match action {
        Action::Drop(_) => {
            let owner = me.inventory.clone().ok_or_else(|| RuleError::illegal("nothing-to-drop"))?;
            data.ground_keys.insert(owner.clone(), Some(me.cell));
            let player = data.players.get_mut(actor).expect("the actor plays");
            player.inventory = None;
            player.last_ms = Some(now);
            events.push(Event::KeyDropped { seat: actor.into(), owner, cell: me.cell });
        }
        Action::Move(m) => {
            if me.last_move_ms.is_some_and(|last| now < last + p.config.cooldown_ms) {
                return Err(RuleError::illegal("cooldown"));
            }
            let exit = data.exits[actor];
            if g.neighbour(me.cell, m.direction).is_none() {
                // Off the map: only the outward move from one's own open exit.
                if !(exit.open && exit.cell == me.cell && exit.side == m.direction) {
                    return Err(RuleError::illegal("wall"));
                }
                return Ok(outward(p, data, actor, now));
            }
            if !maze::is_open(&data.cells, me.cell, m.direction) {
                return Err(RuleError::illegal("wall"));
            }
            let to = g.neighbour(me.cell, m.direction).expect("checked above");
            resolve_move(&mut data, g, actor, to, now, &mut events);
        }
    }
    data.seq += 1;
    let flow = racing_flow(&data);
    Ok(Transition { data, flow, result: None, events, deadlines: vec![] })
}

/// An accepted in-maze move to `to`, resolved in the six-step order.
fn resolve_move(data: &mut Data, g: Grid, actor: &str, to: u32, now: i64, events: &mut Vec<Event>) {
    let rival = other(actor);
    let from = data.players[actor].cell;
    {
        let me = data.players.get_mut(actor).expect("the actor plays");
        me.cell = to;
        me.last_ms = Some(now);
        me.last_move_ms = Some(now);
        // (1) A vision effect counts successful moves down.
        me.vision_moves = me.vision_moves.saturating_sub(1);
    }
    events.push(Event::Moved { seat: actor.into(), from, to });
    // (2) An unconsumed artifact on the destination is consumed: the effect is set, never
    // stacked.
    if let Some(at) = data.artifacts.iter().position(|c| *c == to) {
        data.artifacts.remove(at);
        data.players.get_mut(actor).expect("the actor plays").vision_moves = VISION_MOVES;
        events.push(Event::ArtifactConsumed { seat: actor.into(), cell: to });
    }
    // (3) With an empty slot, pick up the lowest-owner ground key here.
    if data.players[actor].inventory.is_none()
        && let Some(owner) = data.ground_keys.iter().find(|(_, c)| **c == Some(to)).map(|(o, _)| o.clone())
    {
        data.ground_keys.insert(owner.clone(), None);
        data.players.get_mut(actor).expect("the actor plays").inventory = Some(owner.clone());
        events.push(Event::KeyPicked { seat: actor.into(), owner, cell: to });
    }
    // (4) A meeting returns every carried key to its owner, atomically.
    let rival_here = data.players.get(rival).is_some_and(|r| r.cell == to && r.exited_ms.is_none());
    if rival_here {
        data.meeting_seq += 1;
        events.push(Event::Met { meeting_seq: data.meeting_seq, cell: to });
        let carried: Vec<Seat> = data.players.values_mut().filter_map(|p| p.inventory.take()).collect();
        for owner in carried {
            data.players.get_mut(&owner).expect("keys belong to players").inventory = Some(owner.clone());
        }
    }
    // (5) One's own compass gives a bearing to one's own exit; any other move clears it.
    let exit = data.exits[actor];
    let bearing = (data.compasses[actor] == to).then(|| g.bearing(to, exit.cell)).flatten();
    data.players.get_mut(actor).expect("the actor plays").compass = bearing;
    // (6) One's own exit opens under one's own key.
    let me = &data.players[actor];
    if exit.cell == to && !exit.open && me.inventory.as_deref() == Some(actor) {
        data.exits.get_mut(actor).expect("every player has an exit").open = true;
        events.push(Event::ExitOpened { seat: actor.into() });
    }
}

/// The outward move from an open exit: the first starts the finish window, a second within
/// it makes a draw.
fn outward(p: &Pos<Laberinto>, mut data: Data, actor: &str, now: i64) -> Trans<Laberinto> {
    let rival = other(actor);
    {
        let me = data.players.get_mut(actor).expect("the actor plays");
        me.exited_ms = Some(now);
        me.last_ms = Some(now);
        me.last_move_ms = Some(now);
        // A rival's key does not leave the maze: it stays on the exit cell.
        if let Some(owner) = me.inventory.take_if(|owner| owner != actor) {
            data.ground_keys.insert(owner, Some(data.exits[actor].cell));
        }
    }
    let events = vec![Event::Exited { seat: actor.into(), at_ms: now }];
    match &data.finish {
        Some(window) if window.first == rival => {
            let result =
                MatchResult::completed("finish-window", p.participants.keys().map(|s| (s.as_str(), Outcome::Draw)));
            finished(p, data, result, "draw", events)
        }
        _ => {
            data.finish = Some(FinishWindow { first: actor.into(), at_ms: now });
            data.seq += 1;
            let flow = racing_flow(&data);
            Transition {
                data,
                flow,
                result: None,
                events,
                deadlines: vec![DeadlineOp::Schedule {
                    id: FINISH_DEADLINE.into(),
                    due_ms: now + FINISH_WINDOW_MS + 1,
                    payload: serde_json::json!({ "first": actor }),
                }],
            }
        }
    }
}

pub(crate) fn on_lifecycle(
    p: &Pos<Laberinto>,
    event: &Lifecycle,
    services: &mut Services<'_>,
) -> Result<Trans<Laberinto>, RuleError> {
    lifecycle(p, event, services).map(|t| looked(&p.config, t))
}

fn lifecycle(
    p: &Pos<Laberinto>,
    event: &Lifecycle,
    services: &mut Services<'_>,
) -> Result<Trans<Laberinto>, RuleError> {
    let now = services.now_ms();
    let mut data = p.data.clone();
    match event {
        Lifecycle::DeadlineExpired { id, .. } if id == COUNTDOWN_DEADLINE && p.flow.phase == COUNTDOWN => {
            data.seq += 1;
            let flow = racing_flow(&data);
            Ok(Transition { data, flow, result: None, events: vec![Event::RaceStarted], deadlines: vec![] })
        }
        Lifecycle::DeadlineExpired { id, .. } if id == FINISH_DEADLINE => {
            let window = data.finish.clone().ok_or_else(|| RuleError::illegal("no-finish-window"))?;
            if !window_closed(&window, now) {
                return Err(RuleError::illegal("finish-window-open"));
            }
            let result = winner(p, &window.first, "exit");
            Ok(finished(p, data, result, "exit", vec![]))
        }
        Lifecycle::DeadlineExpired { .. } => Err(RuleError::illegal("unknown-deadline")),
        Lifecycle::Withdrawal { seat } => {
            // Policy: a withdrawal in the countdown cancels the match with no winner; in the
            // race the leaver loses and the other player wins.
            if p.flow.phase == COUNTDOWN {
                data.seq += 1;
                return Ok(Transition {
                    data,
                    flow: p.flow.terminal(),
                    result: Some(MatchResult::cancelled("withdrawal-in-countdown")),
                    events: vec![Event::Finished { reason: "withdrawal".into() }],
                    deadlines: vec![DeadlineOp::Cancel { id: COUNTDOWN_DEADLINE.into() }],
                });
            }
            let result = winner(p, other(seat), "withdrawal");
            Ok(finished(p, data, result, "withdrawal", vec![]))
        }
    }
}

pub(crate) fn validate(p: &Pos<Laberinto>) -> Result<(), Corrupt> {
    let c = |m: &str| Err(Corrupt(m.to_owned()));
    let config = &p.config;
    let g = grid(config);
    let d = &p.data;
    if d.cells.len() != g.len() as usize {
        return c("cell count differs from width × height");
    }
    for cell in 0..g.len() {
        for side in Direction::ALL {
            let open = maze::is_open(&d.cells, cell, side);
            match g.neighbour(cell, side) {
                None if open => return c("a passage leads off the map"),
                Some(n) if open != maze::is_open(&d.cells, n, side.opposite()) => {
                    return c("a wall is open on one side only");
                }
                _ => {}
            }
        }
    }
    if maze::reachable(&d.cells, g) != g.len() as usize {
        return c("a cell is unreachable");
    }
    let seats: Vec<&str> = d.players.keys().map(String::as_str).collect();
    if seats != ["p0", "p1"] || d.ground_keys.keys().ne(d.players.keys()) || d.exits.keys().ne(d.players.keys()) {
        return c("players, keys and exits are p0 and p1");
    }
    // Key conservation: every key has exactly one location, a ground cell or one carrier.
    for owner in d.ground_keys.keys() {
        let on_ground = usize::from(d.ground_keys[owner].is_some());
        let carried = d.players.values().filter(|pl| pl.inventory.as_ref() == Some(owner)).count();
        if on_ground + carried != 1 {
            return Err(Corrupt(format!("the key of {owner} is in {} places", on_ground + carried)));
        }
    }
    let in_map = |cell: u32| cell < g.len();
    if d.players.values().any(|pl| !in_map(pl.cell))
        || d.ground_keys.values().flatten().any(|c| !in_map(*c))
        || d.compasses.values().any(|c| !in_map(*c))
        || d.artifacts.iter().any(|c| !in_map(*c))
    {
        return c("an object lies off the map");
    }
    for exit in d.exits.values() {
        if !in_map(exit.cell) || g.neighbour(exit.cell, exit.side).is_some() {
            return c("an exit is not on its border");
        }
    }
    if d.players.values().any(|pl| pl.vision_moves > VISION_MOVES) {
        return c("a vision effect above its start");
    }
    let exited: Vec<&Seat> = d.players.iter().filter(|(_, pl)| pl.exited_ms.is_some()).map(|(s, _)| s).collect();
    match (&d.finish, exited.as_slice()) {
        (None, []) => {}
        (Some(w), [one]) if *one == &w.first && p.result.is_none() => {}
        (Some(_), _) if p.result.is_some() => {}
        _ => return c("the finish window and the exited players disagree"),
    }
    if d.exits.iter().any(|(s, e)| d.players[s].exited_ms.is_some() && !e.open) {
        return c("a player left through a closed exit");
    }
    if p.result.is_some() != p.flow.actors.is_empty() && p.flow.phase != COUNTDOWN {
        return c("result and actors disagree");
    }
    for seat in d.players.keys() {
        validate_memory(d, g, seat)?;
    }
    Ok(())
}

/// A player's memory agrees with the position: the rules look after every transition, so
/// the current square is seen and swept, and a sighting in it is what is there.
fn validate_memory(d: &Data, g: Grid, seat: &str) -> Result<(), Corrupt> {
    let corrupt = |m: &str| Err(Corrupt(format!("the memory of {seat}: {m}")));
    let me = &d.players[seat];
    let memory = &me.memory;
    if !memory.seen.fits(g.len()) || !memory.swept.fits(g.len()) {
        return corrupt("a cell set does not fit the grid");
    }
    if (0..g.len()).any(|c| memory.swept.contains(c) && !memory.seen.contains(c)) {
        return corrupt("a swept cell was never seen");
    }
    let r = view::radius(d, seat);
    if g.square(me.cell, r).any(|c| !memory.swept.contains(c)) {
        return corrupt("the player's square is not seen");
    }
    let rival = &d.players[other(seat)];
    for (owner, sighting) in &memory.keys {
        if !d.ground_keys.contains_key(owner) || !memory.seen.contains(sighting.cell) {
            return corrupt("a key sighted on a cell never seen");
        }
        if me.inventory.as_ref() == Some(owner) {
            return corrupt("a sighting of the key the player carries");
        }
        let there = if sighting.carried {
            rival.exited_ms.is_none() && rival.cell == sighting.cell && rival.inventory.as_ref() == Some(owner)
        } else {
            d.ground_keys[owner] == Some(sighting.cell)
        };
        if g.chebyshev(me.cell, sighting.cell) <= r && !there {
            return corrupt("a key sighted in the player's square is not there");
        }
    }
    let Some(compass) = d.compasses.get(seat) else { return corrupt("no compass") };
    let bearing = g.bearing(*compass, d.exits[seat].cell);
    if memory.bearing.is_some_and(|b| Some(b) != bearing) || me.compass.is_some_and(|b| memory.bearing != Some(b)) {
        return corrupt("a bearing the compass did not give");
    }
    Ok(())
}
