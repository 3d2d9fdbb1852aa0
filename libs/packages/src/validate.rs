//! Validation levels 2 (coherence between fields and with the dependencies) and 3 (the
//! package's files), grouped as the publish pipeline's steps 1-3:
//!
//! 1. [`resolve`]: exact, acyclic dependency resolution over already-published packages;
//! 2. [`check_references`]: files, exports, component kinds, custom kinds, visual bindings;
//! 3. [`check_art`]: art coverage, atlas regions, catalog resources, translations,
//!    fallbacks, phase loads.
//!
//! Each returns the first rejection in a deterministic order.

use std::collections::{BTreeMap, BTreeSet};

use juegoland_sdk::components::{ComponentDefinition, CustomRegistry};

use crate::error::{Kind, Rejection};
use crate::lock::PackageKey;
use crate::manifest::{GameManifest, Manifest, PRIVATE_DIR, PackageKind, Reference};
use crate::package::{Package, Target, escape, parse_document, split_dependency};
use crate::resource::{Fallback, Load, Resource, ResourceSet, ResourceType};

/// Packages available to resolve against (in publishing: the registry's published ones).
pub type Available = BTreeMap<PackageKey, Package>;

/// A resolved tree: the root and one package per dependency id.
#[derive(Clone, Debug)]
pub struct Tree<'a> {
    pub root: &'a Package,
    pub dependencies: BTreeMap<String, &'a Package>,
}

impl<'a> Tree<'a> {
    /// Every package of the tree, the root first.
    pub fn packages(&self) -> impl Iterator<Item = &'a Package> + '_ {
        std::iter::once(self.root).chain(self.dependencies.values().copied())
    }
}

/// Step 1: resolves every dependency exactly. Rejects missing packages, self references,
/// cycles, two versions of one id in the tree and dependencies across library kinds.
pub fn resolve<'a>(root: &'a Package, available: &'a Available) -> Result<Tree<'a>, Rejection> {
    let mut tree = Tree { root, dependencies: BTreeMap::new() };
    let mut chosen: BTreeMap<String, String> = BTreeMap::new();
    chosen.insert(root.manifest.id().to_owned(), root.manifest.version().to_owned());
    let mut stack = vec![root.key()];
    visit(root, available, &mut stack, &mut chosen, &mut tree)?;
    Ok(tree)
}

fn visit<'a>(
    package: &'a Package,
    available: &'a Available,
    stack: &mut Vec<PackageKey>,
    chosen: &mut BTreeMap<String, String>,
    tree: &mut Tree<'a>,
) -> Result<(), Rejection> {
    let label = package.manifest_label();
    for (i, dependency) in package.manifest.dependencies().iter().enumerate() {
        let pointer = format!("/dependencies/{i}");
        let key = split_dependency(dependency)
            .ok_or_else(|| Rejection::new(&label, &pointer, Kind::MalformedDependency(dependency.clone())))?;
        if key.id == package.manifest.id() {
            return Err(Rejection::new(&label, pointer, Kind::SelfReference(key.id)));
        }
        if let Some(at) = stack.iter().position(|k| *k == key) {
            let cycle: Vec<String> = stack[at..].iter().chain([&key]).map(PackageKey::to_string).collect();
            return Err(Rejection::new(&label, pointer, Kind::Cycle(cycle.join(" -> "))));
        }
        if let Some(first) = chosen.get(&key.id).filter(|v| **v != key.version) {
            return Err(Rejection::new(
                &label,
                pointer,
                Kind::TwoVersions { id: key.id.clone(), first: format!("{}@{first}", key.id), second: key.to_string() },
            ));
        }
        let dep = available
            .get(&key)
            .ok_or_else(|| Rejection::new(&label, &pointer, Kind::MissingDependency(key.to_string())))?;
        check_dependency_kind(package.manifest.kind(), dep.manifest.kind(), &key)
            .map_err(|kind| Rejection::new(&label, &pointer, kind))?;
        chosen.insert(key.id.clone(), key.version.clone());
        if tree.dependencies.insert(key.id.clone(), dep).is_none() {
            stack.push(key);
            visit(dep, available, stack, chosen, tree)?;
            stack.pop();
        }
    }
    Ok(())
}

