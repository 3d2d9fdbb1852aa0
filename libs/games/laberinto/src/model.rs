//! Laberinto's typed contract: config, data, actions, events, view and context.

use std::collections::BTreeMap;

use juegoland_sdk::Seat;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The match configuration (validated at creation, fixed for the match).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_side")]
    #[schemars(range(min = 5, max = 31))]
    pub width: u32,
    #[serde(default = "default_side")]
    #[schemars(range(min = 5, max = 31))]
    pub height: u32,
    /// The least time between two accepted moves of one player, on the captured instant.
    #[serde(default = "default_cooldown")]
    #[schemars(range(min = 0, max = 2000))]
    pub cooldown_ms: i64,
    /// How long the countdown phase lasts before the race starts (0: no countdown).
    #[serde(default = "default_countdown")]
    #[schemars(range(min = 0, max = 10000))]
    pub countdown_ms: i64,
    /// How many vision artifacts lie in the maze.
    #[serde(default = "default_artifacts")]
    #[schemars(range(min = 0, max = 8))]
    pub artifacts: u32,
    /// How many extra passages open loops in the otherwise perfect maze.
    #[serde(default)]
    #[schemars(range(min = 0, max = 50))]
    pub loops: u32,
}

fn default_side() -> u32 {
    15
}
fn default_cooldown() -> i64 {
    150
}
fn default_countdown() -> i64 {
    3000
}
fn default_artifacts() -> u32 {
    2
}

impl Default for Config {
    fn default() -> Self {
        Config {
            width: default_side(),
            height: default_side(),
            cooldown_ms: default_cooldown(),
            countdown_ms: default_countdown(),
            artifacts: default_artifacts(),
            loops: 0,
        }
    }
}

/// A compass bearing: one of eight, never a coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Bearing {
    N,
    Ne,
    E,
    Se,
    S,
    Sw,
    W,
    Nw,
}

/// One of the four passage directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    North,
    East,
    South,
    West,
}

impl Direction {
    pub const ALL: [Direction; 4] = [Direction::North, Direction::East, Direction::South, Direction::West];

    /// The passage bit of this side of a cell.
    pub fn bit(self) -> u8 {
        match self {
            Direction::North => 1,
            Direction::East => 2,
            Direction::South => 4,
            Direction::West => 8,
        }
    }

    pub fn opposite(self) -> Direction {
        match self {
            Direction::North => Direction::South,
            Direction::East => Direction::West,
            Direction::South => Direction::North,
            Direction::West => Direction::East,
        }
    }
}

/// A player's exit: a border cell and the side that leads out of the maze.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Exit {
    pub cell: u32,
    pub side: Direction,
    pub open: bool,
}

/// One player's authoritative state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Player {
    pub cell: u32,
    /// The owner of the carried key (one slot), if any.
    pub inventory: Option<Seat>,
    /// Successful moves left under a vision effect (radius 6 while above 0).
    pub vision_moves: u32,
    pub compass: Option<Bearing>,
    /// The instant of the player's last accepted command (out-of-order instants are refused).
    pub last_ms: Option<i64>,
    /// The instant of the player's last accepted move (the cooldown runs from it).
    pub last_move_ms: Option<i64>,
    /// When the player left the maze through their open exit.
    pub exited_ms: Option<i64>,
    /// What the player has seen so far (private: never projected, to anyone).
    pub memory: Memory,
}

/// What one player has seen since the match began, kept by the rules so that the stateless
/// bot plays from its seat's knowledge alone: after every transition the rules add exactly
/// what the player's view shows. It is private: no view, event or context carries it, to
/// anyone. Walls, exits and compasses never move, so the set of seen
/// cells is all there is to remember of them; keys move, so their last sightings are kept;
/// the compass's bearing is cleared on the next move, so the one it gave is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Memory {
    /// Every cell that has been within the player's square at some revision.
    pub seen: CellSet,
    /// The cells within the player's square since its search for its own key last started
    /// over: when the player sees that key gone from where it had seen it, or when the
    /// sweep has covered every cell, it restarts from the current square (a key a rival
    /// carries about is looked for again).
    pub swept: CellSet,
    /// Each key's last sighting by this player, by owner: absent when never seen, when it
    /// was seen to be gone from where it was last seen, or while this player carries it.
    pub keys: BTreeMap<Seat, Sighting>,
    /// The bearing the player's own compass gave (the compass and the exit never move).
    pub bearing: Option<Bearing>,
}

