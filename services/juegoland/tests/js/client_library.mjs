// The client library `@juegoland/client` as a platform developer uses it: installed from its
// tarball into a fresh project, under plain Node (no flag, no polyfill set up by hand) and in
// Chromium, against the real server. Run by services/juegoland/tests/it/client_library.rs,
// which copies this script into that project (so that `@juegoland/client` resolves as it
// would for the platform) and runs it there:
//
//   node client_library.mjs <juegoland binary> <tests/js directory> [node] [chromium]
//
// (both scenarios unless some are named)
// Under Node: alice over WebSocket and bob over Socket.IO, each first given a token the
// server refuses, get a typed `unauthenticated` close, are asked for a token again and then
// sync their seats and play; the server is killed and started again on the same address and
// data directory (the clients see `closed`, then `network` failures, then reconnect with the
// same token and resync), and once more with a new token secret (their tokens are refused:
// new tokens, resync). In Chromium (playwright-core from <tests/js directory>, the packed
// library served from another origin): the same refused token, then a sync and a move, over
// WebSocket (a browser hides the handshake's status: `refused`) and over Socket.IO.
//
// Exits 0 when every check passed; prints the failure and exits 1 otherwise.

import { readFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { HttpError, MatchClient, catalog, contractOf, memoryPendingStore, webhooks } from "@juegoland/client";

const OVERALL_TIMEOUT_MS = 180_000;
const STEP_MS = 20_000;
const CHROMIUM = "/usr/bin/chromium";
const BAD_TOKEN = "not-a-valid-token";

const [bin, jsDir, ...only] = process.argv.slice(2);
if (!bin || !jsDir || only.some((s) => s !== "node" && s !== "chromium")) {
  console.error("usage: node client_library.mjs <juegoland binary> <tests/js directory> [node] [chromium]");
  process.exit(2);
}
const scenarios = only.length ? only : ["node", "chromium"];

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
const children = new Set();
const cleanups = [];
let browser = null;

function fail(message) {
  console.error(`FAIL [${elapsed()}]: ${message}`);
  for (const c of children) c.kill("SIGKILL");
  process.exit(1);
}
function check(ok, message) {
  if (!ok) fail(message);
}
function log(message) {
  console.log(`[${elapsed()}] ${message}`);
}
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
// The library must neither throw from an event handler nor leave a promise rejected.
process.on("uncaughtException", (e) => fail(`uncaught exception: ${e?.stack ?? e}`));
process.on("unhandledRejection", (e) => fail(`unhandled rejection: ${e?.stack ?? e}`));
setTimeout(() => fail(`not done within ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS).unref();

/** Starts `juegoland dev` with `args` (tests/js/server.mjs); resolves with its base URL once it listens. */
const { startServer: startDev } = await import(pathToFileURL(join(jsDir, "server.mjs")).href);
const startServer = (args) => startDev(bin, args, children);

async function kill(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

async function post(base, path, body) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
const mint = async (base, principal) => (await post(base, "/v1/dev/tokens", { principal })).token;
const createMatch = async (base, seats) => (await post(base, "/v1/matches", { game: "conecta4", seats, config: {} })).matchId;

async function until(what, done, timeoutMs = STEP_MS) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await done();
    if (seen) return seen;
    if (Date.now() > deadline) fail(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * One player's `MatchClient` under Node; its first token is one the server refuses. What it
 * reports is recorded: tokens asked for, every `disconnected` info, a stop.
 */
function player(base, matchId, accept, principal, transport) {
  const rec = { asked: 0, disconnects: [], stopped: null };
  const client = new MatchClient({
    baseUrl: base,
    matchId,
    principal,
    accept,
    getToken: async () => (++rec.asked === 1 ? BAD_TOKEN : mint(base, principal)),
    transport,
    pending: memoryPendingStore(),
    connectTimeoutMs: 5000,
    listener: {
      disconnected: (info) => rec.disconnects.push(info),
      stopped: (reason) => (rec.stopped = reason),
    },
  });
  client.start();
  cleanups.push(() => client.close());
  return { principal, client, rec, transport };
}

const synced = (p, revision) => p.client.connection === "open" && p.client.subscriptionId !== null && p.client.confirmed?.revision === revision;
const kinds = (p, from = 0) => p.rec.disconnects.slice(from).map((d) => d.kind);

async function play(p, column, revision, others) {
  await until(`${p.principal} may move at revision ${revision - 1}`, () => p.client.canCommand);
  check(p.client.command("drop", { column }) !== null, `${p.principal}'s drop in column ${column} was not sent`);
  for (const q of [p, ...others]) await until(`${q.principal} sees revision ${revision}`, () => synced(q, revision));
  check(p.client.pending === null, `${p.principal}'s move is still pending after revision ${revision}`);
}

/** The library's webhook calls against the real server, and a refusal as a typed error naming its field. */
async function webhookCalls(base) {
  const registered = await webhooks.register(base, { id: "lib", url: "http://127.0.0.1:9/hooks", kinds: ["finished"] });
  check(registered.secret.startsWith("whsec_") && registered.webhook.origin === "api", `register: ${JSON.stringify(registered)}`);
  const changed = await webhooks.change(base, "lib", { kinds: null });
  check(changed.kinds === null, `change: ${JSON.stringify(changed)}`);
  const rotated = await webhooks.rotate(base, "lib", { overlapMs: 1000 });
  check(rotated.secret !== registered.secret && rotated.webhook.previousSecretUntilMs > Date.now(), `rotate: ${JSON.stringify(rotated)}`);
  const replayed = await webhooks.replay(base, "lib", "0-0");
  check(replayed.cursor === "0-0", `replay: ${JSON.stringify(replayed)}`);
  const ping = await webhooks.ping(base, "lib");
  check(ping.outcome === "unreachable" && ping.status === null, `ping of a closed port: ${JSON.stringify(ping)}`);
  const listed = await webhooks.list(base);
  check(listed.length === 1 && listed[0].id === "lib", `list: ${JSON.stringify(listed)}`);
  let refused = null;
  try {
    await webhooks.register(base, { id: "Not Valid", url: "http://127.0.0.1:9/" });
  } catch (e) {
    refused = e;
  }
  check(refused instanceof HttpError && refused.status === 400 && refused.field === "id", `a bad id: ${refused}`);
  await webhooks.remove(base, "lib");
  check((await webhooks.list(base)).length === 0, "the endpoint was not removed");
  log("webhook calls: register, change, rotate, replay, ping, list, a typed refusal, remove");
}

async function node() {
  const dir = mkdtempSync(join(tmpdir(), "juegoland-client-library-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  let server = await startServer(["--http", "127.0.0.1:0", "--data-dir", dir]);
  const base = server.base;
  const addr = base.replace("http://", "");
  log(`server at ${base}; Node ${process.version}, global WebSocket: ${typeof globalThis.WebSocket}`);
  await webhookCalls(base);
  const entry = (await catalog(base)).find((g) => g.id === "conecta4");
  const matchId = await createMatch(base, { p0: "alice", p1: "bob" });
  const alice = player(base, matchId, [contractOf(entry)], "alice", "websocket");
  const bob = player(base, matchId, [contractOf(entry)], "bob", "socketio");
  const both = [alice, bob];

  // A refused token: typed, then a new token, then the seat.
  for (const p of both) await until(`${p.principal} (${p.transport}) syncs after its refused token`, () => synced(p, 0));
  const refusedWs = alice.rec.disconnects[0];
  const expectWs =
    typeof globalThis.WebSocket === "function"
      ? { opened: false, kind: "refused" } // Node 22's built-in WebSocket hides the status
      : { opened: false, kind: "unauthenticated", status: 401, code: "UNAUTHENTICATED" };
  check(
    alice.rec.disconnects.length === 1 && Object.entries(expectWs).every(([k, v]) => refusedWs[k] === v),
    `alice's refused token over WebSocket: ${JSON.stringify(alice.rec.disconnects)}, expected one like ${JSON.stringify(expectWs)}`,
  );
  check(
    isDeepStrictEqual(kinds(bob), ["unauthenticated"]) && bob.rec.disconnects[0].code === "UNAUTHENTICATED",
    `bob's refused token over Socket.IO: ${JSON.stringify(bob.rec.disconnects)}`,
  );
  for (const p of both) {
    check(p.rec.asked === 2, `${p.principal} was asked for a token ${p.rec.asked} times, not twice (the refused one, then a good one)`);
    check(p.client.lastClose === p.rec.disconnects.at(-1), `${p.principal}'s lastClose is not the last disconnect`);
  }
  check(alice.client.confirmed.seat === "p0" && bob.client.confirmed.seat === "p1", "the seats are not p0 and p1");
  log(`refused tokens typed (${JSON.stringify(refusedWs)} / ${JSON.stringify(bob.rec.disconnects[0])}), new tokens asked, seats synced`);

  await play(alice, 3, 1, [bob]);
  await play(bob, 4, 2, [alice]);
  log("alice (WebSocket) and bob (Socket.IO) played a move each");

  // A restart on the same address and data directory (the token secret kept there): the
  // connection drops, no server answers for a while, then the clients resync with their tokens.
  const mark = both.map((p) => ({ asked: p.rec.asked, from: p.rec.disconnects.length }));
  await kill(server.child);
  for (const p of both) await until(`${p.principal} sees the server gone`, () => p.client.connection !== "open");
  for (const [i, p] of both.entries()) await until(`${p.principal} finds no server`, () => kinds(p, mark[i].from).includes("network"));
  server = await startServer(["--http", addr, "--data-dir", dir]);
  for (const p of both) await until(`${p.principal} resyncs after the restart`, () => synced(p, 2));
  both.forEach((p, i) => {
    const seen = kinds(p, mark[i].from);
    check(seen[0] === "closed" && seen.includes("network"), `${p.principal} after the kill: ${JSON.stringify(p.rec.disconnects.slice(mark[i].from))}`);
    check(!seen.includes("unauthenticated") && !seen.includes("refused"), `${p.principal}'s token was refused after a restart that kept the secret: ${JSON.stringify(seen)}`);
    check(p.rec.asked === mark[i].asked, `${p.principal} asked for a new token after a restart that kept the secret`);
  });
  log(`restart: ${JSON.stringify(both.map((p, i) => kinds(p, mark[i].from)))}; both resynced at revision 2 with their tokens`);
  await play(alice, 3, 3, [bob]);

  // A restart with a new token secret: the tokens are refused, typed, and replaced.
  const mark2 = both.map((p) => ({ asked: p.rec.asked, from: p.rec.disconnects.length }));
  await kill(server.child);
  server = await startServer(["--http", addr, "--data-dir", dir, "--new-jwt-secret"]);
  for (const p of both) await until(`${p.principal} resyncs after the restart with a new secret`, () => synced(p, 3));
  both.forEach((p, i) => {
    const seen = kinds(p, mark2[i].from);
    const refusal = p.transport === "socketio" || typeof globalThis.WebSocket !== "function" ? "unauthenticated" : "refused";
    check(seen.includes(refusal), `${p.principal} after the new secret: ${JSON.stringify(p.rec.disconnects.slice(mark2[i].from))}, expected a ${refusal}`);
    check(p.rec.asked > mark2[i].asked, `${p.principal} was not asked for a new token after the new secret`);
  });
  log(`restart with a new secret: ${JSON.stringify(both.map((p, i) => kinds(p, mark2[i].from)))}; new tokens, both resynced`);
  await play(bob, 4, 4, [alice]);
  for (const p of both) check(p.rec.stopped === null, `${p.principal} stopped: ${p.rec.stopped}`);
  for (const p of both) p.client.close();
  await kill(server.child);
  log("Node: done");
}

/** Serves the installed package (`/lib/…`) and an empty page (`/`) from another origin than the engine's. */
async function staticOrigin(libDir) {
  const types = { ".js": "text/javascript", ".map": "application/json", ".html": "text/html" };
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html" });
      return res.end("<!doctype html><title>platform</title>");
    }
    const file = normalize(join(libDir, path.replace(/^\/lib\//, "")));
    if (!path.startsWith("/lib/") || !file.startsWith(libDir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => server.close());
  return `http://127.0.0.1:${server.address().port}`;
}

async function chromiumScenario() {
  const { chromium } = createRequire(join(jsDir, "package.json"))("playwright-core");
  const libDir = join(process.cwd(), "node_modules/@juegoland/client");
  const page0 = await staticOrigin(libDir);
  const { base, child } = await startServer(["--http", "127.0.0.1:0", "--in-memory"]);
  await webhookCalls(base);
  const entry = (await catalog(base)).find((g) => g.id === "conecta4");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
  for (const transport of ["websocket", "socketio"]) {
    const matchId = await createMatch(base, { p0: "dora", p1: "erik" });
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    // The platform's back end mints the tokens; the page asks it.
    await page.exposeFunction("mintToken", (principal) => mint(base, principal));
    await page.goto(`${page0}/`);
    const out = await page.evaluate(
      async ({ base, matchId, accept, transport, bad, stepMs }) => {
        const { MatchClient } = await import("/lib/index.js");
        let asked = 0;
        const disconnects = [];
        const client = new MatchClient({
          baseUrl: base,
          matchId,
          principal: "dora",
          accept,
          getToken: async () => (++asked === 1 ? bad : window.mintToken("dora")),
          transport,
          connectTimeoutMs: 5000,
          listener: { disconnected: (info) => disconnects.push(info) },
        });
        const until = async (what, done) => {
          const deadline = Date.now() + stepMs;
          while (!done()) {
            if (Date.now() > deadline) throw new Error(`${what}: not within ${stepMs / 1000} s; ${JSON.stringify({ connection: client.connection, disconnects, asked })}`);
            await new Promise((r) => setTimeout(r, 20));
          }
        };
        client.start();
        await until("a sync after the refused token", () => client.canCommand);
        const seat = client.confirmed.seat;
        client.command("drop", { column: 2 });
        await until("the move's revision", () => client.confirmed.revision === 1 && client.pending === null);
        client.close();
        return { asked, disconnects, seat, revision: client.confirmed.revision };
      },
      { base, matchId, accept: [contractOf(entry)], transport, bad: BAD_TOKEN, stepMs: STEP_MS },
    ).catch((e) => fail(`Chromium, ${transport}: ${e.message}`));
    // A browser never shows a WebSocket handshake's HTTP status: the server answered, so the
    // handshake was refused (the token, perhaps); Socket.IO's refusal is a message, typed.
    const expected = transport === "websocket" ? "refused" : "unauthenticated";
    check(out.disconnects.length === 1 && out.disconnects[0].kind === expected && out.disconnects[0].opened === (transport === "socketio"), `Chromium, ${transport}: ${JSON.stringify(out.disconnects)}, expected one ${expected}`);
    check(out.asked === 2, `Chromium, ${transport}: asked for a token ${out.asked} times, not twice`);
    check(out.seat === "p0" && out.revision === 1, `Chromium, ${transport}: ${JSON.stringify(out)}`);
    check(errors.length === 0, `Chromium, ${transport}: page errors ${JSON.stringify(errors)}`);
    log(`Chromium, ${transport}: ${JSON.stringify(out.disconnects[0])}, a new token, synced and played`);
    await page.close();
  }
  await browser.close();
  browser = null;
  await kill(child);
}

try {
  if (scenarios.includes("node")) await node();
  if (scenarios.includes("chromium")) await chromiumScenario();
} catch (e) {
  fail(e?.stack ?? String(e));
} finally {
  for (const c of cleanups.reverse()) {
    try {
      c();
    } catch {
      // Best effort: the process exits next.
    }
  }
}
console.log(`client library: every check passed in ${elapsed()}`);
process.exit(0);
