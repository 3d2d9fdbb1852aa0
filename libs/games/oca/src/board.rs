//! The board and the die as SDK components, and the movement of one roll over the board.
//!
//! The board (`board-games/oca63`) is a DIRECTED graph: nodes `0` (off the board) to `63`;
//! `next` edges `i → i+1`; `back` edges `63 → 62 … 52 → 51` (the only way an excess counts
//! back); and the jumps as connections of their own kind, each declared in the direction it
//! goes — `goose` (each goose to the next, 59 → 63), `bridge` (6 → 12 and 12 → 6, two
//! edges), `dice` (26 → 53 and 53 → 26), `maze` (42 → 30), `death` (58 → 1). Squares that
//! hold a piece rather than move it carry attributes: `{"effect": "inn", "turnsLost": 1}`
//! (19), `{"effect": "well"}` (31), `{"effect": "prison", "turnsLost": 2}` (52); every
//! special square has a `name` for clients. A roll takes at most one jump: the one leaving
//! the square it counts to (so a bridge does not bounce back and forth).

use std::sync::LazyLock;

use juegoland_sdk::components::{
    Attributes, BoardDefinition, BoardEdge, BoardLayout, DiceDefinition, GraphLayout, GraphNode, roll,
};
use juegoland_sdk::{ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, Randomness, RuleError};
use serde_json::json;

use crate::model::{PathStep, Via};

/// The last square (the garden).
pub const GOAL: u32 = 63;
/// The geese; each sends a piece to the next one (and 59 to 63).
pub const GEESE: [u32; 13] = [5, 9, 14, 18, 23, 27, 32, 36, 41, 45, 50, 54, 59];
/// The inn: one turn lost.
pub const INN: u32 = 19;
/// The well: held until another player falls in.
pub const WELL: u32 = 31;
/// The prison: two turns lost.
pub const PRISON: u32 = 52;
/// The maze's square (→ 30).
pub const MAZE: u32 = 42;
/// Death's square (→ 1).
pub const DEATH: u32 = 58;
/// The component id of the board.
pub const BOARD: &str = "board";
/// The component id of the die (one or two copies are thrown; the definition is one d6).
pub const DIE: &str = "die";
/// The largest excess counted back (two sixes from 62).
const MAX_BOUNCE: u32 = 12;

/// The jumps of the board, as `(from, to, kind)`.
pub fn jumps() -> Vec<(u32, u32, &'static str)> {
    let mut jumps: Vec<(u32, u32, &str)> = GEESE.windows(2).map(|w| (w[0], w[1], "goose")).collect();
    jumps.push((59, GOAL, "goose"));
    jumps.extend([
        (6, 12, "bridge"),
        (12, 6, "bridge"),
        (26, 53, "dice"),
        (53, 26, "dice"),
        (MAZE, 30, "maze"),
        (DEATH, 1, "death"),
    ]);
    jumps
}

fn name(square: u32) -> Option<&'static str> {
    Some(match square {
        s if GEESE.contains(&s) => "oca",
        6 | 12 => "puente",
        INN => "posada",
        26 | 53 => "dados",
        WELL => "pozo",
        MAZE => "laberinto",
        PRISON => "carcel",
        DEATH => "muerte",
        GOAL => "jardin",
        _ => return None,
    })
}

/// The `board-games/oca63` definition: see the module docs.
pub fn oca63() -> BoardDefinition {
    let nodes = (0..=GOAL)
        .map(|i| {
            let mut attributes = Attributes::new();
            if let Some(n) = name(i) {
                attributes.insert("name".into(), json!(n));
            }
            match i {
                INN => {
                    attributes.insert("effect".into(), json!("inn"));
                    attributes.insert("turnsLost".into(), json!(1));
                }
                WELL => {
                    attributes.insert("effect".into(), json!("well"));
                }
                PRISON => {
                    attributes.insert("effect".into(), json!("prison"));
                    attributes.insert("turnsLost".into(), json!(2));
                }
                _ => {}
            }
            GraphNode { id: i.to_string(), attributes }
        })
        .collect();
    let edge = |from: u32, to: u32, kind: &str| BoardEdge {
        from: from.to_string(),
        to: to.to_string(),
        kind: Some(kind.to_owned()),
    };
    let mut edges: Vec<BoardEdge> = (0..GOAL).map(|i| edge(i, i + 1, "next")).collect();
    edges.extend((GOAL - MAX_BOUNCE + 1..=GOAL).rev().map(|i| edge(i, i - 1, "back")));
    edges.extend(jumps().into_iter().map(|(a, b, k)| edge(a, b, k)));
    BoardDefinition { layout: BoardLayout::Graph(GraphLayout { nodes, edges }) }
}

