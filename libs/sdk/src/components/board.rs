//! Boards: a grid, or a graph whose edges are DIRECTED.
//!
//! An edge `{from, to}` lets a piece go from `from` to `to` and never back: nothing in this
//! module adds the reverse edge. A two-way connection is two declared edges. Edge kinds
//! (`"next"`, `"ladder"`, `"snake"`, …) are free strings the game gives meaning to.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::definition::{Attributes, DefinitionError, check_ids};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoardDefinition {
    pub layout: BoardLayout,
}

/// The shape of a board, tagged by `shape`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "shape", rename_all = "camelCase", deny_unknown_fields)]
pub enum BoardLayout {
    Grid(GridLayout),
    Graph(GraphLayout),
}

/// A rectangular grid; cells are `(row, column)` from `(0, 0)`. Adjacency is the game's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GridLayout {
    pub rows: u32,
    pub columns: u32,
}

impl GridLayout {
    pub fn contains(&self, row: u32, column: u32) -> bool {
        row < self.rows && column < self.columns
    }
}

/// A directed graph of nodes (squares) and edges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphLayout {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<BoardEdge>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphNode {
    pub id: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: Attributes,
}

/// A directed edge: from `from` to `to`, never the other way.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BoardEdge {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// Why a walk over a graph board failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    #[error("board has no node {0:?}")]
    UnknownNode(String),
    #[error("no matching edge leaves node {node:?} at step {step}: add an edge or stop earlier")]
    DeadEnd { node: String, step: u32 },
    #[error("{count} matching edges leave node {node:?} at step {step}: pass an edge kind that picks one")]
    Ambiguous { node: String, step: u32, count: usize },
}

impl BoardDefinition {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        match &self.layout {
            BoardLayout::Grid(g) if g.rows == 0 || g.columns == 0 => {
                Err(DefinitionError::EmptyGrid { rows: g.rows, columns: g.columns })
            }
            BoardLayout::Grid(_) => Ok(()),
            BoardLayout::Graph(g) => g.validate(),
        }
    }

    /// The graph, when the board is one.
    pub fn graph(&self) -> Option<&GraphLayout> {
        match &self.layout {
            BoardLayout::Graph(g) => Some(g),
            BoardLayout::Grid(_) => None,
        }
    }

    /// The grid, when the board is one.
    pub fn grid(&self) -> Option<&GridLayout> {
        match &self.layout {
            BoardLayout::Grid(g) => Some(g),
            BoardLayout::Graph(_) => None,
        }
    }
}

