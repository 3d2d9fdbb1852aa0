// Laberinto in the web client: the view's records (each ≤ 512 bytes, chunked as
// libs/games/laberinto/src/view.rs cuts them, validated against the package's view schema)
// joined into one maze, the contract's breaches refused with typed errors, the fog of war
// drawn from them (lit, remembered, dark), the plan of each transition (every step
// non-blocking, valid against the presentation-plan schema), and the texts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { EFFECT_PARAMS, bearingOf, buildTransitionPlan, describePlace, laberinto, observerLines, statusLines } from "../src/games/laberinto";
import { FogMemory, RECORD_MAX_BYTES, ViewError, exitSide, fogCells, mazeSvg, neighbour, openWays, readMaze } from "../src/games/laberinto/maze";
import type { Projection } from "../src/games/types";
import { MAX_BLOCKING_PLAN_MS, validatePlan } from "../src/present/plan";

const root = join(__dirname, "../../..");
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
ajv.addFormat("uint32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff });
ajv.addFormat("uint64", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) });
const load = (path: string) => JSON.parse(readFileSync(join(root, path), "utf8"));
const viewSchema = ajv.compile(load("libs/games/laberinto/package/schemas/view.json"));
const eventSchema = ajv.compile(load("libs/games/laberinto/package/schemas/visible-events.json"));
const planSchema = ajv.compile(load("libs/packages/schemas/presentation-plan.json"));

import { H, W, all, exitP0, type Obj, p0View, passages, records, seen, status } from "./fixtures/maze";

describe("the view's records", () => {
  it("are each at most 512 bytes, valid against the package's view schema, and join into one maze", () => {
    const view = p0View(0);
    expect(view.records.length).toBeGreaterThan(1);
    for (const r of view.records) expect(new TextEncoder().encode(JSON.stringify(r)).length).toBeLessThanOrEqual(RECORD_MAX_BYTES);
    expect(viewSchema(view), JSON.stringify(viewSchema.errors)).toBe(true);
    const m = readMaze(view);
    expect([m.width, m.height, m.role, m.phase, m.seq]).toEqual([W, H, "p0", "racing", 3]);
    expect([...m.cells.keys()].sort((a, b) => a - b)).toEqual(seen(0));
    expect(m.cells.get(21)).toEqual({ n: false, e: true, s: true, w: false });
    expect(m.positions).toEqual({ p0: 0 });
    expect(m.status).toEqual({ p0: status() });
    expect(m.objects).toEqual([{ kind: "key", owner: "p0", variant: null, cell: 9 }]);
  });

  it("in any order; the opponent is named by seat", () => {
    const view = p0View(24, { players: { opponent: 26 } });
    const m = readMaze({ records: [...view.records].reverse() });
    expect(m.positions).toEqual({ p0: 24, p1: 26 });
    expect(m.cells.size).toBe(seen(24).length);
  });

  it("an observer's: every cell, both players, both statuses", () => {
    const view = records({ role: "observer", cells: all, objects: [exitP0], players: { p0: 0, p1: 48 }, status: { p0: status(), p1: status({ exitOpen: true }) } });
    expect(viewSchema(view), JSON.stringify(viewSchema.errors)).toBe(true);
    const m = readMaze(view);
    expect(m.cells.size).toBe(W * H);
    expect(m.positions).toEqual({ p0: 0, p1: 48 });
    expect(m.status.p1?.exitOpen).toBe(true);
  });

  const kind = (view: unknown) => {
    try {
      readMaze(view);
      return "read";
    } catch (e) {
      expect(e).toBeInstanceOf(ViewError);
      return (e as ViewError).kind;
    }
  };
  const copy = () => JSON.parse(JSON.stringify(p0View(0))) as { records: Record<string, unknown>[] };
  it("refuses what breaks the contract, with a typed error", () => {
    expect(kind({ records: [] })).toBe("no-records");
    expect(kind(null)).toBe("no-records");
    let v = copy();
    v.records.pop();
    expect(kind(v)).toBe("chunks");
    v = copy();
    v.records[1]!.chunk = 0;
    expect(kind(v)).toBe("chunks");
    v = copy();
    v.records[1]!.seq = 4;
    expect(kind(v)).toBe("header");
    v = copy();
    v.records[1]!.status = status();
    expect(kind(v)).toBe("status");
    v = copy();
    (v.records[1]!.cells as unknown[]).push((v.records[1]!.cells as unknown[])[0]);
    expect(kind(v)).toBe("duplicate");
    v = copy();
    (v.records[1]!.cells as { index: number }[])[0]!.index = W * H;
    expect(kind(v)).toBe("bounds");
    v = copy();
    v.records[0]!.objects = Array.from({ length: 12 }, () => ({ kind: "artifact", owner: null, variant: "vision", cell: 1 }));
    expect(kind(v)).toBe("too-large");
  });
});

