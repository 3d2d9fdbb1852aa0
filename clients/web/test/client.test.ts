// The client half of the protocol: the sync barrier, the pending command kept across
// reloads and retried with the same UUID, game.command-status on uncertainty, and what a
// failed or refused connection leads to (a new token, backoff, Retry-After, a stop).
import { describe, expect, it } from "vitest";
import { MatchClient, type ClientListener } from "../src/lib/client";
import { memoryPendingStore } from "../src/lib/pending";
import type { CloseInfo, TransportEvents, TransportFactory, TransportOptions } from "../src/lib/transport";
import type { ClientMessage, GameSnapshot, ServerMessage } from "../src/protocol/generated";
import { FakeClock, flush } from "./fakes";

const MATCH = "0b6e0000-0000-4000-8000-000000000001";
const offer = { type: "drop", payload: { column: 3 }, precondition: { kind: "match" as const, revision: 0 } };

function harness(store = memoryPendingStore()) {
  const clock = new FakeClock();
  const sent: ClientMessage[] = [];
  let events: TransportEvents | null = null;
  let tokens = 0;
  /** Each connection attempt: when, with which token and options. */
  const connects: { at: number; token: string; options?: TransportOptions }[] = [];
  const disconnects: CloseInfo[] = [];
  const stopped: string[] = [];
  const factory: TransportFactory = (_url, token, ev, options) => {
    events = ev;
    connects.push({ at: clock.now(), token, options });
    return { send: (m) => (sent.push(m), true), close: () => {} };
  };
  let n = 0;
  const seen: { live: boolean; revision: number }[] = [];
  const rejected: string[] = [];
  const listener: ClientListener = {
    snapshot: (c, _e, live) => seen.push({ live, revision: c.revision }),
    rejected: (code) => rejected.push(code),
    disconnected: (info) => disconnects.push(info),
    stopped: (reason) => stopped.push(reason),
  };
  const client = new MatchClient({
    baseUrl: "http://x",
    matchId: MATCH,
    principal: "alice",
    accept: [{ id: "conecta4", rulesVersion: "1.0.0", viewSchemaVersion: 1, eventSchemaVersion: 1 }],
    getToken: async () => `t${++tokens}`,
    transport: factory,
    pending: store,
    clock,
    newId: () => `id-${++n}`,
    listener,
  });
  const open = async () => {
    client.start();
    await flush();
    events!.open();
  };
  const lastSync = () => sent.filter((m) => m.type === "game.sync").at(-1) as Extract<ClientMessage, { type: "game.sync" }>;
  const snap = (revision: number, over: Partial<GameSnapshot> = {}): ServerMessage => ({
    protocolVersion: 1,
    type: "game.snapshot",
    matchId: MATCH,
    subscriptionId: "s1",
    revision,
    seat: "p0",
    view: {},
    context: {},
    actions: [{ ...offer, precondition: { kind: "match", revision } }],
    result: null,
    events: [],
    ...over,
  });
  const answer = (revision: number, sub = "s1") => client.receive(snap(revision, { requestId: lastSync().requestId, subscriptionId: sub }));
  const live = (revision: number, sub = "s1") => client.receive(snap(revision, { fromRevision: revision - 1, subscriptionId: sub }));
  return {
    client,
    clock,
    sent,
    seen,
    rejected,
    open,
    answer,
    live,
    lastSync,
    snap,
    store,
    connects,
    disconnects,
    stopped,
    tokensAsked: () => tokens,
    close: () => events!.close({ opened: true, kind: "closed", reason: "x" }),
    events: () => events!,
  };
}

