//! The fog of war: each projection rebuilt from zero, cut into records of at most
//! [`RECORD_MAX_BYTES`] serialized.

use std::collections::BTreeMap;

use juegoland_sdk::{Pos, Recipient};

use crate::maze;
use crate::model::{
    CellRecord, Data, Direction, ObjectKind, ObjectRecord, Phase, PlayerStatus, Record, Role, Status, View,
};
use crate::play::grid;
use crate::{COUNTDOWN, Laberinto, RADIUS, VISION_RADIUS};

/// The bound of one serialized record (the gateway's message bound in the seed).
pub const RECORD_MAX_BYTES: usize = 512;

/// The radius a player sees: 6 under a vision effect, else 3 (never the client's choice).
pub fn radius(data: &Data, seat: &str) -> u32 {
    if data.players.get(seat).is_some_and(|p| p.vision_moves > 0) { VISION_RADIUS } else { RADIUS }
}

/// Whether `recipient` sees `cell` in this position (observers see every cell).
pub fn sees(p: &Pos<Laberinto>, recipient: Recipient<'_>, cell: u32) -> bool {
    match recipient.seat().and_then(|s| p.data.players.get(s).map(|pl| (s, pl))) {
        Some((seat, player)) => grid(&p.config).chebyshev(player.cell, cell) <= radius(&p.data, seat),
        None => true,
    }
}

fn status(data: &Data, seat: &str) -> PlayerStatus {
    let p = &data.players[seat];
    PlayerStatus {
        inventory: p.inventory.clone(),
        vision_moves: p.vision_moves,
        compass: p.compass,
        exit_open: data.exits[seat].open,
    }
}

fn cell_record(cells: &[u8], index: u32) -> CellRecord {
    let open = |side: Direction| maze::is_open(cells, index, side);
    CellRecord {
        index,
        n: open(Direction::North),
        e: open(Direction::East),
        s: open(Direction::South),
        w: open(Direction::West),
    }
}

/// The objects on the map, in a fixed order; carried keys lie at their carrier's cell.
fn objects(data: &Data, show_carried_by: impl Fn(&str) -> bool) -> Vec<ObjectRecord> {
    let mut out = Vec::new();
    for (owner, cell) in &data.ground_keys {
        if let Some(cell) = cell {
            out.push(ObjectRecord { kind: ObjectKind::Key, owner: Some(owner.clone()), variant: None, cell: *cell });
        }
    }
    for (seat, player) in &data.players {
        if let Some(owner) = &player.inventory
            && player.exited_ms.is_none()
            && show_carried_by(seat)
        {
            out.push(ObjectRecord {
                kind: ObjectKind::Key,
                owner: Some(owner.clone()),
                variant: Some("carried".into()),
                cell: player.cell,
            });
        }
    }
    for (owner, cell) in &data.compasses {
        out.push(ObjectRecord { kind: ObjectKind::Compass, owner: Some(owner.clone()), variant: None, cell: *cell });
    }
    for cell in &data.artifacts {
        out.push(ObjectRecord { kind: ObjectKind::Artifact, owner: None, variant: Some("vision".into()), cell: *cell });
    }
    for (owner, exit) in &data.exits {
        let variant = exit.open.then(|| "open".to_owned());
        out.push(ObjectRecord { kind: ObjectKind::Exit, owner: Some(owner.clone()), variant, cell: exit.cell });
    }
    out
}

