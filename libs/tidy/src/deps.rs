//! The dependency checks: the direction rule between layers, the purity of the rules
//! crates, and the ratchet of known exceptions.
//!
//! Purity is checked on the resolved graph `cargo metadata` reports, in which features are
//! unified across the whole workspace: if a service turns on a feature of a shared
//! dependency that pulls in an impure crate, the pure crates that use that dependency are
//! reported too. That is deliberate: in a workspace build the pure crate really is linked
//! against the feature, and could call it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::graph::{Crate, DepKind, Edge, Graph};
use crate::layers::{DEV_ONLY_DIRS, Layer, layer_of};
use crate::{LAYERS_LOCATION, RATCHET_LOCATION};

/// A crate a pure crate (sdk, games, protocol, core) must never reach through its normal
/// or build dependencies, with why. A pattern ending in `*` matches a name prefix.
#[derive(Clone, Copy, Debug)]
pub struct Impure {
    /// The crate name, or a prefix followed by `*`.
    pub pattern: &'static str,
    /// Why a pure crate must not reach it.
    pub why: &'static str,
}

/// The crates pure crates must not reach. Clock reads through `libc` cannot be detected
/// by name (libc is everywhere); the clippy bans in [`crate::clippy`] cover those.
pub const IMPURE_CRATES: &[Impure] = &[
    // Async runtimes: timers, IO and scheduling order are outside the rules' control.
    Impure { pattern: "tokio", why: "async runtime, timers and IO" },
    Impure { pattern: "mio", why: "OS event loop and sockets" },
    Impure { pattern: "async-std", why: "async runtime, timers and IO" },
    Impure { pattern: "smol", why: "async runtime, timers and IO" },
    // Databases and caches: storage belongs to libs/store behind the engine's traits.
    Impure { pattern: "sqlx*", why: "database access" },
    Impure { pattern: "redis", why: "network cache/database access" },
    // Network stacks: transport belongs to the services and libs/edge.
    Impure { pattern: "tonic", why: "gRPC transport" },
    Impure { pattern: "hyper", why: "HTTP transport" },
    Impure { pattern: "axum", why: "HTTP server" },
    Impure { pattern: "reqwest", why: "HTTP client" },
    // Actors: the match actor is a thin shell in libs/actors around the pure engine.
    Impure { pattern: "ractor", why: "actor runtime" },
    // Telemetry exporters do IO; pure crates stay silent or return data.
    Impure { pattern: "opentelemetry*", why: "telemetry export (IO, clocks)" },
    // Randomness: rules get labelled randomness only through the SDK's services, so that
    // a replay consumes the trace.
    Impure { pattern: "getrandom", why: "OS randomness" },
    Impure { pattern: "rand", why: "randomness outside the services (thread_rng, OS seeding)" },
    Impure { pattern: "fastrand", why: "randomness seeded from the OS and the clock" },
];

/// The impure entry a crate name matches, if any.
pub fn impure(name: &str) -> Option<&'static Impure> {
    IMPURE_CRATES.iter().find(|i| match i.pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == i.pattern,
    })
}

/// A known exception, kept in the ratchet table: `krate` may, for now, depend on or reach
/// `target`. The table only shrinks: an entry that suppresses nothing fails the check.
#[derive(Clone, Copy, Debug)]
pub struct Exception {
    /// The workspace crate (package name) with the problem.
    pub krate: &'static str,
    /// The workspace crate it must not depend on, or the impure crate it must not reach.
    pub target: &'static str,
    /// Why it is tolerated for now, and what would fix it.
    pub reason: &'static str,
}

/// One broken rule, with a message that says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The workspace crate (package name) that breaks the rule.
    pub krate: String,
    /// The crate it must not depend on or reach. `None` for problems a ratchet entry may
    /// not suppress (a crate in no layer).
    pub target: Option<String>,
    /// What broke and how to fix it.
    pub message: String,
}

fn dir_of(c: &Crate) -> &str {
    c.dir.as_deref().unwrap_or("?")
}

