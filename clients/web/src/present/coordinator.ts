/**
 * The presentation coordinator (seed 000 §13, spec/packages.md § Presentation plans).
 *
 * It keeps three things apart: the last CONFIRMED projection (updated the moment a snapshot
 * arrives), the DISPLAYED projection (what the board shows; it may stay on the previous
 * revision while the change is represented) and the local transition plan that goes from one
 * to the other.
 *
 * One owner of the ending: for each step the coordinator calls the effect's `prepare(params,
 * ctx)` (a cancelable handle), then `play()`, then `dispose(reason)` exactly once; `settle`
 * (installing the destination projection) belongs to the coordinator alone and runs once,
 * when every blocking step has ended. Every callback it hands out checks the run's
 * AbortSignal and generation before touching the frame, emitting a marker or playing a
 * sound; a handle whose preparation ends after its run was cancelled is disposed at once.
 *
 * Rules:
 * - trigger `after: []` starts a step at once, `after: [ids]` when those steps have ended (in
 *   any way), `marker` when the named step emits that marker; a producer that ends without
 *   emitting it skips the marker's dependants (and releases their blocking);
 * - a blocking step that fails or times out cancels the plan, clears the queue and shows the
 *   last confirmed projection; a non-blocking one just ends;
 * - every step has its `timeoutMs` (at most 12 s), and a plan's blocking part at most 12 s;
 * - non-blocking steps never delay settle; they may go on while the next plan plays, owned by
 *   their run, and are disposed when a sync, a skip or a cancellation clears everything;
 * - only contiguous transitions queue (revision R → R+1 after the last queued one), at most
 *   16; anything else (a sync, a jump, an overflow) clears the queue and shows the confirmed
 *   projection without replaying history or sounds;
 * - reduced motion and animations off resolve visual effects at once (their declared markers
 *   emitted in order, no fictitious duration); sound off skips audio effects.
 */
import type { WireEvent } from "../protocol/generated";
import { type Clock, realClock } from "../lib/clock";
import { MAX_BLOCKING_PLAN_MS, type PlanStep, type PresentationPlan, validatePlan } from "./plan";

export type Motion = "full" | "reduced" | "off";

export interface Preferences {
  motion: Motion;
  sound: boolean;
}

/** What a projection must carry for the coordinator: its revision. */
export interface Revisioned {
  revision: number;
}

export interface Transition<P> {
  from: P;
  to: P;
  events: WireEvent[];
}

export type DisposeReason = "done" | "cancelled" | "timeout" | "failed";

/** What an effect receives; its callbacks are dead once `live()` is false. */
export interface EffectContext<P> {
  readonly signal: AbortSignal;
  readonly generation: number;
  /** Whether the run is still current (not aborted, generation alive). */
  live(): boolean;
  /** Emits one of the step's declared markers (ignored when not live or undeclared). */
  emit(marker: string): void;
  readonly step: PlanStep;
  readonly transition: Transition<P>;
  /** When the step was triggered (the clock's time): an audio step measures its delay from it. */
  readonly startedAt: number;
  readonly clock: Clock;
  readonly prefs: Preferences;
}

export interface EffectHandle {
  /** Represents the effect; resolves when it has finished. */
  play(): Promise<void>;
  /** Releases resources and listeners; called once by the coordinator, tolerates repetition. */
  dispose(reason: DisposeReason): void;
}

export interface Effect<P> {
  /** Visual effects resolve at once under reduced motion; audio effects are skipped with sound off. */
  kind: "visual" | "audio";
  validParams?(params: unknown): boolean;
  prepare(params: unknown, ctx: EffectContext<P>): EffectHandle | Promise<EffectHandle>;
}

export type SettleReason = "plan" | "sync" | "skip" | "failure" | "overflow" | "invalid-plan";