/// The view for `recipient`, rebuilt from the position alone.
pub fn project(p: &Pos<Laberinto>, recipient: Recipient<'_>) -> View {
    let data = &p.data;
    let g = grid(&p.config);
    let phase = if p.result.is_some() {
        Phase::Finished
    } else if p.flow.phase == COUNTDOWN {
        Phase::Countdown
    } else {
        Phase::Racing
    };
    let seat = recipient.seat().filter(|s| data.players.contains_key(*s));
    let role = match seat {
        Some("p0") => Role::P0,
        Some(_) => Role::P1,
        None => Role::Observer,
    };
    let header = Record {
        seq: data.seq,
        role,
        phase,
        width: g.width,
        height: g.height,
        meeting_seq: data.meeting_seq,
        chunk: 0,
        chunks: 0,
        cells: vec![],
        objects: vec![],
        players: BTreeMap::new(),
        status: None,
    };
    let mut items = Items::default();
    match seat {
        Some(seat) => {
            let me = &data.players[seat];
            let r = radius(data, seat);
            let visible = |cell: u32| g.chebyshev(me.cell, cell) <= r;
            items.status = Some(Status::Player(status(data, seat)));
            items.players.push(("self".into(), me.cell));
            let rival = data.players.iter().find(|(s, _)| s.as_str() != seat).map(|(s, pl)| (s.clone(), pl));
            let rival_visible = rival.as_ref().is_some_and(|(_, pl)| pl.exited_ms.is_none() && visible(pl.cell));
            if let (true, Some((_, pl))) = (rival_visible, &rival) {
                items.players.push(("opponent".into(), pl.cell));
            }
            // One's own carried key is in the status; the rival's only while the rival is seen.
            items.objects =
                objects(data, |s| s != seat && rival_visible).into_iter().filter(|o| visible(o.cell)).collect();
            items.cells = (0..g.len()).filter(|c| visible(*c)).map(|c| cell_record(&data.cells, c)).collect();
        }
        None => {
            items.status = Some(Status::Observer(data.players.keys().map(|s| (s.clone(), status(data, s))).collect()));
            items.players = data.players.iter().map(|(s, pl)| (s.clone(), pl.cell)).collect();
            items.objects = objects(data, |_| true);
            items.cells = (0..g.len()).map(|c| cell_record(&data.cells, c)).collect();
        }
    }
    View { records: chunk(header, items) }
}

#[derive(Default)]
struct Items {
    status: Option<Status>,
    players: Vec<(String, u32)>,
    objects: Vec<ObjectRecord>,
    cells: Vec<CellRecord>,
}

enum Item {
    Player(String, u32),
    Object(ObjectRecord),
    Cell(CellRecord),
}

/// A chunk index no view reaches, written while a record is measured so that the real
/// indices (never longer) keep it within the bound.
pub const PLACEHOLDER: u32 = 99_999;

/// The serialized length of `value` (compact JSON, as the view is sent).
fn size(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

/// How many bytes `item` adds to `record`'s serialized length (`record_size`). A later
/// element of a JSON array or object adds a comma and itself (`"key":value` in an object);
/// the first one also opens its field, so it is measured on a copy of the record (once per
/// field of a record). Measuring the item alone keeps cutting linear in the view's size;
/// measuring the whole record again for each item serialized an observer's whole maze (225
/// cells by default) a record at a time, hundreds of times.
fn added(record: &Record, record_size: usize, item: &Item) -> usize {
    let first = match item {
        Item::Player(..) => record.players.is_empty(),
        Item::Object(_) => record.objects.is_empty(),
        Item::Cell(_) => record.cells.is_empty(),
    };
    if first {
        let mut grown = record.clone();
        push(&mut grown, item);
        return size(&grown).saturating_sub(record_size);
    }
    let element = match item {
        Item::Player(key, cell) => size(key).saturating_add(1).saturating_add(size(cell)),
        Item::Object(o) => size(o),
        Item::Cell(c) => size(c),
    };
    element.saturating_add(1)
}

/// Cuts the items into records of at most [`RECORD_MAX_BYTES`], greedily, in order: the
/// status in chunk 0, then players, objects, cells.
fn chunk(header: Record, items: Items) -> Vec<Record> {
    let blank = Record { chunk: PLACEHOLDER, chunks: PLACEHOLDER, ..header };
    let mut records = Vec::new();
    let mut current = Record { status: items.status, ..blank.clone() };
    let mut current_size = size(&current);
    let all = items
        .players
        .into_iter()
        .map(|(k, v)| Item::Player(k, v))
        .chain(items.objects.into_iter().map(Item::Object))
        .chain(items.cells.into_iter().map(Item::Cell));
    for item in all {
        let grown = current_size.saturating_add(added(&current, current_size, &item));
        if grown <= RECORD_MAX_BYTES {
            push(&mut current, &item);
            current_size = grown;
            continue;
        }
        records.push(std::mem::replace(&mut current, blank.clone()));
        push(&mut current, &item);
        current_size = size(&current);
    }
    records.push(current);
    let chunks = records.len() as u32;
    for (i, r) in records.iter_mut().enumerate() {
        r.chunk = i as u32;
        r.chunks = chunks;
    }
    records
}

fn push(record: &mut Record, item: &Item) {
    match item {
        Item::Player(k, v) => {
            record.players.insert(k.clone(), *v);
        }
        Item::Object(o) => record.objects.push(o.clone()),
        Item::Cell(c) => record.cells.push(c.clone()),
    }
}
