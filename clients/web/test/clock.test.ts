// The dice games' turn clocks (`config.clock`): what each seat has left at a server instant,
// its text, and the page's estimate of the server's time (`ServerClock`).
import { describe, expect, it } from "vitest";
import { type ClockView, LOW_MS, formatClock, isClockView, seatTimes } from "../src/games/common/clock";
import { raceInstants } from "../src/games/race/race";
import type { Projection } from "../src/games/types";
import { ServerClock } from "../src/lib/servertime";

describe("formatClock", () => {
  it("m:ss, h:mm:ss from an hour, rounded up to the second", () => {
    expect([0, 1, 999, 1000, 1001, 9_400, 59_999, 60_000, 61_000, 600_000, 3_599_000, 3_600_000, 3_661_000, 86_400_000].map(formatClock)).toEqual([
      "0:00",
      "0:01",
      "0:01",
      "0:01",
      "0:02",
      "0:10",
      "1:00",
      "1:00",
      "1:01",
      "10:00",
      "59:59",
      "1:00:00",
      "1:01:01",
      "24:00:00",
    ]);
  });
  it("never negative", () => expect(formatClock(-5000)).toBe("0:00"));
});

const perTurn: ClockView = {
  settings: { mode: { kind: "perTurn", turnMs: 30_000 }, policy: "defaultMove" },
  state: { serial: 3, running: { seat: "p1", startedMs: 1_000_000, dueMs: 1_030_000 } },
};
const perPlayer: ClockView = {
  settings: { mode: { kind: "perPlayer", budgetMs: 300_000, incrementMs: 2000 }, policy: "defaultMove" },
  state: { serial: 5, running: { seat: "p0", startedMs: 1_000_000, dueMs: 1_250_000 }, remainingMs: { p0: 250_000, p1: 180_500 } },
};

describe("seatTimes", () => {
  it("per turn: only the running seat, its turn's remainder", () => {
    expect(seatTimes(perTurn, ["p0", "p1"], 1_010_000)).toEqual([{ seat: "p1", ms: 20_000, running: true, low: false }]);
    expect(seatTimes(perTurn, ["p0", "p1"], 1_025_000)[0]).toMatchObject({ ms: 5_000, low: true });
    expect(seatTimes(perTurn, ["p0", "p1"], 1_040_000)[0]!.ms).toBe(0);
    expect(seatTimes({ ...perTurn, state: { running: null } }, ["p0", "p1"], 0)).toEqual([]);
  });
  it("per player: every seat's budget, the running one live", () => {
    expect(seatTimes(perPlayer, ["p0", "p1"], 1_100_000)).toEqual([
      { seat: "p0", ms: 150_000, running: true, low: false },
      { seat: "p1", ms: 180_500, running: false, low: false },
    ]);
  });
  it("low under ten seconds", () => {
    expect(seatTimes(perTurn, ["p1"], 1_030_000 - LOW_MS)[0]!.low).toBe(false);
    expect(seatTimes(perTurn, ["p1"], 1_030_000 - LOW_MS + 1)[0]!.low).toBe(true);
  });
  it("a view's clock is recognised; anything else is not", () => {
    expect([isClockView(perTurn), isClockView(perPlayer), isClockView(null), isClockView({ settings: {} }), isClockView({ settings: { mode: { kind: "hourglass" } }, state: {} })]).toEqual([true, true, false, false, false]);
  });
});

describe("ServerClock", () => {
  it("trusts the page's clock until a live snapshot shows the server ahead", () => {
    let local = 1_000_000;
    const c = new ServerClock(() => local);
    expect(c.now()).toBe(1_000_000);
    // A turn the server started at 1_003_000 (its clock) arrived when the page read 1_000_050.
    c.observe(1_003_000, 1_000_050);
    expect(c.ahead).toBe(2_950);
    local += 100;
    expect(c.now()).toBe(1_003_050);
    // A looser bound (an older instant) changes nothing; the tightest stays.
    c.observe(1_001_000, 1_000_200);
    expect(c.ahead).toBe(2_950);
    c.observe(1_003_500, 1_000_300);
    expect(c.ahead).toBe(3_200);
  });
  it("never moves the estimate behind the page's clock (it would show more time than is left)", () => {
    const c = new ServerClock(() => 5_000);
    c.observe(1_000, 5_000);
    expect(c.now()).toBe(5_000);
    c.observe(Number.NaN, 0);
    expect(c.now()).toBe(5_000);
  });
  it("a roll's live snapshot states the new turn's start; a sync answer does not", () => {
    const p = (events: string[], clock: unknown): Projection => ({
      revision: 3,
      view: { positions: {}, clock },
      context: {},
      actions: [],
      result: null,
      seat: "p0",
      events: events.map((type, i) => ({ eventId: `e${i}`, type, data: {} })),
    });
    expect(raceInstants(p(["piece.moved"], perTurn), true)).toEqual([1_000_000]);
    expect(raceInstants(p(["piece.moved"], perTurn), false)).toEqual([]);
    expect(raceInstants(p([], perTurn), true)).toEqual([]);
    expect(raceInstants(p(["piece.moved"], null), true)).toEqual([]);
  });
});
