//! The exclusive lock a serving process holds on its data directory, so that two processes
//! never serve one embedded store (each would answer from its own in-memory matches and
//! overwrite the other's commits). It is an OS file lock (`flock` on `juegoland.lock`): the
//! kernel releases it when the file is closed, the process exits or the process is killed,
//! so a crash never leaves a directory locked. The file names its holder for the message a
//! second process prints.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use crate::OpenError;

/// The lock file of a data directory.
pub const LOCK_FILE: &str = "juegoland.lock";

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes `dir`'s lock without waiting, or fails with [`OpenError::Locked`] naming the
    /// process that holds it.
    pub(crate) fn acquire(dir: &Path) -> Result<Self, OpenError> {
        let path = dir.join(LOCK_FILE);
        let io = |action, source| OpenError::Io { action, path: path.clone(), source };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("open the lock file", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // The holder wrote its line when it took the lock; an unreadable or empty
                // file still refuses, without a name.
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() { "an unknown process".to_owned() } else { holder.to_owned() };
                return Err(OpenError::Locked { dir: dir.to_owned(), lock: path, holder });
            }
            Err(TryLockError::Error(e)) => return Err(io("lock the data directory", e)),
        }
        let exe = std::env::current_exe().ok();
        let name = exe.as_deref().and_then(Path::file_name).map_or("unknown".into(), |n| n.to_string_lossy());
        let line = format!("pid {} ({name})\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(line.as_bytes()))
            .map_err(|e| io("write the lock file", e))?;
        Ok(Self { _file: file })
    }
}
