// The presentation coordinator, rule by rule (seed 000 §13, spec/packages.md § Presentation
// plans), and the spec's three client acceptance rows (spec/acceptance.md): "cancel while an
// effect loads", "animations or sound off", "a resource temporarily missing".
import { describe, expect, it } from "vitest";
import { Coordinator, type Effect, type Preferences, type Transition } from "../src/present/coordinator";
import { Mixer, soundEffect } from "../src/present/audio";
import { Resources } from "../src/present/resources";
import { MAX_STEPS, type PresentationPlan } from "../src/present/plan";
import { FakeAudio, FakeClock, FakeEffect, flush, plan, step } from "./fakes";

interface P {
  revision: number;
}
const at = (revision: number): P => ({ revision });

function setup(build: (t: Transition<P>) => PresentationPlan, prefs: Preferences = { motion: "full", sound: true }) {
  const clock = new FakeClock();
  const fx = new FakeEffect();
  const sfx = new FakeEffect("audio");
  const settled: [number, string][] = [];
  const problems: string[] = [];
  const effects: Record<string, Effect<P>> = { fx, sfx };
  const coord = new Coordinator<P>({
    effects,
    buildPlan: build,
    settle: (p, reason) => settled.push([p.revision, reason]),
    clock,
    prefs,
    onProblem: (m) => problems.push(m),
  });
  coord.receive(at(1), [], false);
  settled.length = 0;
  return { clock, fx, sfx, settled, problems, coord, effects };
}

const oneStep = () => plan("one", [step("a")]);

describe("confirmed and displayed projections", () => {
  it("a snapshot updates the confirmed projection at once and the displayed one at settle", async () => {
    const { coord, fx, settled } = setup(oneStep);
    coord.receive(at(2), [], true);
    expect(coord.confirmed?.revision).toBe(2);
    expect(coord.displayed?.revision).toBe(1);
    expect(coord.stale).toBe(true);
    expect(coord.animating).toBe(true);
    await flush();
    fx.find("a").play.resolve();
    await flush();
    expect(coord.displayed?.revision).toBe(2);
    expect(settled).toEqual([[2, "plan"]]);
    expect(coord.stale).toBe(false);
    expect(coord.animating).toBe(false);
  });

  it("a sync answer shows the projection at once, with no plan (no history replayed)", async () => {
    let built = 0;
    const { coord, settled } = setup(() => (built++, oneStep()));
    coord.receive(at(9), [], false);
    expect(settled).toEqual([[9, "sync"]]);
    expect(built).toBe(0);
  });
});

describe("triggers and markers", () => {
  it("after: [] starts at once; after: [ids] waits for those steps to end", async () => {
    const { coord, fx } = setup(() => plan("p", [step("a"), step("b"), step("c", { trigger: { after: ["a", "b"] } })]));
    coord.receive(at(2), [], true);
    await flush();
    expect(fx.has("a") && fx.has("b")).toBe(true);
    expect(fx.has("c")).toBe(false);
    fx.find("a").play.resolve();
    await flush();
    expect(fx.has("c")).toBe(false);
    fx.find("b").play.resolve();
    await flush();
    expect(fx.has("c")).toBe(true);
  });

  it("a marker starts its dependants when the producer emits it", async () => {
    const { coord, fx, sfx } = setup(() =>
      plan("p", [
        step("drop", { markers: ["impact"] }),
        step("sound", { effect: "sfx", blocking: false, trigger: { marker: { step: "drop", marker: "impact" } } }),
      ]),
    );
    coord.receive(at(2), [], true);
    await flush();
    expect(sfx.has("sound")).toBe(false);
    fx.find("drop").ctx.emit("impact");
    await flush();
    expect(sfx.has("sound")).toBe(true);
  });

  it("an undeclared marker is ignored", async () => {
    const { coord, fx, sfx } = setup(() =>
      plan("p", [step("drop", { markers: ["impact"] }), step("s", { effect: "sfx", trigger: { marker: { step: "drop", marker: "impact" } } })]),
    );
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").ctx.emit("bounce");
    await flush();
    expect(sfx.has("s")).toBe(false);
  });

  it("a marker never emitted skips its dependants when the producer ends, releasing their blocking", async () => {
    const { coord, fx, sfx, settled } = setup(() =>
      plan("p", [
        step("drop", { markers: ["impact"] }),
        step("flash", { blocking: true, trigger: { marker: { step: "drop", marker: "impact" } } }),
        step("after-flash", { effect: "sfx", blocking: true, trigger: { marker: { step: "flash", marker: "never" } } }),
      ].map((s) => (s.id === "flash" ? { ...s, markers: ["never"] } : s))),
    );
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").play.resolve(); // ends without emitting "impact"
    await flush();
    expect(fx.has("flash")).toBe(false);
    expect(sfx.has("after-flash")).toBe(false);
    expect(settled).toEqual([[2, "plan"]]);
  });
});

