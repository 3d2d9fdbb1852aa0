// The catalog packages' presentation plans (`presentation.plans` in each game.json, spec/
// packages.md § Presentation plans) are what the web client's modules build: for each game,
// a few representative transitions, with the visible events the game really emits (checked
// against its package's event schema), go through the module's pure buildTransitionPlan; the
// plan, named `<game>.<sample>`, must equal the committed `plans/<sample>.plan.json`, and
// the manifest must list exactly those files. libs/packages validates the same files with
// its server-side validator and the effect registry of these modules
// (`EffectRegistry::standard`). Stale? `UPDATE_PLANS=1 npx vitest run test/package-plans.test.ts`.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { GAMES } from "../src/games";
import type { Projection } from "../src/games/types";
import { validatePlan } from "../src/present/plan";
import { exitP0, p0View, records, seen, status } from "./fixtures/maze";

const root = join(__dirname, "../../..");
const UPDATE = process.env.UPDATE_PLANS === "1";
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
ajv.addFormat("uint32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff });
ajv.addFormat("uint8", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 255 });
ajv.addFormat("uint64", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
const planSchema = ajv.compile(JSON.parse(readFileSync(join(root, "libs/packages/schemas/presentation-plan.json"), "utf8")));

const ev = (type: string, data: unknown, i = 0) => ({ eventId: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, "0")}`, type, data });
interface Sample {
  name: string;
  /** The previous view, the next one, the next one's events and the recipient's seat. */
  from: unknown;
  to?: unknown;
  events: ReturnType<typeof ev>[];
  seat?: string | null;
}

const oros = (rank: number) => ({ suit: "oros", rank });
const card = { suit: "hearts", rank: 5, colour: "red" };
const race = (positions: Record<string, number>) => ({ positions, turnsLost: { p0: 0, p1: 0 }, well: null, lastRoll: null, dice: 1, clock: null, turn: "p0" });

/** Each game's samples: together they use every effect its module registers. */
const SAMPLES: Record<string, Sample[]> = {
  conecta4: [
    {
      name: "drop",
      from: { rows: 6, columns: 7 },
      events: [ev("disc.dropped", { seat: "p0", row: 3, column: 3, line: [{ row: 0, column: 0 }, { row: 1, column: 1 }, { row: 2, column: 2 }, { row: 3, column: 3 }] })],
    },
  ],
  hundido: [{ name: "sunk", from: {}, events: [ev("shot.fired", { seat: "p0", row: 1, column: 2, outcome: "sunk", ship: "destroyer", cells: [{ row: 1, column: 1 }, { row: 1, column: 2 }] })] }],
  solitario: [
    { name: "move-reveal", from: {}, events: [ev("cards.moved", { from: "tableau2", to: "tableau4", count: 1, cards: [card] }, 0), ev("card.revealed", { zone: "tableau2", card }, 1)] },
    { name: "draw", from: {}, events: [ev("card.drawn", { card })] },
  ],
  brisca: [
    {
      name: "trick",
      from: {},
      events: [
        ev("card.played", { seat: "p1", card: oros(1) }, 0),
        ev("trick.won", { seat: "p1", cards: [{ seat: "p0", card: oros(3) }, { seat: "p1", card: oros(1) }] }, 1),
        ev("card.drawn", { seat: "p1", card: null }, 2),
        ev("card.drawn", { seat: "p0", card: oros(7) }, 3),
      ],
    },
    { name: "exchange", from: {}, events: [ev("trump.exchanged", { seat: "p0", card: oros(7), took: oros(12) })] },
  ],
  oca: [
    { name: "goose", from: race({ p0: 0, p1: 3 }), events: [ev("piece.moved", { seat: "p1", roll: [2], path: [{ square: 5, via: "step" }, { square: 9, via: "goose" }] })] },
    { name: "inn", from: race({ p0: 17, p1: 3 }), events: [ev("piece.moved", { seat: "p0", roll: [2], path: [{ square: 19, via: "step" }] })] },
  ],
  serpientes: [{ name: "ladder", from: race({ p0: 0, p1: 0 }), events: [ev("piece.moved", { seat: "p0", roll: [4], path: [{ square: 4, via: "step" }, { square: 14, via: "ladder" }] })] }],
  laberinto: [
    { name: "move-key", from: p0View(8), to: p0View(9, { status: { inventory: "p0" } }), events: [ev("player.moved", { seat: "p0", cell: 9 }, 0), ev("key.picked", { seat: "p0", owner: "p0" }, 1)] },
    {
      name: "exit",
      from: records({ role: "p0", cells: seen(44), objects: [exitP0], players: { self: 44 }, status: status({ inventory: "p0" }) }),
      to: records({ role: "p0", cells: seen(45), objects: [{ ...exitP0, variant: "open" }], players: { self: 45 }, status: status({ inventory: "p0", exitOpen: true }) }),
      events: [ev("player.moved", { seat: "p0", cell: 45 }, 0), ev("exit.opened", { seat: "p0" }, 1)],
    },
    { name: "start", from: p0View(0), events: [ev("race.started", {})] },
  ],
};

const proj = (revision: number, view: unknown, events: Sample["events"], seat: string | null): Projection => ({ revision, view, context: {}, actions: [], result: null, seat, events });

describe("each catalog package's plans are what its client module builds", () => {
  it("every catalog game has samples", () => expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(GAMES).sort()));
  for (const [id, samples] of Object.entries(SAMPLES)) {
    it(id, () => {
      const game = GAMES[id]!;
      const dir = join(root, "libs/games", id, "package");
      const eventSchema = ajv.compile(JSON.parse(readFileSync(join(dir, "schemas/visible-events.json"), "utf8")));
      const files: string[] = [];
      for (const s of samples) {
        for (const e of s.events) expect(eventSchema({ type: e.type, data: e.data }), `${id} ${e.type}: ${JSON.stringify(eventSchema.errors)}`).toBe(true);
        const seat = s.seat === undefined ? "p0" : s.seat;
        const built = game.buildTransitionPlan({ from: proj(4, s.from, [], seat), to: proj(5, s.to ?? s.from, s.events, seat), events: s.events });
        expect(built.steps.length, `${id}.${s.name} builds no step`).toBeGreaterThan(0);
        const plan = { ...built, id: `${id}.${s.name}` };
        expect(planSchema(plan), JSON.stringify(planSchema.errors)).toBe(true);
        validatePlan(plan, { has: () => true, validParams: () => true });
        const path = `plans/${s.name}.plan.json`;
        files.push(path);
        const text = JSON.stringify(plan, null, 2) + "\n";
        if (UPDATE) {
          mkdirSync(join(dir, "plans"), { recursive: true });
          writeFileSync(join(dir, path), text);
        }
        expect(existsSync(join(dir, path)), `${id}: no ${path} (UPDATE_PLANS=1 writes it)`).toBe(true);
        expect(readFileSync(join(dir, path), "utf8"), `${id}: ${path} is stale (UPDATE_PLANS=1 rewrites it)`).toBe(text);
      }
      const manifestPath = join(dir, "game.json");
      const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
      if (UPDATE) {
        manifest.presentation.plans = files;
        writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
      }
      expect(manifest.presentation.plans, `${id}: game.json's presentation.plans`).toEqual(files);
    });
  }
});
