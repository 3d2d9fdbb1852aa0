//! The board and the die as SDK components, and the movement of one roll over the board.
//!
//! The board is a DIRECTED graph (`juegoland_sdk::components::GraphLayout`): nodes `0`
//! (off the board) to `100`; `next` edges `i → i+1`; `back` edges `100 → 99 … 96 → 95`
//! (the only way a bounce may count back); and one `ladder` or `snake` edge out of each
//! ladder foot and snake head. Nothing is made bidirectional: a ladder is never walked down
//! and a snake never up. The movement walks these edges with the SDK's
//! [`GraphLayout::walk`]; the jump is the one `ladder`/`snake` edge leaving the square the
//! roll counts to.

use std::sync::LazyLock;

use juegoland_sdk::components::{
    Attributes, BoardDefinition, BoardEdge, BoardLayout, DiceDefinition, GraphLayout, GraphNode, roll,
};
use juegoland_sdk::{ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, Randomness, RuleError};

use crate::model::{Finish, PathStep, Via};

/// The last square.
pub const GOAL: u32 = 100;
/// The classic 1943 ladders, foot → top.
pub const LADDERS: [(u32, u32); 9] =
    [(1, 38), (4, 14), (9, 31), (21, 42), (28, 84), (36, 44), (51, 67), (71, 91), (80, 100)];
/// The classic 1943 snakes, head → tail.
pub const SNAKES: [(u32, u32); 10] =
    [(16, 6), (47, 26), (49, 11), (56, 53), (62, 19), (64, 60), (87, 24), (93, 73), (95, 75), (98, 78)];
/// The component id of the board.
pub const BOARD: &str = "board";
/// The component id of the die.
pub const DIE: &str = "die";
/// The largest excess a bounce counts back (a 6 from square 99).
const MAX_BOUNCE: u32 = 5;

/// The `board-games/serpientes100` definition: see the module docs.
pub fn serpientes100() -> BoardDefinition {
    let nodes = (0..=GOAL).map(|i| GraphNode { id: i.to_string(), attributes: Attributes::new() }).collect();
    let edge = |from: u32, to: u32, kind: &str| BoardEdge {
        from: from.to_string(),
        to: to.to_string(),
        kind: Some(kind.to_owned()),
    };
    let mut edges: Vec<BoardEdge> = (0..GOAL).map(|i| edge(i, i + 1, "next")).collect();
    edges.extend((GOAL - MAX_BOUNCE + 1..=GOAL).rev().map(|i| edge(i, i - 1, "back")));
    edges.extend(LADDERS.iter().map(|&(a, b)| edge(a, b, "ladder")));
    edges.extend(SNAKES.iter().map(|&(a, b)| edge(a, b, "snake")));
    BoardDefinition { layout: BoardLayout::Graph(GraphLayout { nodes, edges }) }
}

