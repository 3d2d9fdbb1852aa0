#!/usr/bin/env node
// Load driver for the peer Connect Four servers (issue 8).
//
//   node driver.mjs --server boardgameio|colyseus --url URL --matches N --seconds S
//                   [--ramp-seconds R] [--server-pid PID] --out summary.json
//                   [--move-timeout-ms 10000] [--seed 1] [--diag-out diag.json]
//
// Keeps N matches going: two real framework clients per match, one per
// player, each playing a random legal move as soon as the authoritative state
// says it is its turn. A finished match is replaced by a new one in its slot.
// Slots start spread over the ramp-up; the measured window is the S seconds
// after it. Writes the summary JSON shared with the Rust harness to --out and
// driver diagnostics (own CPU, event-loop delay, warm-up counts) to stderr
// and, if given, --diag-out.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { findWinner, isFull, landingRow, legalColumns, COLUMNS } from './connect4-rules.mjs';

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------- arguments
const argv = process.argv.slice(2);
function arg(name, dflt) {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = argv[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
  return v;
}
const kind = arg('server');
if (kind !== 'boardgameio' && kind !== 'colyseus') {
  console.error('usage: node driver.mjs --server boardgameio|colyseus --url URL --matches N --seconds S [--ramp-seconds R] [--server-pid PID] --out FILE');
  process.exit(64);
}
const url = arg('url', kind === 'boardgameio' ? 'http://127.0.0.1:8000' : 'ws://127.0.0.1:2567');
const matches = Number(arg('matches', 10));
const seconds = Number(arg('seconds', 20));
// Default ramp-up: 2 s for 10 matches, 10 s for 200 (slots start over the
// first 80% of it, so every slot has played a while before the window opens).
const rampSeconds = Number(arg('ramp-seconds', Math.min(10, Math.max(2, matches / 20))));
const serverPid = arg('server-pid') ? Number(arg('server-pid')) : null;
const outPath = arg('out');
const diagOut = arg('diag-out');
const moveTimeoutMs = Number(arg('move-timeout-ms', 10000));
const setupTimeoutMs = Number(arg('setup-timeout-ms', 15000));
let seed = Number(arg('seed', Date.now() % 2147483647)) >>> 0;
if (!outPath) throw new Error('--out is required');
if (!(matches > 0) || !(seconds > 0) || !(rampSeconds >= 0)) throw new Error('bad --matches/--seconds/--ramp-seconds');

function random() { // mulberry32
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pkgVersion(name) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
}

// ------------------------------------------------------------------- stats
const stats = {
  phase: 'ramp', // ramp | measure | done
  samples: new Float64Array(1 << 16),
  n: 0,
  moves: 0,
  matchesFinished: 0,
  errors: {}, // whole run, ramp-up included
  rampMoves: 0,
  rampMatchesFinished: 0,
  matchesStarted: 0,
  results: { win: 0, draw: 0 },
};
function recordLatency(ms) {
  if (stats.n === stats.samples.length) {
    const bigger = new Float64Array(stats.samples.length * 2);
    bigger.set(stats.samples);
    stats.samples = bigger;
  }
  stats.samples[stats.n++] = ms;
}
function countError(code, detail) {
  if (stats.phase === 'done') return; // teardown noise
  stats.errors[code] = (stats.errors[code] || 0) + 1;
  if ((stats.errors[code] || 0) <= 3) console.error(`driver: error ${code}${detail ? `: ${detail}` : ''}`);
}
class MatchError extends Error {
  constructor(code, detail) { super(`${code}${detail ? `: ${detail}` : ''}`); this.code = code; this.detail = detail; }
}

// A move was confirmed by the authoritative state: `sentAt` and `sentPhase`
// are from when the move went out.
function moveConfirmed(sentAt, sentPhase) {
  const now = performance.now();
  if (stats.phase === 'measure' && sentPhase === 'measure') {
    recordLatency(now - sentAt);
    stats.moves++;
  } else if (stats.phase === 'ramp') {
    stats.rampMoves++;
  }
}
function matchFinished(result) {
  if (stats.phase === 'measure') stats.matchesFinished++;
  else if (stats.phase === 'ramp') stats.rampMatchesFinished++;
  if (stats.phase !== 'done') stats.results[result]++;
}

// Check a final position and the result the server declared.
// `cells`: 42 cells, `empty` the empty marker, `p1`/`p2` the two players'
// markers with p1 moving first; `declared`: {winner: marker} or {draw: true}.
function checkFinal(cells, empty, p1, p2, declared) {
  let a = 0, b = 0;
  for (const c of cells) {
    if (c === p1) a++;
    else if (c === p2) b++;
    else if (c !== empty) return 'bad_cell';
  }
  if (a - b !== 0 && a - b !== 1) return 'bad_piece_count';
  // Gravity: no piece floats over an empty cell.
  for (let col = 0; col < COLUMNS; col++) {
    let seenEmptyBelow = false;
    for (let row = 5; row >= 0; row--) {
      const v = cells[row * COLUMNS + col];
      if (v === empty) seenEmptyBelow = true;
      else if (seenEmptyBelow) return 'floating_piece';
    }
  }
  const w = findWinner(cells, empty);
  if (declared.draw) return w === empty && isFull(cells, empty) ? null : 'bad_draw';
  if (declared.winner === undefined || w !== declared.winner) return 'bad_winner';
  // The winner made the last move.
  if ((w === p1) !== (a > b)) return 'winner_not_last_mover';
  return null;
}

// Resolves when `cond()` holds, checked by `poke()`; rejects on timeout.
function waiter(ms, code) {
  let resolve, reject, timer;
  const p = new Promise((res, rej) => { resolve = res; reject = rej; });
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => reject(new MatchError(code)), ms);
  };
  arm();
  return {
    promise: p.finally(() => clearTimeout(timer)),
    done: (v) => { clearTimeout(timer); resolve(v); },
    fail: (e) => { clearTimeout(timer); reject(e); },
    rearm: (newCode) => { if (newCode) code = newCode; arm(); },
  };
}