fn describe(c: &Crate, layer: Layer) -> String {
    format!("{} ({layer}, {})", c.name, dir_of(c))
}

fn layer_list(layers: &[Layer]) -> String {
    if layers.is_empty() {
        "no workspace crate".to_owned()
    } else {
        layers.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
    }
}

/// How to fix a forbidden edge `from → to`.
fn direction_fix(from: &Crate, fl: Layer, to: &Crate, tl: Layer, kind: DepKind) -> String {
    let (f, t, td) = (&from.name, &to.name, dir_of(to));
    if kind == DepKind::Dev {
        return format!(
            "dev-dependencies may use any lib but no service: move the code {f}'s tests need \
             out of {td} into a lib under libs/ and use that, or put the cross-service test in \
             the sandbox test crate"
        );
    }
    if !tl.is_lib() && fl.is_lib() {
        return format!(
            "libs never use services: move the code {f} needs out of {td} into a lib under \
             libs/ (an existing one or a new libs/<name>), and let {t} depend on that lib too"
        );
    }
    if !tl.is_lib() {
        return format!(
            "services and tools never depend on each other: move the shared code out of {td} \
             into a lib under libs/ and depend on that, or talk to {t} over the wire \
             (libs/protocol)"
        );
    }
    match fl {
        Layer::Sdk => format!(
            "the SDK depends on no workspace crate: move what {f} needs from {t} into libs/sdk, \
             or invert the edge so that {t} depends on juegoland-sdk"
        ),
        Layer::Game => format!(
            "a game uses only the SDK: move what {f} needs from {t} into libs/sdk (shared \
             components and helpers live there), or receive it as data or through the SDK's \
             services and traits"
        ),
        Layer::Protocol => format!(
            "the protocol uses only the SDK: move what {f} needs from {t} into libs/protocol or \
             libs/sdk, or invert the edge so that {t} depends on the protocol"
        ),
        Layer::Core if tl == Layer::Game => format!(
            "the engine core knows no game by name: take games through the SDK's erased \
             interface (juegoland-sdk `ErasedGame`) and let a service register {t}"
        ),
        Layer::Core | Layer::Package => format!(
            "{fl} uses only {}: move what {f} needs from {t} into libs/sdk or libs/protocol, or \
             define a trait in {f} that {t} implements and let a service wire them together",
            layer_list(fl.allowed())
        ),
        // Infra, services and tools may use every lib layer; only service targets are
        // forbidden, handled above.
        Layer::Infra | Layer::Service | Layer::Tool => format!(
            "{f} may use only {}: move {t} into the right layer or depend on a lower crate",
            layer_list(fl.allowed())
        ),
    }
}

/// The direction rule: every workspace member is in a layer, and every workspace edge
/// points to a layer its source may use. Dev-dependencies may additionally use any lib.
/// Nothing but a dev-dependency may use a dev-only crate (the guard itself).
pub fn check_direction(graph: &Graph) -> Vec<Violation> {
    let mut out = Vec::new();
    for member in graph.members() {
        if layer_of(dir_of(member)).is_none() {
            let dir = dir_of(member);
            out.push(Violation {
                krate: member.name.clone(),
                target: None,
                message: format!(
                    "{} in {dir} is in no layer: add a layer for {dir} in {LAYERS_LOCATION} \
                     (and to the layer table in shared/style.md), or move it to the directory \
                     of an existing layer (libs/<name> for infra, libs/games/<game>, \
                     services/<name>, …)",
                    member.name
                ),
            });
        }
    }
    for edge in &graph.edges {
        let (Some(from), Some(to)) = (graph.get(&edge.from), graph.get(&edge.to)) else {
            continue;
        };
        let (Some(fd), Some(td)) = (from.dir.as_deref(), to.dir.as_deref()) else {
            continue;
        };
        // A crate in no layer was reported above; its edges cannot be judged.
        let (Some(fl), Some(tl)) = (layer_of(fd), layer_of(td)) else {
            continue;
        };
        let dev_only = DEV_ONLY_DIRS.contains(&td);
        let allowed = match edge.kind {
            DepKind::Dev => fl.may_dev_depend_on(tl),
            DepKind::Normal | DepKind::Build => fl.may_depend_on(tl) && !dev_only,
        };
        if allowed {
            continue;
        }
        let fix = if dev_only && edge.kind != DepKind::Dev {
            format!("{} is a dev-only guard: use it under [dev-dependencies] or not at all", to.name)
        } else {
            direction_fix(from, fl, to, tl, edge.kind)
        };
        out.push(Violation {
            krate: from.name.clone(),
            target: Some(to.name.clone()),
            message: format!(
                "{} has a {} on {}, but {fl} may use only {}. Fix: {fix}",
                describe(from, fl),
                edge.kind,
                describe(to, tl),
                layer_list(if edge.kind == DepKind::Dev {
                    &[Layer::Sdk, Layer::Game, Layer::Protocol, Layer::Core, Layer::Package, Layer::Infra]
                } else {
                    fl.allowed()
                }),
            ),
        });
    }
    dedup(out)
}

