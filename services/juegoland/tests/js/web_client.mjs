// The web client (clients/web, embedded in the binary) end to end in a real browser.
// Run by services/juegoland/tests/it/page.rs:
//
//   node web_client.mjs <juegoland binary> <screenshot dir> [scenario…]
//
// Starts `juegoland dev --in-memory` on 127.0.0.1:0 and drives Debian's Chromium
// (/usr/bin/chromium) with playwright-core through every scenario (or the named ones):
// each catalog game played to its end against its bot (Brisca with two and four players, La
// Oca with three, Serpientes y escaleras with a turn clock, Laberinto in real time with the
// keyboard, several moves in flight over a slow link), a match watched from the lobby's
// watch link as a spectator, two players in two browser contexts (one over Socket.IO), a reload in the middle of an animation (a disc's drop, a dice roll's path), the network dropped and
// restored, reduced motion emulated, resources that fail to load, Spanish and English, a
// phone's viewport, and an axe-core scan of every screen (no serious or critical
// violation). Screenshots go to <screenshot dir>.
//
// Exits 0 when every check passed; prints every failure and exits 1 otherwise.

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { startServer as startDev } from "./server.mjs";

const CHROMIUM = "/usr/bin/chromium";
const OVERALL_TIMEOUT_MS = 900_000;
const STEP_MS = 20_000;
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const [bin, shots, ...only] = process.argv.slice(2);
if (!bin || !shots) {
  console.error("usage: node web_client.mjs <juegoland binary> <screenshot dir> [scenario…]");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
const failures = [];
const children = new Set();
let browser = null;
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
setTimeout(() => {
  console.error(`FAIL: not done within ${OVERALL_TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, OVERALL_TIMEOUT_MS).unref();

function check(ok, message) {
  if (!ok) {
    failures.push(message);
    console.error(`FAIL [${elapsed()}]: ${message}`);
  }
  return ok;
}

/** Starts `juegoland dev` with `args` (server.mjs); resolves with its base URL once it listens. */
const startServer = (args = ["--http", "127.0.0.1:0", "--in-memory"]) => startDev(bin, args, children);

async function kill(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

// ---- page helpers ----
// A navigation (a reload, the lobby's redirect) may destroy the context mid-read: no state yet.
const state = (page) => page.evaluate(() => (window.__juegoland ? window.__juegoland() : null)).catch(() => null);

async function until(page, what, done, timeoutMs = STEP_MS) {
  const deadline = Date.now() + timeoutMs;
  let seen;
  for (;;) {
    seen = { s: await state(page), status: (await page.textContent("#status", { timeout: 1000 }).catch(() => null)) ?? "" };
    if (done(seen)) return seen;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s; the page shows ${JSON.stringify(seen)}`);
    await page.waitForTimeout(50);
  }
}
const ready = (page, what = "the board accepts a move") => until(page, what, ({ s }) => s && !s.locked && !s.result);
/**
 * Presses `key` and answers whether the board was locked as the page's own handlers returned:
 * listeners on the window hear the key, and the click a key makes on a button (Enter), after
 * the board's handlers, in the same task. Reading the state afterwards from here would race
 * the reply of a fast server.
 */
async function pressLocked(page, key) {
  await page.evaluate(() => {
    window.__lockedAfterKey = false;
    const seen = () => (window.__lockedAfterKey ||= window.__juegoland().locked);
    window.addEventListener("keydown", seen);
    window.addEventListener("click", seen);
    window.__stopLockWatch = () => {
      window.removeEventListener("keydown", seen);
      window.removeEventListener("click", seen);
    };
  });
  await page.keyboard.press(key);
  return page.evaluate(() => {
    window.__stopLockWatch();
    return window.__lockedAfterKey;
  });
}
const over = (page) => until(page, "the match ends", ({ s }) => s && s.result && s.displayed === s.confirmed, 60_000);

async function axe(page, screen) {
  await page.addScriptTag({ content: AXE });
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(bad.length === 0, `axe on ${screen}: ${JSON.stringify(bad)}`);
  console.log(`[${elapsed()}] axe ${screen}: ${result.length} violation(s) ${JSON.stringify(result.map((v) => `${v.id} (${v.impact})`))}, ${bad.length} serious or critical`);
}

async function newPage(opts = {}) {
  const context = await browser.newContext({ locale: "en-GB", viewport: { width: 1200, height: 900 }, ...opts });
  const page = await context.newPage();
  page.on("pageerror", (e) => check(false, `the page threw: ${e.message}`));
  return { context, page };
}

/** Creates a match from the lobby's card of `game`; resolves when its board shows. */
async function startFromLobby(page, base, game, { name = "alice", friend = null, variant = null, players = null } = {}) {
  await page.goto(`${base}/`);
  const card = page.locator(`.game[data-game="${game}"]`);
  await card.locator('input[name="me"]').fill(name);
  if (friend) {
    await card.locator('input[value="friend"]').check();
    await card.locator('input[name="friend"]').fill(friend);
  }
  if (variant) await card.locator('select[name="variant"]').selectOption(variant);
  if (players) await card.locator('select[name="players"]').selectOption(String(players));
  await card.locator('button[type="submit"]').click();
  await page.waitForURL(/[?&]match=/, { timeout: STEP_MS });
  await until(page, `the ${game} match shows`, ({ s }) => s && s.displayed !== null && s.connection === "open");
}

/** Every displayed revision from 1 to the last, each by its plan: no transition cut off. */
function playedInOrder(history, what) {
  // A plan the player skipped still settles its own revision, in order.
  const revs = history.filter(([, why]) => why === "plan" || why === "skip").map(([r]) => r);
  const last = history.at(-1)?.[0] ?? 0;
  const first = history.find(([, why]) => why === "sync")?.[0] ?? 0;
  const want = Array.from({ length: last - first }, (_, i) => first + 1 + i);
  check(JSON.stringify(revs) === JSON.stringify(want), `${what}: displayed ${JSON.stringify(history)}, wanted every revision ${first + 1}..${last} by its plan`);
}

/**
 * Routes the page's WebSockets through the test: records the page's frames, can swallow the
 * next command (the network drops just as the move leaves: `mode = "swallow"`) and refuse
 * connections (`"refuse"`).
 */
async function wsRoute(page) {
  const net = { mode: "pass", frames: [], sockets: new Set() };
  net.dropAll = () => {
    for (const ws of net.sockets) ws.close({ code: 1006, reason: "network down" }).catch(() => {});
    net.sockets.clear();
  };
  await page.routeWebSocket(/\/v1\/ws/, (ws) => {
    if (net.mode === "refuse") return void ws.close({ code: 1006, reason: "offline" }).catch(() => {});
    const server = ws.connectToServer();
    net.sockets.add(ws);
    ws.onMessage((text) => {
      const m = JSON.parse(String(text));
      net.frames.push(m);
      if (m.type === "game.command" && net.mode === "swallow") {
        net.mode = "refuse";
        net.dropAll();
        return;
      }
      server.send(text);
    });
  });
  return net;
}

/**
 * Plays a dice race to its end with the keyboard (R rolls); resolves with the final status.
 * `each` runs after every roll of mine has shown.
 */
/**
 * Run in the page (page.evaluate) before a move: waits, frame by frame, up to 5 s for an
 * animation; then reads whether the board is locked and the controls usable, toggles the sound
 * twice (back as it was) and presses skip, and measures how long the animation took to end.
 */
function duringAnimation() {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const tick = () => {
      const s = window.__juegoland();
      if (!s.animating) {
        if (performance.now() - t0 > 5000) resolve({ caught: false });
        else requestAnimationFrame(tick);
        return;
      }
      const controls = ["#skip", "#sound", "#motion", "#lang", "#leave"].map((sel) => {
        const el = document.querySelector(sel);
        return { sel, enabled: !!el && !el.disabled && el.getAttribute("aria-disabled") !== "true" };
      });
      const board = [...document.querySelectorAll(".c4-col")];
      const boardDisabled = board.length > 0 && board.every((c) => c.getAttribute("aria-disabled") === "true" || !c.classList.contains("playable"));
      const sound = document.querySelector("#sound");
      const pressed = sound.getAttribute("aria-pressed");
      sound.click();
      const soundToggled = sound.getAttribute("aria-pressed") !== pressed;
      sound.click();
      const skippedAt = performance.now();
      document.querySelector("#skip").click();
      const wait = () => {
        const x = window.__juegoland();
        // Skip ends the running transition (the next one, the bot's reply, may start at once).
        if (!x.animating || x.displayed !== s.displayed) resolve({ caught: true, locked: s.locked, boardDisabled, controls, soundToggled, skippedWithinMs: performance.now() - skippedAt });
        else if (performance.now() - skippedAt > 3000) resolve({ caught: true, locked: s.locked, boardDisabled, controls, soundToggled, skippedWithinMs: null });
        else requestAnimationFrame(wait);
      };
      wait();
    };
    tick();
  });
}

