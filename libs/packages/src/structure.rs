//! Validation level 1 beyond serde: exact versions, ids, normalized paths, unique ids, the
//! participant range. Everything here reads one manifest alone.

use std::collections::BTreeSet;

use crate::error::{Kind, Rejection};
use crate::manifest::{GameManifest, LibraryManifest, Manifest, Reference};
use crate::package::{Package, check_format_version, escape};
use crate::resource::Resource;

pub(crate) fn check(package: &Package) -> Result<(), Rejection> {
    // The key is not known to be valid yet, so rejections here name the bare file.
    let label = package.manifest.file_name();
    match &package.manifest {
        Manifest::Game(m) => {
            check_format_version(label, m.format_version)?;
            check_common(label, &m.id, &m.version, &m.languages, &m.dependencies)?;
            check_game(label, m)
        }
        Manifest::Library(m) => {
            check_format_version(label, m.format_version)?;
            check_common(label, &m.id, &m.version, &m.languages, &m.dependencies)?;
            check_library(label, m)
        }
    }
}

fn check_common(
    label: &str,
    id: &str,
    version: &str,
    languages: &[String],
    dependencies: &[String],
) -> Result<(), Rejection> {
    check_package_id(id).map_err(|k| Rejection::new(label, "/id", k))?;
    check_version(version).map_err(|k| Rejection::new(label, "/version", k))?;
    if languages.is_empty() {
        return Err(Rejection::new(label, "/languages", Kind::Empty("languages")));
    }
    unique(label, "/languages", "language", languages.iter().map(String::as_str))?;
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, dependency) in dependencies.iter().enumerate() {
        let pointer = format!("/dependencies/{i}");
        let Some((dep_id, dep_version)) = dependency.rsplit_once('@') else {
            return Err(Rejection::new(label, pointer, Kind::MalformedDependency(dependency.clone())));
        };
        check_package_id(dep_id).map_err(|k| Rejection::new(label, &pointer, k))?;
        check_version(dep_version).map_err(|k| Rejection::new(label, &pointer, k))?;
        if dep_id == id {
            return Err(Rejection::new(label, pointer, Kind::SelfReference(id.to_owned())));
        }
        if let Some((_, first)) = seen.iter().find(|(seen_id, _)| seen_id == dep_id) {
            let kind = if first == dep_version {
                Kind::Duplicate { what: "dependency", id: dependency.clone() }
            } else {
                Kind::TwoVersions {
                    id: dep_id.to_owned(),
                    first: format!("{dep_id}@{first}"),
                    second: dependency.clone(),
                }
            };
            return Err(Rejection::new(label, pointer, kind));
        }
        seen.push((dep_id.to_owned(), dep_version.to_owned()));
    }
    Ok(())
}

fn check_game(label: &str, m: &GameManifest) -> Result<(), Rejection> {
    let err = |pointer: String, kind: Kind| Rejection::new(label, pointer, kind);
    if m.participants.min == 0 || m.participants.min > m.participants.max {
        return Err(err(
            "/participants".into(),
            Kind::ParticipantRange { min: m.participants.min, max: m.participants.max },
        ));
    }
    unique(label, "/components", "component", m.components.iter().map(|c| c.component_id.as_str()))?;
    for (i, component) in m.components.iter().enumerate() {
        check_id("component id", &component.component_id)
            .map_err(|k| err(format!("/components/{i}/componentId"), k))?;
        check_reference(&component.definition).map_err(|k| err(format!("/components/{i}/definition"), k))?;
    }
    check_version(&m.rules.version).map_err(|k| err("/rules/version".into(), k))?;
    let s = &m.rules.schemas;
    for (name, path) in [
        ("config", &s.config),
        ("data", &s.data),
        ("view", &s.view),
        ("context", &s.context),
        ("internalEvents", &s.internal_events),
        ("visibleEvents", &s.visible_events),
    ] {
        check_path(path).map_err(|k| err(format!("/rules/schemas/{name}"), k))?;
    }
    if m.rules.phases.is_empty() {
        return Err(err("/rules/phases".into(), Kind::Empty("rules.phases")));
    }
    unique(label, "/rules/phases", "phase", m.rules.phases.iter().map(|p| p.id.as_str()))?;
    unique(label, "/rules/actions", "action", m.rules.actions.iter().map(|a| a.action_type.as_str()))?;
    check_version(&m.presentation.bundle_version).map_err(|k| err("/presentation/bundleVersion".into(), k))?;
    check_resources(label, "/presentation/resources", &m.presentation.resources)?;
    for (i, binding) in m.presentation.bindings.iter().enumerate() {
        check_reference(&binding.resource_set)
            .map_err(|k| err(format!("/presentation/bindings/{i}/resourceSet"), k))?;
    }
    for (i, plan) in m.presentation.plans.iter().enumerate() {
        check_path(plan).map_err(|k| err(format!("/presentation/plans/{i}"), k))?;
    }
    Ok(())
}