/// The declared components: `board` (`board-games/oca63`) and `die` (`board-games/d6`).
pub fn components() -> Vec<ComponentDeclaration> {
    vec![
        ComponentDeclaration {
            component_id: BOARD.to_owned(),
            definition: ComponentDefinition::Board(oca63()),
            copies: 1,
        },
        ComponentDeclaration {
            component_id: DIE.to_owned(),
            definition: ComponentDefinition::Dice(DiceDefinition::fair(6)),
            copies: 1,
        },
    ]
}

static SET: LazyLock<ComponentSet> = LazyLock::new(|| {
    ComponentSet::load(components(), &CustomRegistry::new()).expect("the board and the die are valid")
});

/// The loaded components, loaded once.
pub fn component_set() -> &'static ComponentSet {
    &SET
}

/// The board's graph.
pub fn graph() -> &'static GraphLayout {
    component_set().board(BOARD).and_then(BoardDefinition::graph).expect("the board is a graph")
}

/// Rolls `count` dice, labelled `die0`, `die1`….
pub fn roll_dice(count: u8, random: &mut Randomness<'_>) -> Result<Vec<u8>, RuleError> {
    let die = component_set().dice(DIE).ok_or_else(|| RuleError::fault("no die"))?;
    (0..count)
        .map(|i| {
            let face = roll(die, &format!("die{i}"), random)?;
            u8::try_from(face.value).map_err(|_| RuleError::fault("a die face out of range"))
        })
        .collect()
}

/// The jump leaving `square`, if any.
pub fn jump_from(square: u32) -> Option<(u32, Via)> {
    let id = square.to_string();
    graph().outgoing(&id).find_map(|e| {
        let via = match e.kind.as_deref()? {
            "goose" => Via::Goose,
            "bridge" => Via::Bridge,
            "dice" => Via::Dice,
            "maze" => Via::Maze,
            "death" => Via::Death,
            _ => return None,
        };
        e.to.parse().ok().map(|to| (to, via))
    })
}

/// A numeric attribute of `square`, if any.
fn attribute(square: u32, key: &str) -> Option<&'static serde_json::Value> {
    graph().node(&square.to_string()).and_then(|n| n.attributes.get(key))
}

/// Turns lost by resting on `square` (the inn, the prison).
pub fn turns_lost_at(square: u32) -> u32 {
    attribute(square, "turnsLost").and_then(serde_json::Value::as_u64).map_or(0, |n| n as u32)
}

/// Whether `square` is the well.
pub fn is_well(square: u32) -> bool {
    attribute(square, "effect").and_then(serde_json::Value::as_str) == Some("well")
}

fn walk(from: u32, steps: u32, kind: &str) -> Result<u32, RuleError> {
    let path =
        graph().walk(&from.to_string(), steps, Some(kind)).map_err(|e| RuleError::fault(format!("walk: {e}")))?;
    match path.last() {
        None => Ok(from),
        Some(last) => last.parse().map_err(|_| RuleError::fault("a board node that is not a square")),
    }
}

/// What one roll did to a piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Movement {
    pub path: Vec<PathStep>,
    /// Where the piece comes to rest.
    pub to: u32,
    /// Whether the roller rolls again (a goose, a bridge, the dice).
    pub again: bool,
}

