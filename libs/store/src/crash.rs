//! Crash points: the steps of a group commit where the fault-injection tests kill the
//! process (`services/juegoland/tests/it/crash_points.rs`), to show that a SIGKILL at any
//! step loses no acknowledged commit and applies none twice.
//!
//! Compiled in only with the `failpoints` feature (the `juegoland` binary has it) and armed
//! only by the `FAILPOINTS` environment variable, e.g.
//! `FAILPOINTS=store-batch-committed=30*off->return`: the 31st time a batch commits, the
//! process is killed before anyone is answered. Unarmed, a point costs one map lookup per
//! batch. The points:
//!
//! | point | where |
//! |---|---|
//! | `store-batch-taken` | a batch was taken from the queue; nothing of it written |
//! | `store-batch-commit-written` | (SQLite) one commit's rows written in the open transaction |
//! | `store-batch-before-commit` | (SQLite) every commit written, `COMMIT` not yet run |
//! | `store-batch-committed` | the batch is durable; no committer answered yet |
//! | `store-marks-before-commit` | (PostgreSQL) watermarks written, their transaction not committed |

/// Kills the process with SIGKILL at the named step when `FAILPOINTS` arms it.
macro_rules! crash_point {
    ($name:literal) => {
        fail::fail_point!($name, |_| $crate::crash::sigkill($name))
    };
}

/// SIGKILL, as an operator's `kill -9` or the kernel's OOM killer sends it: no destructor, no
/// flush, no answer to anyone. Sent by `kill(1)`, since the workspace forbids `unsafe` (a
/// direct `kill(2)` call) and `std::process::abort` is SIGABRT, whose handlers run.
#[cfg(feature = "failpoints")]
pub(crate) fn sigkill(point: &str) -> ! {
    eprintln!("crash point {point}: SIGKILL");
    let pid = std::process::id().to_string();
    let sent = std::process::Command::new("kill").args(["-KILL", &pid]).status();
    // The signal is delivered before `kill` exits; should it fail to start, abort anyway.
    eprintln!("crash point {point}: kill(1) answered {sent:?}");
    std::process::abort();
}
