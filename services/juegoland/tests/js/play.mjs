// A Socket.IO client from the JavaScript ecosystem (socket.io-client from npm) against the
// gateway's Socket.IO endpoint. Run by services/juegoland/tests/it/socketio.rs.
//
//   node play.mjs <gatewayUrl> <matchId> <aliceToken> <bobToken>
//     alice (seat p0) and bob (seat p1) sync to the match and play p0's winning sequence
//     (columns 0,1,0,1,0,1,0); every ack must be applied at the next revision, both clients
//     must see every snapshot revision in order, and the last one must be p0's win. Before
//     playing, alice checks that an unknown event name, an event whose name is not its
//     message's type and an event with two arguments are answered MALFORMED_MESSAGE.
//
//   node play.mjs --unauthenticated <gatewayUrl>
//     a client without a token and one with a forged token each get a game.error
//     UNAUTHENTICATED event and are disconnected by the server.
//
// Exits 0 on success; prints the reason and exits 1 otherwise, or after an overall timeout.

import { randomUUID } from "node:crypto";
import { io } from "socket.io-client";

const OVERALL_TIMEOUT_MS = 60_000;
const MESSAGE_TIMEOUT_MS = 10_000;
const WINNING = [0, 1, 0, 1, 0, 1, 0];
const ACCEPT = [{ id: "conecta4", rulesVersion: "1.0.0", viewSchemaVersion: 1, eventSchemaVersion: 1 }];
const SERVER_TYPES = ["game.snapshot", "game.ack", "game.command-unknown", "game.cursor", "game.error"];

const sockets = [];

function fail(message) {
  console.error(`FAIL: ${message}`);
  for (const s of sockets) s.disconnect();
  process.exit(1);
}

setTimeout(() => fail(`not done within ${OVERALL_TIMEOUT_MS / 1000} s`), OVERALL_TIMEOUT_MS);
process.on("unhandledRejection", (e) => fail(e instanceof Error ? e.message : String(e)));

function check(condition, message) {
  if (!condition) fail(message);
}

// A connected player: every server event lands in `inbox` in arrival order.
class Player {
  constructor(name, url, token, transports) {
    this.name = name;
    this.inbox = [];
    this.waiter = null;
    this.socket = io(url, {
      auth: token === undefined ? undefined : { token },
      transports,
      reconnection: false,
      forceNew: true,
      timeout: MESSAGE_TIMEOUT_MS,
    });
    sockets.push(this.socket);
    this.socket.onAny((event, ...args) => {
      check(SERVER_TYPES.includes(event), `${name} got an unknown event ${event}`);
      check(args.length === 1, `${name}: ${event} carries ${args.length} arguments, not 1`);
      const message = args[0];
      check(message.type === event, `${name}: event ${event} carries a ${message.type}`);
      check(message.protocolVersion === 1, `${name}: ${JSON.stringify(message)} is not protocol 1`);
      this.inbox.push(message);
      this.waiter?.();
    });
    this.disconnected = new Promise((resolve) => this.socket.on("disconnect", (reason) => resolve(reason)));
  }

  connected() {
    return new Promise((resolve, reject) => {
      this.socket.on("connect", resolve);
      this.socket.on("connect_error", (e) => reject(new Error(`${this.name} could not connect: ${e.message}`)));
    });
  }

  emit(message) {
    this.socket.emit(message.type, message);
  }