/// The whole movement of a roll `dice` from `from`; `first_throw` enables the two-dice
/// opening (6+3 → 26, 4+5 → 53).
pub fn resolve(from: u32, dice: &[u8], first_throw: bool) -> Result<Movement, RuleError> {
    let sum: u32 = dice.iter().map(|d| u32::from(*d)).sum();
    let mut path = Vec::new();
    if first_throw && from == 0 && dice.len() == 2 {
        let mut sorted = dice.to_vec();
        sorted.sort_unstable();
        let opening = match sorted.as_slice() {
            [3, 6] => Some(26),
            [4, 5] => Some(53),
            _ => None,
        };
        if let Some(to) = opening {
            let at = walk(from, sum, "next")?;
            path.push(PathStep { square: at, via: Via::Step });
            path.push(PathStep { square: to, via: Via::Dice });
            return Ok(Movement { path, to, again: true });
        }
    }
    let target = from + sum;
    let mut at = if target <= GOAL {
        walk(from, sum, "next")?
    } else {
        walk(from, GOAL - from, "next")?;
        path.push(PathStep { square: GOAL, via: Via::Step });
        let back = walk(GOAL, target - GOAL, "back")?;
        path.push(PathStep { square: back, via: Via::Bounce });
        back
    };
    if target <= GOAL {
        path.push(PathStep { square: at, via: Via::Step });
    }
    let mut again = false;
    if let Some((to, via)) = jump_from(at) {
        path.push(PathStep { square: to, via });
        again = matches!(via, Via::Goose | Via::Bridge | Via::Dice) && to != GOAL;
        at = to;
    } else if is_well(at) {
        path.push(PathStep { square: at, via: Via::Well });
    }
    Ok(Movement { path, to: at, again })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(v: &[(u32, Via)]) -> Vec<PathStep> {
        v.iter().map(|&(square, via)| PathStep { square, via }).collect()
    }

    #[test]
    fn the_board_is_valid_and_its_jumps_are_one_way_edges() {
        assert_eq!(oca63().validate(), Ok(()));
        assert_eq!(jump_from(42), Some((30, Via::Maze)));
        assert_eq!(jump_from(30), None, "the maze is no way forward");
        assert_eq!(jump_from(1), None, "death is no way back");
        assert_eq!(jump_from(6), Some((12, Via::Bridge)));
        assert_eq!(jump_from(12), Some((6, Via::Bridge)), "both bridge edges are declared, not inferred");
        assert_eq!(turns_lost_at(INN), 1);
        assert_eq!(turns_lost_at(PRISON), 2);
        assert!(is_well(WELL));
    }

    #[test]
    fn every_special_square() {
        for w in GEESE.windows(2) {
            let m = resolve(w[0] - 1, &[1], false).unwrap();
            assert_eq!(m, Movement { path: steps(&[(w[0], Via::Step), (w[1], Via::Goose)]), to: w[1], again: true });
        }
        let m = resolve(58, &[1], false).unwrap();
        assert_eq!(m, Movement { path: steps(&[(59, Via::Step), (63, Via::Goose)]), to: 63, again: false });
        assert_eq!(resolve(5, &[1], false).unwrap().path, steps(&[(6, Via::Step), (12, Via::Bridge)]));
        assert_eq!(resolve(10, &[2], false).unwrap().path, steps(&[(12, Via::Step), (6, Via::Bridge)]));
        assert_eq!(resolve(25, &[1], false).unwrap().path, steps(&[(26, Via::Step), (53, Via::Dice)]));
        assert_eq!(resolve(51, &[2], false).unwrap().path, steps(&[(53, Via::Step), (26, Via::Dice)]));
        assert_eq!(
            resolve(40, &[2], false).unwrap(),
            Movement { path: steps(&[(42, Via::Step), (30, Via::Maze)]), to: 30, again: false }
        );
        assert_eq!(
            resolve(57, &[1], false).unwrap(),
            Movement { path: steps(&[(58, Via::Step), (1, Via::Death)]), to: 1, again: false }
        );
        assert_eq!(
            resolve(30, &[1], false).unwrap(),
            Movement { path: steps(&[(31, Via::Step), (31, Via::Well)]), to: 31, again: false }
        );
        assert_eq!(
            resolve(17, &[2], false).unwrap(),
            Movement { path: steps(&[(19, Via::Step)]), to: 19, again: false }
        );
        // Counting back: 60 + 6 = 66, three back from 63 is 60; 61 + 6 = 67 → 59, a goose → 63.
        assert_eq!(resolve(60, &[6], false).unwrap().path, steps(&[(63, Via::Step), (60, Via::Bounce)]));
        assert_eq!(
            resolve(61, &[6], false).unwrap(),
            Movement { path: steps(&[(63, Via::Step), (59, Via::Bounce), (63, Via::Goose)]), to: 63, again: false }
        );
        // 62 + 12 = 74: eleven back is 52, the prison.
        assert_eq!(resolve(62, &[6, 6], false).unwrap().to, 52);
        // The two-dice opening.
        assert_eq!(
            resolve(0, &[6, 3], true).unwrap(),
            Movement { path: steps(&[(9, Via::Step), (26, Via::Dice)]), to: 26, again: true }
        );
        assert_eq!(resolve(0, &[4, 5], true).unwrap().to, 53);
        assert_eq!(resolve(0, &[4, 5], false).unwrap().to, 14, "only on a first throw: else 9 is a goose");
    }
}
