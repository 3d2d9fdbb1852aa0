//! The web client `juegoland dev` serves (`clients/web`, embedded by `libs/edge`), in a real
//! browser: Debian's Chromium driven by `playwright-core` from npm (`tests/js/web_client.mjs`):
//! every catalog game played to its end against its bot (Brisca with two and with four
//! players, La Oca with three, Serpientes with a turn clock, Laberinto in real time with the
//! keyboard, several moves in flight over a slow link), a match watched from the lobby's watch
//! link as a spectator, a reload in the middle of a dice roll's animation, two players in two browser contexts
//! (one over Socket.IO), a reload in the middle of an animation, the network dropped and
//! restored (a pending move kept across a reload and resent with its command id), a server
//! restart with a new token secret, reduced motion, resources that fail to load, Spanish and
//! English, a phone's viewport, and an axe-core scan of every screen. Screenshots of each game
//! go to `<target dir>/web-client/`.
//!
//! The test needs Node.js 20+, npm and `/usr/bin/chromium` (`apt-get install -y chromium`);
//! it installs `tests/js/node_modules` itself (see `socketio.rs`) and FAILS (never skips)
//! when any of them is missing.

use std::path::{Path, PathBuf};

use crate::socketio::{ensure_node_modules, run};

/// The browser the script drives; playwright-core never downloads one.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Where the screenshots go: `web-client/` in the Cargo target directory.
fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("the target directory").join("web-client")
}

#[test]
fn the_web_client_plays_every_game_in_a_browser() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the browser tests need Debian's Chromium (`apt-get install -y chromium`)"
    );
    ensure_node_modules();
    let shots = screenshots();
    let started = std::time::Instant::now();
    let out = run("node", &["web_client.mjs", env!("CARGO_BIN_EXE_juegoland"), shots.to_str().expect("a UTF-8 path")]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "node web_client.mjs failed ({}) after {:.1} s:\n{stdout}{stderr}",
        out.status,
        started.elapsed().as_secs_f64()
    );
    for game in ["conecta4", "hundido", "solitario", "brisca", "brisca4", "oca", "serpientes", "laberinto"] {
        assert!(shots.join(format!("{game}.png")).exists(), "no screenshot of {game} in {}", shots.display());
    }
}
