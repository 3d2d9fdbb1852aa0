// The page (libs/edge/assets/index.html) in a real browser survives a restart of its server.
// Run by services/juegoland/tests/it/page.rs.
//
//   node page_restart.mjs <juegoland binary> <data dir>
//
// Starts `juegoland dev` on 127.0.0.1:0 with <data dir>, opens the page in Debian's Chromium
// (/usr/bin/chromium, driven by playwright-core), starts a Conecta 4 match against the bot
// through the page's form and waits for "Your turn". Then it SIGKILLs the server, checks that
// the page stops claiming "Your turn", clicks a column while the server is down, and restarts
// the server on the same address and data directory with a DIFFERENT token secret, so the
// page's old token is certainly refused. The page must recover by itself within
// RECOVERY_MS: connected again, the move applied, the bot's answer shown, "Your turn" again,
// no error left.
//
// Exits 0 on success; prints every failed check and exits 1 otherwise, or after an overall
// timeout. The server and the browser are always killed on exit.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const CHROMIUM = "/usr/bin/chromium";
const OVERALL_TIMEOUT_MS = 90_000;
const START_TIMEOUT_MS = 30_000;
const STEP_TIMEOUT_MS = 15_000;
const RECOVERY_MS = 20_000;
const COLUMN = 3;
// Two different secrets: after the restart the page's token no longer verifies, whatever the
// server does with its own default secret.
const SECRETS = ["page-restart-test-secret-before-0123456789", "page-restart-test-secret-after-9876543210"];

const [bin, dataDir] = process.argv.slice(2);
if (!bin || !dataDir) {
  console.error("usage: node page_restart.mjs <juegoland binary> <data dir>");
  process.exit(2);
}

let server = null;
let context = null;
const profile = mkdtempSync(join(tmpdir(), "juegoland-page-chromium-"));
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
const failures = [];