  // The first message in the inbox matching `pred` (cursors are skipped over and dropped;
  // other messages stay for later).
  async next(what, pred) {
    const deadline = Date.now() + MESSAGE_TIMEOUT_MS;
    for (;;) {
      this.inbox = this.inbox.filter((m) => m.type !== "game.cursor");
      const i = this.inbox.findIndex(pred);
      if (i >= 0) return this.inbox.splice(i, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) fail(`${this.name} waited in vain for ${what}; inbox: ${JSON.stringify(this.inbox)}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = null;
    }
  }

  // The next snapshot this player received: snapshots must arrive in revision order, so
  // it is the oldest one in the inbox.
  nextSnapshot() {
    return this.next("a snapshot", (m) => m.type === "game.snapshot");
  }

  // The next game.error, which must carry `code`.
  async expectError(code, why) {
    const e = await this.next(`a game.error (${why})`, (m) => m.type === "game.error");
    check(e.code === code, `${this.name}, ${why}: expected ${code}, got ${JSON.stringify(e)}`);
  }
}

async function play(url, matchId, aliceToken, bobToken) {
  // alice starts on long-polling and upgrades to WebSocket (the client's default); bob
  // speaks WebSocket from the start.
  const alice = new Player("alice", url, aliceToken, ["polling", "websocket"]);
  const bob = new Player("bob", url, bobToken, ["websocket"]);
  await Promise.all([alice.connected(), bob.connected()]);

  alice.socket.emit("game.hello", { protocolVersion: 1, type: "game.hello" });
  await alice.expectError("MALFORMED_MESSAGE", "an unknown event name");
  const status = { protocolVersion: 1, type: "game.command-status", matchId, commandId: randomUUID() };
  alice.socket.emit("game.sync", status);
  await alice.expectError("MALFORMED_MESSAGE", "an event named unlike its message's type");
  alice.socket.emit("game.command-status", status, status);
  await alice.expectError("MALFORMED_MESSAGE", "an event with two arguments");

  const sync = (player, requestId) => {
    player.emit({ protocolVersion: 1, type: "game.sync", requestId, matchId, accept: ACCEPT });
    return player.next(`the answer to ${requestId}`, (m) => m.requestId === requestId || m.type === "game.error");
  };
  const a = await sync(alice, "r-alice");
  check(a.type === "game.snapshot", `alice's sync failed: ${JSON.stringify(a)}`);
  check(a.revision === 0 && a.seat === "p0", `alice's sync: ${JSON.stringify(a)}`);
  const b = await sync(bob, "r-bob");
  check(b.type === "game.snapshot", `bob's sync failed: ${JSON.stringify(b)}`);
  check(b.revision === 0 && b.seat === "p1", `bob's sync: ${JSON.stringify(b)}`);

  let last = { alice: a, bob: b };
  for (const [i, column] of WINNING.entries()) {
    const revision = i;
    const [mover, other] = i % 2 === 0 ? [alice, bob] : [bob, alice];
    const commandId = randomUUID();
    mover.emit({
      protocolVersion: 1,
      type: "game.command",
      matchId,
      commandId,
      precondition: { kind: "match", revision },
      action: { type: "drop", payload: { column } },
    });
    const ack = await mover.next(
      `the ack of move ${i + 1}`,
      (m) => (m.type === "game.ack" || m.type === "game.error") && m.commandId === commandId,
    );
    check(
      ack.type === "game.ack" && ack.status === "applied" && ack.revision === revision + 1 && ack.duplicate === false,
      `move ${i + 1} (${mover.name}, column ${column}) not applied at ${revision + 1}: ${JSON.stringify(ack)}`,
    );
    for (const player of [mover, other]) {
      const snap = await player.nextSnapshot();
      check(
        snap.revision === revision + 1 && snap.fromRevision === revision,
        `${player.name} expected the snapshot of revision ${revision + 1}, got ${JSON.stringify(snap)}`,
      );
      check(snap.subscriptionId === last[player.name].subscriptionId, `${player.name}: a snapshot of another subscription`);
      last[player.name] = snap;
    }
  }

  for (const [name, snap] of Object.entries(last)) {
    const result = snap.result;
    check(result !== null && result.kind === "completed", `${name}: the match is not over: ${JSON.stringify(snap)}`);
    check(
      result.participants.p0.outcome === "win" && result.participants.p1.outcome === "loss",
      `${name}: p0 did not win: ${JSON.stringify(result)}`,
    );
  }
  check(!alice.inbox.some((m) => m.type !== "game.cursor"), `alice got more: ${JSON.stringify(alice.inbox)}`);
  check(!bob.inbox.some((m) => m.type !== "game.cursor"), `bob got more: ${JSON.stringify(bob.inbox)}`);
  console.log(`ok: ${WINNING.length} moves over Socket.IO, p0 (alice) won at revision ${last.alice.revision}`);
}

async function unauthenticated(url) {
  for (const [what, token] of [
    ["no token", undefined],
    ["a forged token", "not-a-token"],
  ]) {
    const player = new Player(`a client with ${what}`, url, token, ["websocket"]);
    await player.connected();
    await player.expectError("UNAUTHENTICATED", what);
    const reason = await Promise.race([
      player.disconnected,
      new Promise((resolve) => setTimeout(() => resolve("still connected"), MESSAGE_TIMEOUT_MS)),
    ]);
    check(reason === "io server disconnect", `${player.name}: expected a server disconnect, got ${reason}`);
  }
  console.log("ok: clients without a valid token get UNAUTHENTICATED and are disconnected");
}

const args = process.argv.slice(2);
try {
  if (args[0] === "--unauthenticated" && args.length === 2) {
    await unauthenticated(args[1]);
  } else if (args.length === 4) {
    await play(...args);
  } else {
    fail("usage: node play.mjs <gatewayUrl> <matchId> <aliceToken> <bobToken> | --unauthenticated <gatewayUrl>");
  }
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
}
for (const s of sockets) s.disconnect();
process.exit(0);
