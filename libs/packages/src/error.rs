//! Rejections: every one names the file and the field (a JSON pointer) and says what to fix.

/// Why a package (or a file of it) is rejected, with where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file} at {}: {kind}", if pointer.is_empty() { "the document root" } else { pointer.as_str() })]
pub struct Rejection {
    /// The package and file, e.g. `conecta4@1.0.0/game.json`.
    pub file: String,
    /// A JSON pointer into that file, e.g. `/presentation/resources/2/regions/0`.
    pub pointer: String,
    /// Boxed: rejections travel in `Result`s, which stay small.
    pub kind: Box<Kind>,
}

impl Rejection {
    pub fn new(file: impl Into<String>, pointer: impl Into<String>, kind: Kind) -> Self {
        Self { file: file.into(), pointer: pointer.into(), kind: Box::new(kind) }
    }
}

/// What is wrong. Messages are lowercase and say how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Kind {
    // Level 1: structure.
    #[error("the file is not JSON: {0}")]
    NotJson(String),
    #[error("unknown field {field:?}: remove it (extensions need an explicit field or a new format version)")]
    UnknownField { field: String },
    #[error("{0}")]
    Structure(String),
    #[error("the package has neither game.json nor package.json: add its manifest")]
    NoManifest,
    #[error("the package has both game.json and package.json: a package is a game or a library")]
    TwoManifests,
    #[error("formatVersion {0} is not supported: use 1")]
    FormatVersion(u32),
    #[error("{what} {value:?} is invalid: use 1-64 characters from a-z 0-9 - _ . (lowercase, starting with a letter)")]
    InvalidId { what: &'static str, value: String },
    #[error("version {0:?} is not exact: `latest` is never allowed, publish against an exact MAJOR.MINOR.PATCH")]
    LatestVersion(String),
    #[error("version {0:?} is a range: ranges are not allowed, name an exact MAJOR.MINOR.PATCH")]
    VersionRange(String),
    #[error("version {0:?} is partial: write the whole MAJOR.MINOR.PATCH (e.g. 1.0.0, never @1)")]
    PartialVersion(String),
    #[error("version {0:?} is malformed: use MAJOR.MINOR.PATCH with decimal numbers and no leading zeros")]
    MalformedVersion(String),
    #[error("dependency {0:?} is malformed: write it as id@MAJOR.MINOR.PATCH")]
    MalformedDependency(String),
    #[error(
        "path {0:?} is not a normalized relative path: no leading /, no . or .. segments, no \\, no empty segments"
    )]
    UnnormalizedPath(String),
    #[error("the participant range {min}..={max} is empty: min must be at least 1 and at most max")]
    ParticipantRange { min: u32, max: u32 },
    #[error("{what} {id:?} is declared twice: ids must be unique")]
    Duplicate { what: &'static str, id: String },
    #[error("{0} is empty: declare at least one")]
    Empty(&'static str),

    // Level 2: coherence between fields and with the dependencies.
    #[error("package {0:?} depends on itself: remove the self reference")]
    SelfReference(String),
    #[error("circular dependency {0}: break the cycle")]
    Cycle(String),
    #[error(
        "package {id:?} appears as {first} and {second} in one tree: every dependency of one id must use one version"
    )]
    TwoVersions { id: String, first: String, second: String },
    #[error("dependency {0} is not published: publish it first or fix the version")]
    MissingDependency(String),
    #[error("package {0:?} is not in dependencies: add it as id@MAJOR.MINOR.PATCH (references are never implicit)")]
    UndeclaredDependency(String),
    #[error("package {package} has no export {export:?}: use one of its exports ({available})")]
    MissingExport { package: String, export: String, available: String },
    #[error("a {from} package may not depend on the {to} package {dependency}: {rule}")]
    WrongDependencyKind { from: &'static str, to: &'static str, dependency: String, rule: &'static str },
    #[error("{reference} is a {found} export, but a {expected} is needed here")]
    WrongExportKind { reference: String, found: &'static str, expected: &'static str },
    #[error("component library has resources: only asset libraries ship resources")]
    ResourcesInComponentLibrary,
    #[error(
        "component {component} has custom kind {type_id:?}, which no trusted code registered: register a validator for it or remove the component"
    )]
    UnregisteredCustomKind { component: String, type_id: String },
    #[error("component {component} is invalid: {reason}")]
    InvalidComponent { component: String, reason: String },
    #[error("{what} {id:?} is not declared: declare it or fix the reference")]
    Unknown { what: &'static str, id: String },
    #[error("{0} resource has no width and height: images and atlases declare their dimensions")]
    MissingDimensions(&'static str),
    #[error("region {region:?} ({x},{y} {width}x{height}) does not fit inside the {image_width}x{image_height} image")]
    RegionOutside { region: String, x: u32, y: u32, width: u32, height: u32, image_width: u32, image_height: u32 },
    #[error("translation key {key:?} has no text in language {language:?}: add it to translations.{language}")]
    MissingTranslation { language: String, key: String },
    #[error("component {0} may be seen face down, but its resource set has no back: add a back slot")]
    HiddenDeckWithoutBack(String),
    #[error("component {component} has no face for definition {definition:?}: add a slot for every definition")]
    MissingFace { component: String, definition: String },
    #[error("required resource {0:?} has a fallback chain that ends in nothing: end it in a text fallback")]
    FallbackEndsInNothing(String),
    #[error("resource {0:?} loads at phase start but names no phase: add `phase`")]
    PhaseMissing(String),
    #[error("resource {0:?} names a phase but does not load by phase: remove `phase` or use load `phase`")]
    PhaseWithoutPhaseLoad(String),
    #[error("resource {resource:?} loads at phase {phase:?}, which the game does not have (phases: {phases})")]
    UnknownPhase { resource: String, phase: String, phases: String },
    #[error("catalog resource {0:?} must be required and load with the catalog")]
    CatalogResource(String),
    #[error("{0}")]
    Slot(String),
    #[error("{0} must live under rules/ (it describes private state)")]
    PublicPrivateSchema(&'static str),
    #[error("{0} must not live under rules/ (clients need it)")]
    PrivatePublicSchema(&'static str),
    #[error("component {component} of kind {kind} cannot have a visual binding with slots: bind decks and pieces only")]
    UnbindableComponent { component: String, kind: &'static str },

    // Level 3: files.
    #[error("file {0:?} does not exist in the package: add it or fix the path")]
    MissingFile(String),
    #[error(
        "file {path:?} has no known media type: use one of .json .svg .png .webp .wav .ogg .mp3 .woff2 .js .md .txt"
    )]
    UnknownMediaType { path: String },
    #[error("file {path:?} is {found}, but a {resource} resource must be one of {expected}")]
    MediaTypeMismatch { path: String, found: String, resource: &'static str, expected: String },
    #[error("file {path:?} is {found_width}x{found_height}, but the resource declares {width}x{height}")]
    DimensionsMismatch { path: String, width: u32, height: u32, found_width: u32, found_height: u32 },
    #[error("file {0:?} is empty")]
    EmptyFile(String),
    #[error("{path:?} is {what}: a package holds regular files and directories only (copy the file into the package)")]
    NotRegularFile { path: String, what: &'static str },

    // Presentation plans.
    #[error("plan has {0} steps: at most 128")]
    TooManySteps(usize),
    #[error("step {step:?} has a timeout of {timeout_ms} ms: at most 12000")]
    StepTooLong { step: String, timeout_ms: u32 },
    #[error("the plan's blocking steps take up to {0} ms in sequence: at most 12000")]
    BlockingTooLong(u64),
    #[error("steps form a cycle through {0:?}: a plan is acyclic")]
    PlanCycle(String),
    #[error("effect {0:?} is not registered")]
    UnknownEffect(String),
    #[error("marker {marker:?} is not declared by step {step:?}")]
    UnknownMarker { step: String, marker: String },
    #[error("effect {effect:?} rejects its params: {reason}")]
    EffectParams { effect: String, reason: String },

    #[error("plan step {step:?} plays {resource:?}, which is not a sound resource of the game")]
    PlanSound { step: String, resource: String },
    #[error("plan step {step:?} blocks on the optional sound {resource:?}: an optional sound never holds a transition")]
    BlockingOptionalSound { step: String, resource: String },

    // Publishing.
    #[error("protocolVersion {found} is not spoken by this engine: use {supported}")]
    UnsupportedProtocol { found: u32, supported: u64 },
    #[error(
        "no rules module is registered as {0}: register the compiled module under the manifest's id and rules.version"
    )]
    NoRulesModule(String),
    #[error("the manifest disagrees with the compiled rules module on {what}: manifest {manifest}, module {module}")]
    RulesMismatch { what: &'static str, manifest: String, module: String },
    #[error("the {0} schema file is not what the compiled rules module generates: regenerate it")]
    SchemaMismatch(&'static str),
    #[error(
        "the compiled rules module fails its conformance run: {0}; fix the rules (the game's own suite runs the same checkers)"
    )]
    ModuleTest(crate::publish::ModuleFailure),
    #[error("{0} is already published: a published version is immutable, publish a new version")]
    AlreadyPublished(String),
    #[error("{0}")]
    Io(String),
    #[error("the published package does not load back: {0}")]
    LoadCheck(String),
}
