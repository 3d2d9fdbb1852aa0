//! The manifests: `game.json` for a game, `package.json` for a component or asset library.
//!
//! Every type is strict (`deny_unknown_fields`): an unknown field is a rejection, never an
//! ignored extension. Cross-field rules (exact versions, normalized paths, references that
//! resolve) are checked by [`crate::validate`], not here.

use std::collections::BTreeMap;

use juegoland_sdk::{ConflictPolicy, Participation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Resource;

/// The `format` of every manifest. The file name does not make it an npm package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PackageFormat {
    #[serde(rename = "juegoland.package")]
    Package,
}

/// The only manifest format version this crate reads.
pub const FORMAT_VERSION: u32 = 1;

/// A manifest, either kind. Which one a file holds is decided by its name (`game.json` or
/// `package.json`), so parsing never guesses; this union exists for the `package` schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Manifest {
    Game(Box<GameManifest>),
    Library(Box<LibraryManifest>),
}

impl Manifest {
    pub fn id(&self) -> &str {
        match self {
            Manifest::Game(m) => &m.id,
            Manifest::Library(m) => &m.id,
        }
    }

    pub fn version(&self) -> &str {
        match self {
            Manifest::Game(m) => &m.version,
            Manifest::Library(m) => &m.version,
        }
    }

    pub fn kind(&self) -> PackageKind {
        match self {
            Manifest::Game(_) => PackageKind::Game,
            Manifest::Library(m) => match m.kind {
                LibraryKind::Components => PackageKind::Components,
                LibraryKind::Assets => PackageKind::Assets,
            },
        }
    }

    pub fn dependencies(&self) -> &[String] {
        match self {
            Manifest::Game(m) => &m.dependencies,
            Manifest::Library(m) => &m.dependencies,
        }
    }

    /// The manifest's file name inside the package.
    pub fn file_name(&self) -> &'static str {
        self.kind().manifest_file()
    }

    pub fn resources(&self) -> &[Resource] {
        match self {
            Manifest::Game(m) => &m.presentation.resources,
            Manifest::Library(m) => &m.resources,
        }
    }

    pub fn languages(&self) -> &[String] {
        match self {
            Manifest::Game(m) => &m.languages,
            Manifest::Library(m) => &m.languages,
        }
    }

    pub fn translations(&self) -> &BTreeMap<String, BTreeMap<String, String>> {
        match self {
            Manifest::Game(m) => &m.translations,
            Manifest::Library(m) => &m.translations,
        }
    }
}

/// What a package is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PackageKind {
    Game,
    Components,
    Assets,
}

impl PackageKind {
    pub fn manifest_file(self) -> &'static str {
        match self {
            PackageKind::Game => GAME_MANIFEST,
            PackageKind::Components | PackageKind::Assets => LIBRARY_MANIFEST,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PackageKind::Game => "game",
            PackageKind::Components => "components",
            PackageKind::Assets => "assets",
        }
    }
}

/// The manifest file of a game.
pub const GAME_MANIFEST: &str = "game.json";
/// The manifest file of a library.
pub const LIBRARY_MANIFEST: &str = "package.json";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum GameKind {
    Game,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LibraryKind {
    /// Exports component definitions; depends only on component libraries.
    Components,
    /// Exports resource sets (and ships their resources); depends only on asset libraries.
    Assets,
}

/// How players relate to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    Competitive,
    Cooperative,
    Teams,
    Individual,
    Solitaire,
    Open,
}