fn dedup(violations: Vec<Violation>) -> Vec<Violation> {
    let mut seen = BTreeSet::new();
    violations.into_iter().filter(|v| seen.insert((v.krate.clone(), v.target.clone()))).collect()
}

fn is_pure_member(c: &Crate) -> bool {
    c.dir.as_deref().and_then(layer_of).is_some_and(Layer::is_pure)
}

/// The purity rule: the normal (and build) dependency closure of every pure crate (sdk,
/// games, protocol, core) reaches no crate in [`IMPURE_CRATES`]. The walk does not enter
/// another pure workspace crate: that crate's closure is checked, and reported, on its own,
/// so a problem is reported once, at the crate that brings it in.
pub fn check_purity(graph: &Graph) -> Vec<Violation> {
    let adjacency = graph.adjacency();
    let mut out = Vec::new();
    for root in graph.members().filter(|c| is_pure_member(c)) {
        let Some(layer) = root.dir.as_deref().and_then(layer_of) else {
            continue;
        };
        // Prefer a path through edges that apply on every platform, so the message shows
        // the way the crate is really linked; fall back to platform-specific paths.
        let everywhere = reach(graph, &adjacency, root, false);
        let anywhere = reach(graph, &adjacency, root, true);
        for (id, _) in anywhere.iter() {
            let Some(bad) = graph.get(id) else {
                continue;
            };
            let Some(why) = impure(&bad.name) else {
                continue;
            };
            let parents = if everywhere.contains_key(id) { &everywhere } else { &anywhere };
            out.push(purity_violation(graph, root, layer, bad, why, parents));
        }
    }
    dedup(out)
}

/// Breadth-first walk over the normal and build edges from `root` (so paths are shortest),
/// optionally skipping platform-specific edges. Returns every reached id with the edge it
/// was reached by. Does not enter other pure workspace crates.
fn reach<'g>(
    graph: &'g Graph,
    adjacency: &BTreeMap<&'g str, Vec<&'g Edge>>,
    root: &'g Crate,
    platform_specific: bool,
) -> BTreeMap<&'g str, &'g Edge> {
    let mut parent: BTreeMap<&str, &Edge> = BTreeMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::from([root.id.as_str()]);
    let mut queue = VecDeque::from([root.id.as_str()]);
    while let Some(id) = queue.pop_front() {
        for edge in adjacency.get(id).into_iter().flatten() {
            if edge.kind == DepKind::Dev
                || (edge.platform.is_some() && !platform_specific)
                || !seen.insert(edge.to.as_str())
            {
                continue;
            }
            parent.insert(edge.to.as_str(), edge);
            if graph.get(&edge.to).is_some_and(is_pure_member) {
                continue;
            }
            queue.push_back(edge.to.as_str());
        }
    }
    parent
}

