/**
 * Laberinto: a real-time race through a dark maze (spec/games.md § Laberinto). The board is
 * the fog of war drawn from the view's records (`laberinto/maze.ts`: what the player sees
 * now, the walls remembered from before, the dark rest), the keys, compasses, vision
 * artifacts and exits in sight, the players; beside it the player's status (the carried key,
 * the compass's bearing, the vision effect, the exit) and the countdown.
 *
 * Input is real time: the arrow keys (or the on-screen pad; D drops the key) send `move`
 * commands under the `queue` policy — several may be in flight, none waits for a view —
 * paced by the game's cooldown while a key is held. A move into a wall the player can see is
 * not sent; the match judges everything else against the state it meets, and a refused move
 * only shows a short cue.
 *
 * The plan of a transition never holds the board back: each step is non-blocking, so the
 * view settles at once and the effects play over it (a token slides from its last cell, a
 * key, a meeting or an exit flashes, the start and the end show a cue).
 */
import manifest from "../../../../libs/games/laberinto/package/game.json";
import { el, animate } from "../app/dom";
import type { Transition } from "../present/coordinator";
import type { PlanStep, PresentationPlan } from "../present/plan";
import type { QueueReceipt } from "../lib/client";
import { type Bearing, type Direction, type Maze, type PlayerStatus, DIRECTIONS, FogMemory, centre, mazeSvg, openWays, readMaze, rowCol } from "./laberinto/maze";
import { type BoardApi, type GameModule, type Manifest, type Projection, PLAN_FORMAT } from "./types";

const STEP_MS = 110;
const FLASH_MS = 650;
const CUE_MS = 900;
/** The pace of a held key beyond the game's cooldown (the cooldown runs on the server's clock). */
const PACE_MARGIN_MS = 25;
const DEFAULT_COOLDOWN_MS = 150;

/** The maze of a projection, or null when its view cannot be read. */
function mazeOf(p: Projection | null | undefined): Maze | null {
  try {
    return p ? readMaze(p.view) : null;
  } catch {
    return null;
  }
}

export type FlashKind = "key" | "drop" | "meet" | "exit";

/** The params each of the module's effects accepts (the effects' `validParams`). */
export const EFFECT_PARAMS: Record<"maze.step" | "maze.flash" | "maze.cue", (x: unknown) => boolean> = {
  "maze.step": (x) => {
    const s = x as { seat?: unknown; from?: unknown; to?: unknown } | null;
    return !!s && typeof s.seat === "string" && Number.isInteger(s.from) && Number.isInteger(s.to);
  },
  "maze.flash": (x) => {
    const f = x as { kind?: unknown; cell?: unknown } | null;
    return !!f && ["key", "drop", "meet", "exit"].includes(f.kind as string) && Number.isInteger(f.cell);
  },
  "maze.cue": (x) => !!x && ["go", "finish"].includes((x as { cue?: string }).cue ?? ""),
};

/**
 * The plan of one transition, every step non-blocking: a `player.moved` slides that token
 * from where the previous view had it; a key picked up or dropped, a meeting and an exit
 * opened flash on their cell (after the move that caused them); the race's start and end
 * show a cue.
 */
export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  const before = mazeOf(t.from);
  const after = mazeOf(t.to);
  const steps: PlanStep[] = [];
  const movedBy = new Map<string, string>();
  const push = (s: Omit<PlanStep, "blocking">) => steps.push({ ...s, blocking: false } as PlanStep);
  t.to.events.forEach((e, i) => {
    const d = (e.data ?? {}) as { seat?: string; cell?: number; owner?: string };
    const after1 = (seat: string | undefined) => (seat && movedBy.has(seat) ? [movedBy.get(seat)!] : []);
    if (e.type === "player.moved" && d.seat && typeof d.cell === "number") {
      const from = before?.positions[d.seat];
      if (from === undefined || from === d.cell) return;
      const id = `step-${i}`;
      push({ id, effect: "maze.step", params: { seat: d.seat, from, to: d.cell }, trigger: { after: [] }, timeoutMs: 600 });
      movedBy.set(d.seat, id);
    } else if ((e.type === "key.picked" || e.type === "key.dropped") && d.seat) {
      const cell = after?.positions[d.seat];
      if (cell === undefined) return;
      push({ id: `flash-${i}`, effect: "maze.flash", params: { kind: e.type === "key.picked" ? "key" : "drop", cell }, trigger: { after: after1(d.seat) }, timeoutMs: 1500 });
    } else if (e.type === "players.met") {
      const cell = after && (after.positions[after.role] ?? Object.values(after.positions)[0]);
      if (cell === undefined || cell === null) return;
      push({ id: `flash-${i}`, effect: "maze.flash", params: { kind: "meet", cell }, trigger: { after: [...movedBy.values()] }, timeoutMs: 1500 });
    } else if (e.type === "exit.opened" && d.seat) {
      const exit = after?.objects.find((o) => o.kind === "exit" && o.owner === d.seat);
      if (!exit) return;
      push({ id: `flash-${i}`, effect: "maze.flash", params: { kind: "exit", cell: exit.cell }, trigger: { after: after1(d.seat) }, timeoutMs: 1500 });
    } else if (e.type === "race.started" || e.type === "match.finished") {
      push({ id: `cue-${i}`, effect: "maze.cue", params: { cue: e.type === "race.started" ? "go" : "finish" }, trigger: { after: [] }, timeoutMs: 2000 });
    }
  });
  return { ...PLAN_FORMAT, id: `laberinto.r${t.to.revision}`, steps };
}