/// `game.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GameManifest {
    pub format: PackageFormat,
    /// Always 1 in this specification.
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub kind: GameKind,
    /// The package id, e.g. `conecta4`.
    pub id: String,
    /// The exact package version (`MAJOR.MINOR.PATCH`); any published change bumps it.
    pub version: String,
    /// The rules SDK and services contract the rules were written against.
    pub engine_api_version: u32,
    /// The wire protocol version the game's clients speak.
    pub protocol_version: u32,
    pub authors: Vec<String>,
    pub license: String,
    /// A translation key.
    pub description: String,
    /// Language codes; the first is the default. Every translation key is required in each.
    pub languages: Vec<String>,
    pub category: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub mode: Mode,
    pub participants: Participants,
    pub capabilities: Capabilities,
    /// Exact dependencies, `id@MAJOR.MINOR.PATCH`.
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub components: Vec<ComponentUse>,
    pub rules: Rules,
    pub presentation: Presentation,
    /// Texts by language, then by translation key.
    pub translations: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Participants {
    pub min: u32,
    pub max: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capabilities {
    pub hidden_information: bool,
    pub simultaneous_actions: bool,
    pub deadlines: bool,
}

/// A declared component: its id in the game, its definition and how many copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentUse {
    pub component_id: String,
    pub definition: Reference,
    #[serde(default = "one")]
    pub copies: u32,
    /// Whether some recipient may see its cards face down (a hidden deck needs a back).
    #[serde(default)]
    pub hidden: bool,
}

fn one() -> u32 {
    1
}

/// A reference to a file: local to the package or a named export of an exact dependency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "source", rename_all = "camelCase", deny_unknown_fields)]
pub enum Reference {
    /// A normalized relative path inside the package.
    Local { path: String },
    /// An export of a package listed in `dependencies`.
    #[serde(rename_all = "camelCase")]
    Dependency { package_id: String, export: String },
}

/// The rules: their version, the schemas' versions and files, and the flow the compiled
/// module must declare identically.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rules {
    /// The rules version the module is registered under; changes with any behaviour change.
    pub version: String,
    pub state_schema_version: u32,
    pub view_schema_version: u32,
    pub event_schema_version: u32,
    pub schemas: RulesSchemas,
    pub phases: Vec<PhaseDecl>,
    pub actions: Vec<ActionDecl>,
}

/// Paths of the generated schema files. `data` and `internalEvents` describe private state
/// and live under `rules/` (never served); the others are public.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesSchemas {
    pub config: String,
    pub data: String,
    pub view: String,
    pub context: String,
    pub internal_events: String,
    pub visible_events: String,
}

/// The directory of private rules files: they are locked with `url: null` and never served.
pub const PRIVATE_DIR: &str = "rules/";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhaseDecl {
    pub id: String,
    pub participation: Participation,
    pub stages: Vec<StageDecl>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageDecl {
    pub id: String,
    pub actions: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionDecl {
    #[serde(rename = "type")]
    pub action_type: String,
    pub policy: ConflictPolicy,
}

/// The presentation: bundle, resources, visual bindings, catalog images and plans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Presentation {
    /// The renderer and effects contract.
    pub api_version: u32,
    /// Resources and visual behaviour; changes with any visual change.
    pub bundle_version: String,
    pub resources: Vec<Resource>,
    #[serde(default)]
    pub bindings: Vec<VisualBinding>,
    pub catalog: CatalogImages,
    /// Presentation plans shipped as examples and conformance fixtures.
    #[serde(default)]
    pub plans: Vec<String>,
}

/// A component's look: the resource set that draws its definitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisualBinding {
    pub component_id: String,
    pub resource_set: Reference,
}

/// The three required catalog resources, by resource id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogImages {
    pub cover: String,
    pub thumbnail: String,
    pub icon: String,
}

/// `package.json` of a component or asset library.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LibraryManifest {
    pub format: PackageFormat,
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub kind: LibraryKind,
    pub id: String,
    pub version: String,
    pub authors: Vec<String>,
    pub license: String,
    /// A translation key.
    pub description: String,
    pub languages: Vec<String>,
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Named exports: component files (components) or resource-set files (assets).
    pub exports: BTreeMap<String, Export>,
    /// The resources an asset library ships; a component library has none.
    #[serde(default)]
    pub resources: Vec<Resource>,
    #[serde(default)]
    pub translations: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Export {
    pub path: String,
}