impl GraphLayout {
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.nodes.is_empty() {
            return Err(DefinitionError::Empty { what: "board nodes" });
        }
        check_ids("board node", self.nodes.iter().map(|n| n.id.as_str()))?;
        let mut seen = BTreeSet::new();
        for (index, edge) in self.edges.iter().enumerate() {
            for end in [&edge.from, &edge.to] {
                if !self.has_node(end) {
                    return Err(DefinitionError::UnknownNode { index, node: end.clone() });
                }
            }
            if !seen.insert(edge) {
                return Err(DefinitionError::DuplicateEdge { index, from: edge.from.clone(), to: edge.to.clone() });
            }
        }
        Ok(())
    }

    pub fn has_node(&self, id: &str) -> bool {
        self.nodes.iter().any(|n| n.id == id)
    }

    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The edges leaving `node`, in declaration order. Edges INTO `node` are not included.
    pub fn outgoing<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a BoardEdge> + 'a {
        self.edges.iter().filter(move |e| e.from == node)
    }

    /// The nodes reachable from `node` by one edge of any kind, in declaration order.
    pub fn successors<'a>(&'a self, node: &'a str) -> Vec<&'a str> {
        self.outgoing(node).map(|e| e.to.as_str()).collect()
    }

    /// The nodes reachable from `node` by one edge whose kind is exactly `kind`
    /// (`None` selects edges declared without a kind).
    pub fn successors_by_kind<'a>(&'a self, node: &'a str, kind: Option<&str>) -> Vec<&'a str> {
        self.outgoing(node).filter(|e| e.kind.as_deref() == kind).map(|e| e.to.as_str()).collect()
    }

    /// Whether `path` is a walk along declared edges (any kind), each step from one node to
    /// the next. A single existing node is a path; an empty slice is not.
    pub fn is_path(&self, path: &[&str]) -> bool {
        !path.is_empty()
            && path.iter().all(|n| self.has_node(n))
            && path.windows(2).all(|w| self.edges.iter().any(|e| e.from == w[0] && e.to == w[1]))
    }

    /// Follows `steps` edges of `kind` from `start`, one per step, and returns the nodes
    /// visited AFTER `start` (so `steps` nodes; a client animates exactly these). Each step
    /// needs exactly one matching edge: none is [`BoardError::DeadEnd`], several is
    /// [`BoardError::Ambiguous`]. Bounce-backs and square effects are the game's rules.
    pub fn walk(&self, start: &str, steps: u32, kind: Option<&str>) -> Result<Vec<String>, BoardError> {
        if !self.has_node(start) {
            return Err(BoardError::UnknownNode(start.to_owned()));
        }
        let mut path = Vec::with_capacity(steps as usize);
        let mut at = start;
        for step in 0..steps {
            let next = self.successors_by_kind(at, kind);
            match next.as_slice() {
                [only] => {
                    path.push((*only).to_owned());
                    at = only;
                }
                [] => return Err(BoardError::DeadEnd { node: at.to_owned(), step }),
                many => return Err(BoardError::Ambiguous { node: at.to_owned(), step, count: many.len() }),
            }
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Squares 1..=6 linked by `next`, a ladder 2 -> 5 and a snake 6 -> 3.
    fn snakes() -> GraphLayout {
        let mut edges: Vec<BoardEdge> = (1..6)
            .map(|i| BoardEdge { from: i.to_string(), to: (i + 1).to_string(), kind: Some("next".into()) })
            .collect();
        edges.push(BoardEdge { from: "2".into(), to: "5".into(), kind: Some("ladder".into()) });
        edges.push(BoardEdge { from: "6".into(), to: "3".into(), kind: Some("snake".into()) });
        let nodes = (1..=6).map(|i| GraphNode { id: i.to_string(), attributes: Attributes::new() }).collect();
        GraphLayout { nodes, edges }
    }

    #[test]
    fn directed_edges_are_never_reversed() {
        let g = snakes();
        assert_eq!(g.validate(), Ok(()));
        assert_eq!(g.successors("2"), ["3", "5"]);
        assert_eq!(g.successors_by_kind("2", Some("ladder")), ["5"]);
        // The ladder does not lead down and the snake does not lead up.
        assert_eq!(g.successors("5"), ["6"]);
        assert_eq!(g.successors("3"), ["4"]);
        assert!(g.is_path(&["1", "2", "5", "6", "3"]));
        assert!(!g.is_path(&["5", "2"]));
        assert!(!g.is_path(&["3", "6"]));
        assert!(!g.is_path(&["2", "1"]));
        assert!(!g.is_path(&[]));
        assert!(g.is_path(&["4"]));
        assert!(!g.is_path(&["9"]));
    }

    #[test]
    fn walk_follows_one_edge_kind() {
        let g = snakes();
        assert_eq!(g.walk("1", 3, Some("next")).unwrap(), ["2", "3", "4"]);
        assert_eq!(g.walk("1", 0, Some("next")).unwrap(), Vec::<String>::new());
        assert_eq!(g.walk("4", 3, Some("next")), Err(BoardError::DeadEnd { node: "6".into(), step: 2 }));
        assert_eq!(g.walk("6", 1, Some("snake")).unwrap(), ["3"]);
        assert_eq!(g.walk("2", 1, None), Err(BoardError::DeadEnd { node: "2".into(), step: 0 }));
        assert_eq!(g.walk("0", 1, None), Err(BoardError::UnknownNode("0".into())));
        let mut fork = g.clone();
        fork.edges.push(BoardEdge { from: "1".into(), to: "3".into(), kind: Some("next".into()) });
        assert_eq!(fork.walk("1", 1, Some("next")), Err(BoardError::Ambiguous { node: "1".into(), step: 0, count: 2 }));
    }

    #[test]
    fn board_json_round_trips() {
        let board: BoardDefinition = serde_json::from_value(json!({"layout": {"shape": "graph",
            "nodes": [{"id": "a"}, {"id": "b", "attributes": {"goose": true}}],
            "edges": [{"from": "a", "to": "b"}]}}))
        .unwrap();
        assert_eq!(board.graph().unwrap().successors("a"), ["b"]);
        assert!(board.graph().unwrap().successors("b").is_empty());
        assert!(board.grid().is_none());
        let again: BoardDefinition = serde_json::from_value(serde_json::to_value(&board).unwrap()).unwrap();
        assert_eq!(again, board);
        let grid: BoardDefinition =
            serde_json::from_value(json!({"layout": {"shape": "grid", "rows": 6, "columns": 7}})).unwrap();
        assert!(grid.grid().unwrap().contains(5, 6));
        assert!(!grid.grid().unwrap().contains(6, 0));
        assert!(
            serde_json::from_value::<BoardDefinition>(json!({"layout": {"shape": "grid", "rows": 1, "columns": 1,
                "wrap": true}}))
            .is_err()
        );
    }
}