fn purity_violation(
    graph: &Graph,
    root: &Crate,
    layer: Layer,
    bad: &Crate,
    why: &Impure,
    parent: &BTreeMap<&str, &Edge>,
) -> Violation {
    // Walk the parents back to the root.
    let mut steps: Vec<&Edge> = Vec::new();
    let mut at = bad.id.as_str();
    while let Some(edge) = parent.get(at) {
        steps.push(edge);
        at = edge.from.as_str();
    }
    steps.reverse();
    let name = |id: &str| graph.get(id).map_or(id.to_owned(), |c| c.name.clone());
    let mut path = root.name.clone();
    for step in &steps {
        path.push_str(" → ");
        path.push_str(&name(&step.to));
        let mut notes = Vec::new();
        if step.kind == DepKind::Build {
            notes.push("build".to_owned());
        }
        if let Some(p) = &step.platform {
            notes.push(p.clone());
        }
        if !notes.is_empty() {
            path.push_str(&format!(" [{}]", notes.join(", ")));
        }
    }
    let first = steps.first().map_or(bad.name.clone(), |e| name(&e.to));
    let (r, b) = (&root.name, &bad.name);
    Violation {
        krate: r.clone(),
        target: Some(b.clone()),
        message: format!(
            "{} must stay pure, but its normal dependency closure reaches {b} ({}): {path}. \
             Fix: drop or replace the dependency that brings it in (`{first}`), or turn off \
             the feature that enables it (`default-features = false` in [workspace.dependencies]; \
             features are unified across the workspace, so `cargo tree --workspace -e features \
             -i {b}` shows who turns it on); or move the code that needs it out of {r} into an \
             infra lib (libs/<name>) behind a trait that {r} defines. Only if it is genuinely \
             harmless, add (\"{r}\", \"{b}\", \"<why>\") to {RATCHET_LOCATION}",
            describe(root, layer),
            why.why,
        ),
    }
}

/// Runs the direction and purity checks.
pub fn check(graph: &Graph) -> Vec<Violation> {
    let mut out = check_direction(graph);
    out.extend(check_purity(graph));
    out
}

/// Applies the ratchet: violations matched by an entry are suppressed; every other
/// violation fails, and so does every entry that suppresses nothing (it is fixed, so it
/// must go: the table only shrinks), has no reason, or is listed twice. Returns the
/// failure messages; empty means the check passes.
pub fn apply_ratchet(violations: &[Violation], ratchet: &[Exception]) -> Vec<String> {
    let matches = |v: &Violation, e: &Exception| v.krate == e.krate && v.target.as_deref() == Some(e.target);
    let mut failures: Vec<String> =
        violations.iter().filter(|v| !ratchet.iter().any(|e| matches(v, e))).map(|v| v.message.clone()).collect();
    let mut listed = BTreeSet::new();
    for e in ratchet {
        let key = format!("(\"{}\", \"{}\")", e.krate, e.target);
        if !listed.insert((e.krate, e.target)) {
            failures.push(format!("the ratchet entry {key} is listed twice: remove one from {RATCHET_LOCATION}"));
        }
        if e.reason.trim().is_empty() {
            failures.push(format!(
                "the ratchet entry {key} has no reason: say in {RATCHET_LOCATION} why the \
                 exception is harmless for now and what would remove it, or fix it and remove \
                 the entry"
            ));
        }
        if !violations.iter().any(|v| matches(v, e)) {
            failures.push(format!(
                "remove the ratchet entry {key} from {RATCHET_LOCATION}: it is fixed ({} no \
                 longer depends on or reaches {}), and the table only shrinks",
                e.krate, e.target
            ));
        }
    }
    failures
}

/// The whole dependency check on a graph: direction, purity, then the ratchet. Returns
/// the failure messages; empty means the check passes.
pub fn check_dependencies(graph: &Graph, ratchet: &[Exception]) -> Vec<String> {
    apply_ratchet(&check(graph), ratchet)
}