// Everything that must be closed when the run ends.
const live = new Set();

// ------------------------------------------------------------ boardgame.io
// The client applies a move to its own store at once (optimistic update;
// boardgame.io does this for every move not declared `client: false`). That
// local state is not what we time: the transport is wrapped so the player
// sees the server's messages ('sync' and 'update'; 'patch' if deltaState
// were on) and the move is confirmed only when the server's state has
// _stateID >= the state the move was sent against + 1.
let bgio;
async function bgioMatch() {
  if (!bgio) {
    const { Client, LobbyClient } = require('boardgame.io/client');
    const { SocketIO } = require('boardgame.io/multiplayer');
    const { ConnectFour } = await import('./boardgameio-game.mjs');
    bgio = { Client, LobbyClient, SocketIO, game: ConnectFour, lobby: new LobbyClient({ server: url }) };
  }
  const { lobby, game } = bgio;
  const setup = waiter(setupTimeoutMs, 'setup_timeout');
  const { matchID } = await Promise.race([
    lobby.createMatch(game.name, { numPlayers: 2 }).catch((e) => { throw new MatchError('lobby_create', e.message); }),
    setup.promise,
  ]);
  const creds = [];
  for (const playerID of ['0', '1']) {
    const r = await Promise.race([
      lobby.joinMatch(game.name, matchID, { playerID, playerName: `p${playerID}` })
        .catch((e) => { throw new MatchError('lobby_join', e.message); }),
      setup.promise,
    ]);
    creds.push(r.playerCredentials);
  }
  setup.done();
  stats.matchesStarted++;

  const progress = waiter(setupTimeoutMs, 'sync_timeout');
  const players = [];
  let finishedPlayers = 0;
  let finalChecked = false;
  for (const playerID of ['0', '1']) {
    const p = { playerID, pending: null, done: false, client: null };
    const onServerState = (state) => {
      if (p.done) return;
      if (p.pending && state._stateID >= p.pending.expect) {
        const { sentAt, sentPhase, column, row } = p.pending;
        if (state.G.cells[row * COLUMNS + column] !== playerID) {
          progress.fail(new MatchError('move_not_applied', `col ${column}`));
          return;
        }
        p.pending = null;
        moveConfirmed(sentAt, sentPhase);
        progress.rearm('move_timeout');
      }
      if (state.ctx.gameover) {
        p.done = true;
        if (!finalChecked) {
          finalChecked = true;
          const bad = checkFinal(state.G.cells, null, '0', '1', state.ctx.gameover);
          if (bad) { progress.fail(new MatchError(bad)); return; }
          matchFinished(state.ctx.gameover.draw ? 'draw' : 'win');
        }
        if (++finishedPlayers === 2) progress.done();
        return;
      }
      if (state.ctx.currentPlayer === playerID && !p.pending && stats.phase !== 'done') {
        const column = pick(legalColumns(state.G.cells, null));
        const row = landingRow(state.G.cells, column, null);
        p.pending = { expect: state._stateID + 1, sentAt: performance.now(), sentPhase: stats.phase, column, row };
        p.client.moves.drop(column);
      }
    };
    const multiplayer = (opts) => bgio.SocketIO({
      server: url,
      socketOpts: { transports: ['websocket'], forceNew: true, reconnection: false },
    })({
      ...opts,
      transportDataCallback: (data) => {
        opts.transportDataCallback(data); // let the client's store take it first
        if (data.args[0] !== matchID) return;
        if (data.type === 'sync') onServerState(data.args[1].state);
        else if (data.type === 'update') onServerState(data.args[1]);
        else if (data.type === 'patch') onServerState(p.client.store.getState());
      },
    });
    p.client = bgio.Client({
      game, numPlayers: 2, matchID, playerID, credentials: creds[Number(playerID)],
      multiplayer, debug: false,
    });
    players.push(p);
  }
  const close = () => { for (const p of players) { try { p.client.stop(); } catch {} } };
  live.add(close);
  try {
    for (const p of players) {
      p.client.start();
      const sock = p.client.transport.socket;
      sock.on('connect_error', (e) => progress.fail(new MatchError('connect_error', e.message)));
      sock.on('disconnect', (reason) => {
        if (!p.done && stats.phase !== 'done') progress.fail(new MatchError('disconnected', reason));
      });
    }
    await progress.promise;
  } finally {
    live.delete(close);
    close();
  }
}