const messages = {
  es: {
    "laberinto.map": "Laberinto: usa las flechas para moverte",
    "laberinto.map-observer": "Laberinto entero",
    "laberinto.hint": "Flechas (o los botones) para moverte; mantén pulsada una flecha para correr. D suelta la llave que llevas.",
    "laberinto.pad": "Movimiento",
    "laberinto.dir.north": "Norte (↑)",
    "laberinto.dir.east": "Este (→)",
    "laberinto.dir.south": "Sur (↓)",
    "laberinto.dir.west": "Oeste (←)",
    "laberinto.drop": "Soltar la llave (D)",
    "laberinto.status": "Tu estado",
    "laberinto.key.none": "Llave: no llevas ninguna",
    "laberinto.key.own": "Llave: llevas la tuya",
    "laberinto.key.rival": "Llave: llevas la de {name}",
    "laberinto.compass.none": "Brújula: sin rumbo",
    "laberinto.compass.some": "Brújula: tu salida está al {bearing}",
    "laberinto.vision.none": "Visión: normal (3 casillas)",
    "laberinto.vision.some": "Visión ampliada: {n} movimientos más",
    "laberinto.exit.closed": "Tu salida: cerrada",
    "laberinto.exit.open": "Tu salida: abierta",
    "laberinto.obs.key.none": "{name} no lleva llave",
    "laberinto.obs.key.own": "{name} lleva su llave",
    "laberinto.obs.key.rival": "{name} lleva la llave de {owner}",
    "laberinto.obs.compass.none": "Brújula de {name}: sin rumbo",
    "laberinto.obs.compass.some": "Brújula de {name}: su salida está al {bearing}",
    "laberinto.obs.vision.none": "Visión de {name}: normal",
    "laberinto.obs.vision.some": "Visión de {name}: ampliada, {n} movimientos más",
    "laberinto.obs.exit.closed": "Salida de {name}: cerrada",
    "laberinto.obs.exit.open": "Salida de {name}: abierta",
    "laberinto.status-observer": "Los jugadores",
    "laberinto.bearing.n": "norte",
    "laberinto.bearing.ne": "noreste",
    "laberinto.bearing.e": "este",
    "laberinto.bearing.se": "sureste",
    "laberinto.bearing.s": "sur",
    "laberinto.bearing.sw": "suroeste",
    "laberinto.bearing.w": "oeste",
    "laberinto.bearing.nw": "noroeste",
    "laberinto.where": "Estás en la fila {row}, columna {column}. Salidas: {ways}.",
    "laberinto.where-none": "ninguna",
    "laberinto.in-sight": "A la vista: {things}.",
    "laberinto.nothing": "A la vista: nada.",
    "laberinto.thing.key": "la llave de {name} ({where})",
    "laberinto.thing.compass": "la brújula de {name} ({where})",
    "laberinto.thing.artifact": "un artefacto de visión ({where})",
    "laberinto.thing.exit": "la salida de {name} ({where})",
    "laberinto.thing.key-own": "tu llave ({where})",
    "laberinto.thing.compass-own": "tu brújula ({where})",
    "laberinto.thing.exit-own": "tu salida ({where})",
    "laberinto.thing.rival": "{name} ({where})",
    "laberinto.here": "aquí",
    "laberinto.offset": "{dist} al {bearing}",
    "laberinto.observer-where": "{name}: fila {row}, columna {column}",
    "laberinto.legend": "Leyenda",
    "laberinto.legend.you": "Tú",
    "laberinto.legend.rival": "Rival",
    "laberinto.legend.key": "Llave (del color de su dueño)",
    "laberinto.legend.compass": "Brújula",
    "laberinto.legend.artifact": "Artefacto de visión",
    "laberinto.legend.exit": "Salida",
    "laberinto.legend.fog": "Gris: lo que ya viste; negro: aún sin ver",
    "laberinto.countdown": "La carrera empieza en {n}…",
    "laberinto.countdown-now": "¡Ya casi!",
    "laberinto.cue.go": "¡Ya!",
    "laberinto.cue.finish": "¡Fin!",
    "laberinto.cue.wall": "Ahí hay una pared",
    "laberinto.cue.refused": "Movimiento rechazado",
    "laberinto.cue.wait": "Espera a la salida",
    "laberinto.race-started": "¡Empieza la carrera!",
    "laberinto.picked.own": "{name} recoge su llave.",
    "laberinto.picked.other": "{name} recoge la llave de {owner}.",
    "laberinto.dropped": "{name} suelta la llave de {owner}.",
    "laberinto.met": "¡Encuentro! Cada llave vuelve a su dueño.",
    "laberinto.exit-opened": "{name} abre su salida.",
    "laberinto.compass-points": "La brújula señala tu salida al {bearing}.",
    "laberinto.vision-up": "Artefacto de visión: ves más lejos durante 10 movimientos.",
    "laberinto.rival-seen": "Ves a {name}.",
    "laberinto.rival-lost": "Pierdes de vista a {name}.",
    "laberinto.status.countdown": "Prepárate: la carrera va a empezar",
    "laberinto.status.find-key": "Busca tu llave",
    "laberinto.status.carry-key": "Lleva tu llave a tu salida",
    "laberinto.status.rival-key": "Llevas la llave de {name}: suéltala (D) o aléjala de tu rival",
    "laberinto.status.go-out": "Tu salida está abierta: sal por ella",
    "laberinto.status.out": "¡Has salido! Esperando al final de la ventana de llegada",
    "laberinto.result.win": "¡Has salido el primero!",
    "laberinto.result.loss": "{name} ha salido antes",
    "laberinto.result.winner": "{name} ha salido el primero",
    "laberinto.result.draw": "Empate: los dos salís en menos de 200 ms",
    "laberinto.reason.exit": "salida",
    "laberinto.reason.finish-window": "ventana de llegada",
    "laberinto.reason.withdrawal": "abandono",
    "laberinto.reason.withdrawal-in-countdown": "abandono antes de empezar",
    "laberinto.preset.classic": "Clásico (15 × 15)",
    "laberinto.preset.small": "Pequeño (9 × 9)",
    "laberinto.preset.loops": "Grande con atajos (21 × 21)",
  },
  en: {
    "laberinto.map": "Maze: use the arrow keys to move",
    "laberinto.map-observer": "The whole maze",
    "laberinto.hint": "Arrow keys (or the buttons) to move; hold an arrow to run. D drops the key you carry.",
    "laberinto.pad": "Movement",
    "laberinto.dir.north": "North (↑)",
    "laberinto.dir.east": "East (→)",
    "laberinto.dir.south": "South (↓)",
    "laberinto.dir.west": "West (←)",
    "laberinto.drop": "Drop the key (D)",
    "laberinto.status": "Your status",
    "laberinto.key.none": "Key: you carry none",
    "laberinto.key.own": "Key: you carry your own",
    "laberinto.key.rival": "Key: you carry {name}'s",
    "laberinto.compass.none": "Compass: no bearing",
    "laberinto.compass.some": "Compass: your exit lies to the {bearing}",
    "laberinto.vision.none": "Vision: normal (3 cells)",
    "laberinto.vision.some": "Wide vision: {n} more moves",
    "laberinto.exit.closed": "Your exit: closed",
    "laberinto.exit.open": "Your exit: open",
    "laberinto.obs.key.none": "{name} carries no key",
    "laberinto.obs.key.own": "{name} carries their own key",
    "laberinto.obs.key.rival": "{name} carries {owner}'s key",
    "laberinto.obs.compass.none": "{name}'s compass: no bearing",
    "laberinto.obs.compass.some": "{name}'s compass: their exit lies to the {bearing}",
    "laberinto.obs.vision.none": "{name}'s vision: normal",
    "laberinto.obs.vision.some": "{name}'s vision: wide for {n} more moves",
    "laberinto.obs.exit.closed": "{name}'s exit: closed",
    "laberinto.obs.exit.open": "{name}'s exit: open",
    "laberinto.status-observer": "The players",
    "laberinto.bearing.n": "north",
    "laberinto.bearing.ne": "north-east",
    "laberinto.bearing.e": "east",
    "laberinto.bearing.se": "south-east",
    "laberinto.bearing.s": "south",
    "laberinto.bearing.sw": "south-west",
    "laberinto.bearing.w": "west",
    "laberinto.bearing.nw": "north-west",
    "laberinto.where": "You are on row {row}, column {column}. Ways out: {ways}.",
    "laberinto.where-none": "none",
    "laberinto.in-sight": "In sight: {things}.",
    "laberinto.nothing": "In sight: nothing.",
    "laberinto.thing.key": "{name}'s key ({where})",
    "laberinto.thing.compass": "{name}'s compass ({where})",
    "laberinto.thing.artifact": "a vision artifact ({where})",
    "laberinto.thing.exit": "{name}'s exit ({where})",
    "laberinto.thing.key-own": "your key ({where})",
    "laberinto.thing.compass-own": "your compass ({where})",
    "laberinto.thing.exit-own": "your exit ({where})",
    "laberinto.thing.rival": "{name} ({where})",
    "laberinto.here": "here",
    "laberinto.offset": "{dist} to the {bearing}",
    "laberinto.observer-where": "{name}: row {row}, column {column}",
    "laberinto.legend": "Legend",
    "laberinto.legend.you": "You",
    "laberinto.legend.rival": "Rival",
    "laberinto.legend.key": "Key (its owner's colour)",
    "laberinto.legend.compass": "Compass",
    "laberinto.legend.artifact": "Vision artifact",
    "laberinto.legend.exit": "Exit",
    "laberinto.legend.fog": "Grey: seen before; black: not seen yet",
    "laberinto.countdown": "The race starts in {n}…",
    "laberinto.countdown-now": "Any moment now!",
    "laberinto.cue.go": "Go!",
    "laberinto.cue.finish": "Finish!",
    "laberinto.cue.wall": "A wall is in the way",
    "laberinto.cue.refused": "Move refused",
    "laberinto.cue.wait": "Wait for the start",
    "laberinto.race-started": "The race is on!",
    "laberinto.picked.own": "{name} picks up their key.",
    "laberinto.picked.other": "{name} picks up {owner}'s key.",
    "laberinto.dropped": "{name} drops {owner}'s key.",
    "laberinto.met": "A meeting! Every key goes back to its owner.",
    "laberinto.exit-opened": "{name} opens their exit.",
    "laberinto.compass-points": "The compass points to your exit, to the {bearing}.",
    "laberinto.vision-up": "A vision artifact: you see farther for 10 moves.",
    "laberinto.rival-seen": "You see {name}.",
    "laberinto.rival-lost": "You lose sight of {name}.",
    "laberinto.status.countdown": "Get ready: the race is about to start",
    "laberinto.status.find-key": "Find your key",
    "laberinto.status.carry-key": "Take your key to your exit",
    "laberinto.status.rival-key": "You carry {name}'s key: drop it (D) or keep it away from them",
    "laberinto.status.go-out": "Your exit is open: go out through it",
    "laberinto.status.out": "You are out! Waiting for the finish window to close",
    "laberinto.result.win": "You got out first!",
    "laberinto.result.loss": "{name} got out first",
    "laberinto.result.winner": "{name} got out first",
    "laberinto.result.draw": "A draw: you both got out within 200 ms",
    "laberinto.reason.exit": "exit",
    "laberinto.reason.finish-window": "finish window",
    "laberinto.reason.withdrawal": "withdrawal",
    "laberinto.reason.withdrawal-in-countdown": "withdrawal before the start",
    "laberinto.preset.classic": "Classic (15 × 15)",
    "laberinto.preset.small": "Small (9 × 9)",
    "laberinto.preset.loops": "Large with shortcuts (21 × 21)",
  },
};