describe("one owner of the ending", () => {
  it("prepare → play → dispose('done') once per handle; settle runs once, after the blocking steps", async () => {
    const { coord, fx, settled } = setup(() => plan("p", [step("a"), step("b", { trigger: { after: ["a"] } })]));
    coord.receive(at(2), [], true);
    await flush();
    const a = fx.find("a");
    expect(a.played).toBe(true);
    a.play.resolve();
    await flush();
    expect(a.disposals).toEqual(["done"]);
    expect(settled).toEqual([]);
    fx.find("b").play.resolve();
    await flush();
    expect(fx.find("b").disposals).toEqual(["done"]);
    expect(settled).toEqual([[2, "plan"]]);
    // The effect's context offers no way to settle: only the coordinator does.
    expect("settle" in a.ctx).toBe(false);
  });

  it("cancel while an effect loads: the late handle is released at once, never played, and emits nothing", async () => {
    const { coord, fx, sfx, settled } = setup(() =>
      plan("p", [step("drop", { markers: ["impact"] }), step("s", { effect: "sfx", trigger: { marker: { step: "drop", marker: "impact" } } })]),
    );
    fx.slowPrepare = true;
    coord.receive(at(2), [], true);
    await flush();
    const loading = fx.find("drop");
    // A sync arrives while the effect's resources load: the generation is cancelled.
    coord.receive(at(5), [], false);
    expect(settled).toEqual([[5, "sync"]]);
    expect(loading.ctx.signal.aborted).toBe(true);
    expect(loading.ctx.live()).toBe(false);
    loading.prepare!.resolve();
    await flush();
    expect(loading.played).toBe(false);
    expect(loading.disposals).toEqual(["cancelled"]);
    // Its callbacks are dead: a marker from the old generation starts no stale sound.
    loading.ctx.emit("impact");
    await flush();
    expect(sfx.instances).toHaveLength(0);
    expect(coord.displayed?.revision).toBe(5);
  });

  it("a cancelled playing handle is disposed once with 'cancelled'", async () => {
    const { coord, fx } = setup(oneStep);
    coord.receive(at(2), [], true);
    await flush();
    coord.skip();
    coord.skip();
    fx.find("a").play.resolve();
    await flush();
    expect(fx.find("a").disposals).toEqual(["cancelled"]);
  });
});

