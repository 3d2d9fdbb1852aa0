// Real-time input (`queue` commands, spec/engine.md § Real-time commands): several in flight,
// each settled by its own receipt (with its sequence), resent unchanged on RATE_LIMITED,
// asked for after a reconnection, a stale one given up; the seats' controllers as each
// snapshot states them.
import { describe, expect, it } from "vitest";
import { MatchClient, type QueueReceipt } from "../src/lib/client";
import type { TransportEvents, TransportFactory } from "../src/lib/transport";
import type { ClientMessage, GameCommand, ServerMessage } from "../src/protocol/generated";
import { FakeClock, flush } from "./fakes";

const MATCH = "0b6e0000-0000-4000-8000-000000000002";
const queue = { kind: "queue" as const };
const offers = [
  { type: "move", payload: { direction: "east" }, precondition: queue },
  { type: "move", payload: { direction: "south" }, precondition: queue },
];

function harness(maxInFlight = 4) {
  const clock = new FakeClock();
  const sent: ClientMessage[] = [];
  let events: TransportEvents | null = null;
  const factory: TransportFactory = (_url, _token, ev) => {
    events = ev;
    return { send: (m) => (sent.push(m), true), close: () => {} };
  };
  let n = 0;
  const receipts: [QueueReceipt, GameCommand][] = [];
  const client = new MatchClient({
    baseUrl: "http://x",
    matchId: MATCH,
    principal: "alice",
    accept: [{ id: "laberinto", rulesVersion: "1.0.0", viewSchemaVersion: 1, eventSchemaVersion: 1 }],
    getToken: async () => "t",
    transport: factory,
    clock,
    newId: () => `id-${++n}`,
    maxInFlight,
    listener: { queued: (r, c) => receipts.push([r, c]) },
  });
  const open = async () => {
    client.start();
    await flush();
    events!.open();
  };
  const lastSync = () => sent.filter((m) => m.type === "game.sync").at(-1) as Extract<ClientMessage, { type: "game.sync" }>;
  const snapshot = (revision: number, over: Record<string, unknown> = {}): ServerMessage =>
    ({
      protocolVersion: 1,
      type: "game.snapshot",
      matchId: MATCH,
      subscriptionId: "s1",
      revision,
      seat: "p0",
      view: { records: [] },
      context: {},
      actions: offers,
      result: null,
      events: [],
      ...over,
    }) as ServerMessage;
  const answer = (revision: number, over: Record<string, unknown> = {}) => client.receive(snapshot(revision, { requestId: lastSync().requestId, ...over }));
  const live = (revision: number, over: Record<string, unknown> = {}) => client.receive(snapshot(revision, { fromRevision: revision - 1, ...over }));
  const ack = (c: GameCommand, status: "applied" | "rejected", sequence: number, revision?: number) =>
    client.receive({ protocolVersion: 1, type: "game.ack", matchId: MATCH, commandId: c.commandId, status, sequence, revision: revision ?? null, code: status === "rejected" ? "ILLEGAL_ACTION" : null, duplicate: false });
  const commands = () => sent.filter((m) => m.type === "game.command") as GameCommand[];
  return { client, clock, sent, receipts, open, answer, live, ack, commands, events: () => events! };
}