fn check_library(label: &str, m: &LibraryManifest) -> Result<(), Rejection> {
    if m.exports.is_empty() {
        return Err(Rejection::new(label, "/exports", Kind::Empty("exports")));
    }
    for (name, export) in &m.exports {
        let pointer = format!("/exports/{}", escape(name));
        check_id("export", name).map_err(|k| Rejection::new(label, &pointer, k))?;
        check_path(&export.path).map_err(|k| Rejection::new(label, format!("{pointer}/path"), k))?;
    }
    check_resources(label, "/resources", &m.resources)
}

fn check_resources(label: &str, base: &str, resources: &[Resource]) -> Result<(), Rejection> {
    unique(label, base, "resource", resources.iter().map(|r| r.id.as_str()))?;
    for (i, resource) in resources.iter().enumerate() {
        check_id("resource id", &resource.id).map_err(|k| Rejection::new(label, format!("{base}/{i}/id"), k))?;
        check_path(&resource.path).map_err(|k| Rejection::new(label, format!("{base}/{i}/path"), k))?;
        unique(label, &format!("{base}/{i}/regions"), "region", resource.regions.iter().map(|r| r.id.as_str()))?;
    }
    Ok(())
}

fn check_reference(reference: &Reference) -> Result<(), Kind> {
    match reference {
        Reference::Local { path } => check_path(path),
        Reference::Dependency { package_id, export } => {
            check_package_id(package_id)?;
            check_id("export", export)
        }
    }
}

fn unique<'a>(
    label: &str,
    base: &str,
    what: &'static str,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<(), Rejection> {
    let mut seen = BTreeSet::new();
    for (i, id) in ids.into_iter().enumerate() {
        if !seen.insert(id) {
            return Err(Rejection::new(label, format!("{base}/{i}"), Kind::Duplicate { what, id: id.to_owned() }));
        }
    }
    Ok(())
}

/// A package id: lowercase, starting with a letter, 1-64 of `a-z 0-9 - _ .`.
pub fn check_package_id(id: &str) -> Result<(), Kind> {
    let ok = id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'));
    if ok { Ok(()) } else { Err(Kind::InvalidId { what: "package id", value: id.to_owned() }) }
}

fn check_id(what: &'static str, id: &str) -> Result<(), Kind> {
    if juegoland_sdk::components::is_valid_id(id) {
        Ok(())
    } else {
        Err(Kind::InvalidId { what, value: id.to_owned() })
    }
}

/// An exact `MAJOR.MINOR.PATCH`. `latest`, ranges and partial versions (`1`, `1.2`) are
/// rejected each with its own kind, so the message says what was meant.
pub fn check_version(version: &str) -> Result<(), Kind> {
    if version.eq_ignore_ascii_case("latest") {
        return Err(Kind::LatestVersion(version.to_owned()));
    }
    let parts: Vec<&str> = version.split('.').collect();
    let is_range =
        version.contains(['^', '~', '>', '<', '=', '*', '|', ' ']) || parts.iter().any(|p| p.eq_ignore_ascii_case("x"));
    if is_range {
        return Err(Kind::VersionRange(version.to_owned()));
    }
    let numeric =
        |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p.len() == 1 || !p.starts_with('0'));
    if parts.iter().all(numeric) {
        return match parts.len() {
            3 => Ok(()),
            1 | 2 => Err(Kind::PartialVersion(version.to_owned())),
            _ => Err(Kind::MalformedVersion(version.to_owned())),
        };
    }
    Err(Kind::MalformedVersion(version.to_owned()))
}

/// A normalized relative path: `/`-separated, no leading `/`, no `.`/`..`/empty segments,
/// no backslash.
pub fn check_path(path: &str) -> Result<(), Kind> {
    let ok = !path.is_empty()
        && !path.contains('\\')
        && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..");
    if ok { Ok(()) } else { Err(Kind::UnnormalizedPath(path.to_owned())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_exact() {
        assert_eq!(check_version("1.0.0"), Ok(()));
        assert_eq!(check_version("10.20.30"), Ok(()));
        assert!(matches!(check_version("latest"), Err(Kind::LatestVersion(_))));
        for range in ["^1.0.0", "~1.2.0", ">=1.0.0", "1.x", "*", "1.0.0 || 2.0.0"] {
            assert!(matches!(check_version(range), Err(Kind::VersionRange(_))), "{range}");
        }
        assert!(matches!(check_version("1"), Err(Kind::PartialVersion(_))));
        assert!(matches!(check_version("1.2"), Err(Kind::PartialVersion(_))));
        for bad in ["01.0.0", "1.0.0.0", "1.0.0-beta", "v1.0.0", ""] {
            assert!(matches!(check_version(bad), Err(Kind::MalformedVersion(_))), "{bad}");
        }
    }

    #[test]
    fn paths_are_normalized() {
        assert_eq!(check_path("images/cover.svg"), Ok(()));
        for bad in ["/abs.svg", "a/../b", "./a", "a//b", "a\\b", "", "a/"] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }
}