describe("failures and timeouts", () => {
  it("a blocking step's failure cancels the plan, clears the queue and shows the last confirmed projection", async () => {
    const { coord, fx, settled, problems } = setup(oneStep);
    coord.receive(at(2), [], true);
    coord.receive(at(3), [], true);
    coord.receive(at(4), [], true);
    await flush();
    expect(coord.queued).toBe(2);
    fx.find("a").play.reject(new Error("boom"));
    await flush();
    expect(settled).toEqual([[4, "failure"]]);
    expect(coord.queued).toBe(0);
    expect(coord.animating).toBe(false);
    expect(fx.instances).toHaveLength(1);
    expect(fx.find("a").disposals).toEqual(["failed"]);
    expect(problems.join()).toMatch(/failed/);
  });

  it("a blocking step's timeout cancels the plan the same way", async () => {
    const { coord, fx, settled, clock } = setup(() => plan("p", [step("a", { timeoutMs: 600 })]));
    coord.receive(at(2), [], true);
    await clock.advance(599);
    expect(settled).toEqual([]);
    await clock.advance(1);
    expect(settled).toEqual([[2, "failure"]]);
    expect(fx.find("a").disposals).toEqual(["timeout"]);
  });

  it("a failing prepare of a blocking step cancels the plan", async () => {
    const { coord, fx, settled } = setup(oneStep);
    fx.failPrepare = true;
    coord.receive(at(2), [], true);
    await flush();
    expect(settled).toEqual([[2, "failure"]]);
  });

  it("a non-blocking step's failure or timeout just ends it", async () => {
    const { coord, fx, settled, clock } = setup(() =>
      plan("p", [step("a", { blocking: false, timeoutMs: 300 }), step("b", { trigger: { after: ["a"] } })]),
    );
    coord.receive(at(2), [], true);
    await clock.advance(300);
    expect(fx.find("a").disposals).toEqual(["timeout"]);
    expect(fx.has("b")).toBe(true);
    fx.find("b").play.resolve();
    await flush();
    expect(settled).toEqual([[2, "plan"]]);
  });

  it("a plan's blocking part is bounded by 12 s even when each step is within its own timeout", async () => {
    const chain = Array.from({ length: 3 }, (_, i) => step(`s${i}`, { timeoutMs: 5000, trigger: { after: i ? [`s${i - 1}`] : [] } }));
    const { coord, fx, settled, clock } = setup(() => plan("p", chain));
    coord.receive(at(2), [], true);
    await clock.advance(4999);
    fx.find("s0").play.resolve();
    await clock.advance(4999);
    fx.find("s1").play.resolve();
    await clock.advance(2000);
    expect(settled).toEqual([]);
    await clock.advance(10);
    expect(settled).toEqual([[2, "failure"]]);
  });
});

describe("plan validation", () => {
  const refused = async (p: PresentationPlan) => {
    const { coord, settled, problems, fx } = setup(() => p);
    coord.receive(at(2), [], true);
    await flush();
    return { settled, problems, fx };
  };

  it("a plan over 128 steps is refused and the transition shows without it", async () => {
    const steps = Array.from({ length: MAX_STEPS + 1 }, (_, i) => step(`s${i}`, { blocking: false }));
    const { settled, problems, fx } = await refused(plan("big", steps));
    expect(settled).toEqual([[2, "invalid-plan"]]);
    expect(problems.join()).toMatch(/129 steps/);
    expect(fx.instances).toHaveLength(0);
  });

  it.each([
    ["a step timeout over 12 s", plan("p", [step("a", { timeoutMs: 12_001 })]), /12001 ms/],
    ["a cycle", plan("p", [step("a", { trigger: { after: ["b"] } }), step("b", { trigger: { after: ["a"] } })]), /cycle/],
    ["an unknown effect", plan("p", [step("a", { effect: "nope" })]), /unknown effect/],
    ["an unknown marker", plan("p", [step("a"), step("b", { trigger: { marker: { step: "a", marker: "m" } } })]), /no marker/],
    ["a duplicate id", plan("p", [step("a"), step("a")]), /duplicate/],
    ["an unknown step", plan("p", [step("a", { trigger: { after: ["zz"] } })]), /unknown step/],
  ])("%s is refused", async (_name, p, message) => {
    const { settled, problems } = await refused(p);
    expect(settled).toEqual([[2, "invalid-plan"]]);
    expect(problems.join()).toMatch(message);
  });

  it("exactly 128 steps and 12 s are allowed", async () => {
    const steps = Array.from({ length: MAX_STEPS }, (_, i) => step(`s${i}`, { blocking: false, timeoutMs: 12_000 }));
    const { settled } = await refused(plan("max", steps));
    expect(settled).toEqual([[2, "plan"]]);
  });
});