/// Where a player last saw a key: on the ground, or carried by the rival (at the rival's
/// cell when last seen).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sighting {
    pub cell: u32,
    pub carried: bool,
}

/// A set of cells as a bitset: cell `i` is bit `i % 8` of byte `i / 8`. Serialized as the
/// bytes in lowercase hexadecimal (a 15×15 maze's set is 58 characters, a 31×31 one's 242).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CellSet(Vec<u8>);

/// A cell set's text that is not lowercase hexadecimal bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CellSetError {
    #[error("a cell set has an odd number of hexadecimal digits ({0})")]
    OddLength(usize),
    #[error("a cell set holds {0:?}, which is not a lowercase hexadecimal digit")]
    NotHex(char),
}

impl CellSet {
    /// The empty set of a grid of `cells` cells.
    pub fn empty(cells: u32) -> CellSet {
        CellSet(vec![0; cells.div_ceil(8) as usize])
    }

    pub fn contains(&self, cell: u32) -> bool {
        self.0.get((cell / 8) as usize).is_some_and(|b| b & (1 << (cell % 8)) != 0)
    }

    /// Adds `cell`; a cell beyond the set's bytes is ignored (a valid set has room for its
    /// grid: `validate_position` checks it).
    pub fn insert(&mut self, cell: u32) {
        if let Some(b) = self.0.get_mut((cell / 8) as usize) {
            *b |= 1 << (cell % 8);
        }
    }

    /// Empties the set, keeping its size.
    pub fn clear(&mut self) {
        self.0.fill(0);
    }

    /// How many cells the set holds.
    pub fn len(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|b| *b == 0)
    }

    /// Whether the set fits a grid of `cells` cells: exactly its bytes, no cell beyond it.
    pub fn fits(&self, cells: u32) -> bool {
        self.0.len() == cells.div_ceil(8) as usize && (cells..self.0.len() as u32 * 8).all(|c| !self.contains(c))
    }
}

impl TryFrom<String> for CellSet {
    type Error = CellSetError;

    fn try_from(text: String) -> Result<CellSet, CellSetError> {
        let digit = |c: char| match c {
            '0'..='9' | 'a'..='f' => Ok(c.to_digit(16).expect("a hexadecimal digit") as u8),
            other => Err(CellSetError::NotHex(other)),
        };
        let digits = text.chars().map(digit).collect::<Result<Vec<u8>, _>>()?;
        if digits.len() % 2 != 0 {
            return Err(CellSetError::OddLength(digits.len()));
        }
        Ok(CellSet(digits.chunks_exact(2).map(|pair| (pair[0] << 4) | pair[1]).collect()))
    }
}

impl From<CellSet> for String {
    fn from(set: CellSet) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(set.0.len() * 2);
        for b in set.0 {
            text.push(HEX[usize::from(b >> 4)].into());
            text.push(HEX[usize::from(b & 0xf)].into());
        }
        text
    }
}

impl JsonSchema for CellSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CellSet".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A set of cells: cell i is bit i % 8 of byte i / 8, the bytes in lowercase hexadecimal.",
            "type": "string",
            "pattern": "^([0-9a-f]{2})*$"
        })
    }
}

/// The first outward move and its instant: the 200 ms finish window runs from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FinishWindow {
    pub first: Seat,
    pub at_ms: i64,
}

/// Laberinto's private data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Data {
    /// The authoritative state sequence: every accepted change raises it by one.
    pub seq: u64,
    pub meeting_seq: u64,
    /// Passage bits per cell (`row * width + column`): north 1, east 2, south 4, west 8.
    pub cells: Vec<u8>,
    pub players: BTreeMap<Seat, Player>,
    /// Each owner's key on the ground (its cell), or `None` while a player carries it.
    pub ground_keys: BTreeMap<Seat, Option<u32>>,
    /// Each player's compass cell (it stays where it is: entering it gives a bearing).
    pub compasses: BTreeMap<Seat, u32>,
    pub exits: BTreeMap<Seat, Exit>,
    /// The cells of the vision artifacts not consumed yet.
    pub artifacts: Vec<u32>,
    /// The instant the race starts (the end of the countdown).
    pub starts_ms: i64,
    pub finish: Option<FinishWindow>,
}

/// `move {"direction": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MovePayload {
    pub direction: Direction,
}

/// `drop {}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropPayload {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "camelCase")]
pub enum Action {
    Move(MovePayload),
    Drop(DropPayload),
}