fn check_dependency_kind(from: PackageKind, to: PackageKind, key: &PackageKey) -> Result<(), Kind> {
    let rule = match (from, to) {
        (PackageKind::Game, PackageKind::Components | PackageKind::Assets)
        | (PackageKind::Components, PackageKind::Components)
        | (PackageKind::Assets, PackageKind::Assets) => return Ok(()),
        (PackageKind::Components, _) => {
            "component libraries depend only on component libraries (rules load without images)"
        }
        (PackageKind::Assets, _) => "asset libraries depend only on asset libraries (clients build without the rules)",
        (PackageKind::Game, PackageKind::Game) => "games depend only on libraries",
    };
    Err(Kind::WrongDependencyKind { from: from.name(), to: to.name(), dependency: key.to_string(), rule })
}

impl<'a> Tree<'a> {
    /// Resolves a reference made by `from` (which must list a dependency explicitly) to the
    /// file it names; the export must exist and belong to a library of `expected` kind.
    fn target(
        &self,
        from: &'a Package,
        reference: &'a Reference,
        expected: PackageKind,
        pointer: &str,
    ) -> Result<Target<'a>, Rejection> {
        let err = |kind: Kind| Rejection::new(from.manifest_label(), pointer, kind);
        match reference {
            Reference::Local { path } => Ok(Target { owner: from, path }),
            Reference::Dependency { package_id, export } => {
                let declared = from
                    .manifest
                    .dependencies()
                    .iter()
                    .any(|d| d.rsplit_once('@').is_some_and(|(id, _)| id == package_id));
                let owner = self
                    .dependencies
                    .get(package_id)
                    .filter(|_| declared)
                    .ok_or_else(|| err(Kind::UndeclaredDependency(package_id.clone())))?;
                let Manifest::Library(library) = &owner.manifest else {
                    return Err(err(Kind::WrongExportKind {
                        reference: reference.describe(),
                        found: "game",
                        expected: expected.name(),
                    }));
                };
                let found = library.exports.get(export).ok_or_else(|| {
                    err(Kind::MissingExport {
                        package: owner.key().to_string(),
                        export: export.clone(),
                        available: library.exports.keys().cloned().collect::<Vec<_>>().join(", "),
                    })
                })?;
                if owner.manifest.kind() != expected {
                    return Err(err(Kind::WrongExportKind {
                        reference: reference.describe(),
                        found: owner.manifest.kind().name(),
                        expected: expected.name(),
                    }));
                }
                Ok(Target { owner, path: &found.path })
            }
        }
    }
}

/// Step 2: files, exports, component kinds, custom kinds, visual bindings, and the
/// resources' files (level 3: present, non-empty, of the right media type and size).
pub fn check_references(tree: &Tree<'_>, customs: &CustomRegistry) -> Result<(), Rejection> {
    for package in tree.packages() {
        check_files(package)?;
        let label = package.manifest_label();
        match &package.manifest {
            Manifest::Library(library) if package.manifest.kind() == PackageKind::Components => {
                if !library.resources.is_empty() {
                    return Err(Rejection::new(label, "/resources", Kind::ResourcesInComponentLibrary));
                }
                for (name, export) in &library.exports {
                    let pointer = format!("/exports/{}/path", escape(name));
                    load_component(package, &export.path, &pointer, name, customs)?;
                }
            }
            Manifest::Library(library) => {
                for (name, export) in &library.exports {
                    let pointer = format!("/exports/{}/path", escape(name));
                    load_resource_set(package, &export.path, &pointer)?;
                }
            }
            Manifest::Game(game) => check_game_references(tree, package, game, customs)?,
        }
    }
    Ok(())
}