// ---------------------------------------------------------------- Colyseus
// Rooms send no optimistic state: room.state changes only when a patch from
// the server is decoded. A move is confirmed when the mover's state has
// moveNumber >= the moveNumber it was sent against + 1.
let cy;
async function colyseusMatch() {
  if (!cy) {
    const { Client } = require('colyseus.js');
    cy = { client: new Client(url) };
  }
  const setup = waiter(setupTimeoutMs, 'setup_timeout');
  const rooms = [];
  const close = () => { for (const r of rooms) { try { r.leave(true); } catch {} } };
  live.add(close);
  try {
    const a = await Promise.race([
      cy.client.create('connect_four').catch((e) => { throw new MatchError('matchmake_create', e.message); }),
      setup.promise,
    ]);
    rooms.push(a);
    const b = await Promise.race([
      cy.client.joinById(a.roomId).catch((e) => { throw new MatchError('matchmake_join', e.message); }),
      setup.promise,
    ]);
    rooms.push(b);
    setup.done();
    stats.matchesStarted++;

    const progress = waiter(setupTimeoutMs, 'start_timeout');
    let finishedPlayers = 0;
    let finalChecked = false;
    for (const room of rooms) {
      const p = { pending: null, done: false };
      const onState = (state) => {
        if (p.done) return;
        if (p.pending && state.moveNumber >= p.pending.expect) {
          const { sentAt, sentPhase, column, row, seat } = p.pending;
          if (state.board[row * COLUMNS + column] !== seat) {
            progress.fail(new MatchError('move_not_applied', `col ${column}`));
            return;
          }
          p.pending = null;
          moveConfirmed(sentAt, sentPhase);
          progress.rearm('move_timeout');
        }
        if (state.winner !== 0) {
          p.done = true;
          if (!finalChecked) {
            finalChecked = true;
            const cells = Array.from(state.board);
            const declared = state.winner === 3 ? { draw: true } : { winner: state.winner };
            const bad = checkFinal(cells, 0, 1, 2, declared);
            if (bad) { progress.fail(new MatchError(bad)); return; }
            matchFinished(declared.draw ? 'draw' : 'win');
          }
          if (++finishedPlayers === 2) progress.done();
          return;
        }
        const seat = state.players.get(room.sessionId);
        if (seat && state.currentPlayer === seat && !p.pending && stats.phase !== 'done') {
          const cells = state.board;
          const column = pick(legalColumns(cells, 0));
          const row = landingRow(cells, column, 0);
          p.pending = { expect: state.moveNumber + 1, sentAt: performance.now(), sentPhase: stats.phase, column, row, seat };
          room.send('drop', { column });
        }
      };
      room.onStateChange(onState);
      room.onMessage('error', (m) => progress.fail(new MatchError(`server_${m && m.code}`)));
      room.onError((code, message) => progress.fail(new MatchError('room_error', `${code} ${message}`)));
      room.onLeave((code) => {
        if (!p.done && stats.phase !== 'done') progress.fail(new MatchError('disconnected', String(code)));
      });
      if (room.state && room.state.players) onState(room.state);
    }
    await progress.promise;
  } finally {
    setup.done();
    live.delete(close);
    close();
  }
}