export interface CoordinatorOptions<P> {
  effects: Record<string, Effect<P>>;
  /** The game's pure plan builder. */
  buildPlan(transition: Transition<P>): PresentationPlan;
  /** Installs `projection` as the displayed one (the renderer's update). */
  settle(projection: P, reason: SettleReason): void;
  clock?: Clock;
  prefs?: Preferences;
  /** Called whenever `animating`, `stale` or the queue changes. */
  onChange?(): void;
  /** A plan or effect problem worth logging (never shown as an error to the player). */
  onProblem?(message: string): void;
  maxQueue?: number;
  planTimeoutMs?: number;
}

export const MAX_QUEUE = 16;

type Status = "waiting" | "running" | "done" | "failed" | "skipped";

interface StepState {
  step: PlanStep;
  status: Status;
  emitted: Set<string>;
  handle: EffectHandle | null;
  disposed: boolean;
  timer: unknown;
}

interface Run<P> {
  generation: number;
  controller: AbortController;
  transition: Transition<P>;
  steps: Map<string, StepState>;
  blockingLeft: number;
  settled: boolean;
  planTimer: unknown;
}

export class Coordinator<P extends Revisioned> {
  confirmed: P | null = null;
  displayed: P | null = null;
  private queue: Transition<P>[] = [];
  private current: Run<P> | null = null;
  /** Runs whose blocking part settled but whose non-blocking steps still play. */
  private lingering = new Set<Run<P>>();
  private liveGenerations = new Set<number>();
  private generations = 0;
  private readonly clock: Clock;
  prefs: Preferences;

  constructor(private readonly opts: CoordinatorOptions<P>) {
    this.clock = opts.clock ?? realClock;
    this.prefs = opts.prefs ?? { motion: "full", sound: true };
  }

  /** Whether a blocking part of a plan is playing or queued. */
  get animating(): boolean {
    return this.current !== null || this.queue.length > 0;
  }

  /** Whether the displayed projection is older than the confirmed one. */
  get stale(): boolean {
    return this.confirmed !== null && this.displayed?.revision !== this.confirmed.revision;
  }

  get queued(): number {
    return this.queue.length;
  }

  setPreferences(prefs: Preferences): void {
    this.prefs = prefs;
  }

  /**
   * A snapshot was accepted: `live` for the contiguous next revision with its events, false
   * for a sync answer. The confirmed projection changes now; the displayed one when its
   * transition settles.
   */
  receive(projection: P, events: WireEvent[], live: boolean): void {
    this.confirmed = projection;
    const last = this.queue.at(-1)?.to ?? this.current?.transition.to ?? this.displayed;
    if (live && last !== null && projection.revision === last.revision + 1) {
      this.queue.push({ from: last, to: projection, events });
      if (this.queue.length > (this.opts.maxQueue ?? MAX_QUEUE)) {
        this.cancelAll();
        this.show(projection, "overflow");
        return;
      }
      this.pump();
      this.changed();
      return;
    }
    // A sync, a jump, or the first projection: no history, no sound.
    this.cancelAll();
    this.show(projection, "sync");
  }

  /** The player skips the animation: everything stops and the confirmed projection shows. */
  skip(): void {
    if (!this.confirmed) return;
    this.cancelAll();
    this.show(this.confirmed, "skip");
  }

  /** Stops everything (leaving the match). */
  dispose(): void {
    this.cancelAll();
    this.changed();
  }

  private changed(): void {
    this.opts.onChange?.();
  }

  private show(projection: P, reason: SettleReason): void {
    this.displayed = projection;
    this.opts.settle(projection, reason);
    this.changed();
  }

  /** Aborts every run (current and lingering) and clears the queue. */
  private cancelAll(): void {
    this.queue = [];
    const runs = [...this.lingering];
    if (this.current) runs.push(this.current);
    this.current = null;
    this.lingering.clear();
    for (const run of runs) this.abort(run);
  }