describe("the queue", () => {
  it("contiguous transitions play in order: the player's move, then the bot's reply", async () => {
    const order: string[] = [];
    const { coord, fx, settled } = setup((t) => (order.push(`${t.from.revision}->${t.to.revision}`), oneStep()));
    coord.receive(at(2), [], true); // my disc
    coord.receive(at(3), [], true); // the fast bot's disc, before mine has landed
    await flush();
    expect(fx.instances).toHaveLength(1);
    fx.instances[0]!.play.resolve();
    await flush();
    expect(settled).toEqual([[2, "plan"]]);
    fx.instances[1]!.play.resolve();
    await flush();
    expect(settled).toEqual([[2, "plan"], [3, "plan"]]);
    expect(order).toEqual(["1->2", "2->3"]);
  });

  it("a non-contiguous snapshot clears the queue and shows the confirmed projection", async () => {
    const { coord, fx, settled } = setup(oneStep);
    coord.receive(at(2), [], true);
    coord.receive(at(3), [], true);
    coord.receive(at(7), [], true); // a jump
    await flush();
    expect(settled).toEqual([[7, "sync"]]);
    expect(coord.queued).toBe(0);
    expect(fx.instances[0]!.disposals).toEqual(["cancelled"]);
  });

  it("at most 16 transitions queue; an overflow clears the queue and shows the last confirmed view", async () => {
    const { coord, settled } = setup(oneStep);
    for (let r = 2; r <= 18; r++) coord.receive(at(r), [], true); // 1 playing + 16 queued
    expect(coord.queued).toBe(16);
    expect(settled).toEqual([]);
    coord.receive(at(19), [], true);
    expect(settled).toEqual([[19, "overflow"]]);
    expect(coord.queued).toBe(0);
    expect(coord.animating).toBe(false);
  });

  it("skip shows the confirmed projection and stops everything", async () => {
    const { coord, settled } = setup(oneStep);
    coord.receive(at(2), [], true);
    coord.receive(at(3), [], true);
    coord.skip();
    expect(settled).toEqual([[3, "skip"]]);
    expect(coord.animating).toBe(false);
  });
});

describe("non-blocking steps", () => {
  it("do not delay settle, may go on into the next plan, and are disposed by a sync", async () => {
    const { coord, fx, settled } = setup(() => plan("p", [step("tail", { blocking: false, timeoutMs: 5000 })]));
    coord.receive(at(2), [], true);
    await flush();
    expect(settled).toEqual([[2, "plan"]]);
    coord.receive(at(3), [], true);
    await flush();
    expect(settled).toEqual([[2, "plan"], [3, "plan"]]);
    const [first, second] = fx.instances;
    expect(first!.disposals).toEqual([]); // still playing, owned by its run
    coord.receive(at(3), [], false); // a resync
    expect(first!.disposals).toEqual(["cancelled"]);
    expect(second!.disposals).toEqual(["cancelled"]);
  });
});

describe("animations or sound off (acceptance)", () => {
  for (const motion of ["reduced", "off"] as const) {
    it(`motion '${motion}': the transition ends without waiting, markers still fire, controls come back`, async () => {
      const { coord, fx, sfx, settled, clock } = setup(
        () =>
          plan("p", [
            step("drop", { markers: ["impact"], timeoutMs: 600 }),
            step("s", { effect: "sfx", blocking: false, trigger: { marker: { step: "drop", marker: "impact" } } }),
            step("line", { trigger: { after: ["drop"] }, timeoutMs: 1200 }),
          ]),
        { motion, sound: true },
      );
      coord.receive(at(2), [], true);
      // No time passes: nothing waits for a fictitious duration.
      expect(settled).toEqual([[2, "plan"]]);
      expect(coord.animating).toBe(false);
      expect(fx.instances).toHaveLength(0);
      await flush();
      expect(sfx.has("s")).toBe(true); // the impact sound still plays
      expect(clock.time).toBe(0);
    });
  }

  it("sound off: audio steps are skipped and never block", async () => {
    const { coord, fx, sfx, settled } = setup(
      () => plan("p", [step("a", { effect: "sfx", blocking: true }), step("b", { trigger: { after: ["a"] } })]),
      { motion: "full", sound: false },
    );
    coord.receive(at(2), [], true);
    await flush();
    expect(sfx.instances).toHaveLength(0);
    fx.find("b").play.resolve();
    await flush();
    expect(settled).toEqual([[2, "plan"]]);
  });
});

