//! Side workspaces: crates of this repository that are a workspace of their own, so that
//! `cargo metadata` on the product does not see them — the fuzz targets (`fuzz/`: cargo-fuzz
//! builds them with nightly-only flags and libFuzzer, which the product's workspace must
//! never build). The same rules reach them here, read from their own manifest and lock:
//!
//! - the crate chooses its layer ([`crate::layers::layer_of`] of its directory) and its path
//!   dependencies follow the direction rule ([`check_layers`]);
//! - its manifest follows [`crate::manifest`] (its versions live in its own
//!   `[workspace.dependencies]`);
//! - its `[workspace.lints.*]` tables say what the product's say ([`check_lints`]);
//! - its lock resolves every crate it shares with the product to a version the product's
//!   lock has ([`check_lock`]), so what it tests is what ships.

use std::collections::{BTreeMap, BTreeSet};

use crate::layers::{DEV_ONLY_DIRS, layer_of};

/// The side workspaces, by directory relative to the repository's root.
pub const SIDE_WORKSPACES: &[&str] = &["fuzz"];

/// A path dependency of a side workspace's crate: its name, its directory relative to the
/// repository's root, and whether it is only a dev-dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathDep {
    pub name: String,
    pub dir: String,
    pub dev: bool,
}

/// The crate in `dir` has a layer, and each of its path dependencies is one that layer may
/// use. `label` names the crate in messages.
pub fn check_layers(label: &str, dir: &str, deps: &[PathDep]) -> Vec<String> {
    let Some(layer) = layer_of(dir) else {
        return vec![format!(
            "{label} (in {dir}/) is in no layer: give its directory a layer in {} (a side workspace \
             of tools is the tool layer, like loadtest)",
            crate::LAYERS_LOCATION
        )];
    };
    let mut failures = Vec::new();
    for dep in deps {
        let allowed = match layer_of(&dep.dir) {
            Some(to) if DEV_ONLY_DIRS.contains(&dep.dir.as_str()) && !dep.dev => {
                Err(format!("{} is dev-only", to.name()))
            }
            Some(to) if dep.dev && layer.may_dev_depend_on(to) => Ok(()),
            Some(to) if layer.may_depend_on(to) => Ok(()),
            Some(to) => Err(format!("a {layer} crate may not use the {to} layer")),
            None => Err(format!("{} is in no layer", dep.dir)),
        };
        if let Err(why) = allowed {
            failures.push(format!(
                "{label} ({layer}) depends on {} in {}/: {why}; depend on a lib instead (allowed: {})",
                dep.name,
                dep.dir,
                layer.allowed().iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    failures
}

/// The `[workspace.lints.*]` tables of a manifest: table name → its statements, without
/// comments or blank lines, in order.
pub fn lints_tables(manifest: &str) -> BTreeMap<String, Vec<String>> {
    let mut tables = BTreeMap::new();
    let mut current: Option<String> = None;
    for raw in manifest.lines() {
        let line = crate::manifest::strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            let header = line.trim_start_matches('[').trim_end_matches(']').trim();
            current = header.starts_with("workspace.lints").then(|| header.to_owned());
            continue;
        }
        if let Some(table) = &current {
            let statement: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            tables.entry(table.clone()).or_insert_with(Vec::new).push(statement);
        }
    }
    tables
}

/// The side workspace's `[workspace.lints.*]` say what the product's say.
pub fn check_lints(label: &str, product_manifest: &str, side_manifest: &str) -> Vec<String> {
    let (product, side) = (lints_tables(product_manifest), lints_tables(side_manifest));
    if product == side {
        return Vec::new();
    }
    vec![format!(
        "{label}'s [workspace.lints] differ from the root Cargo.toml's ({side:?} against {product:?}): copy the \
         root's [workspace.lints.*] tables into it, so its crates are held to the product's lints"
    )]
}

/// The (name, version) of every package a lock file lists.
pub fn lock_packages(lock: &str) -> BTreeSet<(String, String)> {
    let mut packages = BTreeSet::new();
    let mut name: Option<String> = None;
    for line in lock.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            name = None;
        } else if let Some(value) = line.strip_prefix("name = ") {
            name = Some(value.trim_matches('"').to_owned());
        } else if let (Some(value), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            packages.insert((n, value.trim_matches('"').to_owned()));
        }
    }
    packages
}

/// Every package of the side lock that the product's lock also has (by name) is at a version
/// the product's lock has.
pub fn check_lock(label: &str, product_lock: &str, side_lock: &str) -> Vec<String> {
    let product = lock_packages(product_lock);
    let names: BTreeSet<&str> = product.iter().map(|(n, _)| n.as_str()).collect();
    lock_packages(side_lock)
        .into_iter()
        .filter(|(n, v)| names.contains(n.as_str()) && !product.contains(&(n.clone(), v.clone())))
        .map(|(n, v)| {
            let shipped: Vec<&str> = product.iter().filter(|(m, _)| *m == n).map(|(_, w)| w.as_str()).collect();
            format!(
                "{label} resolves {n} to {v}, but the product's Cargo.lock has {}: copy Cargo.lock over it and \
                 build it again (cargo keeps the product's versions and adds what only it needs)",
                shipped.join(", ")
            )
        })
        .collect()
}