type Api = Pick<BoardApi, "t" | "name">;
const other = (seat: string) => (seat === "p0" ? "p1" : "p0");

/** The bearing from one cell to another (one of eight), for what the player sees. */
export function bearingOf(width: number, from: number, to: number): Bearing | null {
  const a = rowCol(width, from);
  const b = rowCol(width, to);
  const dr = b.row - a.row;
  const dc = b.column - a.column;
  if (!dr && !dc) return null;
  const [ar, ac] = [Math.abs(dr), Math.abs(dc)];
  const ns = dr < 0 ? "n" : "s";
  const ew = dc < 0 ? "w" : "e";
  if (ar && ac && Math.min(ar, ac) * 2 >= Math.max(ar, ac)) return `${ns}${ew}` as Bearing;
  return ar >= ac ? ns : ew;
}

/** Where something is from the player, in words: "here", "2 to the north-east". */
function whereFrom(api: Api, m: Maze, from: number, to: number): string {
  const b = bearingOf(m.width, from, to);
  if (!b) return api.t("laberinto.here");
  const a = rowCol(m.width, from);
  const c = rowCol(m.width, to);
  const dist = Math.max(Math.abs(a.row - c.row), Math.abs(a.column - c.column));
  return api.t("laberinto.offset", { dist, bearing: api.t(`laberinto.bearing.${b}`) });
}