fn check_game_references(
    tree: &Tree<'_>,
    package: &Package,
    game: &GameManifest,
    customs: &CustomRegistry,
) -> Result<(), Rejection> {
    let label = package.manifest_label();
    let s = &game.rules.schemas;
    for (name, path, private) in [
        ("config", &s.config, false),
        ("data", &s.data, true),
        ("view", &s.view, false),
        ("context", &s.context, false),
        ("internalEvents", &s.internal_events, true),
        ("visibleEvents", &s.visible_events, false),
    ] {
        let pointer = format!("/rules/schemas/{name}");
        match (private, path.starts_with(PRIVATE_DIR)) {
            (true, false) => return Err(Rejection::new(&label, pointer, Kind::PublicPrivateSchema(name))),
            (false, true) => return Err(Rejection::new(&label, pointer, Kind::PrivatePublicSchema(name))),
            _ => {}
        }
        package.parse_file::<serde_json::Value>(path, &pointer)?;
    }
    for (i, component) in game.components.iter().enumerate() {
        let pointer = format!("/components/{i}/definition");
        let target = tree.target(package, &component.definition, PackageKind::Components, &pointer)?;
        load_component(target.owner, target.path, &pointer, &component.component_id, customs)?;
    }
    for (i, binding) in game.presentation.bindings.iter().enumerate() {
        if !game.components.iter().any(|c| c.component_id == binding.component_id) {
            return Err(Rejection::new(
                &label,
                format!("/presentation/bindings/{i}/componentId"),
                Kind::Unknown { what: "component", id: binding.component_id.clone() },
            ));
        }
        let pointer = format!("/presentation/bindings/{i}/resourceSet");
        let target = tree.target(package, &binding.resource_set, PackageKind::Assets, &pointer)?;
        load_resource_set(target.owner, target.path, &pointer)?;
    }
    for (i, plan) in game.presentation.plans.iter().enumerate() {
        package.parse_file::<crate::plan::PresentationPlan>(plan, &format!("/presentation/plans/{i}"))?;
    }
    Ok(())
}

/// Parses and validates a component file of `owner`; custom kinds need a registered validator.
fn load_component(
    owner: &Package,
    path: &str,
    pointer: &str,
    component: &str,
    customs: &CustomRegistry,
) -> Result<ComponentDefinition, Rejection> {
    let definition: ComponentDefinition = owner.parse_file(path, pointer)?;
    let label = owner.label(path);
    definition.validate().map_err(|e| {
        Rejection::new(&label, "", Kind::InvalidComponent { component: component.to_owned(), reason: e.to_string() })
    })?;
    if let ComponentDefinition::Custom(custom) = &definition {
        if !customs.is_registered(&custom.type_id) {
            return Err(Rejection::new(
                label,
                "/typeId",
                Kind::UnregisteredCustomKind { component: component.to_owned(), type_id: custom.type_id.clone() },
            ));
        }
        customs.check(component, custom).map_err(|e| {
            Rejection::new(
                &label,
                "/data",
                Kind::InvalidComponent { component: component.to_owned(), reason: e.to_string() },
            )
        })?;
    }
    Ok(definition)
}

