//! The secret that signs `juegoland dev`'s client tokens, kept in the data directory so that
//! a restart does not invalidate every open tab's token.
//!
//! It is 32 random bytes, hex in `dev-token-secret` (mode 0600), created on first start and
//! replaced only when asked (`--new-jwt-secret`). Written to a temporary file and renamed, so
//! a crash never leaves a half-written secret.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The file of the secret in a data directory.
pub const FILE: &str = "dev-token-secret";

/// 32 fresh random bytes.
pub fn random() -> anyhow::Result<Vec<u8>> {
    let mut secret = vec![0u8; 32];
    getrandom::fill(&mut secret).context("generate a token secret")?;
    Ok(secret)
}

/// The secret stored in `dir` (created with the directory when missing, or replaced when
/// `renew`).
pub fn load_or_create(dir: &Path, renew: bool) -> anyhow::Result<Vec<u8>> {
    let path = dir.join(FILE);
    if !renew {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let secret = hex::decode(text.trim()).with_context(|| format!("decode {}", path.display()))?;
                if secret.len() < 32 {
                    bail!(
                        "{} holds a secret shorter than 32 bytes; delete it or start with --new-jwt-secret",
                        path.display()
                    );
                }
                return Ok(secret);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
        }
    }
    let secret = random()?;
    std::fs::create_dir_all(dir).with_context(|| format!("create the data directory {}", dir.display()))?;
    write_private(&path, hex::encode(&secret).as_bytes())?;
    Ok(secret)
}

/// Writes `bytes` to `path` readable by its owner only, atomically.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp).with_context(|| format!("create {}", tmp.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename {} to {}", tmp.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("juegoland-secret-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_secret_is_kept_across_starts_and_renewed_only_when_asked() {
        let dir = dir("kept");
        let first = load_or_create(&dir, false).unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(load_or_create(&dir, false).unwrap(), first, "a second start reads the same secret");
        let renewed = load_or_create(&dir, true).unwrap();
        assert_ne!(renewed, first);
        assert_eq!(load_or_create(&dir, false).unwrap(), renewed);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "only its owner reads the secret");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_secret_is_an_error_not_a_new_secret() {
        let dir = dir("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(FILE), "not hex").unwrap();
        let err = load_or_create(&dir, false).unwrap_err();
        assert!(format!("{err:#}").contains(FILE), "{err:#}");
        std::fs::write(dir.join(FILE), "abcd").unwrap();
        assert!(format!("{:#}", load_or_create(&dir, false).unwrap_err()).contains("shorter than 32 bytes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