/** The sentences a screen reader (and everyone) reads under the map. */
export function describePlace(m: Maze, seat: string | null, api: Api): string[] {
  if (!seat || m.role === "observer") {
    return Object.entries(m.positions)
      .sort()
      .map(([s, cell]) => {
        const { row, column } = rowCol(m.width, cell);
        return api.t("laberinto.observer-where", { name: api.name(s), row: row + 1, column: column + 1 });
      });
  }
  const me = m.positions[seat];
  if (me === undefined) return [];
  const { row, column } = rowCol(m.width, me);
  const here = m.cells.get(me);
  const ways = here ? openWays(here).map((d) => api.t(`laberinto.dir.${d}`).replace(/ \(.\)$/, "")) : [];
  const out = [api.t("laberinto.where", { row: row + 1, column: column + 1, ways: ways.length ? ways.join(", ") : api.t("laberinto.where-none") })];
  const things: string[] = [];
  for (const o of m.objects) {
    if (o.kind === "key" && o.variant === "carried") continue;
    const where = whereFrom(api, m, me, o.cell);
    const own = o.owner === seat && o.kind !== "artifact";
    things.push(api.t(`laberinto.thing.${o.kind}${own ? "-own" : ""}`, { name: o.owner ? api.name(o.owner) : "", where }));
  }
  const rival = m.positions[other(seat)];
  if (rival !== undefined) things.push(api.t("laberinto.thing.rival", { name: api.name(other(seat)), where: whereFrom(api, m, me, rival) }));
  out.push(things.length ? api.t("laberinto.in-sight", { things: things.join("; ") }) : api.t("laberinto.nothing"));
  return out;
}