/// Parses a resource set of `owner`; its slots must name resources (and atlas regions) of
/// `owner`, a graphic slot its slot name.
fn load_resource_set(owner: &Package, path: &str, pointer: &str) -> Result<ResourceSet, Rejection> {
    let set: ResourceSet = owner.parse_file(path, pointer)?;
    let label = owner.label(path);
    crate::package::check_format_version(&label, set.format_version)?;
    let slots = set.slots.iter().map(|(id, slot)| (format!("/slots/{}", escape(id)), slot));
    for (slot_pointer, slot) in slots.chain(set.back.iter().map(|b| ("/back".to_owned(), b))) {
        let resource = owner.manifest.resources().iter().find(|r| r.id == slot.resource).ok_or_else(|| {
            Rejection::new(
                &label,
                format!("{slot_pointer}/resource"),
                Kind::Unknown { what: "resource", id: slot.resource.clone() },
            )
        })?;
        let problem = match (resource.kind, &slot.region, &slot.slot) {
            (ResourceType::Atlas, Some(region), _) if !resource.regions.iter().any(|r| r.id == *region) => {
                Some(Kind::Unknown { what: "atlas region", id: region.clone() })
            }
            (ResourceType::Atlas, None, _) => {
                Some(Kind::Slot(format!("slot on atlas {:?} names no region", resource.id)))
            }
            (ResourceType::Graphic, _, None) => {
                Some(Kind::Slot(format!("slot on graphic {:?} names no slot to draw", resource.id)))
            }
            (ResourceType::Sound | ResourceType::Font, _, _) => Some(Kind::Slot(format!(
                "resource {:?} is a {}: slots draw images, atlases or graphics",
                resource.id,
                resource.kind.name()
            ))),
            _ => None,
        };
        if let Some(kind) = problem {
            return Err(Rejection::new(label, slot_pointer, kind));
        }
    }
    Ok(set)
}

/// Step 3: coverage, atlas regions, catalog resources, translations, fallbacks, phase loads.
pub fn check_art(tree: &Tree<'_>) -> Result<(), Rejection> {
    for package in tree.packages() {
        let (base, phases) = match &package.manifest {
            Manifest::Game(game) => {
                ("/presentation/resources", Some(game.rules.phases.iter().map(|p| p.id.as_str()).collect::<Vec<_>>()))
            }
            Manifest::Library(_) => ("/resources", None),
        };
        check_resources(package, base, phases.as_deref())?;
        check_translations(package, base)?;
        if let Manifest::Game(game) = &package.manifest {
            check_catalog(package, game)?;
            check_coverage(tree, package, game)?;
        }
    }
    Ok(())
}

fn check_resources(package: &Package, base: &str, phases: Option<&[&str]>) -> Result<(), Rejection> {
    let label = package.manifest_label();
    let resources = package.manifest.resources();
    for (i, resource) in resources.iter().enumerate() {
        let at = |field: &str, kind: Kind| Rejection::new(&label, format!("{base}/{i}{field}"), kind);
        if resource.kind.has_dimensions() {
            let (Some(width), Some(height)) = (resource.width, resource.height) else {
                return Err(at("", Kind::MissingDimensions(resource.kind.name())));
            };
            for (j, r) in resource.regions.iter().enumerate() {
                let fits = u64::from(r.x) + u64::from(r.width) <= u64::from(width)
                    && u64::from(r.y) + u64::from(r.height) <= u64::from(height)
                    && r.width > 0
                    && r.height > 0;
                if !fits {
                    return Err(at(
                        &format!("/regions/{j}"),
                        Kind::RegionOutside {
                            region: r.id.clone(),
                            x: r.x,
                            y: r.y,
                            width: r.width,
                            height: r.height,
                            image_width: width,
                            image_height: height,
                        },
                    ));
                }
            }
        }
        match (resource.load, &resource.phase) {
            (Load::Phase, None) => return Err(at("/load", Kind::PhaseMissing(resource.id.clone()))),
            (Load::Phase, Some(phase)) => {
                let known = phases.unwrap_or_default();
                if !known.contains(&phase.as_str()) {
                    return Err(at(
                        "/phase",
                        Kind::UnknownPhase {
                            resource: resource.id.clone(),
                            phase: phase.clone(),
                            phases: if known.is_empty() {
                                "none: a library has no phases".into()
                            } else {
                                known.join(", ")
                            },
                        },
                    ));
                }
            }
            (_, Some(_)) => return Err(at("/phase", Kind::PhaseWithoutPhaseLoad(resource.id.clone()))),
            (_, None) => {}
        }
        check_fallback(resources, i).map_err(|(field, kind)| at(&field, kind))?;
    }
    Ok(())
}

