/**
 * Presentation plans (the `presentation-plan` schema, spec/packages.md § Presentation plans)
 * and the checks the coordinator runs before it plays one: the schema's shape, and the
 * server-side validator's rules (no cycles, registered effects, declared markers, unique
 * ids, at most `MAX_STEPS` steps, each timeout at most `MAX_STEP_MS`).
 */
import type { PlanStep, PresentationPlan } from "../protocol/generated";

export type { PlanStep, PresentationPlan };

/** The limits of spec/packages.md: 128 steps, 12 s per step and per blocking plan. */
export const MAX_STEPS = 128;
export const MAX_STEP_MS = 12_000;
export const MAX_BLOCKING_PLAN_MS = 12_000;

export class PlanError extends Error {
  constructor(
    readonly kind:
      | "shape"
      | "duplicate-id"
      | "unknown-effect"
      | "invalid-params"
      | "unknown-step"
      | "unknown-marker"
      | "cycle"
      | "too-many-steps"
      | "timeout-too-long",
    message: string,
  ) {
    super(message);
  }
}

const STEP_KEYS = new Set(["id", "effect", "params", "trigger", "markers", "blocking", "timeoutMs", "audio"]);
const isUint = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 0xffffffff;

function checkShape(plan: PresentationPlan): void {
  const bad = (m: string) => new PlanError("shape", m);
  if (!plan || typeof plan !== "object") throw bad("a plan is an object");
  const keys = Object.keys(plan);
  for (const k of keys) if (!["format", "formatVersion", "id", "steps"].includes(k)) throw bad(`unknown field ${k}`);
  if (plan.format !== "juegoland.presentation-plan") throw bad("format must be juegoland.presentation-plan");
  if (plan.formatVersion !== 1) throw bad("formatVersion must be 1");
  if (typeof plan.id !== "string") throw bad("id must be a string");
  if (!Array.isArray(plan.steps)) throw bad("steps must be an array");
  for (const s of plan.steps) {
    if (!s || typeof s !== "object") throw bad("a step is an object");
    for (const k of Object.keys(s)) if (!STEP_KEYS.has(k)) throw bad(`step ${s.id}: unknown field ${k}`);
    if (typeof s.id !== "string" || typeof s.effect !== "string") throw bad("a step needs a string id and effect");
    if (typeof s.blocking !== "boolean" || !isUint(s.timeoutMs)) throw bad(`step ${s.id}: blocking and timeoutMs`);
    if (s.markers !== undefined && (!Array.isArray(s.markers) || s.markers.some((m) => typeof m !== "string"))) {
      throw bad(`step ${s.id}: markers must be strings`);
    }
    const t = s.trigger as Record<string, unknown> | undefined;
    if (!t || typeof t !== "object" || Object.keys(t).length !== 1) throw bad(`step ${s.id}: one trigger`);
    if ("after" in t) {
      if (!Array.isArray(t.after) || t.after.some((x) => typeof x !== "string")) throw bad(`step ${s.id}: after`);
    } else if ("marker" in t) {
      const m = t.marker as Record<string, unknown>;
      if (!m || typeof m.step !== "string" || typeof m.marker !== "string" || Object.keys(m).length !== 2) {
        throw bad(`step ${s.id}: marker trigger`);
      }
    } else throw bad(`step ${s.id}: unknown trigger`);
    if (s.audio != null) {
      const a = s.audio;
      if (typeof a.channel !== "string" || !["mix", "replace", "skip-if-busy"].includes(a.policy) || !isUint(a.maxDelayMs)) {
        throw bad(`step ${s.id}: audio`);
      }
    }
  }
}

/**
 * Checks `plan` against the schema's shape and the validator's rules; `effects` says which
 * effects are registered and whether their params are valid. Throws a `PlanError`.
 */
export function validatePlan(
  plan: PresentationPlan,
  effects: { has(effect: string): boolean; validParams(effect: string, params: unknown): boolean },
): void {
  checkShape(plan);
  if (plan.steps.length > MAX_STEPS) throw new PlanError("too-many-steps", `${plan.steps.length} steps > ${MAX_STEPS}`);
  const byId = new Map<string, PlanStep>();
  for (const s of plan.steps) {
    if (byId.has(s.id)) throw new PlanError("duplicate-id", `duplicate step id ${s.id}`);
    byId.set(s.id, s);
    if (!effects.has(s.effect)) throw new PlanError("unknown-effect", `step ${s.id}: unknown effect ${s.effect}`);
    if (!effects.validParams(s.effect, s.params ?? null)) {
      throw new PlanError("invalid-params", `step ${s.id}: invalid params for ${s.effect}`);
    }
    if (s.timeoutMs > MAX_STEP_MS) throw new PlanError("timeout-too-long", `step ${s.id}: ${s.timeoutMs} ms > ${MAX_STEP_MS}`);
  }
  for (const s of plan.steps) {
    for (const dep of dependencies(s)) {
      if (!byId.has(dep)) throw new PlanError("unknown-step", `step ${s.id} waits for unknown step ${dep}`);
    }
    if ("marker" in s.trigger) {
      const { step, marker } = s.trigger.marker;
      if (!(byId.get(step)!.markers ?? []).includes(marker)) {
        throw new PlanError("unknown-marker", `step ${s.id}: ${step} declares no marker ${marker}`);
      }
    }
  }
  // Depth-first search for a cycle over both kinds of dependency.
  const state = new Map<string, 1 | 2>();
  const visit = (id: string): void => {
    if (state.get(id) === 2) return;
    if (state.get(id) === 1) throw new PlanError("cycle", `a cycle through step ${id}`);
    state.set(id, 1);
    for (const d of dependencies(byId.get(id)!)) visit(d);
    state.set(id, 2);
  };
  for (const s of plan.steps) visit(s.id);
}

/** The steps `step` waits for: its `after` list, or its marker's producer. */
export function dependencies(step: PlanStep): string[] {
  return "after" in step.trigger ? step.trigger.after : [step.trigger.marker.step];
}

/** A plan with no steps: a transition that settles at once. */
export function emptyPlan(id: string): PresentationPlan {
  return { format: "juegoland.presentation-plan", formatVersion: 1, id, steps: [] };
}