describe("the fog of war", () => {
  it("lit now, remembered from before (walls only, and the exits and compasses), dark elsewhere", () => {
    const memory = new FogMemory();
    const first = readMaze(p0View(0));
    memory.remember(first);
    const later = readMaze(p0View(6));
    memory.remember(later);
    const cells = fogCells(later, memory);
    const lit = cells.filter((c) => c.state === "lit").map((c) => c.index);
    const remembered = cells.filter((c) => c.state === "remembered").map((c) => c.index);
    expect(lit).toEqual(seen(6));
    expect(remembered).toEqual(seen(0).filter((c) => !seen(6).includes(c)));
    expect(cells.find((c) => c.index === 0)?.passages).toEqual(passages(0));
    // The key seen at 9 is not remembered (it may move); nothing of it is drawn now.
    const svg = mazeSvg(later, memory, "p0");
    expect(svg).toContain(`data-lit="${seen(6).length}"`);
    expect(svg).toContain(`data-remembered="${remembered.length}"`);
    expect(svg).not.toContain("mz-key");
  });

  it("draws every closed side of the cells it knows, the objects in sight and the players", () => {
    const m = readMaze(p0View(24, { players: { opponent: 26 }, objects: [{ kind: "key", owner: "p1", variant: "carried", cell: 26 }] }));
    const svg = mazeSvg(m, null, "p0");
    const wallsLit = /class="mz-walls lit" d="([^"]*)"/.exec(svg)![1]!;
    const closed = seen(24).reduce((n, c) => n + Object.values(passages(c)).filter((open) => !open).length, 0);
    expect(wallsLit.match(/M/g)?.length).toBe(closed);
    expect(/class="mz-floor lit" d="([^"]*)"/.exec(svg)![1]!.match(/z/g)?.length).toBe(seen(24).length);
    expect(svg).toContain('class="mz-player p0 self" data-seat="p0" data-cell="24"');
    expect(svg).toContain('class="mz-player p1" data-seat="p1" data-cell="26"');
    // The rival carries p1's key: drawn on the rival, not on the ground.
    expect(svg).toContain("mz-key p1 carried");
    expect(svg.match(/class="mz-key /g)).toHaveLength(2); // the ground key at 9 and the carried one
  });

  it("a remembered exit stays, dim, where the player saw it", () => {
    const memory = new FogMemory();
    memory.remember(readMaze(p0View(45)));
    const far = readMaze(p0View(0));
    memory.remember(far);
    const svg = mazeSvg(far, memory, "p0");
    expect(svg).toContain('class="mz-exit p0 dim"');
    expect(exitSide(far, 45)).toBe("south");
    expect(exitSide(far, 3)).toBe("north");
  });

  it("another maze's size forgets what was seen", () => {
    const memory = new FogMemory();
    memory.remember(readMaze(p0View(0)));
    memory.remember({ ...readMaze(p0View(0)), width: 9, cells: new Map() });
    expect(memory.cells.size).toBe(0);
  });

  it("geometry: neighbours, ways out, bearings", () => {
    const m = readMaze(p0View(0));
    expect([neighbour(m, 0, "north"), neighbour(m, 0, "east"), neighbour(m, 6, "east"), neighbour(m, 42, "south"), neighbour(m, 8, "west")]).toEqual([null, 1, null, null, 7]);
    expect(openWays(passages(6))).toEqual(["south", "west"]);
    expect([bearingOf(W, 24, 10), bearingOf(W, 24, 26), bearingOf(W, 24, 32), bearingOf(W, 24, 24), bearingOf(W, 24, 45), bearingOf(W, 24, 30)]).toEqual(["n", "e", "se", null, "s", "sw"]);
  });
});