/// The declared components: `board` (`board-games/serpientes100`) and `die` (`board-games/d6`).
pub fn components() -> Vec<ComponentDeclaration> {
    vec![
        ComponentDeclaration {
            component_id: BOARD.to_owned(),
            definition: ComponentDefinition::Board(serpientes100()),
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

/// The die.
pub fn die() -> &'static DiceDefinition {
    component_set().dice(DIE).expect("the die is declared")
}

/// Rolls the die once, labelled `label`.
pub fn roll_die(label: &str, random: &mut Randomness<'_>) -> Result<u8, RuleError> {
    let face = roll(die(), label, random)?;
    u8::try_from(face.value).map_err(|_| RuleError::fault("a die face out of range"))
}

/// The jump (`ladder` or `snake`) leaving `square`, if any.
pub fn jump_from(square: u32) -> Option<(u32, Via)> {
    let id = square.to_string();
    graph().outgoing(&id).find_map(|e| {
        let via = match e.kind.as_deref() {
            Some("ladder") => Via::Ladder,
            Some("snake") => Via::Snake,
            _ => return None,
        };
        e.to.parse().ok().map(|to| (to, via))
    })
}

fn walk(from: u32, steps: u32, kind: &str) -> Result<u32, RuleError> {
    let path =
        graph().walk(&from.to_string(), steps, Some(kind)).map_err(|e| RuleError::fault(format!("walk: {e}")))?;
    match path.last() {
        None => Ok(from),
        Some(last) => last.parse().map_err(|_| RuleError::fault("a board node that is not a square")),
    }
}

/// The whole movement of a roll of `roll` from `from`: the path (empty when the piece cannot
/// move) and where the piece comes to rest.
pub fn resolve(from: u32, roll: u32, finish: Finish) -> Result<(Vec<PathStep>, u32), RuleError> {
    let mut path = Vec::new();
    let target = from + roll;
    let mut at = if target <= GOAL {
        let at = walk(from, roll, "next")?;
        path.push(PathStep { square: at, via: Via::Step });
        at
    } else {
        match finish {
            Finish::Exact => return Ok((path, from)),
            Finish::Bounce => {
                walk(from, GOAL - from, "next")?;
                path.push(PathStep { square: GOAL, via: Via::Step });
                let at = walk(GOAL, target - GOAL, "back")?;
                path.push(PathStep { square: at, via: Via::Bounce });
                at
            }
        }
    };
    if let Some((to, via)) = jump_from(at) {
        path.push(PathStep { square: to, via });
        at = to;
    }
    Ok((path, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_is_valid_and_directed() {
        assert_eq!(serpientes100().validate(), Ok(()));
        for (a, b) in LADDERS {
            assert_eq!(jump_from(a), Some((b, Via::Ladder)));
            assert_eq!(jump_from(b), None, "a ladder top is no way down");
        }
        for (a, b) in SNAKES {
            assert_eq!(jump_from(a), Some((b, Via::Snake)));
            assert!(jump_from(b).is_none_or(|(_, via)| via != Via::Ladder || b == 0), "a snake tail is no way up");
        }
        // Jumps never chain on this layout: no jump lands on another jump's start.
        for (_, to) in LADDERS.iter().chain(SNAKES.iter()) {
            assert_eq!(jump_from(*to), None, "{to}");
        }
    }

    #[test]
    fn every_ladder_and_snake_is_taken_from_the_square_below() {
        for (foot, top) in LADDERS {
            let (path, at) = resolve(foot - 1, 1, Finish::Exact).unwrap();
            assert_eq!(path, [PathStep { square: foot, via: Via::Step }, PathStep { square: top, via: Via::Ladder }]);
            assert_eq!(at, top);
        }
        for (head, tail) in SNAKES {
            let (path, at) = resolve(head - 2, 2, Finish::Bounce).unwrap();
            assert_eq!(path, [PathStep { square: head, via: Via::Step }, PathStep { square: tail, via: Via::Snake }]);
            assert_eq!(at, tail);
        }
    }

    #[test]
    fn both_finish_rules() {
        assert_eq!(resolve(97, 5, Finish::Exact).unwrap(), (vec![], 97));
        assert_eq!(resolve(97, 3, Finish::Exact).unwrap(), (vec![PathStep { square: 100, via: Via::Step }], 100));
        // 97 + 5 = 102: up to 100, back 2 to 98, the snake's head, down to 78.
        assert_eq!(
            resolve(97, 5, Finish::Bounce).unwrap(),
            (
                vec![
                    PathStep { square: 100, via: Via::Step },
                    PathStep { square: 98, via: Via::Bounce },
                    PathStep { square: 78, via: Via::Snake },
                ],
                78
            )
        );
        assert_eq!(
            resolve(99, 6, Finish::Bounce).unwrap(),
            (
                vec![
                    PathStep { square: 100, via: Via::Step },
                    PathStep { square: 95, via: Via::Bounce },
                    PathStep { square: 75, via: Via::Snake }
                ],
                75
            )
        );
    }
}