/// A required resource's chain must end in a text; an optional one may end anywhere.
fn check_fallback(resources: &[Resource], start: usize) -> Result<(), (String, Kind)> {
    let resource = &resources[start];
    let mut seen = BTreeSet::from([resource.id.as_str()]);
    let mut current = resource;
    loop {
        match &current.fallback {
            Some(Fallback::Text { .. }) => return Ok(()),
            Some(Fallback::Resource { id }) => {
                let next = resources.iter().find(|r| r.id == *id);
                let Some(next) = next else {
                    return Err(("/fallback/id".into(), Kind::Unknown { what: "resource", id: id.clone() }));
                };
                if !seen.insert(next.id.as_str()) {
                    return if resource.required {
                        Err(("/fallback".into(), Kind::FallbackEndsInNothing(resource.id.clone())))
                    } else {
                        Ok(())
                    };
                }
                current = next;
            }
            Some(Fallback::Omit) | None => {
                return if resource.required {
                    Err(("/fallback".into(), Kind::FallbackEndsInNothing(resource.id.clone())))
                } else {
                    Ok(())
                };
            }
        }
    }
}

/// Every translation key the package uses has a text in every declared language.
fn check_translations(package: &Package, base: &str) -> Result<(), Rejection> {
    let mut keys: Vec<(String, &str)> = vec![("/description".into(), description(&package.manifest))];
    for (i, r) in package.manifest.resources().iter().enumerate() {
        if let Some(alt) = &r.alt {
            keys.push((format!("{base}/{i}/alt"), alt));
        }
        if let Some(Fallback::Text { key }) = &r.fallback {
            keys.push((format!("{base}/{i}/fallback/key"), key));
        }
    }
    let translations = package.manifest.translations();
    for language in package.manifest.languages() {
        for (pointer, key) in &keys {
            if !translations.get(language).is_some_and(|texts| texts.contains_key(*key)) {
                return Err(Rejection::new(
                    package.manifest_label(),
                    pointer.clone(),
                    Kind::MissingTranslation { language: language.clone(), key: (*key).to_owned() },
                ));
            }
        }
    }
    Ok(())
}

fn description(manifest: &Manifest) -> &str {
    match manifest {
        Manifest::Game(m) => &m.description,
        Manifest::Library(m) => &m.description,
    }
}

fn check_catalog(package: &Package, game: &GameManifest) -> Result<(), Rejection> {
    let c = &game.presentation.catalog;
    for (field, id) in [("cover", &c.cover), ("thumbnail", &c.thumbnail), ("icon", &c.icon)] {
        let pointer = format!("/presentation/catalog/{field}");
        let resource = game.presentation.resources.iter().find(|r| r.id == *id).ok_or_else(|| {
            Rejection::new(package.manifest_label(), &pointer, Kind::Unknown { what: "resource", id: id.clone() })
        })?;
        if !resource.required || resource.load != Load::Catalog || resource.kind == ResourceType::Sound {
            return Err(Rejection::new(package.manifest_label(), pointer, Kind::CatalogResource(id.clone())));
        }
    }
    Ok(())
}

/// Every bound deck has a face for every card (and a back when hidden); bound pieces have a
/// slot for every piece type.
fn check_coverage(tree: &Tree<'_>, package: &Package, game: &GameManifest) -> Result<(), Rejection> {
    for (i, binding) in game.presentation.bindings.iter().enumerate() {
        let pointer = format!("/presentation/bindings/{i}/resourceSet");
        // Step 2 has checked that every binding names a declared component.
        let Some((c, component)) =
            game.components.iter().enumerate().find(|(_, c)| c.component_id == binding.component_id)
        else {
            continue;
        };
        let set_target = tree.target(package, &binding.resource_set, PackageKind::Assets, &pointer)?;
        let set: ResourceSet = set_target.owner.parse_file(set_target.path, &pointer)?;
        let def_pointer = format!("/components/{c}/definition");
        let def_target = tree.target(package, &component.definition, PackageKind::Components, &def_pointer)?;
        let definition: ComponentDefinition = def_target.owner.parse_file(def_target.path, &def_pointer)?;
        let ids: Vec<&str> = match &definition {
            ComponentDefinition::Deck(deck) => deck.cards.iter().map(|c| c.id.as_str()).collect(),
            ComponentDefinition::Pieces(pieces) => pieces.types.iter().map(|t| t.id.as_str()).collect(),
            other => {
                return Err(Rejection::new(
                    package.manifest_label(),
                    format!("/presentation/bindings/{i}/componentId"),
                    Kind::UnbindableComponent { component: component.component_id.clone(), kind: other.kind() },
                ));
            }
        };
        if let Some(missing) = ids.iter().find(|id| !set.slots.contains_key(**id)) {
            return Err(Rejection::new(
                package.manifest_label(),
                pointer,
                Kind::MissingFace { component: component.component_id.clone(), definition: (*missing).to_owned() },
            ));
        }
        if component.hidden && set.back.is_none() {
            return Err(Rejection::new(
                package.manifest_label(),
                pointer,
                Kind::HiddenDeckWithoutBack(component.component_id.clone()),
            ));
        }
    }
    Ok(())
}