/** A player's own status, said to them: the key carried, the compass, the vision, the exit. */
export function statusLines(api: Api, seat: string, st: PlayerStatus | undefined): string[] {
  if (!st) return [];
  const key = !st.inventory ? api.t("laberinto.key.none") : st.inventory === seat ? api.t("laberinto.key.own") : api.t("laberinto.key.rival", { name: api.name(st.inventory) });
  return [
    key,
    st.compass ? api.t("laberinto.compass.some", { bearing: api.t(`laberinto.bearing.${st.compass}`) }) : api.t("laberinto.compass.none"),
    st.visionMoves > 0 ? api.t("laberinto.vision.some", { n: st.visionMoves }) : api.t("laberinto.vision.none"),
    api.t(st.exitOpen ? "laberinto.exit.open" : "laberinto.exit.closed"),
  ];
}

/** A player's status as a spectator reads it. */
export function observerLines(api: Api, seat: string, st: PlayerStatus | undefined): string[] {
  if (!st) return [];
  const name = api.name(seat);
  const key = !st.inventory
    ? api.t("laberinto.obs.key.none", { name })
    : st.inventory === seat
      ? api.t("laberinto.obs.key.own", { name })
      : api.t("laberinto.obs.key.rival", { name, owner: api.name(st.inventory) });
  return [
    key,
    st.compass ? api.t("laberinto.obs.compass.some", { name, bearing: api.t(`laberinto.bearing.${st.compass}`) }) : api.t("laberinto.obs.compass.none", { name }),
    st.visionMoves > 0 ? api.t("laberinto.obs.vision.some", { name, n: st.visionMoves }) : api.t("laberinto.obs.vision.none", { name }),
    api.t(st.exitOpen ? "laberinto.obs.exit.open" : "laberinto.obs.exit.closed", { name }),
  ];
}

