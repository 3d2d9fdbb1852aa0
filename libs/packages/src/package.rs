//! A package in memory: its parsed manifest and the bytes of every file, and validation
//! level 1 (document structure).

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Kind, Rejection};
use crate::lock::{LOCK_FILE, PUBLICATION_FILE, PackageKey};
use crate::manifest::{
    FORMAT_VERSION, GAME_MANIFEST, GameManifest, LIBRARY_MANIFEST, LibraryManifest, Manifest, Reference,
};

/// A package: the manifest (level 1 checked) and every file by its normalized path.
#[derive(Clone, Debug, PartialEq)]
pub struct Package {
    pub manifest: Manifest,
    /// The manifest as the JSON document it was parsed from (what the digest covers).
    pub document: Value,
    /// Every file of the package, manifest included, by `/`-separated relative path.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Package {
    /// Parses the manifest among `files` and checks its structure (validation level 1).
    pub fn from_files(files: BTreeMap<String, Vec<u8>>) -> Result<Self, Rejection> {
        let (manifest, document) = match (files.get(GAME_MANIFEST), files.get(LIBRARY_MANIFEST)) {
            (Some(_), Some(_)) => return Err(Rejection::new("package", "", Kind::TwoManifests)),
            (None, None) => return Err(Rejection::new("package", "", Kind::NoManifest)),
            (Some(bytes), None) => {
                let (m, doc) = parse_document::<GameManifest>(GAME_MANIFEST, bytes)?;
                (Manifest::Game(Box::new(m)), doc)
            }
            (None, Some(bytes)) => {
                let (m, doc) = parse_document::<LibraryManifest>(LIBRARY_MANIFEST, bytes)?;
                (Manifest::Library(Box::new(m)), doc)
            }
        };
        let package = Self { manifest, document, files };
        crate::structure::check(&package)?;
        Ok(package)
    }

    /// Reads every file under `dir` (the lock and publication record of a published
    /// directory excluded: they are not the package's own files) and parses it.
    /// A symbolic link, a device, a socket or a pipe anywhere in it is refused: publishing
    /// must never read what lies outside the package (`notes.txt -> ~/.ssh/id_ed25519`,
    /// `env.txt -> /proc/self/environ`) and make it public.
    pub fn read_dir(dir: &Path) -> Result<Self, Rejection> {
        let mut files = BTreeMap::new();
        read_tree(dir, dir, &mut files).map_err(|e| match e {
            TreeError::Io(e) => Rejection::new(dir.display().to_string(), "", Kind::Io(format!("read package: {e}"))),
            TreeError::NotRegular { path, what } => {
                Rejection::new(dir.display().to_string(), "", Kind::NotRegularFile { path, what })
            }
        })?;
        files.remove(LOCK_FILE);
        files.remove(PUBLICATION_FILE);
        Self::from_files(files)
    }

    pub fn key(&self) -> PackageKey {
        PackageKey { id: self.manifest.id().to_owned(), version: self.manifest.version().to_owned() }
    }

    /// `id@version/path`, the file part of a rejection.
    pub fn label(&self, path: &str) -> String {
        format!("{}/{path}", self.key())
    }

    /// The manifest's label, `id@version/game.json` or `…/package.json`.
    pub fn manifest_label(&self) -> String {
        self.label(self.manifest.file_name())
    }

    /// Parses one of the package's JSON files as `T`; a missing file is `MissingFile` at
    /// `pointer` of the manifest.
    pub fn parse_file<T: DeserializeOwned>(&self, path: &str, pointer: &str) -> Result<T, Rejection> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| Rejection::new(self.manifest_label(), pointer, Kind::MissingFile(path.to_owned())))?;
        parse_document::<T>(&self.label(path), bytes).map(|(value, _)| value)
    }
}

enum TreeError {
    Io(std::io::Error),
    NotRegular { path: String, what: &'static str },
}

impl From<std::io::Error> for TreeError {
    fn from(e: std::io::Error) -> Self {
        TreeError::Io(e)
    }
}

/// Reads the regular files below `dir`, by their path relative to `root`. The entries' own
/// types are read (`DirEntry::file_type` does not follow a link), so a link is refused, not
/// followed.
fn read_tree(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) -> Result<(), TreeError> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let relative = path.strip_prefix(root).expect("walked below the root");
        let name: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let name = name.join("/");
        let kind = entry.file_type()?;
        if kind.is_dir() {
            read_tree(root, &path, files)?;
        } else if kind.is_file() {
            files.insert(name, std::fs::read(&path)?);
        } else {
            let what = if kind.is_symlink() { "a symbolic link" } else { "not a regular file" };
            return Err(TreeError::NotRegular { path: name, what });
        }
    }
    Ok(())
}

/// Parses a strict document, turning serde's error into a rejection at its JSON pointer.
pub fn parse_document<T: DeserializeOwned>(label: &str, bytes: &[u8]) -> Result<(T, Value), Rejection> {
    let document: Value =
        serde_json::from_slice(bytes).map_err(|e| Rejection::new(label, "", Kind::NotJson(e.to_string())))?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let mut pointer = pointer_of(e.path());
        let message = e.inner().to_string();
        let kind = match message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')) {
            Some((field, _)) => {
                if !pointer.ends_with(&format!("/{}", escape(field))) {
                    pointer.push('/');
                    pointer.push_str(&escape(field));
                }
                Kind::UnknownField { field: field.to_owned() }
            }
            None => Kind::Structure(strip_position(&message)),
        };
        Rejection::new(label, pointer, kind)
    })?;
    Ok((value, document))
}

/// serde_json appends " at line L column C"; the pointer says where, in a stable way.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            Segment::Map { key } => pointer.push_str(&format!("/{}", escape(key))),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    pointer
}

/// Escapes a key for a JSON pointer (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Splits `id@MAJOR.MINOR.PATCH`; level 1 has checked both parts.
pub fn split_dependency(dependency: &str) -> Option<PackageKey> {
    let (id, version) = dependency.rsplit_once('@')?;
    Some(PackageKey { id: id.to_owned(), version: version.to_owned() })
}

/// The format version every document must have.
pub fn check_format_version(label: &str, version: u32) -> Result<(), Rejection> {
    if version == FORMAT_VERSION {
        Ok(())
    } else {
        Err(Rejection::new(label, "/formatVersion", Kind::FormatVersion(version)))
    }
}

/// Where a reference points, resolved against the package tree: the package that owns the
/// file and the file's path in it.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub owner: &'a Package,
    pub path: &'a str,
}

impl Reference {
    /// A short description for messages, e.g. `playing-cards/poker52`.
    pub fn describe(&self) -> String {
        match self {
            Reference::Local { path } => format!("local file {path:?}"),
            Reference::Dependency { package_id, export } => format!("{package_id}/{export}"),
        }
    }
}