/**
 * Battleship against the bot, keyboard only. With `reduced`, reduced motion is emulated (every
 * transition settles without waiting for an animation) and the game is played to its end;
 * without it the first `maxShots` shots are fired with full motion, and each of my shots must
 * show before the bot's reply (the coordinator plays both in order).
 */
async function playHundido(base, { reduced, maxShots = 36 }) {
  const { context, page } = await newPage(reduced ? { reducedMotion: "reduce" } : {});
  await startFromLobby(page, base, "hundido", { variant: "quick" });
  await page.waitForSelector(".hd-own [role=gridcell]");
  if (reduced) await axe(page, "Battleship, placement");
  const stops = await page.$$eval(".hd-grid", (grids) => grids.map((g) => g.querySelectorAll('[tabindex="0"]').length));
  check(JSON.stringify(stops) === "[1,1]", `each grid should be one tab stop: ${JSON.stringify(stops)}`);
  // Placement with the keyboard: the selected ship goes where the focus is (Enter).
  for (const row of [0, 2]) {
    await ready(page, "placement accepts a ship");
    await page.focus(".hd-own [tabindex='0']");
    const [r0] = await page.$eval(".hd-own [tabindex='0']", (c) => [Number(c.dataset.r)]);
    for (let i = r0; i < row; i++) await page.keyboard.press("ArrowDown");
    for (let i = r0; i > row; i--) await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Enter");
    await until(page, `ship placed on row ${row}`, ({ s }) => s.confirmed >= 1 && !s.locked && s.displayed === s.confirmed);
    const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-r"));
    check(focused === String(row), `focus left the grid after placing (on row ${focused})`);
  }
  await tabTo(page, '[data-control="ready"]');
  await page.keyboard.press("Enter");
  await until(page, "the battle starts", ({ status }) => /Your shot|is firing/.test(status), 30_000);
  if (reduced) await page.screenshot({ path: join(shots, "hundido-battle.png"), fullPage: true });
  // Fire at every cell in order, keyboard only, one tab stop for the enemy grid.
  let shots_ = 0;
  for (let i = 0; i < 36 && shots_ < maxShots; i++) {
    const [r, c] = [Math.floor(i / 6), i % 6];
    const s0 = (await until(page, "my shot or the end", ({ s }) => s.result || !s.locked, 30_000)).s;
    if (s0.result) break;
    const cell = page.locator(`.hd-enemy [data-r="${r}"][data-c="${c}"]`);
    if ((await cell.getAttribute("aria-disabled")) === "true") continue; // known already (a sunk ship)
    await cell.focus();
    await page.keyboard.press("Enter");
    shots_++;
    // Reduced motion: a confirmed shot shows at once; no poll ever sees an animation run (with
    // motion the shot's mark alone plays for over half a second).
    let sawAnimating = false;
    await until(page, "the shot shows", ({ s }) => {
      sawAnimating ||= !!s?.animating;
      return s.displayed > s0.displayed && s.displayed === s.confirmed && !s.animating;
    }, STEP_MS);
    if (reduced) check(!sawAnimating, "an animation ran under reduced motion");
    const focused = await page.evaluate(() => [document.activeElement?.closest(".hd-enemy") !== null, document.activeElement?.getAttribute("data-r"), document.activeElement?.getAttribute("data-c")]);
    check(JSON.stringify(focused) === JSON.stringify([true, String(r), String(c)]), `Battleship: after the shot at ${r},${c} the focus is on ${JSON.stringify(focused)}`);
    const label = await cell.getAttribute("aria-label");
    check(/water|hit|sunk/.test(label), `the shot's cell does not say what it found: "${label}"`);
  }
  if (!reduced) {
    playedInOrder((await state(page)).history, "Battleship with motion");
    console.log(`[${elapsed()}] Battleship with motion: ${shots_} shots, each shown before the reply`);
    await context.close();
    return;
  }
  const end = await over(page);
  console.log(`[${elapsed()}] Battleship ended after ${shots_} shots: ${end.status}`);
  check(/You win|You lose/.test(end.status), `the result is not a sentence: "${end.status}"`);
  check((await state(page)).history.every(([, why]) => why === "plan" || why === "sync"), "a transition failed under reduced motion");
  await page.screenshot({ path: join(shots, "hundido.png"), fullPage: true });
  await axe(page, "Battleship, finished");
  await context.close();
}

/** Presses Tab until the focus is on `selector` (keyboard only: the control is reachable). */
async function tabTo(page, selector) {
  for (let i = 0; i < 60; i++) {
    if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`${selector} is not reachable with Tab`);
}

async function raceToTheEnd(page, what, each = async () => {}) {
  let rolls = 0;
  for (;;) {
    const seen = await until(page, `${what}: my roll or the end`, ({ s, status }) => s.result || (!s.locked && s.displayed === s.confirmed && /Your turn/.test(status)), 60_000);
    if (seen.s.result) break;
    check(!!(await page.$('.race-roll[aria-disabled="false"]')), `${what}: my turn, but the roll button is disabled`);
    await page.focus(".race-roll");
    await page.keyboard.press("r");
    rolls++;
    // Shown and acknowledged: the receipt may arrive just after the revision it made.
    await until(page, `${what}: the roll shows`, ({ s }) => s.result || (s.confirmed > seen.s.confirmed && s.displayed === s.confirmed && !s.animating && s.pending === null), 30_000);
    const focused = await page.evaluate(() => document.activeElement?.classList.contains("race-roll") ?? false);
    check(focused, `${what}: after roll ${rolls} the focus left the roll button`);
    await each(rolls);
    if (rolls > 400) throw new Error(`${what}: no end after 400 rolls`);
  }
  return { end: await over(page), rolls };
}

/** The squares the board draws each seat's piece on. */
const piecesOnBoard = (page) =>
  page.$$eval(".race-board .piece, .race-start .piece", (ps) => Object.fromEntries(ps.map((p) => [p.dataset.seat, Number(p.closest("[data-square]")?.dataset.square ?? 0)])));

/**
 * The squares the board draws and the displayed view's positions, read at one moment once
 * nothing is animating and the displayed revision is the confirmed one (a bot's roll may
 * land between two separate reads).
 */
async function boardAndView(page, what) {
  const read = () =>
    page.evaluate(() => {
      const s = window.__juegoland();
      const drawn = Object.fromEntries(
        [...document.querySelectorAll(".race-board .piece, .race-start .piece")].map((p) => [p.dataset.seat, Number(p.closest("[data-square]")?.dataset.square ?? 0)]),
      );
      return { settled: !s.animating && s.displayed === s.confirmed, want: s.view?.positions ?? {}, drawn };
    });
  for (let tries = 0; tries < 20; tries++) {
    await until(page, `${what}: the board settles`, ({ s }) => s && !s.animating && s.displayed === s.confirmed);
    const { want, drawn, settled } = await read();
    if (settled) return { want, drawn };
  }
  throw new Error(`${what}: the board never held still for one read`);
}