function mount(host: HTMLElement, api: BoardApi) {
  let p: Projection | null = null;
  let maze: Maze | null = null;
  const memory = new FogMemory();
  const root = el("div", { class: "mz" });
  const mapBox = el("div", { class: "mz-map", tabindex: 0, role: "group", "aria-describedby": "laberinto-where laberinto-hint" });
  const cue = el("p", { class: "mz-cue", "aria-hidden": "true" });
  const countdown = el("p", { class: "mz-countdown", role: "timer" });
  const where = el("div", { class: "mz-where", id: "laberinto-where" });
  const status = el("ul", { class: "mz-status" });
  const hint = el("p", { class: "hint", id: "laberinto-hint" });
  const pad = el("div", { class: "mz-pad", role: "group" });
  const buttons = new Map<Direction, HTMLButtonElement>();
  for (const d of DIRECTIONS) {
    const b = el("button", { type: "button", class: `mz-dir ${d}`, "data-direction": d });
    b.addEventListener("pointerdown", (ev) => {
      ev.preventDefault();
      press(d);
    });
    for (const end of ["pointerup", "pointerleave", "pointercancel"]) b.addEventListener(end, () => release(d));
    // Enter or Space on a focused button: one move.
    b.addEventListener("click", (ev) => {
      if (ev.detail === 0) tap(d);
    });
    buttons.set(d, b);
    pad.append(b);
  }
  const dropBtn = el("button", { type: "button", class: "tool mz-drop", "data-key": "drop", onclick: () => drop() });
  const legend = el("ul", { class: "mz-legend" });
  // The countdown over the map and the pad right after it, so a phone shows both with the maze.
  const side = el("div", { class: "mz-side" }, el("div", { class: "mz-controls" }, pad, dropBtn), hint, el("section", { class: "mz-box" }, el("h2", { class: "sr-only", id: "laberinto-status-h" }), status), legend);
  root.append(el("div", { class: "mz-main" }, countdown, el("div", { class: "mz-stage" }, mapBox, cue), where), side);
  host.replaceChildren(root);

  // ---- input: held keys are paced by the cooldown; a tap always sends one move ----
  let want: Direction | null = null;
  let held: Direction | null = null;
  let lastSent = -Infinity;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const pace = () => {
    const c = Number(api.config().cooldownMs);
    return (Number.isFinite(c) && c >= 0 ? c : DEFAULT_COOLDOWN_MS) + PACE_MARGIN_MS;
  };
  function press(d: Direction) {
    held = d;
    want = d;
    pump();
  }
  function release(d: Direction) {
    if (held === d) held = null;
  }
  function tap(d: Direction) {
    want = d;
    pump();
  }
  function schedule(ms: number) {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      pump();
    }, ms);
  }
  function pump() {
    if (!want) return;
    const wait = lastSent + pace() - performance.now();
    if (wait > 0) return schedule(wait);
    const d = want;
    const sent = send(d);
    if (sent === "busy") return schedule(40); // every slot in flight: soon again
    want = held;
    if (want) schedule(pace());
  }
  /** Sends one move; "busy" when no command may leave now but one may soon. */
  function send(d: Direction): "sent" | "busy" | "no" {
    const outcome = trySend(d);
    // What became of the last key press (the browser tests read it; nothing else does).
    root.dataset.lastInput = `${d} ${outcome}`;
    return outcome === "sent" ? "sent" : outcome === "busy" ? "busy" : "no";
  }
  function trySend(d: Direction): "sent" | "busy" | "wall" | "waiting" | "locked" {
    const m = mazeOf(api.confirmed());
    if (!m || m.phase !== "racing") {
      if (m?.phase === "countdown") showCue(api.t("laberinto.cue.wait"), "wait");
      return "waiting";
    }
    const seat = api.confirmed()?.seat;
    const cell = seat ? m.positions[seat] : undefined;
    // With nothing in flight the confirmed view is where the player is: a wall seen is not tried.
    if (api.inFlight() === 0 && cell !== undefined && !api.offer("move", { direction: d })) {
      if (!api.offer("move")) return "locked";
      showCue(api.t("laberinto.cue.wall"), "wall");
      return "wall";
    }
    if (api.command("move", { direction: d })) {
      lastSent = performance.now();
      return "sent";
    }
    return api.locked() ? "locked" : "busy";
  }
  function drop() {
    if (api.offer("drop")) api.command("drop", {});
  }
  const KEYS: Record<string, Direction> = { ArrowUp: "north", ArrowRight: "east", ArrowDown: "south", ArrowLeft: "west" };
  const onKeyDown = (ev: KeyboardEvent) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target as HTMLElement | null;
    // Only on the map, the pad, or nothing else focused (not in the language select…).
    const ours = !t || t === document.body || root.contains(t);
    if (!ours) return;
    const d = KEYS[ev.key];
    if (d) {
      ev.preventDefault();
      if (!ev.repeat) press(d);
    } else if ((ev.key === "d" || ev.key === "D") && !ev.repeat) {
      ev.preventDefault();
      drop();
    }
  };
  const onKeyUp = (ev: KeyboardEvent) => {
    const d = KEYS[ev.key];
    if (d) release(d);
  };
  document.addEventListener("keydown", onKeyDown);
  document.addEventListener("keyup", onKeyUp);

  // ---- cues and the countdown ----
  let cueTimer: ReturnType<typeof setTimeout> | null = null;
  function showCue(text: string, kind: string, ms = CUE_MS) {
    cue.textContent = text;
    cue.className = `mz-cue ${kind}`;
    if (cueTimer !== null) clearTimeout(cueTimer);
    cueTimer = setTimeout(() => {
      cue.textContent = "";
      cue.className = "mz-cue";
    }, ms);
  }
  let ticker: ReturnType<typeof setInterval> | null = null;
  function tick() {
    const c = api.confirmed();
    const m = mazeOf(c);
    const starts = c?.context?.raceStartsMs as number | null | undefined;
    if (!m || m.phase !== "countdown" || typeof starts !== "number") {
      countdown.textContent = "";
      countdown.hidden = true;
      if (ticker !== null) clearInterval(ticker);
      ticker = null;
      return;
    }
    countdown.hidden = false;
    // At most the config's longest countdown, whatever the clocks say.
    const left = Math.min(10_000, starts - api.serverNow());
    countdown.textContent = left > 0 ? api.t("laberinto.countdown", { n: Math.ceil(left / 1000) }) : api.t("laberinto.countdown-now");
  }
  function startTicker() {
    tick();
    if (ticker === null && !countdown.hidden) ticker = setInterval(tick, 200);
  }

  function render() {
    if (!p) return;
    maze = mazeOf(p);
    if (!maze) {
      mapBox.textContent = "";
      return;
    }
    const seat = p.seat;
    if (seat) memory.remember(maze);
    mapBox.innerHTML = mazeSvg(maze, seat ? memory : null, seat);
    mapBox.setAttribute("aria-label", api.t(seat ? "laberinto.map" : "laberinto.map-observer"));
    mapBox.style.setProperty("--mz-cols", String(maze.width));
    where.replaceChildren(...describePlace(maze, seat, api).map((text) => el("p", { text })));
    // The status: one's own, or both players' for an observer.
    const lines = seat ? statusLines(api, seat, maze.status[seat]) : Object.keys(maze.status).sort().flatMap((s) => observerLines(api, s, maze!.status[s]));
    root.querySelector("#laberinto-status-h")!.textContent = api.t(seat ? "laberinto.status" : "laberinto.status-observer");
    status.setAttribute("aria-labelledby", "laberinto-status-h");
    status.replaceChildren(...lines.map((text) => el("li", { text })));
    const can = !api.locked() && !!seat && maze.phase === "racing" && !!api.offer("move");
    for (const [d, b] of buttons) {
      b.textContent = api.t(`laberinto.dir.${d}`);
      b.setAttribute("aria-disabled", String(!can));
    }
    pad.setAttribute("aria-label", api.t("laberinto.pad"));
    pad.hidden = !seat;
    dropBtn.textContent = api.t("laberinto.drop");
    dropBtn.hidden = !seat;
    dropBtn.disabled = !api.offer("drop");
    hint.textContent = seat ? api.t("laberinto.hint") : "";
    legend.setAttribute("aria-label", api.t("laberinto.legend"));
    const who = (k: "you" | "rival", s: string) => (seat ? api.t(`laberinto.legend.${k}`) : api.name(s));
    legend.replaceChildren(
      el("li", {}, el("span", { class: `mz-swatch mz-lg-you ${seat ?? "p0"}`, "aria-hidden": "true" }), who("you", "p0")),
      el("li", {}, el("span", { class: `mz-swatch mz-lg-rival ${seat ?? "p0"}`, "aria-hidden": "true" }), who("rival", "p1")),
      ...[
        ["key", "mz-lg-key"],
        ["compass", "mz-lg-compass"],
        ["artifact", "mz-lg-artifact"],
        ["exit", "mz-lg-exit"],
        ["fog", "mz-lg-fog"],
      ]
        .filter(([k]) => seat || k !== "fog")
        .map(([k, cls]) => el("li", {}, el("span", { class: `mz-swatch ${cls} ${seat ?? "p0"}`, "aria-hidden": "true" }), api.t(`laberinto.legend.${k}`))),
    );
    startTicker();
  }

  const tokenOf = (seat: string) => mapBox.querySelector<SVGGElement>(`.mz-player[data-seat="${seat}"]`);
  return {
    update(next: Projection) {
      p = next;
      render();
    },
    refresh: render,
    queued(receipt: QueueReceipt) {
      if (receipt.status === "rejected") showCue(api.t("laberinto.cue.refused"), "refused", 500);
    },
    dispose() {
      document.removeEventListener("keydown", onKeyDown);
      document.removeEventListener("keyup", onKeyUp);
      for (const t of [timer, cueTimer]) if (t !== null) clearTimeout(t);
      if (ticker !== null) clearInterval(ticker);
      host.replaceChildren();
    },
    effects: {
      "maze.step": {
        kind: "visual" as const,
        validParams: EFFECT_PARAMS["maze.step"],
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const s = params as { seat: string; from: number; to: number };
          return {
            async play() {
              // The view has settled (the step never blocks): slide the token from its last cell.
              const token = tokenOf(s.seat);
              if (!token || !maze || !ctx.live()) return;
              const a = centre(maze.width, s.from);
              const b = centre(maze.width, s.to);
              // An SVG element's CSS transform is in the SVG's user units.
              await animate(token, [{ transform: `translate(${a.x - b.x}px, ${a.y - b.y}px)` }, { transform: "translate(0px, 0px)" }], STEP_MS, ctx.signal, "linear");
            },
            dispose() {},
          };
        },
      },
      "maze.flash": {
        kind: "visual" as const,
        validParams: EFFECT_PARAMS["maze.flash"],
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const f = params as { kind: FlashKind; cell: number };
          return {
            async play() {
              const svg = mapBox.querySelector("svg");
              if (!svg || !maze || !ctx.live()) return;
              const { x, y } = centre(maze.width, f.cell);
              const ring = document.createElementNS("http://www.w3.org/2000/svg", "circle");
              ring.setAttribute("class", `mz-flash ${f.kind}`);
              ring.setAttribute("cx", String(x));
              ring.setAttribute("cy", String(y));
              ring.setAttribute("r", "4");
              svg.append(ring);
              try {
                await animate(ring, [{ transform: "scale(0.6)", opacity: 1 }, { transform: "scale(2.2)", opacity: 0 }], FLASH_MS, ctx.signal);
              } finally {
                ring.remove();
              }
            },
            dispose() {},
          };
        },
      },
      "maze.cue": {
        kind: "visual" as const,
        validParams: EFFECT_PARAMS["maze.cue"],
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const c = params as { cue: "go" | "finish" };
          return {
            async play() {
              if (!ctx.live()) return;
              showCue(api.t(`laberinto.cue.${c.cue}`), c.cue, 1200);
              await animate(cue, [{ transform: "scale(1.4)", opacity: 0.4 }, { transform: "scale(1)", opacity: 1 }], 400, ctx.signal);
            },
            dispose() {},
          };
        },
      },
    },
  };
}