  private abort(run: Run<P>): void {
    this.liveGenerations.delete(run.generation);
    run.controller.abort();
    if (run.planTimer !== null) this.clock.clearTimeout(run.planTimer);
    run.planTimer = null;
    for (const s of run.steps.values()) {
      if (s.timer !== null) this.clock.clearTimeout(s.timer);
      s.timer = null;
      if (s.status === "running" || s.status === "waiting") s.status = "skipped";
      this.release(s, "cancelled");
    }
  }

  /** Disposes a step's handle once. */
  private release(s: StepState, reason: DisposeReason): void {
    if (s.disposed || !s.handle) return;
    s.disposed = true;
    try {
      s.handle.dispose(reason);
    } catch (e) {
      this.opts.onProblem?.(`dispose of step ${s.step.id} threw: ${String(e)}`);
    }
  }

  private isLive(run: Run<P>): boolean {
    return !run.controller.signal.aborted && this.liveGenerations.has(run.generation);
  }

  private pump(): void {
    if (this.current !== null) return;
    const transition = this.queue.shift();
    if (!transition) return;
    let plan: PresentationPlan;
    try {
      plan = this.opts.buildPlan(transition);
      validatePlan(plan, {
        has: (e) => e in this.opts.effects,
        validParams: (e, p) => this.opts.effects[e]?.validParams?.(p) ?? true,
      });
    } catch (e) {
      this.opts.onProblem?.(`plan for revision ${transition.to.revision} refused: ${String(e)}`);
      this.show(transition.to, "invalid-plan");
      this.pump();
      return;
    }
    const run: Run<P> = {
      generation: ++this.generations,
      controller: new AbortController(),
      transition,
      steps: new Map(plan.steps.map((step) => [step.id, { step, status: "waiting", emitted: new Set(), handle: null, disposed: false, timer: null }])),
      blockingLeft: plan.steps.filter((s) => s.blocking).length,
      settled: false,
      planTimer: null,
    };
    this.liveGenerations.add(run.generation);
    this.current = run;
    if (run.blockingLeft > 0) {
      run.planTimer = this.clock.setTimeout(() => {
        run.planTimer = null;
        if (this.isLive(run) && !run.settled) this.fail(run, null, "the plan's blocking part timed out");
      }, this.opts.planTimeoutMs ?? MAX_BLOCKING_PLAN_MS);
    }
    this.startReady(run);
    this.maybeSettle(run);
  }

  /** Starts every waiting `after` step whose dependencies have all ended. */
  private startReady(run: Run<P>): void {
    for (const s of run.steps.values()) {
      if (!this.isLive(run)) return;
      if (s.status !== "waiting" || !("after" in s.step.trigger)) continue;
      const ended = s.step.trigger.after.every((id) => {
        const d = run.steps.get(id)!.status;
        return d === "done" || d === "failed" || d === "skipped";
      });
      if (ended) this.start(run, s);
    }
  }

  private start(run: Run<P>, s: StepState): void {
    s.status = "running";
    const step = s.step;
    const startedAt = this.clock.now();
    s.timer = this.clock.setTimeout(() => {
      s.timer = null;
      if (s.status === "running" && this.isLive(run)) this.stepFailed(run, s, "timeout");
    }, step.timeoutMs);
    const effect = this.opts.effects[step.effect]!;
    if (effect.kind === "visual" && this.prefs.motion !== "full") {
      // No fictitious duration: the effect's end state is the settled view; its markers
      // happen now, in order.
      for (const m of step.markers ?? []) this.emit(run, s, m);
      this.end(run, s, "done");
      return;
    }
    if (effect.kind === "audio" && !this.prefs.sound) {
      this.end(run, s, "skipped");
      return;
    }
    const ctx: EffectContext<P> = {
      signal: run.controller.signal,
      generation: run.generation,
      live: () => this.isLive(run) && s.status === "running",
      emit: (marker) => this.emit(run, s, marker),
      step,
      transition: run.transition,
      startedAt,
      clock: this.clock,
      prefs: this.prefs,
    };
    let prepared: Promise<EffectHandle>;
    try {
      prepared = Promise.resolve(effect.prepare(step.params ?? null, ctx));
    } catch (e) {
      prepared = Promise.reject(e);
    }
    prepared.then(
      (handle) => {
        s.handle = handle;
        if (!this.isLive(run) || s.status !== "running") {
          // Prepared too late (cancelled or timed out meanwhile): release it at once.
          this.release(s, "cancelled");
          return;
        }
        let playing: Promise<void>;
        try {
          playing = Promise.resolve(handle.play());
        } catch (e) {
          playing = Promise.reject(e);
        }
        playing.then(
          () => {
            if (this.isLive(run) && s.status === "running") this.end(run, s, "done");
          },
          (e) => {
            if (this.isLive(run) && s.status === "running") this.stepFailed(run, s, "failed", e);
          },
        );
      },
      (e) => {
        if (this.isLive(run) && s.status === "running") this.stepFailed(run, s, "failed", e);
      },
    );
  }

