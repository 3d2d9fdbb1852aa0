// Each game's pure buildTransitionPlan yields plans that validate against the committed
// presentation-plan schema (libs/packages/schemas) and the coordinator's validator, for the
// transitions the games really produce (Brisca's and the dice games' in plans.games22.test.ts,
// Laberinto's also in laberinto.test.ts); the Conecta 4 drop plan of the packages issue is one.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { brisca } from "../src/games/brisca";
import { conecta4 } from "../src/games/conecta4";
import { GAMES } from "../src/games";
import { hundido } from "../src/games/hundido";
import { laberinto } from "../src/games/laberinto";
import { oca } from "../src/games/oca";
import { serpientes } from "../src/games/serpientes";
import { solitario } from "../src/games/solitario";
import type { GameModule, Projection } from "../src/games/types";
import { validatePlan } from "../src/present/plan";
import { p0View } from "./fixtures/maze";

const root = join(__dirname, "../../..");
const schema = JSON.parse(readFileSync(join(root, "libs/packages/schemas/presentation-plan.json"), "utf8"));
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
ajv.addFormat("uint32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff });
const validSchema = ajv.compile(schema);

const proj = (revision: number, view: unknown, events: Projection["events"]): Projection => ({
  revision,
  view,
  context: {},
  actions: [],
  result: null,
  seat: "p0",
  events,
});
const ev = (type: string, data: unknown, i = 0) => ({ eventId: `00000000-0000-4000-8000-00000000000${i}`, type, data });

/** The effects each module registers, and the shared `sound.play`. */
const EFFECTS: Record<string, string[]> = {
  conecta4: ["piece.drop", "cells.highlight"],
  hundido: ["shot.mark", "ship.sunk"],
  solitario: ["card.move", "card.flip"],
  brisca: ["card.play", "trick.collect", "card.draw", "trump.exchange"],
  oca: ["dice.roll", "pause.read", "piece.path", "square.effect"],
  serpientes: ["dice.roll", "pause.read", "piece.path", "square.effect"],
  laberinto: ["maze.step", "maze.flash", "maze.cue"],
};
const registry = (game: GameModule) => ({ has: (e: string) => e === "sound.play" || EFFECTS[game.id]!.includes(e), validParams: () => true });

function check(game: GameModule, events: Projection["events"], view: unknown = {}, seat: string | null = "p0") {
  const plan = game.buildTransitionPlan({ from: proj(4, view, []), to: { ...proj(5, view, events), seat }, events });
  expect(validSchema(plan), JSON.stringify(validSchema.errors)).toBe(true);
  validatePlan(plan, registry(game));
  return plan;
}

describe("conecta4", () => {
  it("a winning drop: the disc falls, the impact sound on the marker, then the win line", () => {
    const plan = check(conecta4, [ev("disc.dropped", { seat: "p0", row: 3, column: 3, line: [{ row: 0, column: 0 }, { row: 1, column: 1 }, { row: 2, column: 2 }, { row: 3, column: 3 }] })], { rows: 6, columns: 7 });
    expect(plan.steps.map((s) => [s.id, s.effect, s.trigger])).toEqual([
      ["drop-0", "piece.drop", { after: [] }],
      ["impact-sound-0", "sound.play", { marker: { step: "drop-0", marker: "impact" } }],
      ["win-line-0", "cells.highlight", { after: ["drop-0"] }],
    ]);
    // The shape of the packages issue's drop plan, step for step.
    const reference = JSON.parse(readFileSync(join(root, "libs/games/conecta4/package/plans/drop.plan.json"), "utf8"));
    expect(validSchema(reference)).toBe(true);
    expect(plan.steps.map((s) => [s.effect, s.blocking, s.audio?.policy ?? null])).toEqual(
      reference.steps.map((s: { effect: string; blocking: boolean; audio?: { policy: string } }) => [s.effect, s.blocking, s.audio?.policy ?? null]),
    );
  });
  it("a plain drop has no win line; a clock event has no step", () => {
    expect(check(conecta4, [ev("disc.dropped", { seat: "p1", row: 0, column: 2 })], { rows: 6 }).steps).toHaveLength(2);
    expect(check(conecta4, [ev("clock.expired", { seat: "p1" })]).steps).toHaveLength(0);
  });
});

describe("hundido", () => {
  it("water, hit and sunk", () => {
    expect(check(hundido, [ev("shot.fired", { seat: "p0", row: 1, column: 2, outcome: "water" })]).steps.map((s) => s.effect)).toEqual(["shot.mark"]);
    expect(check(hundido, [ev("shot.fired", { seat: "p1", row: 1, column: 2, outcome: "hit" })]).steps.map((s) => s.effect)).toEqual(["shot.mark"]);
    const sunk = check(hundido, [ev("shot.fired", { seat: "p0", row: 1, column: 2, outcome: "sunk", ship: "destroyer", cells: [{ row: 1, column: 1 }, { row: 1, column: 2 }] })]);
    expect(sunk.steps.map((s) => [s.effect, s.trigger])).toEqual([
      ["shot.mark", { after: [] }],
      ["ship.sunk", { after: ["shot-0"] }],
    ]);
  });
  it("placement events need no animation", () => {
    expect(check(hundido, [ev("fleet.changed", { seat: "p1", placed: 2 }), ev("player.ready", { seat: "p1" }, 1), ev("battle.started", { shooter: "p0" }, 2)]).steps).toEqual([]);
  });
});

describe("solitario", () => {
  it("card moves in order, a reveal after the move that uncovered it", () => {
    const card = { suit: "hearts", rank: 5, colour: "red" };
    const plan = check(solitario, [ev("cards.moved", { from: "tableau2", to: "tableau4", count: 1, cards: [card] }), ev("card.revealed", { zone: "tableau2", card }, 1)]);
    expect(plan.steps.map((s) => [s.effect, s.trigger])).toEqual([
      ["card.move", { after: [] }],
      ["card.flip", { after: ["move-0"] }],
    ]);
    expect(check(solitario, [ev("card.drawn", { card })]).steps.map((s) => s.params)).toEqual([{ from: "stock", to: "waste", count: 1 }]);
  });
});

describe("laberinto", () => {
  it("a move's plan: the token slides, the key flashes after it, nothing blocks", () => {
    const from = p0View(8);
    const to = p0View(9, { status: { inventory: "p0" } });
    const events = [ev("player.moved", { seat: "p0", cell: 9 }, 0), ev("key.picked", { seat: "p0", owner: "p0" }, 1)];
    const plan = laberinto.buildTransitionPlan({ from: proj(4, from, []), to: proj(5, to, events), events });
    expect(validSchema(plan), JSON.stringify(validSchema.errors)).toBe(true);
    validatePlan(plan, registry(laberinto));
    expect(plan.steps.map((s) => [s.effect, s.blocking])).toEqual([
      ["maze.step", false],
      ["maze.flash", false],
    ]);
  });
});

describe("every catalog game", () => {
  it("has its effects listed here (so each module's plans are checked above or in plans.games22.test.ts)", () => {
    expect(Object.keys(EFFECTS).sort()).toEqual(Object.keys(GAMES).sort());
  });
});

describe("the text of each change (aria-live), with the players' names", () => {
  const api = { name: (s: string) => ({ p0: "Ana", p1: "Bot" })[s] ?? s, t: (k: string, v: Record<string, string | number> = {}) => `${k}${JSON.stringify(v)}` };
  const tr = (events: Projection["events"]) => ({ from: proj(4, {}, []), to: proj(5, {}, events), events });
  it("conecta4 names who dropped where, and a connection", () => {
    expect(conecta4.describe(tr([ev("disc.dropped", { seat: "p1", row: 0, column: 2, line: [{ row: 0, column: 2 }] })]), api)).toEqual([
      'conecta4.dropped{"name":"Bot","n":3}',
      'conecta4.connected{"name":"Bot"}',
    ]);
  });
  it("hundido names the shooter, the cell and the outcome", () => {
    expect(hundido.describe(tr([ev("shot.fired", { seat: "p0", row: 1, column: 3, outcome: "water" })]), api)).toEqual([
      'hundido.shot.water{"name":"Ana","cell":"B4","ship":""}',
    ]);
  });
  it("solitario names the cards and the piles", () => {
    const card = { suit: "hearts", rank: 5, colour: "red" };
    expect(solitario.describe(tr([ev("cards.moved", { from: "waste", to: "tableau2", count: 1, cards: [card] })]), api)[0]).toMatch(/^solitario\.moved/);
  });
});