describe("the sync barrier", () => {
  it("accepts only the latest sync's answer and its subscription's messages", async () => {
    const h = await (async () => {
      const h = harness();
      await h.open();
      return h;
    })();
    const first = h.lastSync().requestId;
    h.clock.time += 6000;
    h.client.sync(true);
    h.client.receive(h.snap(4, { requestId: first, subscriptionId: "old" })); // a stale answer
    expect(h.seen).toEqual([]);
    h.answer(5, "s2");
    expect(h.seen).toEqual([{ live: false, revision: 5 }]);
    h.live(6, "old"); // another subscription's
    expect(h.seen).toHaveLength(1);
    h.live(6, "s2");
    h.live(6, "s2"); // a duplicate
    expect(h.seen).toEqual([{ live: false, revision: 5 }, { live: true, revision: 6 }]);
  });

  it("a gap triggers a resync instead of an incomplete sequence", async () => {
    const h = harness();
    await h.open();
    h.answer(1);
    const syncs = h.sent.filter((m) => m.type === "game.sync").length;
    h.clock.time += 2000;
    h.live(3); // 2 is missing
    expect(h.seen).toEqual([{ live: false, revision: 1 }]);
    expect(h.sent.filter((m) => m.type === "game.sync").length).toBe(syncs + 1);
    // The old subscription is closed.
    expect(h.sent.some((m) => m.type === "game.unsubscribe" && m.subscriptionId === "s1")).toBe(true);
  });

  it("a cursor ahead of the confirmed revision triggers a bounded resync", async () => {
    const h = harness();
    await h.open();
    h.answer(1);
    const count = () => h.sent.filter((m) => m.type === "game.sync").length;
    const before = count();
    h.client.receive({ protocolVersion: 1, type: "game.cursor", matchId: MATCH, subscriptionId: "s1", revision: 1 });
    expect(count()).toBe(before);
    h.client.receive({ protocolVersion: 1, type: "game.cursor", matchId: MATCH, subscriptionId: "s1", revision: 2 });
    h.client.receive({ protocolVersion: 1, type: "game.cursor", matchId: MATCH, subscriptionId: "s1", revision: 2 });
    // Within the minimum interval: one sync, later.
    await h.clock.advance(1000);
    expect(count()).toBe(before + 1);
  });

  it("an applied receipt whose view does not arrive triggers recovery", async () => {
    const h = harness();
    await h.open();
    h.answer(0);
    const cmd = h.client.command("drop", { column: 3 })!;
    h.client.receive({ protocolVersion: 1, type: "game.ack", matchId: MATCH, commandId: cmd.commandId, status: "applied", revision: 1, duplicate: false });
    const before = h.sent.filter((m) => m.type === "game.sync").length;
    await h.clock.advance(2000);
    expect(h.sent.filter((m) => m.type === "game.sync").length).toBe(before + 1);
  });
});