// ------------------------------------------------------------- /proc reads
const CLK_TCK = 100; // USER_HZ; Linux reports /proc times in 1/100 s on every mainstream arch
function procCpuSeconds(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state): utime=14, stime=15, cutime=16, cstime=17
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK;
}
function procMemBytes(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => { const m = s.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm')); return m ? Number(m[1]) * 1024 : 0; };
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}
// Time the main (JS) thread spent runnable but waiting for a CPU: the noise
// from other processes on the machine. Null where schedstat is missing.
function runqueueWaitSeconds(pid) {
  try { return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9; } catch { return null; }
}
const loadavg1 = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

// --------------------------------------------------------------------- run
function percentile(sorted, q) {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * sorted.length)); // nearest rank
  return sorted[rank - 1];
}
const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

async function slotLoop(slot, startDelayMs) {
  await sleep(startDelayMs);
  const runMatch = kind === 'boardgameio' ? bgioMatch : colyseusMatch;
  while (stats.phase !== 'done') {
    try {
      await runMatch();
    } catch (e) {
      if (stats.phase === 'done') return;
      if (e instanceof MatchError) countError(e.code, e.detail);
      else countError('exception', e && e.stack);
      await sleep(200);
    }
  }
}

async function main() {
  const t0 = performance.now();
  const rampMs = rampSeconds * 1000;
  for (let i = 0; i < matches; i++) slotLoop(i, matches > 1 ? (rampMs * 0.8 * i) / matches : 0);

  let peakRss = 0;
  let serverAlive = true;
  const sampleMem = () => {
    if (!serverPid) return;
    try { peakRss = Math.max(peakRss, procMemBytes(serverPid).rss); } catch { serverAlive = false; }
  };
  const memTimer = setInterval(sampleMem, 1000);

  await sleep(Math.max(0, t0 + rampMs - performance.now()));
  // ---- measured window starts
  const ELD_RES_MS = 5;
  const eld = monitorEventLoopDelay({ resolution: ELD_RES_MS });
  eld.enable();
  const cpuStartServer = serverPid ? procCpuSeconds(serverPid) : null;
  const cpuStartDriver = process.cpuUsage();
  const waitStart = { server: serverPid ? runqueueWaitSeconds(serverPid) : null, driver: runqueueWaitSeconds('self') };
  const loadStart = loadavg1();
  const wStart = performance.now();
  stats.phase = 'measure';
  sampleMem();

  await sleep(seconds * 1000);
  // ---- measured window ends
  stats.phase = 'done';
  const wEnd = performance.now();
  let cpuServer = null;
  let hwm = 0;
  if (serverPid) {
    try {
      cpuServer = procCpuSeconds(serverPid) - cpuStartServer;
      const m = procMemBytes(serverPid);
      peakRss = Math.max(peakRss, m.rss);
      hwm = m.hwm;
    } catch { serverAlive = false; }
  }
  const cpuDriver = process.cpuUsage(cpuStartDriver);
  const waitEnd = { server: serverPid ? runqueueWaitSeconds(serverPid) : null, driver: runqueueWaitSeconds('self') };
  const loadEnd = loadavg1();
  eld.disable();
  clearInterval(memTimer);

  const durationSeconds = (wEnd - wStart) / 1000;
  const sorted = stats.samples.slice(0, stats.n).sort();
  const summary = {
    server: kind === 'boardgameio' ? 'boardgame.io' : 'colyseus',
    version: kind === 'boardgameio' ? pkgVersion('boardgame.io') : pkgVersion('@colyseus/core'),
    scenario: 'conecta4-storm',
    matches,
    durationSeconds: round(durationSeconds, 3),
    moves: stats.moves,
    matchesFinished: stats.matchesFinished,
    movesPerSecond: round(stats.moves / durationSeconds, 1),
    serverCpuSeconds: cpuServer === null ? null : round(cpuServer, 2),
    movesPerServerCpuSecond: cpuServer ? round(stats.moves / cpuServer, 1) : null,
    serverPeakRssBytes: serverPid ? Math.max(peakRss, hwm) : null,
    latencyMs: {
      commandToView: {
        count: sorted.length,
        p50: round(percentile(sorted, 0.5)),
        p90: round(percentile(sorted, 0.9)),
        p99: round(percentile(sorted, 0.99)),
        max: round(sorted.length ? sorted[sorted.length - 1] : 0),
      },
    },
    errors: stats.errors,
  };
  if (!serverAlive) summary.errors.server_gone = (summary.errors.server_gone || 0) + 1;
  writeFileSync(outPath, JSON.stringify(summary, null, 2) + '\n');

  const driverCpuSeconds = (cpuDriver.user + cpuDriver.system) / 1e6;
  const diag = {
    driverCpuSeconds: round(driverCpuSeconds, 2),
    driverCoreUtilization: round(driverCpuSeconds / durationSeconds, 3), // 1.0 = one core saturated
    // How late a 5 ms timer fired (the histogram includes the 5 ms period itself).
    driverEventLoopLagMs: {
      p50: round(Math.max(0, eld.percentile(50) / 1e6 - ELD_RES_MS)),
      p99: round(Math.max(0, eld.percentile(99) / 1e6 - ELD_RES_MS)),
      max: round(Math.max(0, eld.max / 1e6 - ELD_RES_MS)),
    },
    serverCoreUtilization: cpuServer === null ? null : round(cpuServer / durationSeconds, 3),
    driverCpuMsPerMove: stats.moves ? round((driverCpuSeconds * 1000) / stats.moves) : null,
    serverCpuMsPerMove: cpuServer && stats.moves ? round((cpuServer * 1000) / stats.moves) : null,
    // Seconds each main thread was runnable but not running (other load).
    runqueueWaitSeconds: {
      server: waitStart.server === null || waitEnd.server === null ? null : round(waitEnd.server - waitStart.server, 2),
      driver: waitStart.driver === null || waitEnd.driver === null ? null : round(waitEnd.driver - waitStart.driver, 2),
    },
    loadavg1: { start: loadStart, end: loadEnd },
    rampSeconds,
    rampMoves: stats.rampMoves,
    rampMatchesFinished: stats.rampMatchesFinished,
    matchesStarted: stats.matchesStarted,
    results: stats.results,
    seed: arg('seed', null),
  };
  console.error(`driver: ${JSON.stringify(diag)}`);
  if (diagOut) writeFileSync(diagOut, JSON.stringify(diag, null, 2) + '\n');

  for (const close of live) { try { close(); } catch {} }
  const failed = stats.moves === 0 || !serverAlive;
  // Don't wait for sockets to close gracefully.
  setTimeout(() => process.exit(failed ? 1 : 0), 200).unref();
  process.exitCode = failed ? 1 : 0;
}

process.on('unhandledRejection', (e) => countError('unhandled_rejection', e && e.message));
main().catch((e) => { console.error(e); process.exit(1); });