function cleanUp() {
  if (server) server.kill("SIGKILL");
  server = null;
  rmSync(profile, { recursive: true, force: true });
}
process.on("exit", cleanUp);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(1));
setTimeout(() => {
  console.error(`FAIL: not done within ${OVERALL_TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, OVERALL_TIMEOUT_MS).unref();

// A soft check: the run goes on, so that one run shows every way the page misbehaves.
function check(condition, message) {
  if (!condition) {
    failures.push(message);
    console.error(`FAIL [${elapsed()}]: ${message}`);
  }
}

// Starts `juegoland dev` and resolves with its address once it prints `listening on`.
function startServer(http, secret) {
  const child = spawn(bin, ["dev", "--http", http, "--data-dir", dataDir, "--jwt-secret", secret], {
    env: { ...process.env, RUST_LOG: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server = child;
  const output = [];
  const keep = (line) => {
    output.push(line);
    if (output.length > 40) output.shift();
  };
  createInterface({ input: child.stderr }).on("line", keep);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not announce its address within ${START_TIMEOUT_MS / 1000} s:\n${output.join("\n")}`)), START_TIMEOUT_MS);
    child.on("error", (e) => reject(new Error(`cannot start ${bin}: ${e.message}`)));
    child.on("exit", (code, signal) => reject(new Error(`the server exited (${code ?? signal}) before listening:\n${output.join("\n")}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      keep(line);
      const m = /^listening on http:\/\/(.+)\/$/.exec(line.trim());
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
}

async function killServer() {
  const child = server;
  server = null;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

// What a person sees: status line, connection, revision, message line and the discs of each
// column (bottom first).
function look(page) {
  return page.evaluate(() => {
    const text = (id) => document.getElementById(id).textContent;
    const columns = [...document.querySelectorAll("#board .col")].map((col) =>
      [...col.querySelectorAll(".disc")].reverse().map((d) => (d.classList.contains("p0") ? "p0" : "p1")),
    );
    const log = [...document.querySelectorAll("#log > div")].slice(-25).map((d) => d.textContent.slice(0, 240));
    return { turn: text("turn"), conn: text("conn"), rev: text("rev"), msg: text("msg"), columns, log };
  });
}

function describe(seen) {
  const { log, ...rest } = seen;
  return `${JSON.stringify(rest)}\n  the page's protocol log (last lines):\n    ${log.join("\n    ")}`;
}

// Polls the page until `done(seen)` holds; on timeout fails with what the page showed.
async function waitFor(page, what, done, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let seen;
  for (;;) {
    seen = await look(page);
    if (done(seen)) return seen;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; the page shows ${describe(seen)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const count = (seen, seat) => seen.columns.flat().filter((s) => s === seat).length;

async function main() {
  const addr = await startServer("127.0.0.1:0", SECRETS[0]);
  console.log(`[${elapsed()}] server listening on ${addr}`);
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => check(false, `the page threw: ${e.message}`));
  await page.goto(`http://${addr}/`);

  // A Conecta 4 match against the bot, through the page's own form.
  await page.waitForSelector('#game option[value="conecta4"]', { state: "attached", timeout: STEP_TIMEOUT_MS });
  await page.selectOption("#game", "conecta4");
  await page.fill("#me", "alice");
  await page.check('input[name=opp][value="bot"]');
  await page.click("#start");
  const before = await waitFor(page, "the match starts with alice to move", (s) => s.turn === "Your turn" && s.conn === "open", STEP_TIMEOUT_MS);
  const rev0 = Number(before.rev);
  console.log(`[${elapsed()}] match started at revision ${rev0}: ${before.turn}`);

  // The server dies; the page notices the closed socket.
  await killServer();
  const down = await waitFor(page, "the page notices that the server is gone", (s) => s.conn !== "open", STEP_TIMEOUT_MS);
  console.log(`[${elapsed()}] server killed; the page shows "${down.turn}" (connection: ${down.conn})`);
  check(down.turn !== "Your turn", `while disconnected the status still claims "Your turn" (connection: ${down.conn})`);

  // A move while the server is down stays pending, visibly.
  await page.click(`#board .col[data-column="${COLUMN}"]`);
  const clicked = await look(page);
  console.log(`[${elapsed()}] clicked column ${COLUMN + 1}; the page shows "${clicked.turn}"`);
  check(clicked.turn !== "Your turn", `after a click while disconnected the status claims "Your turn"`);
  check(/reconnect/i.test(clicked.turn), `after a click while disconnected the status does not say that the move waits for the reconnection: "${clicked.turn}"`);

  // The server comes back on the same address and data, with another secret.
  await new Promise((r) => setTimeout(r, 1000));
  await startServer(addr, SECRETS[1]);
  const restarted = Date.now();
  console.log(`[${elapsed()}] server restarted on ${addr} with a new token secret`);
  try {
    const after = await waitFor(
      page,
      "the page recovers: connected, its move and the bot's answer shown, alice to move, no error",
      (s) =>
        s.conn === "open" &&
        Number(s.rev) === rev0 + 2 &&
        s.turn === "Your turn" &&
        s.msg === "" &&
        s.columns[COLUMN][0] === "p0" &&
        count(s, "p0") === 1 &&
        count(s, "p1") === 1,
      RECOVERY_MS,
    );
    console.log(`[${elapsed()}] recovered ${((Date.now() - restarted) / 1000).toFixed(1)} s after the restart: revision ${after.rev}, "${after.turn}"`);
  } catch (e) {
    check(false, e.message);
  }
}

try {
  await main();
} catch (e) {
  check(false, e instanceof Error ? e.message : String(e));
} finally {
  if (context) await context.close().catch(() => {});
  cleanUp();
}
if (failures.length) {
  console.error(`FAIL: ${failures.length} check(s) failed after ${elapsed()}`);
  process.exit(1);
}
console.log(`ok: the page recovered from a server restart with a new token secret (${elapsed()})`);
