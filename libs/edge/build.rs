//! Embeds the web client's built bundle (`assets/web`, built by `clients/web`'s `npm run
//! build` and committed) into the binary: writes `$OUT_DIR/web_assets.rs`, one
//! `include_bytes!` per file, so serving the client needs no JavaScript tool and no files
//! beside the binary.

use std::path::{Path, PathBuf};

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("assets/web");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut out = String::from(
        "/// The web client's files: (URL path, bytes), sorted by path.\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let rel = file.strip_prefix(&root).expect("under the root").to_str().expect("a UTF-8 path").replace('\\', "/");
        out.push_str(&format!("    ({:?}, include_bytes!({:?})),\n", format!("/{rel}"), file.display().to_string()));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("web_assets.rs");
    std::fs::write(dest, out).expect("write web_assets.rs");
}