  private emit(run: Run<P>, s: StepState, marker: string): void {
    if (!this.isLive(run) || s.status !== "running") return;
    if (!(s.step.markers ?? []).includes(marker) || s.emitted.has(marker)) return;
    s.emitted.add(marker);
    for (const d of run.steps.values()) {
      if (d.status !== "waiting" || !("marker" in d.step.trigger)) continue;
      const t = d.step.trigger.marker;
      if (t.step === s.step.id && t.marker === marker) this.start(run, d);
      if (!this.isLive(run)) return;
    }
  }

  /** A step ended (done, failed without blocking, or skipped). */
  private end(run: Run<P>, s: StepState, status: "done" | "failed" | "skipped", reason: DisposeReason = "done"): void {
    if (s.status !== "running" && s.status !== "waiting") return;
    s.status = status;
    if (s.timer !== null) this.clock.clearTimeout(s.timer);
    s.timer = null;
    this.release(s, reason);
    if (s.step.blocking) run.blockingLeft -= 1;
    // Dependants of markers it never emitted are skipped: they never wait forever.
    for (const d of run.steps.values()) {
      if (d.status !== "waiting" || !("marker" in d.step.trigger)) continue;
      if (d.step.trigger.marker.step === s.step.id) this.end(run, d, "skipped");
    }
    if (!this.isLive(run)) return;
    this.startReady(run);
    this.maybeSettle(run);
    this.maybeFinish(run);
  }

  private stepFailed(run: Run<P>, s: StepState, why: "timeout" | "failed", error?: unknown): void {
    const message = `step ${s.step.id} (${s.step.effect}) ${why === "timeout" ? "timed out" : `failed: ${String(error)}`}`;
    if (s.step.blocking) {
      this.fail(run, s, message, why);
      return;
    }
    this.opts.onProblem?.(message);
    this.end(run, s, "failed", why);
  }

  /** A blocking failure: the plan is cancelled, the queue cleared, the confirmed view shown. */
  private fail(run: Run<P>, s: StepState | null, message: string, why: DisposeReason = "timeout"): void {
    this.opts.onProblem?.(message);
    if (s) this.release(s, why);
    this.cancelAll();
    if (this.confirmed) this.show(this.confirmed, "failure");
  }

  private maybeSettle(run: Run<P>): void {
    if (run.settled || run.blockingLeft > 0 || !this.isLive(run)) return;
    run.settled = true;
    if (run.planTimer !== null) this.clock.clearTimeout(run.planTimer);
    run.planTimer = null;
    if (this.current === run) this.current = null;
    this.lingering.add(run);
    this.show(run.transition.to, "plan");
    this.maybeFinish(run);
    this.pump();
    this.changed();
  }

  private maybeFinish(run: Run<P>): void {
    if (!run.settled) return;
    for (const s of run.steps.values()) if (s.status === "running" || s.status === "waiting") return;
    this.lingering.delete(run);
    this.liveGenerations.delete(run.generation);
  }
}