/** The sentences of one transition: keys, meetings, exits, the compass, the vision, the rival. */
function describe(t: Transition<Projection>, api: Api): string[] {
  const out: string[] = [];
  const seat = t.to.seat;
  for (const e of t.to.events) {
    const d = (e.data ?? {}) as { seat?: string; owner?: string };
    if (e.type === "race.started") out.push(api.t("laberinto.race-started"));
    else if (e.type === "key.picked" && d.seat && d.owner) out.push(d.owner === d.seat ? api.t("laberinto.picked.own", { name: api.name(d.seat) }) : api.t("laberinto.picked.other", { name: api.name(d.seat), owner: api.name(d.owner) }));
    else if (e.type === "key.dropped" && d.seat && d.owner) out.push(api.t("laberinto.dropped", { name: api.name(d.seat), owner: api.name(d.owner) }));
    else if (e.type === "players.met") out.push(api.t("laberinto.met"));
    else if (e.type === "exit.opened" && d.seat) out.push(api.t("laberinto.exit-opened", { name: api.name(d.seat) }));
  }
  const [a, b] = [mazeOf(t.from), mazeOf(t.to)];
  if (seat && a && b) {
    const [was, is] = [a.status[seat], b.status[seat]];
    if (is?.compass && is.compass !== was?.compass) out.push(api.t("laberinto.compass-points", { bearing: api.t(`laberinto.bearing.${is.compass}`) }));
    if (is && was && is.visionMoves > was.visionMoves) out.push(api.t("laberinto.vision-up"));
    const rival = other(seat);
    if (b.positions[rival] !== undefined && a.positions[rival] === undefined) out.push(api.t("laberinto.rival-seen", { name: api.name(rival) }));
    if (b.positions[rival] === undefined && a.positions[rival] !== undefined && !t.to.result) out.push(api.t("laberinto.rival-lost", { name: api.name(rival) }));
  }
  return out;
}