describe("audio synchronized to markers", () => {
  function audioSetup(stepsFor: () => PresentationPlan) {
    const clock = new FakeClock();
    const audio = new FakeAudio();
    const mixer = new Mixer(audio);
    const resources = new Resources(
      [
        { id: "boom", path: "sounds/boom.wav", type: "sound", required: false, fallback: { kind: "omit" } },
        { id: "tick", path: "sounds/tick.wav", type: "sound", required: false, fallback: { kind: "omit" } },
      ],
      (d) => `/g/${d.path}`,
      async () => {},
    );
    const fx = new FakeEffect();
    const settled: number[] = [];
    const coord = new Coordinator<P>({
      effects: { fx, "sound.play": soundEffect(mixer, () => resources) },
      buildPlan: stepsFor,
      settle: (p) => settled.push(p.revision),
      clock,
    });
    coord.receive(at(1), [], false);
    return { clock, audio, mixer, fx, coord, settled };
  }
  const sound = (id: string, resource: string, policy: "mix" | "replace" | "skip-if-busy", maxDelayMs = 80, marker = "impact") =>
    step(id, {
      effect: "sound.play",
      params: { resource },
      blocking: false,
      timeoutMs: 2000,
      trigger: { marker: { step: "drop", marker } },
      audio: { channel: "effects", policy, maxDelayMs },
    });

  it("plays on the marker, not before", async () => {
    const { coord, fx, audio } = audioSetup(() => plan("p", [step("drop", { markers: ["impact"] }), sound("s", "boom", "mix")]));
    coord.receive(at(2), [], true);
    await flush();
    expect(audio.plays).toHaveLength(0);
    fx.find("drop").ctx.emit("impact");
    await flush();
    expect(audio.plays.map((p) => p.sound)).toEqual(["/g/sounds/boom.wav"]);
  });

  it("mix plays alongside; replace stops the channel; skip-if-busy skips while it plays", async () => {
    const { coord, fx, audio, mixer } = audioSetup(() =>
      plan("p", [
        step("drop", { markers: ["a", "b", "c"] }),
        sound("s1", "boom", "mix", 80, "a"),
        sound("s2", "tick", "mix", 80, "b"),
        sound("s3", "boom", "skip-if-busy", 80, "c"),
      ]),
    );
    coord.receive(at(2), [], true);
    await flush();
    const drop = fx.find("drop").ctx;
    drop.emit("a");
    await flush();
    drop.emit("b");
    await flush();
    expect(audio.plays).toHaveLength(2);
    drop.emit("c");
    await flush();
    expect(audio.plays).toHaveLength(2);
    expect(mixer.log).toContain("skip-busy boom");

    const r = audioSetup(() => plan("p", [step("drop", { markers: ["a", "b"] }), sound("s1", "boom", "mix", 80, "a"), sound("s2", "tick", "replace", 80, "b")]));
    r.coord.receive(at(2), [], true);
    await flush();
    r.fx.find("drop").ctx.emit("a");
    await flush();
    r.fx.find("drop").ctx.emit("b");
    await flush();
    expect(r.audio.plays.map((p) => [p.sound, p.stopped])).toEqual([
      ["/g/sounds/boom.wav", true],
      ["/g/sounds/tick.wav", false],
    ]);
  });

  it("a sound that arrives later than its maximum delay is skipped", async () => {
    const { coord, fx, audio, mixer, clock } = audioSetup(() => plan("p", [step("drop", { markers: ["impact"] }), sound("s", "boom", "mix", 80)]));
    let release!: () => void;
    audio.loadDelays.set("/g/sounds/boom.wav", { promise: new Promise<void>((r) => (release = r)), resolve: () => {}, reject: () => {} });
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").ctx.emit("impact");
    await clock.advance(150); // the sound loads too late
    release();
    await flush();
    expect(audio.plays).toHaveLength(0);
    expect(mixer.log.join()).toMatch(/late boom/);
  });

  it("a browser that blocks audio never blocks play", async () => {
    const { coord, fx, audio, settled } = audioSetup(() =>
      plan("p", [step("drop", { markers: ["impact"] }), { ...sound("s", "boom", "mix"), blocking: true }]),
    );
    audio.blocked = true;
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").ctx.emit("impact");
    fx.find("drop").play.resolve();
    await flush();
    expect(audio.plays).toHaveLength(1);
    expect(settled).toEqual([1, 2]);
  });

  it("a resource temporarily missing (acceptance): the declared fallback (silence) and the transition still settles", async () => {
    const { coord, fx, audio, settled } = audioSetup(() =>
      plan("p", [step("drop", { markers: ["impact"] }), { ...sound("s", "boom", "mix"), blocking: true }]),
    );
    audio.failing.add("/g/sounds/boom.wav");
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").ctx.emit("impact");
    fx.find("drop").play.resolve();
    await flush();
    expect(audio.plays).toHaveLength(0);
    expect(settled).toEqual([1, 2]);
  });

  it("a cancelled run's sound does not start late", async () => {
    const { coord, fx, audio } = audioSetup(() => plan("p", [step("drop", { markers: ["impact"] }), sound("s", "boom", "mix", 5000)]));
    let release!: () => void;
    audio.loadDelays.set("/g/sounds/boom.wav", { promise: new Promise<void>((r) => (release = r)), resolve: () => {}, reject: () => {} });
    coord.receive(at(2), [], true);
    await flush();
    fx.find("drop").ctx.emit("impact");
    await flush();
    coord.receive(at(6), [], false);
    release();
    await flush();
    expect(audio.plays).toHaveLength(0);
  });
});

