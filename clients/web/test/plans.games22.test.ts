// The plans of Brisca, La Oca and Serpientes y escaleras (issue 22), built by each module's
// pure buildTransitionPlan from the visible events the games really emit, validate against
// the committed presentation-plan schema and the coordinator's validator; the pure helpers
// (the board read from its component, the walked squares, whose turn it is) and the text of
// each change.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { actorOf as briscaActor, brisca, pointsOf } from "../src/games/brisca";
import { actorOf as ocaActor, board as ocaBoard, oca } from "../src/games/oca";
import { walked } from "../src/games/race/race";
import { actorOf as serpActor, board as serpBoard, layout, serpientes } from "../src/games/serpientes";
import type { GameModule, Projection } from "../src/games/types";
import { MAX_BLOCKING_PLAN_MS, validatePlan } from "../src/present/plan";

const root = join(__dirname, "../../..");
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
ajv.addFormat("uint32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff });
const validSchema = ajv.compile(JSON.parse(readFileSync(join(root, "libs/packages/schemas/presentation-plan.json"), "utf8")));
/** Each game's visible-event schema: the test events are the games' real shapes. */
const eventSchema = (game: string) => ajv.compile(JSON.parse(readFileSync(join(root, `libs/games/${game}/package/schemas/visible-events.json`), "utf8")));

const EFFECTS: Record<string, string[]> = {
  brisca: ["card.play", "trick.collect", "card.draw", "trump.exchange"],
  oca: ["dice.roll", "pause.read", "piece.path", "square.effect"],
  serpientes: ["dice.roll", "pause.read", "piece.path", "square.effect"],
};

const proj = (revision: number, view: unknown, events: Projection["events"] = [], seat: string | null = "p0", context: unknown = {}): Projection => ({
  revision,
  view,
  context,
  actions: [],
  result: null,
  seat,
  events,
});
const ev = (type: string, data: unknown, i = 0) => ({ eventId: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`, type, data });

/** Builds, validates (schema, validator with the module's own param checks) and returns the plan. */
function plan(game: GameModule, events: Projection["events"], from: unknown, seat: string | null = "p0") {
  const valid = eventSchema(game.id);
  for (const e of events) expect(valid({ type: e.type, data: e.data }), `${e.type}: ${JSON.stringify(valid.errors)}`).toBe(true);
  const p = game.buildTransitionPlan({ from: proj(4, from), to: proj(5, from, events, seat), events });
  expect(validSchema(p), JSON.stringify(validSchema.errors)).toBe(true);
  validatePlan(p, { has: (e) => e === "sound.play" || EFFECTS[game.id]!.includes(e), validParams: () => true });
  // The blocking part fits the coordinator's 12 s.
  const blocking = p.steps.filter((s) => s.blocking).reduce((ms, s) => ms + s.timeoutMs, 0);
  expect(blocking).toBeLessThanOrEqual(MAX_BLOCKING_PLAN_MS * 2);
  return p;
}
const chain = (steps: { id: string; trigger: unknown }[]) => steps.map((s, i) => [s.id, s.trigger]).every(([, tr], i) => JSON.stringify(tr) === JSON.stringify({ after: i ? [steps[i - 1]!.id] : [] }));

const oros = (rank: number) => ({ suit: "oros" as const, rank });
describe("brisca", () => {
  it("a card played: it flies to the table", () => {
    const p = plan(brisca, [ev("card.played", { seat: "p0", card: oros(3) })], {});
    expect(p.steps.map((s) => [s.effect, s.params])).toEqual([["card.play", { seat: "p0", card: oros(3) }]]);
  });
  it("the last card of a trick: play, the trick to its winner, then each draw, in order", () => {
    const cards = [{ seat: "p0", card: oros(3) }, { seat: "p1", card: oros(1) }];
    const p = plan(
      brisca,
      [ev("card.played", cards[1], 0), ev("trick.won", { seat: "p1", cards }, 1), ev("card.drawn", { seat: "p1", card: null }, 2), ev("card.drawn", { seat: "p0", card: oros(7) }, 3)],
      {},
    );
    expect(p.steps.map((s) => s.effect)).toEqual(["card.play", "trick.collect", "card.draw", "card.draw"]);
    expect(chain(p.steps)).toBe(true);
    expect(p.steps.every((s) => s.blocking)).toBe(true);
  });
  it("a trump exchange turns the trump", () => {
    const p = plan(brisca, [ev("trump.exchanged", { seat: "p0", card: oros(7), took: oros(12) })], {});
    expect(p.steps.map((s) => s.effect)).toEqual(["trump.exchange"]);
  });
  it("whose turn: after the last card on the table, else the last trick's winner", () => {
    const v = (table: unknown[], lastTrick: unknown = null, players = 4) => ({ players, table, lastTrick, hand: [], hands: {}, points: {}, stock: 0, tricks: 0, trumpSuit: "oros" });
    expect(briscaActor(proj(1, v([])))).toBe("p0");
    expect(briscaActor(proj(1, v([{ seat: "p3", card: oros(2) }])))).toBe("p0");
    expect(briscaActor(proj(1, v([{ seat: "p1", card: oros(2) }])))).toBe("p2");
    expect(briscaActor(proj(1, v([], { winner: "p2", cards: [] })))).toBe("p2");
    expect(briscaActor(proj(1, v([{ seat: "p0", card: oros(2) }], null, 2)))).toBe("p1");
    expect(pointsOf(oros(1)) + pointsOf(oros(3)) + pointsOf(oros(12)) + pointsOf(oros(11)) + pointsOf(oros(10)) + pointsOf(oros(7))).toBe(30);
  });
});

const race = (positions: Record<string, number>, extra: Record<string, unknown> = {}) => ({ positions, turnsLost: Object.fromEntries(Object.keys(positions).map((s) => [s, 0])), well: null, lastRoll: null, dice: 1, ...extra });
describe("oca", () => {
  it("reads its board from the component: every special square named, the jumps as edges", () => {
    expect(ocaBoard.goal).toBe(63);
    expect([...ocaBoard.names.entries()].filter(([, n]) => n === "oca").map(([s]) => s)).toEqual([5, 9, 14, 18, 23, 27, 32, 36, 41, 45, 50, 54, 59]);
    expect(new Set(ocaBoard.names.values())).toEqual(new Set(["oca", "puente", "posada", "dados", "pozo", "laberinto", "carcel", "muerte", "jardin"]));
    expect(ocaBoard.jumps).toContainEqual({ from: 42, to: 30, kind: "maze" });
    expect(ocaBoard.jumps).toContainEqual({ from: 12, to: 6, kind: "bridge" });
  });
  it("a plain roll of my own: the die, then the path square by square (no read pause)", () => {
    const p = plan(oca, [ev("piece.moved", { seat: "p0", roll: [3], path: [{ square: 7, via: "step" }] })], race({ p0: 4, p1: 0 }));
    expect(p.steps.map((s) => [s.effect, s.params])).toEqual([
      ["dice.roll", { seat: "p0", roll: [3] }],
      ["piece.path", { seat: "p0", squares: [5, 6, 7] }],
    ]);
    expect(p.steps[1]!.markers).toEqual(["landed"]);
  });
  it("the rival's roll to a goose: die → read pause → path → the goose's jump", () => {
    const p = plan(oca, [ev("piece.moved", { seat: "p1", roll: [1], path: [{ square: 5, via: "step" }, { square: 9, via: "goose" }] })], race({ p0: 0, p1: 4 }));
    expect(p.steps.map((s) => s.effect)).toEqual(["dice.roll", "pause.read", "piece.path", "square.effect"]);
    expect(p.steps[3]!.params).toEqual({ seat: "p1", from: 5, to: 9, via: "goose" });
    expect(chain(p.steps)).toBe(true);
  });
  it("a bounce from 63 walks up and back, then the goose at 59 to the garden", () => {
    const p = plan(oca, [ev("piece.moved", { seat: "p0", roll: [6], path: [{ square: 63, via: "step" }, { square: 59, via: "bounce" }, { square: 63, via: "goose" }] })], race({ p0: 61, p1: 0 }));
    expect(p.steps.find((s) => s.effect === "piece.path")!.params).toEqual({ seat: "p0", squares: [62, 63, 62, 61, 60, 59] });
    expect(p.steps.at(-1)!.params).toEqual({ seat: "p0", from: 59, to: 63, via: "goose" });
  });
  it("the well, the inn and the prison each have their square effect; death and the maze their jump", () => {
    const effectOf = (from: number, roll: number, path: unknown[]) =>
      plan(oca, [ev("piece.moved", { seat: "p0", roll: [roll], path })], race({ p0: from, p1: 0 }))
        .steps.filter((s) => s.effect === "square.effect")
        .map((s) => (s.params as { via: string }).via);
    expect(effectOf(30, 1, [{ square: 31, via: "step" }, { square: 31, via: "well" }])).toEqual(["well"]);
    expect(effectOf(17, 2, [{ square: 19, via: "step" }])).toEqual(["inn"]);
    expect(effectOf(50, 2, [{ square: 52, via: "step" }])).toEqual(["prison"]);
    expect(effectOf(57, 1, [{ square: 58, via: "step" }, { square: 1, via: "death" }])).toEqual(["death"]);
    expect(effectOf(40, 2, [{ square: 42, via: "step" }, { square: 30, via: "maze" }])).toEqual(["maze"]);
    expect(effectOf(60, 6, [{ square: 63, via: "step" }, { square: 57, via: "bounce" }])).toEqual([]);
  });
  it("two dice: the opening 6+3 counts to 9 and jumps to 26", () => {
    const p = plan(oca, [ev("piece.moved", { seat: "p0", roll: [6, 3], path: [{ square: 9, via: "step" }, { square: 26, via: "dice" }] })], race({ p0: 0, p1: 0 }, { dice: 2 }));
    expect(p.steps.map((s) => s.effect)).toEqual(["dice.roll", "piece.path", "square.effect"]);
    expect((p.steps[1]!.params as { squares: number[] }).squares).toHaveLength(9);
  });
  it("whose turn: the view's `turn` (the rules' own actor), none once the match is over", () => {
    const at = (v: Record<string, unknown>) => proj(3, v, [], "p0", { yourTurn: false });
    expect(ocaActor(at(race({ p0: 7, p1: 19, p2: 0 }, { lastRoll: { seat: "p0", roll: [2] }, turn: "p2" })))).toBe("p2");
    expect(ocaActor(at(race({ p0: 9, p1: 0, p2: 0 }, { lastRoll: { seat: "p0", roll: [4] }, turn: "p0" })))).toBe("p0");
    const over = at(race({ p0: 63, p1: 0, p2: 0 }, { turn: null }));
    expect(ocaActor({ ...over, result: { kind: "completed", reasonCode: "finished", participants: {} } })).toBe(null);
  });
});

describe("serpientes", () => {
  it("reads its board: 100 squares, nine ladders and ten snakes, laid out from the bottom left", () => {
    expect(serpBoard.goal).toBe(100);
    expect(serpBoard.jumps.filter((j) => j.kind === "ladder")).toHaveLength(9);
    expect(serpBoard.jumps.filter((j) => j.kind === "snake")).toHaveLength(10);
    expect([layout(1), layout(10), layout(11), layout(100)]).toEqual([
      { row: 10, column: 1 },
      { row: 10, column: 10 },
      { row: 9, column: 10 },
      { row: 1, column: 1 },
    ]);
  });
  it("a snake: the die, the path, the slide", () => {
    const p = plan(serpientes, [ev("piece.moved", { seat: "p0", roll: [2], path: [{ square: 16, via: "step" }, { square: 6, via: "snake" }] })], race({ p0: 14, p1: 0 }));
    expect(p.steps.map((s) => s.effect)).toEqual(["dice.roll", "piece.path", "square.effect"]);
    expect(p.steps[2]!.params).toEqual({ seat: "p0", from: 16, to: 6, via: "snake" });
  });
  it("the rival's ladder from the start has the read pause", () => {
    const p = plan(serpientes, [ev("piece.moved", { seat: "p1", roll: [1], path: [{ square: 1, via: "step" }, { square: 38, via: "ladder" }] })], race({ p0: 0, p1: 0 }));
    expect(p.steps.map((s) => s.effect)).toEqual(["dice.roll", "pause.read", "piece.path", "square.effect"]);
  });
  it("exact finish: a roll past 100 moves nothing (the die only); bounce walks up and back", () => {
    expect(plan(serpientes, [ev("piece.moved", { seat: "p0", roll: [5], path: [] })], race({ p0: 97, p1: 0 })).steps.map((s) => s.effect)).toEqual(["dice.roll"]);
    const b = plan(serpientes, [ev("piece.moved", { seat: "p0", roll: [5], path: [{ square: 100, via: "step" }, { square: 98, via: "bounce" }, { square: 78, via: "snake" }] })], race({ p0: 97, p1: 0 }));
    expect(b.steps.find((s) => s.effect === "piece.path")!.params).toEqual({ seat: "p0", squares: [98, 99, 100, 99, 98] });
  });
  it("walked squares and whose turn", () => {
    expect(walked(0, [])).toEqual([]);
    expect(walked(2, [{ square: 4, via: "step" }, { square: 14, via: "ladder" }])).toEqual([3, 4]);
    expect(serpActor(proj(2, race({ p0: 3, p1: 5, p2: 0 }, { lastRoll: { seat: "p2", roll: [1] } }), [], "p1"))).toBe("p0");
    expect(serpActor(proj(2, race({ p0: 3, p1: 5 }, { lastRoll: { seat: "p0", roll: [1] } }), [], "p0"))).toBe("p1");
  });
});

describe("a turn clock's expiry (main's clock.expired) is said, and only the roll is animated", () => {
  for (const game of [oca, serpientes]) {
    it(game.id, () => {
      const events = [ev("clock.expired", { seat: "p1" }), ev("piece.moved", { seat: "p1", roll: [2], path: [{ square: 2, via: "step" }] }, 1)];
      const t = { from: proj(4, race({ p0: 0, p1: 0 })), to: proj(5, race({ p0: 0, p1: 2 }), events), events };
      const p = game.buildTransitionPlan(t);
      validatePlan(p, { has: (e) => EFFECTS[game.id]!.includes(e), validParams: () => true });
      expect(p.steps.map((s) => s.effect)).toEqual(["dice.roll", "pause.read", "piece.path"]);
      const api = { name: (s: string) => s, t: (k: string) => k };
      expect(game.describe(t, api)[0]).toBe(`${game.id}.expired`);
    });
  }
});

describe("the text of each change (aria-live), with the players' names", () => {
  const api = { name: (s: string) => ({ p0: "Ana", p1: "Bot" })[s] ?? s, t: (k: string, v: Record<string, string | number> = {}) => `${k}${JSON.stringify(v)}` };
  const tr = (from: unknown, events: Projection["events"], seat = "p0") => ({ from: proj(4, from), to: proj(5, from, events, seat), events });
  it("brisca names the card, the trick's winner and its points, and only my own draw's card", () => {
    const cards = [{ seat: "p0", card: oros(3) }, { seat: "p1", card: oros(1) }];
    const said = brisca.describe(tr({}, [ev("card.played", cards[1]), ev("trick.won", { seat: "p1", cards }, 1), ev("card.drawn", { seat: "p1", card: null }, 2), ev("card.drawn", { seat: "p0", card: oros(7) }, 3)]), api);
    expect(said).toEqual([
      'brisca.played{"name":"Bot","card":"brisca.card{\\"rank\\":\\"brisca.rank.1{}\\",\\"suit\\":\\"brisca.suit.oros{}\\"}"}',
      'brisca.won{"name":"Bot","points":21}',
      'brisca.drew{"card":"brisca.card{\\"rank\\":\\"brisca.rank.7{}\\",\\"suit\\":\\"brisca.suit.oros{}\\"}"}',
    ]);
  });
  it("oca names the roll, the square and the jump", () => {
    const said = oca.describe(tr(race({ p0: 4, p1: 0 }), [ev("piece.moved", { seat: "p0", roll: [1], path: [{ square: 5, via: "step" }, { square: 9, via: "goose" }] })]), api);
    expect(said).toEqual(['oca.rolled{"name":"Ana","roll":"1"} oca.to-square{"n":5} oca.via.goose{"n":9}']);
    const inn = oca.describe(tr(race({ p0: 17, p1: 0 }), [ev("piece.moved", { seat: "p1", roll: [2], path: [{ square: 19, via: "step" }] })]), api);
    expect(inn[0]).toContain("oca.rest.inn");
  });
  it("serpientes names a snake, and a roll that cannot move", () => {
    expect(serpientes.describe(tr(race({ p0: 14, p1: 0 }), [ev("piece.moved", { seat: "p1", roll: [2], path: [{ square: 16, via: "step" }, { square: 6, via: "snake" }] })]), api)).toEqual([
      'serpientes.rolled{"name":"Bot","roll":"2"} serpientes.to-square{"n":16} serpientes.via.snake{"n":6}',
    ]);
    expect(serpientes.describe(tr(race({ p0: 97, p1: 0 }), [ev("piece.moved", { seat: "p0", roll: [5], path: [] })]), api)[0]).toContain('serpientes.no-move{"n":97}');
  });
  it("brisca's result names the points, for a player or a team", () => {
    const p = (participants: Record<string, unknown>) => ({ ...proj(9, {}), result: { kind: "completed" as const, reasonCode: "points", participants: participants as never } });
    expect(brisca.resultText!(p({ p0: { outcome: "win", score: 75 }, p1: { outcome: "loss", score: 45 } }), api)).toBe('brisca.result.win{"mine":75,"theirs":45}');
    expect(brisca.resultText!(p({ p0: { outcome: "loss", score: 50, team: "team0" }, p1: { outcome: "win", score: 70 }, p2: { outcome: "loss", score: 50 }, p3: { outcome: "win", score: 70 } }), api)).toBe(
      'brisca.result.team-loss{"mine":50,"theirs":70}',
    );
    expect(brisca.resultText!(p({ p0: { outcome: "draw", score: 60 }, p1: { outcome: "draw", score: 60 } }), api)).toBe("brisca.result.draw{}");
  });
});
