//! A small dependency graph: the part of `cargo metadata` the checks need. Tests build one
//! by hand ([`Graph::member`], [`Graph::external`], [`Graph::dep`]) so that every check can
//! be shown to fail without calling cargo.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use cargo_metadata::{DependencyKind, Metadata, MetadataCommand};

/// How one crate depends on another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DepKind {
    /// `[dependencies]`: linked into the crate.
    Normal,
    /// `[build-dependencies]`: used by the build script.
    Build,
    /// `[dev-dependencies]`: tests, examples and benches only.
    Dev,
}

impl fmt::Display for DepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DepKind::Normal => "dependency",
            DepKind::Build => "build-dependency",
            DepKind::Dev => "dev-dependency",
        })
    }
}

/// A package in the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crate {
    /// A unique id (cargo's package id; the name in hand-built graphs).
    pub id: String,
    /// The package name, e.g. `juegoland-core` or `tokio`.
    pub name: String,
    /// For workspace members, the directory relative to the workspace root,
    /// `/`-separated (`libs/games/conecta4`); `None` for everything else.
    pub dir: Option<String>,
}

/// One resolved dependency edge, one per kind (a crate that is both a normal and a dev
/// dependency gives two edges).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The id of the depending crate.
    pub from: String,
    /// The id of the dependency.
    pub to: String,
    /// The kind of dependency.
    pub kind: DepKind,
    /// A `cfg(...)` or target triple restricting the edge, if any.
    pub platform: Option<String>,
}

/// A resolved dependency graph: workspace members and everything they reach.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Every package, members first in hand-built graphs, in cargo's order otherwise.
    pub crates: Vec<Crate>,
    /// Every resolved edge. Features are already applied, unified across the workspace
    /// the way `cargo metadata` reports them.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// An empty graph, to build by hand.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a workspace member named `name` in `dir` (relative to the root); its id is
    /// its name.
    pub fn member(mut self, name: &str, dir: &str) -> Self {
        self.crates.push(Crate { id: name.to_owned(), name: name.to_owned(), dir: Some(dir.to_owned()) });
        self
    }

    /// Adds a package from outside the workspace; its id is its name.
    pub fn external(mut self, name: &str) -> Self {
        self.crates.push(Crate { id: name.to_owned(), name: name.to_owned(), dir: None });
        self
    }

    /// Adds an edge between two ids.
    pub fn dep(mut self, from: &str, to: &str, kind: DepKind) -> Self {
        self.edges.push(Edge { from: from.to_owned(), to: to.to_owned(), kind, platform: None });
        self
    }

    /// The package with this id.
    pub fn get(&self, id: &str) -> Option<&Crate> {
        self.crates.iter().find(|c| c.id == id)
    }

    /// The workspace members.
    pub fn members(&self) -> impl Iterator<Item = &Crate> {
        self.crates.iter().filter(|c| c.dir.is_some())
    }

    /// Edges by their `from` id.
    pub fn adjacency(&self) -> BTreeMap<&str, Vec<&Edge>> {
        let mut out: BTreeMap<&str, Vec<&Edge>> = BTreeMap::new();
        for e in &self.edges {
            out.entry(e.from.as_str()).or_default().push(e);
        }
        out
    }

    /// Runs `cargo metadata` on the workspace whose root manifest is `manifest` and builds
    /// the graph from it.
    pub fn load(manifest: &Path) -> Result<Graph, String> {
        let metadata = MetadataCommand::new()
            .manifest_path(manifest)
            .exec()
            .map_err(|e| format!("run cargo metadata on {}: {e}", manifest.display()))?;
        Graph::from_metadata(&metadata)
    }

    /// Builds the graph from `cargo metadata` output (which must include the resolve
    /// graph, i.e. not `--no-deps`).
    pub fn from_metadata(metadata: &Metadata) -> Result<Graph, String> {
        let resolve = metadata
            .resolve
            .as_ref()
            .ok_or_else(|| "cargo metadata returned no resolve graph (was it run with --no-deps?)".to_owned())?;
        let root = metadata.workspace_root.as_std_path();
        let mut graph = Graph::new();
        for package in &metadata.packages {
            let dir = if metadata.workspace_members.contains(&package.id) {
                let manifest_dir = package.manifest_path.parent().map(|p| p.as_std_path()).unwrap_or(root);
                let rel = manifest_dir.strip_prefix(root).unwrap_or(manifest_dir);
                Some(
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/"),
                )
            } else {
                None
            };
            graph.crates.push(Crate { id: package.id.repr.clone(), name: package.name.to_string(), dir });
        }
        for node in &resolve.nodes {
            for dep in &node.deps {
                let mut push = |kind: DepKind, platform: Option<String>| {
                    graph.edges.push(Edge { from: node.id.repr.clone(), to: dep.pkg.repr.clone(), kind, platform });
                };
                if dep.dep_kinds.is_empty() {
                    // Cargo older than 1.41 gives no kinds: assume the strictest reading.
                    push(DepKind::Normal, None);
                }
                for info in &dep.dep_kinds {
                    let kind = match info.kind {
                        DependencyKind::Development => DepKind::Dev,
                        DependencyKind::Build => DepKind::Build,
                        // Unknown kinds are treated as normal: the strictest reading.
                        DependencyKind::Normal | DependencyKind::Unknown => DepKind::Normal,
                    };
                    push(kind, info.target.as_ref().map(|t| t.to_string()));
                }
            }
        }
        Ok(graph)
    }
}