export const laberinto: GameModule = {
  id: "laberinto",
  manifest: manifest as unknown as Manifest,
  messages,
  realtime: true,
  presets: [
    { id: "classic", label: "laberinto.preset.classic", config: {} },
    { id: "small", label: "laberinto.preset.small", config: { width: 9, height: 9, artifacts: 1 } },
    { id: "loops", label: "laberinto.preset.loops", config: { width: 21, height: 21, loops: 12, artifacts: 3 } },
  ],
  buildTransitionPlan,
  mount,
  describe,
  instants(p, live) {
    // The revision of `race.started` is committed at (or just after) `raceStartsMs`.
    return live && p.events.some((e) => e.type === "race.started") && typeof p.context?.raceStartsMs === "number" ? [p.context.raceStartsMs] : [];
  },
  status(p, api) {
    const m = mazeOf(p);
    if (!m || !p.seat) return null;
    if (m.phase === "countdown") return api.t("laberinto.status.countdown");
    const st = m.status[p.seat];
    if (!st) return null;
    if (!p.actions.length) return api.t("laberinto.status.out");
    if (st.exitOpen) return api.t("laberinto.status.go-out");
    if (st.inventory === p.seat) return api.t("laberinto.status.carry-key");
    if (st.inventory) return api.t("laberinto.status.rival-key", { name: api.name(st.inventory) });
    return api.t("laberinto.status.find-key");
  },
  resultText(p, api) {
    const r = p.result;
    if (r?.kind !== "completed") return null;
    const outcomes = Object.entries(r.participants);
    if (r.reasonCode === "finish-window" || outcomes.every(([, x]) => x.outcome === "draw")) return api.t("laberinto.result.draw");
    if (r.reasonCode !== "exit") return null;
    const winner = outcomes.find(([, x]) => x.outcome === "win")?.[0];
    if (!winner) return null;
    if (p.seat === winner) return api.t("laberinto.result.win");
    return api.t(p.seat ? "laberinto.result.loss" : "laberinto.result.winner", { name: api.name(winner) });
  },
};