describe("the pending command", () => {
  it("one at a time, built from the offer's precondition", async () => {
    const h = harness();
    await h.open();
    h.answer(0);
    const cmd = h.client.command("drop", { column: 3 });
    expect(cmd).toMatchObject({ type: "game.command", precondition: { kind: "match", revision: 0 }, action: { type: "drop", payload: { column: 3 } } });
    expect(h.client.command("drop", { column: 3 })).toBeNull();
    expect(h.client.canCommand).toBe(false);
  });

  it("is kept across a reload and resent with the same UUID after game.command-unknown", async () => {
    const store = memoryPendingStore();
    const a = harness(store);
    await a.open();
    a.answer(0);
    const cmd = a.client.command("drop", { column: 3 })!;
    a.client.close(); // the page reloads before any receipt

    const b = harness(store);
    expect(b.client.pending?.commandId).toBe(cmd.commandId);
    await b.open();
    // Uncertain: the new page asks for the command's status, never sends a new command.
    expect(b.sent.find((m) => m.type === "game.command-status")).toMatchObject({ commandId: cmd.commandId });
    b.client.receive({ protocolVersion: 1, type: "game.command-unknown", matchId: MATCH, commandId: cmd.commandId });
    await b.clock.advance(300);
    const resent = b.sent.filter((m) => m.type === "game.command");
    expect(resent).toEqual([cmd]);
    b.client.receive({ protocolVersion: 1, type: "game.ack", matchId: MATCH, commandId: cmd.commandId, status: "applied", revision: 1, duplicate: false });
    expect(b.client.pending).toBeNull();
    expect(store.entries.size).toBe(0);
  });

  it("asks game.command-status when no receipt comes, and after a reconnection", async () => {
    const h = harness();
    await h.open();
    h.answer(0);
    const cmd = h.client.command("drop", { column: 3 })!;
    await h.clock.advance(5000);
    expect(h.sent.filter((m) => m.type === "game.command-status")).toHaveLength(1);
    h.close();
    await h.clock.advance(1000);
    h.events().open();
    expect(h.sent.filter((m) => m.type === "game.command-status").at(-1)).toMatchObject({ commandId: cmd.commandId });
  });

  it("a rejection is final: the pending command ends, the code is reported and offers are refreshed", async () => {
    const h = harness();
    await h.open();
    h.answer(0);
    const cmd = h.client.command("drop", { column: 3 })!;
    h.clock.time += 5000;
    h.client.receive({ protocolVersion: 1, type: "game.ack", matchId: MATCH, commandId: cmd.commandId, status: "rejected", code: "STALE_REVISION", duplicate: false });
    expect(h.rejected).toEqual(["STALE_REVISION"]);
    expect(h.client.pending).toBeNull();
    expect(h.lastSync().requestId).not.toBe("id-1");
  });

  it("UNAVAILABLE (retry-same-command) resends the same envelope", async () => {
    const h = harness();
    await h.open();
    h.answer(0);
    const cmd = h.client.command("drop", { column: 3 })!;
    h.client.receive({ protocolVersion: 1, type: "game.error", matchId: MATCH, code: "UNAVAILABLE", messageKey: "error.unavailable", recovery: "retry-same-command", commandId: cmd.commandId });
    await h.clock.advance(300);
    expect(h.sent.filter((m) => m.type === "game.command")).toEqual([cmd, cmd]);
  });
});

