//! The `package_manifest` target's input: a package's files in one byte string, easy for a
//! mutator to keep readable. Entries are separated by a NUL byte; each entry is its path,
//! a newline, and the file's bytes (`game.json\n{…}\0schemas/config.json\n{…}`). A package's
//! text files hold no NUL; the seeds' media are replaced by small files of the same kind and
//! size ([`seed_bytes`]).

use std::collections::BTreeMap;
use std::path::Path;

/// The files of an archive; an entry without a newline is a path with empty content, and a
/// later entry of the same path wins.
pub fn files(data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in data.split(|b| *b == 0) {
        let (path, content) = match entry.iter().position(|b| *b == b'\n') {
            Some(at) => (&entry[..at], &entry[at + 1..]),
            None => (entry, &[][..]),
        };
        if path.is_empty() {
            continue;
        }
        files.insert(String::from_utf8_lossy(path).into_owned(), content.to_vec());
    }
    files
}

/// The archive of `files`.
pub fn write(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (path, content)) in files.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(path.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(content);
    }
    out
}

/// Every file under `dir`, by `/`-separated relative path, as a seed holds it.
pub fn read_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let name = path.strip_prefix(root).expect("below the root");
                let name: Vec<String> =
                    name.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                files.insert(name.join("/"), seed_bytes(&name.join("/"), bytes));
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// A file as a seed holds it: an SVG reduced to its root element (the size validation
/// reads), another medium to a few bytes of its kind; text as it is.
pub fn seed_bytes(path: &str, bytes: Vec<u8>) -> Vec<u8> {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "svg" => match juegoland_packages::validate::svg_size(&bytes) {
            Some((w, h)) => {
                format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}"/>"#).into_bytes()
            }
            None => br#"<svg xmlns="http://www.w3.org/2000/svg"/>"#.to_vec(),
        },
        "wav" => b"RIFF-WAVE-seed".to_vec(),
        "ogg" => b"OggS-seed".to_vec(),
        "mp3" => b"ID3-seed".to_vec(),
        "png" | "webp" | "woff2" => format!("{extension}-seed").into_bytes(),
        _ => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_reads_back_as_its_files() {
        let mut files = BTreeMap::new();
        files.insert("game.json".to_owned(), b"{\n}".to_vec());
        files.insert("images/a.svg".to_owned(), b"<svg/>".to_vec());
        files.insert("empty.txt".to_owned(), Vec::new());
        assert_eq!(super::files(&write(&files)), files);
    }
}