/// The media type of a package file, from its extension.
pub fn media_type(path: &str) -> Option<&'static str> {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match extension.as_str() {
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "webp" => "image/webp",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "woff2" => "font/woff2",
        "js" | "mjs" => "text/javascript",
        "md" => "text/markdown",
        "txt" => "text/plain",
        _ => return None,
    })
}

/// Level 3: every file has a known media type and is not empty; every resource's file
/// exists, has a media type its type allows and, for SVG and PNG images, the declared size.
pub fn check_files(package: &Package) -> Result<(), Rejection> {
    for (path, bytes) in &package.files {
        if media_type(path).is_none() {
            return Err(Rejection::new(package.label(path), "", Kind::UnknownMediaType { path: path.clone() }));
        }
        if bytes.is_empty() {
            return Err(Rejection::new(package.label(path), "", Kind::EmptyFile(path.clone())));
        }
    }
    let base = if matches!(package.manifest, Manifest::Game(_)) { "/presentation/resources" } else { "/resources" };
    for (i, resource) in package.manifest.resources().iter().enumerate() {
        let at = |kind: Kind| Rejection::new(package.manifest_label(), format!("{base}/{i}/path"), kind);
        let bytes = package.files.get(&resource.path).ok_or_else(|| at(Kind::MissingFile(resource.path.clone())))?;
        let found = media_type(&resource.path).unwrap_or("unknown");
        if !resource.kind.media_types().contains(&found) {
            return Err(at(Kind::MediaTypeMismatch {
                path: resource.path.clone(),
                found: found.to_owned(),
                resource: resource.kind.name(),
                expected: resource.kind.media_types().join(", "),
            }));
        }
        if let (Some(width), Some(height)) = (resource.width, resource.height) {
            let size = match found {
                "image/svg+xml" => svg_size(bytes),
                "image/png" => png_size(bytes),
                _ => None,
            };
            if let Some((found_width, found_height)) = size.filter(|s| *s != (width, height)) {
                return Err(at(Kind::DimensionsMismatch {
                    path: resource.path.clone(),
                    width,
                    height,
                    found_width,
                    found_height,
                }));
            }
        }
    }
    Ok(())
}

/// The `width` and `height` attributes of an SVG's root element, in pixels.
pub fn svg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let start = text.find("<svg")?;
    let tag = &text[start..start + text[start..].find('>')?];
    let attribute = |name: &str| -> Option<u32> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let value = &tag[at..at + tag[at..].find('"')?];
        value.strip_suffix("px").unwrap_or(value).parse().ok()
    };
    Some((attribute("width")?, attribute("height")?))
}

/// The size in a PNG's IHDR chunk.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&bytes[16..20]), be(&bytes[20..24])))
}

/// Parses any package-format document given as text (for tests and tools).
pub fn parse_text<T: serde::de::DeserializeOwned>(label: &str, text: &str) -> Result<T, Rejection> {
    parse_document::<T>(label, text.as_bytes()).map(|(v, _)| v)
}