/// Internal events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Event {
    RaceStarted,
    Moved { seat: Seat, from: u32, to: u32 },
    ArtifactConsumed { seat: Seat, cell: u32 },
    KeyPicked { seat: Seat, owner: Seat, cell: u32 },
    KeyDropped { seat: Seat, owner: Seat, cell: u32 },
    Met { meeting_seq: u64, cell: u32 },
    ExitOpened { seat: Seat },
    Exited { seat: Seat, at_ms: i64 },
    Finished { reason: String },
}

/// Visible events.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data")]
pub enum Visible {
    #[serde(rename = "race.started")]
    RaceStarted {},
    #[serde(rename = "player.moved")]
    PlayerMoved { seat: Seat, cell: u32 },
    #[serde(rename = "players.met")]
    PlayersMet {
        #[serde(rename = "meetingSeq")]
        meeting_seq: u64,
    },
    #[serde(rename = "key.picked")]
    KeyPicked { seat: Seat, owner: Seat },
    #[serde(rename = "key.dropped")]
    KeyDropped { seat: Seat, owner: Seat },
    #[serde(rename = "exit.opened")]
    ExitOpened { seat: Seat },
    #[serde(rename = "match.finished")]
    MatchFinished { reason: String },
}

/// The view: bounded records (each at most [`crate::view::RECORD_MAX_BYTES`] serialized).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct View {
    pub records: Vec<Record>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Countdown,
    Racing,
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    P0,
    P1,
    Observer,
}

/// One record of a view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    pub seq: u64,
    pub role: Role,
    pub phase: Phase,
    pub width: u32,
    pub height: u32,
    pub meeting_seq: u64,
    pub chunk: u32,
    pub chunks: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub players: BTreeMap<String, u32>,
    /// Only in chunk 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellRecord {
    pub index: u32,
    pub n: bool,
    pub e: bool,
    pub s: bool,
    pub w: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    Key,
    Compass,
    Artifact,
    Exit,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectRecord {
    pub kind: ObjectKind,
    pub owner: Option<Seat>,
    pub variant: Option<String>,
    pub cell: u32,
}

/// A player's own status (chunk 0); an observer's carries both players' under `p0`, `p1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Status {
    Player(PlayerStatus),
    Observer(BTreeMap<Seat, PlayerStatus>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlayerStatus {
    pub inventory: Option<Seat>,
    pub vision_moves: u32,
    pub compass: Option<Bearing>,
    pub exit_open: bool,
}

/// The context: the recipient's seat (`null` for an observer) and the instant the race
/// starts at (so a client can show the countdown without a clock of its own).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub seat: Option<Seat>,
    pub race_starts_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_set_is_lowercase_hex_bytes_low_bit_first() {
        let mut set = CellSet::empty(10);
        assert_eq!(String::from(set.clone()), "0000");
        for cell in [0, 3, 9] {
            set.insert(cell);
        }
        assert_eq!(String::from(set.clone()), "0902");
        assert_eq!(set.len(), 3);
        assert!(set.contains(9) && !set.contains(8) && !set.contains(400));
        assert_eq!(serde_json::to_value(&set).unwrap(), serde_json::json!("0902"));
        assert_eq!(serde_json::from_value::<CellSet>(serde_json::json!("0902")).unwrap(), set);
        set.clear();
        assert!(set.is_empty() && set.fits(10));
    }

    #[test]
    fn a_cell_set_that_is_not_hex_bytes_is_a_typed_error() {
        assert_eq!(CellSet::try_from("0f1".to_owned()), Err(CellSetError::OddLength(3)));
        assert_eq!(CellSet::try_from("0F".to_owned()), Err(CellSetError::NotHex('F')));
        assert_eq!(CellSet::try_from("zz".to_owned()), Err(CellSetError::NotHex('z')));
        let err = serde_json::from_value::<CellSet>(serde_json::json!("0g")).unwrap_err();
        assert!(err.to_string().contains("not a lowercase hexadecimal digit"), "{err}");
    }

    #[test]
    fn a_cell_set_fits_its_grid_only_with_its_bytes_and_no_cell_beyond() {
        assert!(CellSet::try_from("ff03".to_owned()).unwrap().fits(10));
        assert!(!CellSet::try_from("ff07".to_owned()).unwrap().fits(10), "cell 10 is off a 10-cell grid");
        assert!(!CellSet::try_from("ff".to_owned()).unwrap().fits(10), "too few bytes");
        assert!(!CellSet::try_from("ff0300".to_owned()).unwrap().fits(10), "too many bytes");
    }
}