describe("failed and refused connections", () => {
  /** Starts the client and lets its first connection attempt begin. */
  const started = async () => {
    const h = harness();
    h.client.start();
    await flush();
    return h;
  };
  /** The gaps between consecutive connection attempts. */
  const gaps = (h: ReturnType<typeof harness>) => h.connects.slice(1).map((c, i) => c.at - h.connects[i]!.at);

  it("a refused token (unauthenticated) is reported, and getToken is asked again after a backoff", async () => {
    const h = await started();
    expect(h.connects.map((c) => c.token)).toEqual(["t1"]);
    h.events().close({ opened: false, kind: "unauthenticated", status: 401, code: "UNAUTHENTICATED", reason: "handshake refused (HTTP 401)" });
    expect(h.client.connection).toBe("closed");
    expect(h.client.lastClose).toMatchObject({ kind: "unauthenticated", status: 401 });
    expect(h.disconnects.map((d) => d.kind)).toEqual(["unauthenticated"]);
    await h.clock.advance(400);
    expect(h.connects).toHaveLength(1); // not at once: a backoff first
    await h.clock.advance(800);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t2"]);
    expect(h.tokensAsked()).toBe(2);
    h.events().open();
    h.answer(0);
    expect(h.client.connection).toBe("open");
    expect(h.client.canCommand).toBe(true);
  });

  it("a token refused again and again backs off further each time (no busy loop), asking for a new one each time", async () => {
    const h = await started();
    for (let i = 0; i < 5; i++) {
      h.events().close({ opened: false, kind: "unauthenticated", reason: "401" });
      await h.clock.advance(20_000);
    }
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t2", "t3", "t4", "t5", "t6"]);
    const g = gaps(h);
    for (let i = 1; i < g.length; i++) expect(g[i]!).toBeGreaterThan(g[i - 1]!);
  });

  it("Socket.IO's refusal after connecting (open, then unauthenticated) does not reset the backoff", async () => {
    const h = await started();
    for (let i = 0; i < 4; i++) {
      h.events().open();
      h.events().close({ opened: true, kind: "unauthenticated", code: "UNAUTHENTICATED", reason: "token refused" });
      await h.clock.advance(20_000);
    }
    const g = gaps(h);
    expect(g).toHaveLength(4);
    for (let i = 1; i < g.length; i++) expect(g[i]!).toBeGreaterThan(g[i - 1]!);
    expect(h.tokensAsked()).toBe(5);
  });

  it("a handshake refused without a reason (a browser hides the status) asks for a new token too", async () => {
    const h = await started();
    h.events().close({ opened: false, kind: "refused", reason: "handshake refused" });
    await h.clock.advance(1000);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t2"]);
  });

  it("a full server (unavailable) is retried with the same token, not before its Retry-After", async () => {
    const h = await started();
    h.events().close({ opened: false, kind: "unavailable", status: 503, retryAfterMs: 5000, reason: "503" });
    await h.clock.advance(4900);
    expect(h.connects).toHaveLength(1);
    await h.clock.advance(200);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t1"]);
    expect(h.tokensAsked()).toBe(1);
  });

  it("an unreachable server (network, timeout) is retried with the same token", async () => {
    const h = await started();
    h.events().close({ opened: false, kind: "network", reason: "ECONNREFUSED" });
    await h.clock.advance(1000);
    h.events().close({ opened: false, kind: "timeout", reason: "no handshake" });
    await h.clock.advance(2000);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t1", "t1"]);
  });

  it("a transport written before `kind` existed: a handshake that never opened is taken as refused", async () => {
    const h = await started();
    (h.events().close as (info: { opened: boolean; reason: string }) => void)({ opened: false, reason: "401" });
    await h.clock.advance(1000);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t2"]);
    expect(h.client.lastClose?.kind).toBe("refused");
  });

  it("no WebSocket implementation (unsupported) stops the client instead of retrying", async () => {
    const h = await started();
    h.events().close({ opened: false, kind: "unsupported", reason: "no WebSocket" });
    await h.clock.advance(60_000);
    expect(h.connects).toHaveLength(1);
    expect(h.stopped).toEqual(["NO_WEBSOCKET"]);
    expect(h.client.stopped).toBe("NO_WEBSOCKET");
  });

  it("a reauthenticate error on an open connection gets a new token after a backoff", async () => {
    const h = await started();
    h.events().open();
    h.answer(0);
    h.client.receive({ protocolVersion: 1, type: "game.error", code: "UNAUTHENTICATED", messageKey: "error.unauthenticated", recovery: "reauthenticate" });
    expect(h.client.connection).toBe("closed");
    expect(h.client.lastClose?.kind).toBe("unauthenticated");
    expect(h.connects).toHaveLength(1);
    await h.clock.advance(1000);
    expect(h.connects.map((c) => c.token)).toEqual(["t1", "t2"]);
  });

  it("the transport gets the WebSocket implementation and the connect timeout", async () => {
    class MyWebSocket {
      readyState = 0;
      onopen = null;
      onmessage = null;
      onerror = null;
      onclose = null;
      send() {}
      close() {}
    }
    const connects: (TransportOptions | undefined)[] = [];
    const client = new MatchClient({
      baseUrl: "http://x",
      matchId: MATCH,
      principal: "alice",
      accept: [],
      getToken: async () => "t",
      transport: (_u, _t, _e, options) => (connects.push(options), { send: () => false, close: () => {} }),
      webSocket: MyWebSocket,
      connectTimeoutMs: 1234,
      clock: new FakeClock(),
    });
    client.start();
    await flush();
    expect(connects).toEqual([{ webSocket: MyWebSocket, connectTimeoutMs: 1234 }]);
  });
});