describe("resources with declared fallbacks (acceptance: a resource temporarily missing)", () => {
  it("follows the chain: another resource, then a text; a later attempt tries again", async () => {
    let down = new Set(["/cover.svg", "/thumb.svg"]);
    const r = new Resources(
      [
        { id: "cover", path: "cover.svg", type: "image", required: true, fallback: { kind: "resource", id: "thumb" } },
        { id: "thumb", path: "thumb.svg", type: "image", required: true, fallback: { kind: "text", key: "game.title" } },
      ],
      (d) => `/${d.path}`,
      async (url) => {
        if (down.has(url)) throw new Error("404");
      },
    );
    expect(await r.resolve("cover")).toEqual({ kind: "text", key: "game.title" });
    down = new Set(["/cover.svg"]);
    expect(await r.resolve("cover")).toEqual({ kind: "url", id: "thumb", url: "/thumb.svg" });
    down = new Set();
    expect(await r.resolve("cover")).toEqual({ kind: "url", id: "cover", url: "/cover.svg" });
  });

  it("an unknown resource or a cycle of fallbacks ends in omission, never a hang", async () => {
    const r = new Resources(
      [
        { id: "a", path: "a", type: "image", required: false, fallback: { kind: "resource", id: "b" } },
        { id: "b", path: "b", type: "image", required: false, fallback: { kind: "resource", id: "a" } },
      ],
      (d) => d.path,
      async () => {
        throw new Error("down");
      },
    );
    expect(await r.resolve("a")).toEqual({ kind: "omit" });
    expect(await r.resolve("zzz")).toEqual({ kind: "omit" });
  });
});
