//! The client library `@juegoland/client` as platform developers get it: packed from
//! `clients/web` (`scripts/pack-lib.mjs`), installed from its tarball into a fresh project
//! with `npm install`, and run there by `tests/js/client_library.mjs` against this binary,
//! under plain Node and in Chromium. Over WebSocket and over Socket.IO, a refused token is
//! reported as a typed close and the token is asked for again; seats sync and moves are
//! played; the server is killed and started again on the same address and data directory,
//! then again with a new token secret, and the clients reconnect and resync.
//!
//! Node runs twice: once as it comes (Node 20 has no global WebSocket, so the library loads
//! the `ws` package, its optional dependency; Node 22 has one) and once with the other
//! WebSocket (`--experimental-websocket` on Node 20, `--no-experimental-websocket` on 22 and
//! later), so that both implementations are exercised whatever the machine's Node.
//!
//! The test needs Node.js 20+, npm (the tarball's `ws` comes from the registry or npm's
//! cache) and `/usr/bin/chromium`; it installs `tests/js/node_modules` (playwright-core) and
//! `clients/web/node_modules` (Vite and TypeScript, which build the package) when they are
//! missing or stale, and FAILS (never skips) when any of them is unavailable.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::socketio::{ensure_node_modules, js_dir, npm_ci, run};

/// The browser the script drives; playwright-core never downloads one.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The web client's directory, whose scripts build the package.
fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../clients/web")
}

/// Runs `program` in `dir`; a missing program fails the test with what to install.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).current_dir(dir).output().unwrap_or_else(|e| {
        panic!("cannot run `{program}` ({e}): the client library test needs Node.js 20+ and npm on the PATH")
    })
}

/// Fails the test with `what`'s output unless it succeeded; its stdout otherwise.
fn succeeded(what: &str, out: Output) -> String {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{stdout}{stderr}", out.status);
    stdout.into_owned()
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_packed_client_library_works_under_node_and_in_a_browser() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the browser half needs Debian's Chromium (`apt-get install -y chromium`)"
    );
    ensure_node_modules();
    npm_ci(&web_dir(), "juegoland-npm-ci-web.lock");
    let major = succeeded("`node -p`", run("node", &["-p", "process.versions.node.split('.')[0]"]));
    let major: u32 = major.trim().parse().expect("node's major version");
    assert!(major >= 20, "Node.js {major} is too old: the client library needs 20 or later");

    let dir =
        TempDir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("client-library-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let project = dir.0.join("project");
    std::fs::create_dir_all(&project).expect("create the project directory");

    // Packs the library: the script prints the tarball's path last.
    let package = dir.0.join("package");
    let pack = web_dir().join("scripts/pack-lib.mjs");
    let packed = succeeded(
        "node scripts/pack-lib.mjs",
        run_in(&web_dir(), "node", &[pack.to_str().expect("a UTF-8 path"), package.to_str().expect("a UTF-8 path")]),
    );
    let tarball = packed.lines().last().expect("the tarball's path").trim().to_owned();
    assert!(Path::new(&tarball).is_file(), "no tarball at {tarball}:\n{packed}");

    // Installs it into a fresh project, as a platform does.
    std::fs::write(project.join("package.json"), r#"{"name":"platform","private":true,"type":"module"}"#)
        .expect("write the project's package.json");
    succeeded(
        "npm install <tarball>",
        run_in(
            &project,
            "npm",
            &["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", &tarball],
        ),
    );
    assert!(
        project.join("node_modules/ws/package.json").is_file(),
        "the package's optional dependency `ws` was not installed with it"
    );
    std::fs::copy(js_dir().join("client_library.mjs"), project.join("client_library.mjs")).expect("copy the script");

    let bin = env!("CARGO_BIN_EXE_juegoland");
    let js = js_dir();
    let js = js.to_str().expect("a UTF-8 path");
    // Node as it comes, then both halves: Node and Chromium.
    let started = std::time::Instant::now();
    let out = succeeded("node client_library.mjs", run_in(&project, "node", &["client_library.mjs", bin, js]));
    println!("{out}");
    assert!(out.contains("every check passed"), "{out}");
    // The other WebSocket of this Node: its built-in one on Node 20, the `ws` package on 22+.
    let other = if major < 22 { "--experimental-websocket" } else { "--no-experimental-websocket" };
    let out = succeeded(
        &format!("node {other} client_library.mjs node"),
        run_in(&project, "node", &[other, "client_library.mjs", bin, js, "node"]),
    );
    println!("{out}");
    assert!(out.contains("every check passed"), "{out}");
    println!("the client library passed in {:.1} s", started.elapsed().as_secs_f64());
}