describe("queue commands", () => {
  it("several in flight, each with the queue precondition, bounded by maxInFlight", async () => {
    const h = harness(3);
    await h.open();
    h.answer(4);
    const a = h.client.command("move", { direction: "east" })!;
    // The payload is the caller's: the offers describe a cell the first move will leave.
    const b = h.client.command("move", { direction: "north" })!;
    const c = h.client.command("move", { direction: "north" })!;
    expect([a, b, c].map((x) => [x.precondition, x.action.payload])).toEqual([
      [queue, { direction: "east" }],
      [queue, { direction: "north" }],
      [queue, { direction: "north" }],
    ]);
    expect(new Set([a.commandId, b.commandId, c.commandId]).size).toBe(3);
    expect(h.client.canEnqueue).toBe(false);
    expect(h.client.command("move", { direction: "west" })).toBeNull();
    expect(h.client.pending).toBeNull();
    expect(h.client.queueStats).toMatchObject({ sent: 3, maxInFlight: 3 });
    expect(h.client.inFlight.size).toBe(3);
  });

  it("an action the snapshot does not offer is not sent", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    expect(h.client.command("drop", {})).toBeNull();
    expect(h.commands()).toEqual([]);
  });

  it("each receipt settles its own command, in any order, with its sequence; none changes the view", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    const a = h.client.command("move", { direction: "east" })!;
    const b = h.client.command("move", { direction: "south" })!;
    const view = h.client.confirmed;
    h.ack(b, "rejected", 8);
    h.ack(a, "applied", 7, 5);
    expect(h.client.confirmed).toBe(view);
    expect(h.receipts.map(([r, c]) => [c.commandId, r.status, r.sequence, r.code])).toEqual([
      [b.commandId, "rejected", 8, "ILLEGAL_ACTION"],
      [a.commandId, "applied", 7, null],
    ]);
    expect(h.client.inFlight.size).toBe(0);
    expect(h.client.queueStats).toMatchObject({ sent: 2, applied: 1, rejected: 1, dropped: 0, lastSequence: 8 });
    // A receipt for nothing in flight is ignored.
    h.ack(a, "applied", 7, 5);
    expect(h.receipts).toHaveLength(2);
  });

  it("an applied receipt whose view does not follow triggers a resync", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    const a = h.client.command("move", { direction: "east" })!;
    h.ack(a, "applied", 1, 5);
    const syncs = () => h.sent.filter((m) => m.type === "game.sync").length;
    const before = syncs();
    await h.clock.advance(2000);
    expect(syncs()).toBe(before + 1);
    // When it does follow, no resync.
    h.answer(5);
    const b = h.client.command("move", { direction: "east" })!;
    h.ack(b, "applied", 2, 6);
    h.live(6);
    const now = syncs();
    await h.clock.advance(3000);
    expect(syncs()).toBe(now);
  });

  it("RATE_LIMITED resends the same envelope after a backoff; too many refusals give it up", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    const a = h.client.command("move", { direction: "east" })!;
    const limited = () =>
      h.client.receive({ protocolVersion: 1, type: "game.error", matchId: MATCH, code: "RATE_LIMITED", messageKey: "error.rate_limited", recovery: "retry-same-command", commandId: a.commandId });
    limited();
    await h.clock.advance(200);
    expect(h.commands()).toEqual([a, a]);
    for (let i = 0; i < 5; i++) {
      limited();
      await h.clock.advance(5000);
    }
    expect(h.client.inFlight.size).toBe(0);
    expect(h.client.queueStats.dropped).toBe(1);
    expect(h.commands().every((c) => c.commandId === a.commandId)).toBe(true);
  });

  it("after a reconnection: asks each one's status; resends a fresh unknown one, gives up a stale one", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    const old = h.client.command("move", { direction: "east" })!;
    h.clock.time += 1500;
    const fresh = h.client.command("move", { direction: "south" })!;
    h.events().close({ opened: true, kind: "closed", reason: "network" });
    await h.clock.advance(700);
    h.events().open();
    const asked = h.sent.filter((m) => m.type === "game.command-status").map((m) => (m as { commandId: string }).commandId);
    expect(asked).toEqual([old.commandId, fresh.commandId]);
    for (const c of [old, fresh]) h.client.receive({ protocolVersion: 1, type: "game.command-unknown", matchId: MATCH, commandId: c.commandId });
    await h.clock.advance(200);
    expect(h.commands().filter((c) => c.commandId === fresh.commandId)).toHaveLength(2);
    expect(h.commands().filter((c) => c.commandId === old.commandId)).toHaveLength(1);
    expect([...h.client.inFlight.keys()]).toEqual([fresh.commandId]);
    expect(h.client.queueStats.dropped).toBe(1);
  });

  it("asks the status of a command whose receipt does not come", async () => {
    const h = harness();
    await h.open();
    h.answer(4);
    const a = h.client.command("move", { direction: "east" })!;
    await h.clock.advance(5000);
    expect(h.sent.filter((m) => m.type === "game.command-status")).toEqual([{ protocolVersion: 1, type: "game.command-status", matchId: MATCH, commandId: a.commandId }]);
  });

  it("nothing is sent offline, before a view, or once the match is over", async () => {
    const h = harness();
    expect(h.client.command("move", { direction: "east" })).toBeNull();
    await h.open();
    expect(h.client.command("move", { direction: "east" })).toBeNull();
    h.answer(4, { result: { kind: "completed", reasonCode: "exit", participants: {} } });
    expect(h.client.command("move", { direction: "east" })).toBeNull();
    expect(h.commands()).toEqual([]);
  });
});

describe("the seats' controllers", () => {
  it("each snapshot's own: a change of hands, and back", async () => {
    const h = harness();
    await h.open();
    h.answer(4, { controllers: { p0: "human", p1: "bot" } });
    expect(h.client.confirmed?.controllers).toEqual({ p0: "human", p1: "bot" });
    h.live(5, { controllers: { p0: "human", p1: "bot" } });
    h.live(6, { controllers: { p0: "handover", p1: "bot" } });
    expect(h.client.confirmed?.controllers).toEqual({ p0: "handover", p1: "bot" });
  });

  it("absent: every seat is played by its human", async () => {
    const h = harness();
    await h.open();
    h.answer(4, { controllers: { p0: "handover", p1: "human" } });
    // The human came back: the revision of the change of hands carries no map.
    h.live(5);
    expect(h.client.confirmed?.controllers).toBeNull();
  });
});
