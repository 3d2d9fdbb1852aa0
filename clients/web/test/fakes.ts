/** Fakes for the coordinator's and the client's tests: a clock, effects, audio, a transport. */
import type { Clock } from "../src/lib/clock";
import type { DisposeReason, Effect, EffectContext, EffectHandle } from "../src/present/coordinator";
import type { AudioBackend, Playing } from "../src/present/audio";
import type { PlanStep, PresentationPlan } from "../src/present/plan";

export class FakeClock implements Clock {
  time = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;
  now = () => this.time;
  setTimeout = (fn: () => void, ms: number) => {
    const id = this.next++;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  };
  clearTimeout = (h: unknown) => void this.timers.delete(h as number);
  /** Advances time by `ms`, firing due timers in order (and letting promises settle between). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await flush();
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
      if (!due.length) break;
      const [id, t] = due[0]!;
      this.timers.delete(id);
      this.time = Math.max(this.time, t.at);
      t.fn();
    }
    this.time = end;
    await flush();
  }
  get pending(): number {
    return this.timers.size;
  }
}

/** Lets every queued promise callback run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
}

/** One prepared effect instance as the fake records it. */
export interface FakeInstance {
  step: string;
  generation: number;
  ctx: EffectContext<unknown>;
  prepare: Deferred<void> | null;
  play: Deferred<void>;
  played: boolean;
  disposals: DisposeReason[];
}

/**
 * A fake visual effect: `prepare` resolves at once (or waits, with `slowPrepare`), `play`
 * waits until the test resolves it. Every instance is recorded.
 */
export class FakeEffect implements Effect<unknown> {
  kind: "visual" | "audio" = "visual";
  instances: FakeInstance[] = [];
  slowPrepare = false;
  failPrepare = false;
  constructor(kind: "visual" | "audio" = "visual") {
    this.kind = kind;
  }
  validParams = () => true;
  prepare(_params: unknown, ctx: EffectContext<unknown>): EffectHandle | Promise<EffectHandle> {
    const inst: FakeInstance = {
      step: ctx.step.id,
      generation: ctx.generation,
      ctx: ctx as EffectContext<unknown>,
      prepare: this.slowPrepare ? deferred() : null,
      play: deferred(),
      played: false,
      disposals: [],
    };
    this.instances.push(inst);
    const handle: EffectHandle = {
      play: () => {
        inst.played = true;
        return inst.play.promise;
      },
      dispose: (reason) => void inst.disposals.push(reason),
    };
    if (this.failPrepare) return Promise.reject(new Error("cannot prepare"));
    return inst.prepare ? inst.prepare.promise.then(() => handle) : handle;
  }
  find(step: string): FakeInstance {
    const i = this.instances.filter((x) => x.step === step).at(-1);
    if (!i) throw new Error(`step ${step} never prepared (have ${this.instances.map((x) => x.step).join(", ")})`);
    return i;
  }
  has(step: string): boolean {
    return this.instances.some((x) => x.step === step);
  }
}

/** A fake audio backend: loads succeed unless listed, plays end when the test says. */
export class FakeAudio implements AudioBackend {
  failing = new Set<string>();
  blocked = false;
  loadDelays = new Map<string, Deferred<void>>();
  plays: { sound: string; ended: Deferred<void>; stopped: boolean }[] = [];
  async load(url: string): Promise<unknown> {
    const d = this.loadDelays.get(url);
    if (d) await d.promise;
    if (this.failing.has(url)) throw new Error(`404 ${url}`);
    return url;
  }
  play(sound: unknown): Playing {
    const ended = deferred<void>();
    const rec = { sound: String(sound), ended, stopped: false };
    this.plays.push(rec);
    if (this.blocked) ended.reject(new Error("NotAllowedError"));
    return {
      ended: ended.promise,
      stop: () => {
        rec.stopped = true;
        ended.resolve();
      },
    };
  }
}

export const plan = (id: string, steps: PlanStep[]): PresentationPlan => ({
  format: "juegoland.presentation-plan",
  formatVersion: 1,
  id,
  steps,
});

export const step = (id: string, over: Partial<PlanStep> = {}): PlanStep => ({
  id,
  effect: "fx",
  trigger: { after: [] },
  blocking: true,
  timeoutMs: 1000,
  ...over,
});
