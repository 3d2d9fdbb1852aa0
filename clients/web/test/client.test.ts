// The client half of the protocol: the sync barrier, the pending command kept across
// reloads and retried with the same UUID, game.command-status on uncertainty.
import { describe, expect, it } from "vitest";
import { MatchClient, type ClientListener } from "../src/lib/client";
import { memoryPendingStore } from "../src/lib/pending";
import type { TransportEvents, TransportFactory } from "../src/lib/transport";
import type { ClientMessage, GameSnapshot, ServerMessage } from "../src/protocol/generated";
import { FakeClock, flush } from "./fakes";

const MATCH = "0b6e0000-0000-4000-8000-000000000001";
const offer = { type: "drop", payload: { column: 3 }, precondition: { kind: "match" as const, revision: 0 } };

function harness(store = memoryPendingStore()) {
  const clock = new FakeClock();
  const sent: ClientMessage[] = [];
  let events: TransportEvents | null = null;
  let tokens = 0;
  const factory: TransportFactory = (_url, _token, ev) => {
    events = ev;
    return { send: (m) => (sent.push(m), true), close: () => {} };
  };
  let n = 0;
  const seen: { live: boolean; revision: number }[] = [];
  const rejected: string[] = [];
  const listener: ClientListener = {
    snapshot: (c, _e, live) => seen.push({ live, revision: c.revision }),
    rejected: (code) => rejected.push(code),
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
  return { client, clock, sent, seen, rejected, open, answer, live, lastSync, snap, store, close: () => events!.close({ opened: true, reason: "x" }), events: () => events! };
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

  it("a handshake that never opened fetches a new token", async () => {
    const h = harness();
    h.client.start();
    await flush();
    h.events().close({ opened: false, reason: "401" });
    await h.clock.advance(1000);
    await flush();
    h.events().open();
    expect(h.client.connection).toBe("open");
  });
});