/**
 * Routes the page's WebSockets through the test with `net.delay` ms added to every message
 * from the server (a slow link: the page's commands leave at once, their receipts and views
 * come late), keeping their order.
 */
async function slowWs(page) {
  const net = { delay: 0, frames: [] };
  await page.routeWebSocket(/\/v1\/ws/, (ws) => {
    const server = ws.connectToServer();
    let last = 0;
    ws.onMessage((text) => {
      net.frames.push(JSON.parse(String(text)));
      server.send(text);
    });
    server.onMessage((text) => {
      const at = Math.max(Date.now() + net.delay, last);
      last = at;
      setTimeout(() => ws.send(text), at - Date.now());
    });
  });
  return net;
}

/** Laberinto's view joined from its records: the player's cell and the open ways out of it. */
function mazeOf(view) {
  const records = view?.records ?? [];
  const first = records[0];
  if (!first) return null;
  const cells = new Map();
  const positions = {};
  for (const r of records) {
    for (const c of r.cells ?? []) cells.set(c.index, c);
    for (const [k, v] of Object.entries(r.players ?? {})) positions[k === "self" ? first.role : k === "opponent" ? (first.role === "p0" ? "p1" : "p0") : k] = v;
  }
  return { width: first.width, height: first.height, phase: first.phase, role: first.role, cells, positions, chunks: records.length };
}
const WAYS = [["n", "north", "ArrowUp", -1, 0], ["e", "east", "ArrowRight", 0, 1], ["s", "south", "ArrowDown", 1, 0], ["w", "west", "ArrowLeft", 0, -1]];