// ---- plans ----
const proj = (revision: number, view: unknown, events: Projection["events"] = [], seat: string | null = "p0"): Projection => ({ revision, view, context: { raceStartsMs: 1000 }, actions: [], result: null, seat, events });
const ev = (type: string, data: unknown, i = 0) => ({ eventId: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`, type, data });
function plan(from: unknown, to: unknown, events: Projection["events"], seat: string | null = "p0") {
  for (const e of events) expect(eventSchema({ type: e.type, data: e.data }), `${e.type}: ${JSON.stringify(eventSchema.errors)}`).toBe(true);
  const p = buildTransitionPlan({ from: proj(4, from, [], seat), to: proj(5, to, events, seat), events });
  expect(planSchema(p), JSON.stringify(planSchema.errors)).toBe(true);
  // The module's own effects, with their own params checks.
  validatePlan(p, { has: (e) => e in EFFECT_PARAMS, validParams: (e, x) => EFFECT_PARAMS[e as keyof typeof EFFECT_PARAMS](x) });
  // Nothing holds the board back: a real-time view settles at once.
  expect(p.steps.every((s) => !s.blocking)).toBe(true);
  expect(p.steps.reduce((ms, s) => ms + (s.blocking ? s.timeoutMs : 0), 0)).toBeLessThanOrEqual(MAX_BLOCKING_PLAN_MS);
  return p;
}

describe("the plan of a transition", () => {
  it("a move slides the token from its last cell", () => {
    const p = plan(p0View(0), p0View(1), [ev("player.moved", { seat: "p0", cell: 1 })]);
    expect(p.steps.map((s) => [s.effect, s.params, s.trigger])).toEqual([["maze.step", { seat: "p0", from: 0, to: 1 }, { after: [] }]]);
  });

  it("the key picked up flashes after the move that reached it", () => {
    const p = plan(p0View(8), p0View(9, { status: { inventory: "p0" } }), [ev("player.moved", { seat: "p0", cell: 9 }, 0), ev("key.picked", { seat: "p0", owner: "p0" }, 1)]);
    expect(p.steps.map((s) => [s.id, s.effect, s.params, s.trigger])).toEqual([
      ["step-0", "maze.step", { seat: "p0", from: 8, to: 9 }, { after: [] }],
      ["flash-1", "maze.flash", { kind: "key", cell: 9 }, { after: ["step-0"] }],
    ]);
  });

  it("a rival coming into sight has no previous cell: nothing slides; a meeting flashes", () => {
    const p = plan(p0View(24), p0View(24, { players: { opponent: 25 } }), [ev("player.moved", { seat: "p1", cell: 25 })]);
    expect(p.steps).toEqual([]);
    const met = plan(p0View(24, { players: { opponent: 25 } }), p0View(25, { players: { opponent: 25 } }), [ev("player.moved", { seat: "p0", cell: 25 }, 0), ev("players.met", { meetingSeq: 1 }, 1)]);
    expect(met.steps.map((s) => [s.effect, s.params])).toEqual([
      ["maze.step", { seat: "p0", from: 24, to: 25 }],
      ["maze.flash", { kind: "meet", cell: 25 }],
    ]);
  });

  it("an exit opened flashes on the exit; the start and the end show a cue", () => {
    const open = { ...exitP0, variant: "open" };
    const at45 = (o: Obj) => records({ role: "p0", cells: seen(45), objects: [o], players: { self: 45 }, status: status({ inventory: "p0", exitOpen: o.variant === "open" }) });
    const p = plan(records({ role: "p0", cells: seen(44), objects: [exitP0], players: { self: 44 }, status: status({ inventory: "p0" }) }), at45(open), [ev("player.moved", { seat: "p0", cell: 45 }, 0), ev("exit.opened", { seat: "p0" }, 1)]);
    expect(p.steps.map((s) => [s.effect, s.params])).toEqual([
      ["maze.step", { seat: "p0", from: 44, to: 45 }],
      ["maze.flash", { kind: "exit", cell: 45 }],
    ]);
    expect(plan(p0View(0), p0View(0), [ev("race.started", {})]).steps.map((s) => [s.effect, s.params])).toEqual([["maze.cue", { cue: "go" }]]);
    expect(plan(p0View(0), p0View(0), [ev("match.finished", { reason: "exit" })]).steps.map((s) => s.params)).toEqual([{ cue: "finish" }]);
  });

  it("an observer's: both tokens slide", () => {
    const obs = (p0: number, p1: number) => records({ role: "observer", cells: all, players: { p0, p1 }, status: { p0: status(), p1: status() } });
    const p = plan(obs(0, 48), obs(1, 47), [ev("player.moved", { seat: "p0", cell: 1 }, 0), ev("player.moved", { seat: "p1", cell: 47 }, 1)], null);
    expect(p.steps.map((s) => s.params)).toEqual([
      { seat: "p0", from: 0, to: 1 },
      { seat: "p1", from: 48, to: 47 },
    ]);
  });
});

describe("texts", () => {
  const api = {
    name: (s: string) => ({ p0: "Ana", p1: "Bot" })[s] ?? s,
    t: (k: string, v: Record<string, string | number> = {}) => `${k}${Object.keys(v).length ? `(${Object.entries(v).map(([a, b]) => `${a}=${b}`).join(", ")})` : ""}`,
  };
  it("where the player is, the ways out and what is in sight", () => {
    const lines = describePlace(readMaze(p0View(8, { players: { opponent: 10 } })), "p0", api);
    expect(lines).toEqual([
      "laberinto.where(row=2, column=2, ways=laberinto.dir.east, laberinto.dir.west)",
      "laberinto.in-sight(things=laberinto.thing.key-own(name=Ana, where=laberinto.offset(dist=1, bearing=laberinto.bearing.e)); laberinto.thing.rival(name=Bot, where=laberinto.offset(dist=2, bearing=laberinto.bearing.e)))",
    ]);
  });
  it("the status panel: one's own in the second person, a spectator's of each player by name", () => {
    expect(statusLines(api, "p0", status({ inventory: "p1", compass: "nw", visionMoves: 4 }))).toEqual([
      "laberinto.key.rival(name=Bot)",
      "laberinto.compass.some(bearing=laberinto.bearing.nw)",
      "laberinto.vision.some(n=4)",
      "laberinto.exit.closed",
    ]);
    expect(observerLines(api, "p1", status({ inventory: "p1", exitOpen: true }))).toEqual([
      "laberinto.obs.key.own(name=Bot)",
      "laberinto.obs.compass.none(name=Bot)",
      "laberinto.obs.vision.none(name=Bot)",
      "laberinto.obs.exit.open(name=Bot)",
    ]);
    expect(statusLines(api, "p0", undefined)).toEqual([]);
  });
  it("the status says the next objective", () => {
    const at = (st: Record<string, unknown>, actions = [{ type: "move", payload: { direction: "east" }, precondition: { kind: "queue" as const } }]) => ({ ...proj(5, p0View(0, { status: st })), actions });
    expect(laberinto.status(at({}), api)).toBe("laberinto.status.find-key");
    expect(laberinto.status(at({ inventory: "p0" }), api)).toBe("laberinto.status.carry-key");
    expect(laberinto.status(at({ inventory: "p1" }), api)).toBe("laberinto.status.rival-key(name=Bot)");
    expect(laberinto.status(at({ inventory: "p0", exitOpen: true }), api)).toBe("laberinto.status.go-out");
    expect(laberinto.status(at({ exitOpen: true }, []), api)).toBe("laberinto.status.out");
    expect(laberinto.status(proj(1, records({ role: "p0", phase: "countdown", cells: seen(0), players: { self: 0 }, status: status() })), api)).toBe("laberinto.status.countdown");
  });
  it("the result: first out, or a draw within the window", () => {
    const done = (reasonCode: string, p0: string, p1: string, seat: string | null = "p0") => ({
      ...proj(9, p0View(0), [], seat),
      result: { kind: "completed" as const, reasonCode, participants: { p0: { outcome: p0 as "win" }, p1: { outcome: p1 as "loss" } } },
    });
    expect(laberinto.resultText!(done("exit", "win", "loss"), api)).toBe("laberinto.result.win");
    expect(laberinto.resultText!(done("exit", "loss", "win"), api)).toBe("laberinto.result.loss(name=Bot)");
    expect(laberinto.resultText!(done("exit", "loss", "win", null), api)).toBe("laberinto.result.winner(name=Bot)");
    expect(laberinto.resultText!(done("finish-window", "draw", "draw"), api)).toBe("laberinto.result.draw");
  });
  it("a transition names the key, the meeting, the compass and the rival coming into sight", () => {
    const t = (from: unknown, to: unknown, events: Projection["events"]) => laberinto.describe({ from: proj(4, from), to: proj(5, to, events), events }, api);
    expect(t(p0View(8), p0View(9, { status: { inventory: "p0" } }), [ev("key.picked", { seat: "p0", owner: "p0" })])).toEqual(["laberinto.picked.own(name=Ana)"]);
    expect(t(p0View(8), p0View(8, { status: { compass: "se" } }), [])).toEqual(["laberinto.compass-points(bearing=laberinto.bearing.se)"]);
    expect(t(p0View(24), p0View(24, { players: { opponent: 25 } }), [ev("player.moved", { seat: "p1", cell: 25 })])).toEqual(["laberinto.rival-seen(name=Bot)"]);
    expect(t(p0View(24), p0View(24), [ev("players.met", { meetingSeq: 2 })])).toEqual(["laberinto.met"]);
  });
  it("the server instant the race started at teaches the page's clock, only on its live snapshot", () => {
    const started = { ...proj(2, p0View(0), [ev("race.started", {})]), context: { raceStartsMs: 123_456 } };
    expect(laberinto.instants!(started, true)).toEqual([123_456]);
    expect(laberinto.instants!(started, false)).toEqual([]);
    expect(laberinto.instants!({ ...started, events: [] }, true)).toEqual([]);
  });
});
