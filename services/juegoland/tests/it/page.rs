//! The page `juegoland dev` serves (`libs/edge/assets/index.html`), in a real browser:
//! Debian's Chromium driven by `playwright-core` from npm (`tests/js/page_restart.mjs`).
//!
//! The test needs Node.js 20+, npm and `/usr/bin/chromium` (`apt-get install -y chromium`);
//! it installs `tests/js/node_modules` itself (see `socketio.rs`) and FAILS (never skips)
//! when any of them is missing.

use std::path::Path;

use crate::client::data_dir;
use crate::socketio::{ensure_node_modules, run};

/// The browser the script drives; playwright-core never downloads one.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The server is SIGKILLed and restarted on the same address and data directory with another
/// token secret while a move is pending: the page fetches a new token, reconnects, resends
/// the move with the same command id and shows the bot's answer, by itself.
#[test]
fn the_page_recovers_its_pending_move_after_a_server_restart_with_a_new_secret() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the page test needs Debian's Chromium (`apt-get install -y chromium`)"
    );
    ensure_node_modules();
    let dir = data_dir();
    let dir = dir.to_str().expect("a UTF-8 data dir");
    let started = std::time::Instant::now();
    let out = run("node", &["page_restart.mjs", env!("CARGO_BIN_EXE_juegoland"), dir]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "node page_restart.mjs failed ({}) after {:.1} s:\n{stdout}{stderr}",
        out.status,
        started.elapsed().as_secs_f64()
    );
}