// ---- scenarios ----
const scenarios = {

  async laberinto(base) {
    // Real time, keyboard only, against the bot on the small maze: the countdown, the fog of
    // war drawn from the view's records (lit now, remembered, dark), moves acknowledged, then
    // over a slow link several moves in flight at once, and the race to its end.
    const { context, page } = await newPage();
    const net = await slowWs(page);
    await startFromLobby(page, base, "laberinto", { variant: "small" });
    await page.waitForSelector(".mz-map svg");
    const countdown = await page.textContent(".mz-countdown");
    check(/The race starts in \d|Any moment now/.test(countdown) || /Find your key/.test(await page.textContent("#status")), `Laberinto: no countdown: "${countdown}"`);
    await axe(page, "Laberinto, countdown");
    await until(page, "Laberinto: the race starts", ({ s, status }) => s && mazeOf(s.view)?.phase === "racing" && /Find your key/.test(status), 15_000);
    const fog = async () => {
      const s = await state(page);
      const m = mazeOf(s.view);
      const lit = Number(await page.getAttribute(".mz-svg", "data-lit"));
      const remembered = Number(await page.getAttribute(".mz-svg", "data-remembered"));
      return { s, m, lit, remembered };
    };
    const start = await fog();
    check(start.m.chunks >= 1 && start.lit === start.m.cells.size && start.lit > 0 && start.lit < start.m.width * start.m.height, `Laberinto: the fog draws ${start.lit} lit cells, the view holds ${start.m.cells.size} of ${start.m.width * start.m.height}`);
    check(start.remembered === 0 && !!(await page.$(".mz-dark")), "Laberinto: something is remembered before any move");
    check(!!(await page.$('.mz-player.self[data-seat="p0"]')), "Laberinto: my token is not drawn");
    check(/You are on row \d+, column \d+\. Ways out: /.test(await page.textContent(".mz-where")), `Laberinto: where I am is not said: "${await page.textContent(".mz-where")}"`);
    await page.screenshot({ path: join(shots, "laberinto-start.png"), fullPage: true });

    // First over a slow link: a held key keeps sending, paced by the cooldown, without waiting
    // for receipts; several moves are in flight at once and each gets its receipt.
    {
      net.delay = 400;
      const { m } = await fog();
      await page.focus(".mz-map");
      const here = m.cells.get(m.positions[m.role]);
      const way = WAYS.find(([flag]) => here?.[flag]);
      if (way) {
        const sentBefore = (await state(page)).queue.sent;
        await page.keyboard.down(way[2]);
        await page.waitForTimeout(900);
        await page.keyboard.up(way[2]);
        const { s: x } = await until(page, "Laberinto: every move in flight is acknowledged", ({ s: y }) => y.queue.inFlight === 0, 10_000);
        console.log(`[${elapsed()}] Laberinto over a 400 ms link: ${x.queue.sent - sentBefore} sent, queue ${JSON.stringify(x.queue)}`);
        check(x.queue.maxInFlight >= 2, `Laberinto: over a slow link no two moves were in flight at once: ${JSON.stringify(x.queue)}`);
        check(x.queue.sent === x.queue.applied + x.queue.rejected + x.queue.dropped && x.queue.dropped === 0, `Laberinto: a move in flight got no receipt: ${JSON.stringify(x.queue)}`);
      }
      net.delay = 0;
    }

    // Explore with the arrow keys: a tap each, towards a cell not visited yet when there is one.
    await page.focus(".mz-map");
    const visited = new Set();
    let taps = 0;
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline) {
      const { s, m: shown } = await fog();
      if (s.result) break;
      // Where the page moves from is the confirmed view; the displayed one may still be
      // drawing the last move.
      const m = mazeOf(s.confirmedView) ?? shown;
      const at = m.positions[m.role];
      visited.add(at);
      const here = m.cells.get(at);
      const open = WAYS.filter(([flag]) => here?.[flag]);
      if (!open.length) break;
      const fresh = open.filter(([, , , dr, dc]) => !visited.has(at + dr * m.width + dc));
      const [, , key] = (fresh.length ? fresh : open)[Math.floor(Math.random() * (fresh.length ? fresh.length : open.length))];
      const before = s.queue;
      await page.keyboard.down(key);
      await page.waitForTimeout(60);
      await page.keyboard.up(key);
      taps++;
      // Its receipt, and its view (a receipt may come before the view that shows the move).
      const done = ({ s: x }) =>
        x.result || (x.queue.sent > before.sent && x.queue.inFlight === 0 && (x.queue.rejected > before.rejected || mazeOf(x.confirmedView)?.positions[m.role] !== at));
      await until(page, "Laberinto: the move is acknowledged and shown", done, 5_000).catch(async (e) => {
        throw new Error(`${e.message}; pressed ${key} at cell ${at}, the page's last input: ${await page.getAttribute(".mz", "data-last-input")}`);
      });
      check(await page.evaluate(() => document.activeElement?.classList.contains("mz-map") ?? false), "Laberinto: after a move the focus left the map");
    }
    const explored = await fog();
    const q = explored.s.queue;
    console.log(`[${elapsed()}] Laberinto: ${taps} taps, queue ${JSON.stringify(q)}, ${explored.lit} lit, ${explored.remembered} remembered`);
    check(q.sent >= taps && q.applied > 0 && q.sent === q.applied + q.rejected + q.dropped && q.dropped === 0, `Laberinto: the moves are not all acknowledged: ${JSON.stringify(q)}`);
    check(explored.s.result || explored.remembered > 0, "Laberinto: after moving nothing is remembered in the fog");
    check(net.frames.filter((f) => f.type === "game.command").every((f) => f.precondition.kind === "queue"), "Laberinto: a move was not a queue command");
    await page.screenshot({ path: join(shots, "laberinto-playing.png"), fullPage: true });
    await axe(page, "Laberinto, racing");

    // The bot plays to the end (it walks shortest paths objective by objective).
    const end = await until(page, "Laberinto: the race ends", ({ s }) => s && s.result && s.displayed === s.confirmed, 120_000);
    check(/You got out first|Computer got out first|A draw: you both got out|withdrawal/.test(end.status), `Laberinto: the result says "${end.status}"`);
    check(!(await page.$('.mz-dir[aria-disabled="false"]')), "Laberinto: the pad is still enabled after the end");
    console.log(`[${elapsed()}] Laberinto ended: ${end.status}`);
    await page.screenshot({ path: join(shots, "laberinto.png"), fullPage: true });
    await axe(page, "Laberinto, finished");
    await context.close();
  },

  async watch(base) {
    // alice plays Connect Four against the bot; bob opens the lobby, follows the match's watch
    // link as a spectator (a grant, no seat) and sees her moves; then a Laberinto match,
    // which a spectator sees whole.
    const a = await newPage();
    await startFromLobby(a.page, base, "conecta4", { name: "alice" });
    const match = new URL(a.page.url()).searchParams.get("match");
    const b = await newPage();
    await b.page.goto(`${base}/`);
    const link = b.page.locator(`.watch-link[data-match="${match}"]`);
    await link.waitFor({ timeout: STEP_MS });
    check(/Watch Connect Four: alice vs Computer/.test(await link.textContent()), `the watch link reads "${await link.textContent()}"`);
    await axe(b.page, "the lobby with matches to watch");
    await link.click();
    const seen = (await until(b.page, "bob watches the match", ({ s }) => s && s.displayed !== null && s.connection === "open")).s;
    check(seen.seat === null && seen.locked, `the spectator has a seat or can move: ${JSON.stringify({ seat: seen.seat, locked: seen.locked })}`);
    check(JSON.stringify(seen.controllers) === JSON.stringify({ p0: "human", p1: "bot" }), `the spectator's players: ${JSON.stringify(seen.controllers)}`);
    check(/alice/.test(await b.page.textContent("#players")) && /Computer/.test(await b.page.textContent("#players")), `the spectator's players read "${await b.page.textContent("#players")}"`);
    check(!(await b.page.isVisible("#rematch")) && !(await b.page.$("#friend-link")), "the spectator is offered a rematch or a seat");
    await axe(b.page, "Connect Four, watched");
    await ready(a.page);
    await a.page.click('.c4-col[data-column="3"]');
    await until(b.page, "the spectator sees alice's move and the bot's reply", ({ s }) => s.confirmed >= seen.confirmed + 2 && s.displayed === s.confirmed, STEP_MS);
    check((await b.page.$$eval(".c4-board .disc", (d) => d.length)) >= 2, "the spectator's board does not show the moves");
    await b.page.screenshot({ path: join(shots, "watch-conecta4.png"), fullPage: true });

    await startFromLobby(a.page, base, "laberinto", { name: "alice", variant: "small" });
    const maze = new URL(a.page.url()).searchParams.get("match");
    await b.page.goto(`${base}/`);
    await b.page.locator(`.watch-link[data-match="${maze}"]`).click();
    const w = (await until(b.page, "bob watches the maze", ({ s }) => s && s.displayed !== null && s.connection === "open" && mazeOf(s.view)))
      .s;
    const m = mazeOf(w.view);
    check(m.role === "observer" && m.cells.size === m.width * m.height, `the spectator's maze: role ${m.role}, ${m.cells.size} cells`);
    check(Number(await b.page.getAttribute(".mz-svg", "data-lit")) === m.width * m.height, "the spectator's maze is not drawn whole");
    check((await b.page.$$(".mz-player")).length === 2, "the spectator does not see both players");
    check(!(await b.page.isVisible(".mz-pad")), "the spectator has a movement pad");
    await until(b.page, "the spectator sees the bot move", ({ s }) => mazeOf(s.view)?.positions.p1 !== m.positions.p1, 20_000);
    await b.page.screenshot({ path: join(shots, "watch-laberinto.png"), fullPage: true });
    await axe(b.page, "Laberinto, watched");
    await a.context.close();
    await b.context.close();
  },

  async dice_clock(base) {
    // Serpientes with a turn clock (30 s a roll): the clock shows whose time runs and ticks.
    const { context, page } = await newPage({ reducedMotion: "reduce" });
    await startFromLobby(page, base, "serpientes", { players: 2, variant: "clock" });
    await ready(page);
    const read = async () => (await page.textContent(".race-clock")) ?? "";
    const first = await read();
    const m = /^Clock: alice: 0:(\d\d) \(to play\)$/.exec(first);
    check(!!m && Number(m[1]) <= 30 && Number(m[1]) >= 25, `Serpientes' clock reads "${first}"`);
    await page.waitForTimeout(2100);
    const later = /0:(\d\d)/.exec(await read());
    check(!!m && !!later && Number(later[1]) < Number(m[1]), `Serpientes' clock does not tick: "${first}", then "${await read()}"`);
    await axe(page, "Serpientes with a clock");
    await page.focus(".race-roll");
    await page.keyboard.press("r");
    await until(page, "the roll and the bot's reply", ({ s, status }) => s.confirmed >= 2 && s.displayed === s.confirmed && /Your turn/.test(status), 30_000);
    check(/^Clock: alice: 0:(2\d|30) \(to play\)$/.test(await read()), `after a turn the clock reads "${await read()}"`);
    await page.screenshot({ path: join(shots, "serpientes-clock.png"), fullPage: true });
    await context.close();
  },
  async brisca(base) {
    // Two players, full motion: every card, trick and draw is played by its plan, in order.
    const { context, page } = await newPage();
    await startFromLobby(page, base, "brisca", { players: 2 });
    await page.waitForSelector(".br-hand .br-card");
    await axe(page, "Brisca");
    check((await page.$$(".br-hand .br-card")).length === 3, "Brisca: the hand does not hold three cards");
    check(/^Trump: .+ of (coins|cups|swords|clubs)$/.test(await page.textContent(".br-trump .br-label")), `Brisca: the trump reads "${await page.textContent(".br-trump .br-label")}"`);
    check(/Computer.*3 cards/.test(await page.textContent(".br-others")), `Brisca: the rival's hand count reads "${await page.textContent(".br-others")}"`);
    check(/Stock: 33 cards/.test(await page.textContent(".br-stock")), `Brisca: the stock reads "${await page.textContent(".br-stock")}"`);
    // The cards are the cards-spanish art the package binds: an SVG per face, named in English.
    const faces = await page.$$eval(".br-hand .bc.art svg title, .br-trump .bc.art svg title", (t) => t.map((x) => x.textContent));
    check(faces.length === 4 && faces.every((f) => /^(ace|two|three|four|five|six|seven|jack|knight|king) of (coins|cups|swords|clubs)$/.test(f)), `Brisca: the cards are not drawn by the deck's art: ${JSON.stringify(faces)}`);
    check((await page.$$(".br-others .bc.back.art svg")).length === 3, "Brisca: the rival's hand is not drawn as three backs");
    let plays = 0;
    for (;;) {
      const seen = await until(page, "Brisca: my turn or the end", ({ s, status }) => s.result || (!s.locked && s.displayed === s.confirmed && /Your turn/.test(status)), 30_000);
      if (seen.s.result) break;
      check((await page.$$(".br-hand .br-card.playable")).length > 0, "Brisca: my turn, but no card is playable");
      // Keyboard only: the hand is one tab stop; the arrow keys move, Enter plays.
      await page.focus(".br-hand [tabindex='0']");
      if (plays % 2) await page.keyboard.press("ArrowRight");
      const card = await page.evaluate(() => document.activeElement?.dataset.card);
      const lockedAtOnce = await pressLocked(page, "Enter");
      plays++;
      check(lockedAtOnce === true, "Brisca: the hand stays unlocked right after a play");
      await until(page, "Brisca: my card shows", ({ s }) => s.result || (s.confirmed > seen.s.confirmed && s.displayed === s.confirmed && !s.animating), 30_000);
      if (plays === 1) {
        check(/alice plays the/.test(await page.textContent("#last")) || /Computer/.test(await page.textContent("#last")), `Brisca: the play is not described: "${await page.textContent("#last")}"`);
        check(!(await page.$(`.br-hand [data-card="${card}"]`)), "Brisca: the played card is still in the hand");
        await page.screenshot({ path: join(shots, "brisca-trick.png"), fullPage: true });
      }
      const focusedInHand = await page.evaluate(() => !!document.activeElement?.closest(".br-hand"));
      const handLeft = (await page.$$(".br-hand .br-card")).length;
      check(focusedInHand || handLeft === 0 || (await state(page)).result, "Brisca: the focus left the hand after a play");
      if (plays > 25) throw new Error("Brisca: more than 20 plays");
    }
    const end = await over(page);
    playedInOrder((await state(page)).history, "Brisca against the bot");
    check(plays === 20, `Brisca: I played ${plays} cards, not 20`);
    check(/(You win|You lose), \d+ to \d+|A draw, 60 all/.test(end.status), `Brisca: the result is not a sentence with the points: "${end.status}"`);
    check(/Computer's points: \d+/.test(await page.textContent(".br-info")) && /alice's points: \d+/.test(await page.textContent(".br-info")), `Brisca: the final points are not shown: "${await page.textContent(".br-info")}"`);
    check(/Tricks played: 20/.test(await page.textContent(".br-info")), "Brisca: the tricks are not counted");
    console.log(`[${elapsed()}] Brisca ended after ${plays} plays: ${end.status}`);
    await page.screenshot({ path: join(shots, "brisca.png"), fullPage: true });
    await axe(page, "Brisca, finished");
    await context.close();
  },

  async brisca4(base) {
    // Four players in two teams against three bots (reduced motion, to keep it short).
    const { context, page } = await newPage({ reducedMotion: "reduce" });
    await startFromLobby(page, base, "brisca", { players: 4, variant: "seven" });
    await page.waitForSelector(".br-hand .br-card");
    const others = await page.$$eval(".br-others .br-seat", (l) => l.map((x) => x.querySelector(".br-name").textContent));
    check(JSON.stringify(others) === JSON.stringify(["Computer 1 (rival)", "Computer 2 (partner)", "Computer 3 (rival)"]), `Brisca for four: the others read ${JSON.stringify(others)}`);
    check(/Your team: alice and Computer 2\. Rivals: Computer 1 and Computer 3\./.test(await page.textContent(".br-teams")), `Brisca for four: the teams read "${await page.textContent(".br-teams")}"`);
    await axe(page, "Brisca for four");
    let plays = 0;
    for (;;) {
      const seen = await until(page, "Brisca for four: my turn or the end", ({ s, status }) => s.result || (!s.locked && s.displayed === s.confirmed && /Your turn/.test(status)), 30_000);
      if (seen.s.result) break;
      if (plays === 2) await page.screenshot({ path: join(shots, "brisca4-playing.png"), fullPage: true });
      await page.focus(".br-hand [tabindex='0']");
      await page.keyboard.press("1");
      plays++;
      await until(page, "Brisca for four: my card shows", ({ s }) => s.result || (s.confirmed > seen.s.confirmed && s.displayed === s.confirmed), 30_000);
      if (plays > 15) throw new Error("Brisca for four: more than 10 plays");
    }
    const end = await over(page);
    check(plays === 10, `Brisca for four: I played ${plays} cards, not 10`);
    check(/Your team (wins|loses), \d+ to \d+|A draw, 60 all/.test(end.status), `Brisca for four: the result says "${end.status}"`);
    console.log(`[${elapsed()}] Brisca for four ended: ${end.status}`);
    await page.screenshot({ path: join(shots, "brisca4.png"), fullPage: true });
    await axe(page, "Brisca for four, finished");
    await context.close();
  },

  async brisca_two_players(base) {
    // Alice and Bob at one Brisca table, each in a browser: each sees only their own hand and
    // the other's count, the turn passes between them, and both reach the same result.
    const a = await newPage({ reducedMotion: "reduce" });
    const b = await newPage({ reducedMotion: "reduce" });
    await startFromLobby(a.page, base, "brisca", { name: "alice", friend: "bob", players: 2 });
    const link = await a.page.getAttribute("#friend-link", "href");
    await b.page.goto(link);
    await until(b.page, "bob's table shows", ({ s }) => s && s.displayed !== null && s.connection === "open");
    const handOf = (page) => page.$$eval(".br-hand .br-card", (l) => l.map((x) => x.dataset.card));
    const [ha, hb] = [await handOf(a.page), await handOf(b.page)];
    check(ha.length === 3 && hb.length === 3 && !ha.some((c) => hb.includes(c)), `the two hands: alice ${JSON.stringify(ha)}, bob ${JSON.stringify(hb)}`);
    check(/alice.*3 cards/.test(await b.page.textContent(".br-others")), `bob does not see alice's count: "${await b.page.textContent(".br-others")}"`);
    check(/alice's turn/.test(await b.page.textContent("#status")), `bob's status: "${await b.page.textContent("#status")}"`);
    let plays = 0;
    while (plays < 45) {
      const [sa, sb] = [await state(a.page), await state(b.page)];
      if (sa.result && sb.result) break;
      // Whose turn it is, as each page says it (the board unlocks for both between moves).
      const mine = async (pg, st) => !st.locked && st.displayed === st.confirmed && /Your turn/.test(await pg.textContent("#status"));
      const page = (await mine(a.page, sa)) ? a.page : (await mine(b.page, sb)) ? b.page : null;
      if (!page) {
        await a.page.waitForTimeout(50);
        continue;
      }
      const s0 = await state(page);
      await page.focus(".br-hand [tabindex='0']");
      await page.keyboard.press("Enter");
      plays++;
      await until(page, "the play shows", ({ s }) => s.result || (s.confirmed > s0.confirmed && s.displayed === s.confirmed));
    }
    const [ea, eb] = [await over(a.page), await over(b.page)];
    check(plays === 40, `alice and bob played ${plays} cards, not 40`);
    const outcome = (x) => (/You win/.test(x) ? "win" : /You lose/.test(x) ? "loss" : /draw/.test(x) ? "draw" : x);
    const pair = [outcome(ea.status), outcome(eb.status)].join("/");
    check(["win/loss", "loss/win", "draw/draw"].includes(pair), `alice sees "${ea.status}", bob "${eb.status}"`);
    console.log(`[${elapsed()}] Brisca between two players ended: alice ${ea.status}, bob ${eb.status}`);
    await b.page.screenshot({ path: join(shots, "brisca-two-players.png"), fullPage: true });
    await a.context.close();
    await b.context.close();
  },

  async new_games_phone_spanish(base) {
    // The new games on a phone, in Spanish: no sideways scroll, Spanish texts, axe clean.
    const { context, page } = await newPage({ locale: "es-ES", viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    for (const [game, turn] of [
      ["serpientes", /^Tu turno: tira el dado$/],
      ["brisca", /^Tu turno: juega una carta$/],
      ["laberinto", /^(Prepárate: la carrera va a empezar|Busca tu llave)$/],
    ]) {
      await startFromLobby(page, base, game, { name: "ana" });
      await ready(page);
      const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
      check(overflow <= 0, `${game} on a phone scrolls sideways by ${overflow} px`);
      check(turn.test(await page.textContent("#status")), `${game} in Spanish: "${await page.textContent("#status")}"`);
      await page.screenshot({ path: join(shots, `${game}-phone.png`), fullPage: true });
      await axe(page, `${game} on a phone, in Spanish`);
    }
    await context.close();
  },

  async oca(base) {
    // Three players (two bots), two dice, reduced motion: to the end.
    const { context, page } = await newPage({ reducedMotion: "reduce" });
    await startFromLobby(page, base, "oca", { players: 3, variant: "two" });
    await page.waitForSelector(".race-board [data-square]");
    check((await page.$$(".race-board [data-square]")).length === 63, "La Oca: the board does not have 63 squares");
    const named = await page.$$eval(".race-board [data-square]", (l) => Object.fromEntries(l.filter((x) => x.querySelector(".name")).map((x) => [x.dataset.square, x.textContent])));
    for (const [sq, name] of [["5", "Goose"], ["6", "Bridge"], ["19", "Inn"], ["26", "Dice"], ["31", "Well"], ["42", "Maze"], ["52", "Prison"], ["58", "Death"], ["63", "Garden"]]) {
      check((named[sq] ?? "").includes(name), `La Oca: square ${sq} is not named ${name}: "${named[sq]}"`);
    }
    check(/alice \(you\): at the start/.test(await page.textContent(".race-seats")), `La Oca: the players' squares read "${await page.textContent(".race-seats")}"`);
    await axe(page, "La Oca");
    let sawTheirTurn = false;
    const { end, rolls } = await raceToTheEnd(page, "La Oca", async (n) => {
      const st = await page.textContent("#status");
      sawTheirTurn ||= /Computer \d's turn/.test(st);
      // Whose turn the page says is the view's own `turn` (both read at one moment).
      const [said, turn] = await page.evaluate(() => [document.querySelector("#status").textContent, window.__juegoland().view?.turn]);
      check(/Your turn/.test(said) === (turn === "p0"), `La Oca: the status says "${said}", the view's turn is ${turn}`);
      const { want, drawn } = await boardAndView(page, "La Oca");
      check(JSON.stringify(Object.entries(drawn).sort()) === JSON.stringify(Object.entries(want).sort()), `La Oca: the board draws ${JSON.stringify(drawn)}, the view says ${JSON.stringify(want)}`);
      if (n === 3) await page.screenshot({ path: join(shots, "oca-playing.png"), fullPage: true });
    });
    check(/rolls \d+ \+ \d+/.test(await page.textContent("#last")), `La Oca: the last roll is not described: "${await page.textContent("#last")}"`);
    check(/You win|You lose|Computer \d wins/.test(end.status), `La Oca: the result says "${end.status}"`);
    console.log(`[${elapsed()}] La Oca ended after ${rolls} rolls of mine: ${end.status} (another's turn shown: ${sawTheirTurn})`);
    await page.screenshot({ path: join(shots, "oca.png"), fullPage: true });
    await axe(page, "La Oca, finished");
    await context.close();
  },

  async serpientes(base) {
    // Against one bot, bounce finish; full motion for the first rolls (each piece's path is
    // animated, its plan played), then the animations switched off for the rest.
    const { context, page } = await newPage();
    await startFromLobby(page, base, "serpientes", { players: 2, variant: "bounce" });
    await page.waitForSelector(".race-board [data-square]");
    check((await page.$$(".race-board [data-square]")).length === 100, "Serpientes: the board does not have 100 squares");
    check(/↑38/.test(await page.textContent('[data-square="1"]')) && /Ladder up to 38/.test(await page.textContent('[data-square="1"]')), "Serpientes: the ladder on 1 is not named");
    check(/Snake down to 6/.test(await page.textContent('[data-square="16"]')), "Serpientes: the snake on 16 is not named");
    check((await page.$$(".race-lines line")).length === 19, "Serpientes: the ladders and snakes are not drawn");
    await axe(page, "Serpientes y escaleras");
    let animated = false;
    const { end, rolls } = await raceToTheEnd(page, "Serpientes", async (n) => {
      const h = (await state(page)).history;
      if (n <= 3) animated ||= h.some(([, why]) => why === "plan");
      if (n === 3) {
        playedInOrder(h, "Serpientes with animations");
        await page.screenshot({ path: join(shots, "serpientes-playing.png"), fullPage: true });
        await page.click("#motion");
        await page.focus(".race-roll");
      }
    });
    check(animated, "Serpientes: no roll was played by its plan");
    check(/You win|You lose/.test(end.status), `Serpientes: the result says "${end.status}"`);
    const drawn = await piecesOnBoard(page);
    check(Object.values(drawn).includes(100), `Serpientes: at the end no piece is on 100: ${JSON.stringify(drawn)}`);
    console.log(`[${elapsed()}] Serpientes ended after ${rolls} rolls of mine: ${end.status}`);
    await page.screenshot({ path: join(shots, "serpientes.png"), fullPage: true });
    await axe(page, "Serpientes y escaleras, finished");
    await context.close();
  },

  async dice_reload(base) {
    // A reload in the middle of a roll's animation shows the confirmed positions at once:
    // no path, no die, nothing of the roll replayed.
    const { context, page } = await newPage();
    await startFromLobby(page, base, "serpientes", { players: 2 });
    await ready(page);
    const before = await state(page);
    await page.focus(".race-roll");
    await page.keyboard.press("r");
    // Watched frame by frame inside the page: a poll from here could miss a short animation
    // on a loaded machine.
    const mid = await page
      .waitForFunction((c) => { const s = window.__juegoland(); return s.animating && s.confirmed > c && s.displayed < s.confirmed ? s : null; }, before.confirmed, { polling: "raf", timeout: 5000 })
      .then((h) => h.jsonValue());
    const mine = mid.confirmedView.positions.p0;
    const rolled = mid.confirmed;
    await page.reload();
    const s = (await until(page, "the reloaded page shows the match", ({ s }) => s && s.displayed !== null && s.displayed === s.confirmed && !s.animating, STEP_MS)).s;
    const [first, ...rest] = s.history;
    check(first?.[1] === "sync" && first[0] >= rolled && rest.every(([, why]) => why === "plan"), `after a reload the roll was replayed: ${JSON.stringify(s.history)}`);
    const drawn = await piecesOnBoard(page);
    check(drawn.p0 === mine, `after the reload my piece is on ${drawn.p0}, the confirmed square is ${mine}`);
    check(JSON.stringify(Object.entries(drawn).sort()) === JSON.stringify(Object.entries(s.view.positions).sort()), `after the reload the board draws ${JSON.stringify(drawn)}, the view says ${JSON.stringify(s.view.positions)}`);
    await context.close();
  },

  async conecta4(base) {
    const { context, page } = await newPage();
    await page.goto(`${base}/`);
    await page.waitForSelector('.game[data-game="conecta4"] .cover img');
    await page.screenshot({ path: join(shots, "lobby.png"), fullPage: true });
    await axe(page, "the lobby");
    await startFromLobby(page, base, "conecta4");
    await axe(page, "Connect Four");
    // Keyboard only: focus the board, choose with the digit keys.
    let moves = 0;
    let skipped = false;
    while (!(await state(page)).result) {
      await ready(page).catch(async (e) => {
        if (!(await state(page)).result) throw e;
      });
      const s = await state(page);
      if (s.result) break;
      const playable = await page.$$eval(".c4-col.playable", (cols) => cols.map((c) => Number(c.dataset.column)));
      if (!playable.length) break;
      const column = [3, 2, 4, 1, 5, 0, 6].find((c) => playable.includes(c));
      await page.focus(".c4-col[tabindex='0']");
      // On the first move, watch from inside the page, frame by frame, for the drop's
      // animation: the board is locked while it runs, and skip, sound and leave stay usable
      // (skip ends it at once).
      const during = moves === 0 ? page.evaluate(duringAnimation) : null;
      const lockedAtOnce = await pressLocked(page, String(column + 1));
      moves++;
      // The move is locked in at once: no second command while the first is pending.
      check(lockedAtOnce === true, "the board stays unlocked right after a move");
      if (during) {
        const d = await during;
        check(d.caught, "Connect Four: no animation was seen after the first move");
        if (d.caught) {
          check(d.locked && d.boardDisabled, `Connect Four: the board is not locked during an animation: ${JSON.stringify(d)}`);
          check(d.controls.every((c) => c.enabled), `Connect Four: a control is not usable during an animation: ${JSON.stringify(d.controls)}`);
          check(d.soundToggled, "Connect Four: the sound switch did not answer during an animation");
          check(d.skippedWithinMs !== null, `Connect Four: skip did not end the animation: ${JSON.stringify(d)}`);
          skipped = true;
        }
      }
      await until(page, "the move and the bot's reply show", ({ s: x }) => x.confirmed >= s.confirmed + 1 && x.displayed === x.confirmed && !x.animating && (x.result || x.confirmed >= s.confirmed + 2), STEP_MS);
      check((await page.textContent("#last")).includes("Computer"), "what the rival just did is not visible");
      const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-column"));
      check(focused === String(column), `after the move the focus is on ${focused}, not on column ${column}`);
    }
    const end = await over(page);
    const history = (await state(page)).history;
    playedInOrder(history, "Connect Four against the bot");
    if (skipped) check(history.find(([r]) => r === 1)?.[1] === "skip", `Connect Four: the first move was not settled by skip: ${JSON.stringify(history)}`);
    check(/You win|You lose|Draw/.test(end.status), `the result is not a sentence: "${end.status}"`);
    const announced = await page.textContent("#announce");
    check(announced.includes(end.status), `the result is not announced to screen readers: "${announced}"`);
    check(await page.isVisible("#rematch"), "no rematch button at the end");
    console.log(`[${elapsed()}] Connect Four ended after ${moves} moves: ${end.status}`);
    const sounds = (await state(page)).sounds;
    check(sounds.some((x) => x.startsWith("play drop-sound")), `no drop sound was played: ${JSON.stringify(sounds)}`);
    await page.screenshot({ path: join(shots, "conecta4.png"), fullPage: true });
    await axe(page, "Connect Four, finished");
    // Rematch: a new match with the same seats.
    const before = new URL(page.url()).searchParams.get("match");
    await page.click("#rematch");
    await until(page, "the rematch starts", ({ s }) => s && s.displayed === 0 && s.connection === "open");
    check(new URL(page.url()).searchParams.get("match") !== before, "the rematch is the same match");
    // Leave goes back to the lobby, where the match can be resumed.
    await page.click("#leave");
    await page.waitForSelector('.game[data-game="conecta4"]');
    check((await page.$$("a.resume")).length > 0, "after leaving, the lobby offers no match to resume");
    await context.close();
  },

  async hundido(base) {
    await playHundido(base, { reduced: true });
  },

  async hundido_motion(base) {
    await playHundido(base, { reduced: false, maxShots: 8 });
  },

  async solitario(base) {
    const { context, page } = await newPage();
    await startFromLobby(page, base, "solitario");
    await page.waitForSelector(".sol");
    await axe(page, "Solitaire");
    // A few draws with the D key, and every move to a foundation the offers allow.
    for (let i = 0; i < 6; i++) {
      await ready(page);
      const s = await state(page);
      await page.focus('[data-key="stock"]');
      await page.keyboard.press("d");
      await until(page, "the draw shows", ({ s: x }) => x.displayed > s.displayed && x.displayed === x.confirmed && !x.animating);
      // The stock is disabled until the draw's receipt is in; then the focus is back on it.
      await ready(page);
      const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-key"));
      check(focused === "stock", `Solitaire: after a draw the focus is on ${focused}, not the stock`);
    }
    const moves = Number((await page.textContent(".sol-info")).match(/Moves: (\d+)/)?.[1] ?? -1);
    check(moves >= 6, `the move counter shows ${moves} after six draws`);
    // An ace on top of a pile goes to a foundation (keyboard: select it, then F); the deal
    // decides when one shows, so draw until one does (all four face down: about 2% of deals).
    let ace = null;
    for (let i = 0; i < 24 && !ace; i++) {
      ace = await page.evaluate(() => {
        const tops = [...document.querySelectorAll(".pile")].map((p) => [...p.querySelectorAll("button.card")].at(-1)).filter(Boolean);
        return tops.find((b) => /^(Waste: )?Ace of/.test(b.textContent))?.dataset.key ?? null;
      });
      if (ace) break;
      await ready(page);
      const s = await state(page);
      if (!(await page.isEnabled('[data-key="stock"]'))) break;
      await page.focus('[data-key="stock"]');
      await page.keyboard.press("d");
      await until(page, "the draw shows", ({ s: x }) => x.displayed > s.displayed && x.displayed === x.confirmed && !x.animating);
    }
    if (ace) {
      await ready(page);
      const s = await state(page);
      await page.focus(`[data-key="${ace}"]`);
      await page.keyboard.press("Enter");
      await page.keyboard.press("f");
      await until(page, "the ace goes to a foundation", ({ s: x }) => x.displayed > s.displayed && x.displayed === x.confirmed && !x.animating);
      const labels = await page.$$eval('[data-key^="foundation"]', (b) => b.map((x) => x.textContent));
      check(labels.some((l) => /Foundation \d: 1 cards, top Ace of/.test(l)), `no foundation holds the ace: ${JSON.stringify(labels)}`);
      check(/Ace of .* from .* to foundation/.test(await page.textContent("#last")), `the move is not described: "${await page.textContent("#last")}"`);
    } else console.log(`[${elapsed()}] Solitaire: no ace reachable in this deal`);
    await page.screenshot({ path: join(shots, "solitario.png"), fullPage: true });
    // The end: give up (a confirmation first).
    await ready(page);
    await tabTo(page, '[data-key="give-up"]');
    await page.keyboard.press("Enter");
    check(/Sure/.test(await page.textContent('[data-key="give-up"]')), "giving up asks for a confirmation");
    await page.keyboard.press("Enter");
    const end = await over(page);
    check(/gave up/.test(end.status), `the result says "${end.status}"`);
    console.log(`[${elapsed()}] Solitaire ended: ${end.status}`);
    await axe(page, "Solitaire, finished");
    await context.close();
  },

  async two_players(base) {
    const a = await newPage();
    const b = await newPage();
    await startFromLobby(a.page, base, "conecta4", { name: "alice", friend: "bob" });
    const link = await a.page.getAttribute("#friend-link", "href");
    check(!!link && link.includes("as=bob"), `the friend's link does not seat bob: ${link}`);
    await axe(a.page, "Connect Four, the host with the friend's link");
    // Bob plays over Socket.IO.
    await b.page.goto(`${link}&transport=socketio`);
    await until(b.page, "bob's board shows", ({ s }) => s && s.displayed !== null && s.connection === "open");
    check((await b.page.textContent("#players")).includes("alice"), "bob does not see alice's name");
    await axe(b.page, "Connect Four, the invited friend over Socket.IO");
    // Alice mutes the sound: her drops are silent, bob's are not.
    await a.page.click("#sound");
    check((await a.page.getAttribute("#sound", "aria-pressed")) === "true", "the mute switch does not say it is on");
    check(/alice's turn/.test(await b.page.textContent("#status")), `bob's status: ${await b.page.textContent("#status")}`);
    const moves = [
      [a.page, 0],
      [b.page, 1],
      [a.page, 0],
      [b.page, 1],
      [a.page, 0],
      [b.page, 1],
      [a.page, 0],
    ];
    for (const [page, column] of moves) {
      await ready(page);
      await page.click(`.c4-col[data-column="${column}"]`);
      await until(page, "the move shows", ({ s }) => s.pending === null && s.displayed === s.confirmed && !s.animating);
    }
    const [ea, eb] = [await over(a.page), await over(b.page)];
    check(/You win/.test(ea.status), `alice sees "${ea.status}"`);
    check(/You lose/.test(eb.status), `bob sees "${eb.status}"`);
    playedInOrder((await state(b.page)).history, "bob's board");
    check(!(await state(a.page)).sounds.some((x) => x.startsWith("play")), `muted, alice heard ${JSON.stringify((await state(a.page)).sounds)}`);
    check((await state(b.page)).sounds.some((x) => x.startsWith("play drop-sound")), `bob heard nothing: ${JSON.stringify((await state(b.page)).sounds)}`);
    await b.page.screenshot({ path: join(shots, "conecta4-two-players.png"), fullPage: true });
    await a.context.close();
    await b.context.close();
  },

  async reload(base) {
    const { context, page } = await newPage();
    await startFromLobby(page, base, "conecta4");
    await ready(page);
    await page.click('.c4-col[data-column="3"]');
    await page.waitForFunction(() => window.__juegoland().animating, null, { polling: "raf", timeout: 5000 });
    await page.reload();
    const s = await until(page, "the page shows the match after the reload", ({ s }) => s && s.displayed !== null && !s.locked && s.displayed === 2, STEP_MS);
    // The reloaded page starts from a sync (no history, no sounds replayed); only the bot's
    // reply, if it came after, plays.
    const [first, ...rest] = s.s.history;
    check(first?.[1] === "sync" && first[0] >= 1 && rest.every(([, why]) => why === "plan"), `after a reload the history is replayed: ${JSON.stringify(s.s.history)}`);
    const discs = await page.$$eval(".c4-board .disc", (d) => d.length);
    check(discs === 2, `after the reload the board holds ${discs} discs, not 2 (one move, one reply)`);
    check((await page.textContent("#status")) === "Your turn", `after the reload: "${await page.textContent("#status")}"`);
    // The lobby offers to resume it.
    const match = new URL(page.url()).searchParams.get("match");
    await page.goto(`${base}/`);
    await page.click(`a.resume[href*="${match}"]`);
    await until(page, "the resumed match shows", ({ s }) => s && s.displayed === 2 && s.connection === "open");
    check(new URL(page.url()).searchParams.get("match") === match, "the lobby resumed another match");
    await context.close();
  },

  async network(base) {
    const { context, page } = await newPage();
    const net = await wsRoute(page);
    const { frames, dropAll } = net;
    const commands = () => frames.filter((m) => m.type === "game.command");
    await startFromLobby(page, base, "conecta4");
    await ready(page);

    // 1. The network drops while idle: the page says so and locks the board.
    await context.setOffline(true);
    net.mode = "refuse";
    dropAll();
    await until(page, "the page notices the drop", ({ s }) => s.connection !== "open", 10_000);
    const down = await page.textContent("#status");
    check(/Connection lost/.test(down), `offline, the status says "${down}"`);
    await page.click('.c4-col[data-column="2"]', { force: true });
    check((await state(page)).pending === null && commands().length === 0, "a move was taken while offline: the board should be locked");
    await page.screenshot({ path: join(shots, "offline.png") });
    await axe(page, "Connect Four, offline");
    net.mode = "pass";
    await context.setOffline(false);
    await until(page, "the page reconnects by itself", ({ s }) => s.connection === "open" && !s.locked, 20_000);

    // 2. The network drops as a move leaves, and the page is reloaded before it returns: the
    // move stays pending across the reload and is resent with the same command id.
    net.mode = "swallow";
    await page.click('.c4-col[data-column="2"]');
    await until(page, "the move is pending, the connection gone", ({ s }) => s.connection !== "open" && s.pending !== null, 10_000);
    const pending = (await state(page)).pending;
    check(/will be sent when reconnected/.test(await page.textContent("#status")), `while the move waits: "${await page.textContent("#status")}"`);
    await page.reload();
    await until(page, "the reloaded page keeps the pending move", ({ s }) => s && s.pending === pending, 10_000);
    net.mode = "pass";
    await until(page, "the move and the reply after the reconnection", ({ s }) => s.connection === "open" && s.displayed === 2 && !s.locked && s.pending === null, 30_000);
    const ids = [...new Set(commands().map((m) => m.commandId))];
    check(ids.length === 1 && ids[0] === pending && commands().length >= 2, `the move was not resent with its command id: ${JSON.stringify(commands().map((m) => m.commandId))}`);
    check(frames.some((m) => m.type === "game.command-status" && m.commandId === pending), "the page never asked game.command-status for its uncertain move");
    const discs = await page.$$eval(".c4-board .disc", (d) => d.length);
    check(discs === 2, `${discs} discs after the recovery, not 2: the move was applied ${discs === 3 ? "twice" : "wrongly"}`);
    await context.close();
  },

  async restart() {
    // A server of its own, with a data directory, restarted on the same address with another
    // token secret while a move is pending: the page gets a new token, reconnects, and
    // resends the move with the same command id.
    const dir = mkdtempSync(join(tmpdir(), "juegoland-web-restart-"));
    try {
      const first = await startServer(["--http", "127.0.0.1:0", "--data-dir", dir, "--jwt-secret", "web-client-restart-secret-before-0123456789"]);
      const { context, page } = await newPage();
      const net = await wsRoute(page);
      await startFromLobby(page, first.base, "conecta4");
      await ready(page);
      net.mode = "swallow";
      await page.click('.c4-col[data-column="4"]');
      await until(page, "the move is pending, the connection gone", ({ s }) => s.connection !== "open" && s.pending !== null, 10_000);
      const pending = (await state(page)).pending;
      await kill(first.child);
      net.mode = "pass";
      const addr = first.base.replace("http://", "");
      await startServer(["--http", addr, "--data-dir", dir, "--jwt-secret", "web-client-restart-secret-after-9876543210"]);
      await until(page, "the page recovers: its move and the bot's reply", ({ s }) => s.connection === "open" && s.displayed === 2 && s.pending === null && !s.locked, 30_000);
      const ids = [...new Set(net.frames.filter((m) => m.type === "game.command").map((m) => m.commandId))];
      check(ids.length === 1 && ids[0] === pending, `after the restart the move was not resent as itself: ${JSON.stringify(ids)}`);
      check((await page.textContent("#status")) === "Your turn", `after the restart: "${await page.textContent("#status")}"`);
      await context.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },

  async resources(base) {
    const { context, page } = await newPage();
    await context.route("**/games/conecta4/images/cover.svg", (r) => r.abort());
    await context.route("**/games/conecta4/sounds/drop.wav", (r) => r.abort());
    await page.goto(`${base}/`);
    const cover = page.locator('.game[data-game="conecta4"] .cover');
    await cover.locator(".cover-text").waitFor({ timeout: STEP_MS });
    check((await cover.textContent()).includes("Connect Four"), "the cover's fallback text is not the game's title");
    await startFromLobby(page, base, "conecta4");
    await ready(page);
    await page.click('.c4-col[data-column="3"]');
    const s = await until(page, "the move completes without its sound", ({ s }) => s.displayed === 2 && !s.locked, STEP_MS);
    check(!s.s.sounds.some((x) => x.startsWith("play")), `a missing sound played: ${JSON.stringify(s.s.sounds)}`);
    playedInOrder(s.s.history, "without the sound resource");
    await context.close();
  },

  async languages(base) {
    const { context, page } = await newPage({ locale: "es-ES" });
    await page.goto(`${base}/`);
    await page.waitForSelector(".game");
    check((await page.textContent("h1")) === "Elige un juego", `a Spanish browser sees "${await page.textContent("h1")}"`);
    check((await page.getAttribute("html", "lang")) === "es", "html lang is not es");
    await page.selectOption("#lobby-lang", "en");
    check((await page.textContent("h1")) === "Choose a game", "switching to English did not");
    await page.selectOption("#lobby-lang", "es");
    await startFromLobby(page, base, "conecta4", { name: "ana" });
    await ready(page);
    check((await page.textContent("#status")) === "Tu turno", `Spanish status: "${await page.textContent("#status")}"`);
    await axe(page, "Conecta 4 in Spanish");
    await context.close();
  },

  async phone(base) {
    const { context, page } = await newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await startFromLobby(page, base, "hundido");
    await page.waitForSelector(".hd-own");
    const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `on a phone the page scrolls sideways by ${overflow} px`);
    await page.screenshot({ path: join(shots, "hundido-phone.png"), fullPage: true });
    await axe(page, "Battleship on a phone");
    await context.close();
  },
};

async function main() {
  const { base } = await startServer();
  console.log(`[${elapsed()}] server at ${base}`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--autoplay-policy=no-user-gesture-required"],
  });
  for (const [name, run] of Object.entries(scenarios)) {
    if (only.length && !only.includes(name)) continue;
    const t0 = Date.now();
    try {
      await run(base);
      console.log(`[${elapsed()}] ok ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (e) {
      check(false, `${name}: ${e instanceof Error ? e.stack : String(e)}`);
    }
  }
}

try {
  await main();
} finally {
  await browser?.close().catch(() => {});
  for (const c of children) c.kill("SIGKILL");
}
if (failures.length) {
  console.error(`FAIL: ${failures.length} check(s) failed after ${elapsed()}`);
  process.exit(1);
}
console.log(`ok: every web client scenario passed (${elapsed()})`);
