/**
 * What the dice race games (La Oca, Serpientes y escaleras) share: the board read from its
 * component (`board-games/<board>`: a directed graph whose numbered nodes are the squares,
 * whose `name` attributes name the special squares and whose jump edges are the gooses,
 * bridges, ladders and snakes), the plan of a roll and the board's renderer.
 *
 * The plan of one `piece.moved` (the server resolved the whole movement; the event carries
 * the path): the die rolls → a read pause when it is someone else's roll (the player reads
 * the number before the piece moves) → the piece walks the squares it counts (forward, and
 * back from the last square on a bounce) → each square effect (a jump along a board
 * connection, the well, a square that costs turns). The board otherwise draws the view's
 * confirmed positions, so a reload or a skip shows them without replaying anything.
 */
import { el, animate, wait } from "../../app/dom";
import { formatClock, isClockView, seatTimes } from "../common/clock";
import type { Transition } from "../../present/coordinator";
import type { PlanStep, PresentationPlan } from "../../present/plan";
import { type BoardApi, type Projection, type Renderer, PLAN_FORMAT } from "../types";

export interface PathStep {
  square: number;
  via: string;
}
export interface Moved {
  seat: string;
  roll: number[];
  path: PathStep[];
}

/** A board component (`kind: "board"`, `layout.shape: "graph"`). */
export interface BoardComponent {
  kind: string;
  layout: {
    shape: string;
    nodes: { id: string; attributes?: Record<string, unknown> }[];
    edges: { from: string; to: string; kind?: string | null }[];
  };
}

export interface Board {
  /** The last square (squares are 1..goal; 0 is off the board). */
  goal: number;
  /** Square → its special name (`oca`, `puente`…), from the nodes' `name` attribute. */
  names: Map<number, string>;
  /** Square → its resting effect attribute (`inn`, `well`, `prison`). */
  effects: Map<number, string>;
  /** The jumps: every edge that is not `next` or `back`, in the direction it goes. */
  jumps: { from: number; to: number; kind: string }[];
}

export function readBoard(c: BoardComponent): Board {
  const names = new Map<number, string>();
  const effects = new Map<number, string>();
  let goal = 0;
  for (const n of c.layout.nodes) {
    const i = Number(n.id);
    goal = Math.max(goal, i);
    if (typeof n.attributes?.name === "string") names.set(i, n.attributes.name);
    if (typeof n.attributes?.effect === "string") effects.set(i, n.attributes.effect);
  }
  const jumps = c.layout.edges
    .filter((e) => e.kind && e.kind !== "next" && e.kind !== "back")
    .map((e) => ({ from: Number(e.from), to: Number(e.to), kind: e.kind! }));
  return { goal, names, effects, jumps };
}

/** The squares a path walks one by one (forward to its `step`, back on a `bounce`), from `from`. */
export function walked(from: number, path: PathStep[]): number[] {
  const out: number[] = [];
  let at = from;
  for (const p of path) {
    if (p.via !== "step" && p.via !== "bounce") break;
    const dir = p.square >= at ? 1 : -1;
    while (at !== p.square) {
      at += dir;
      out.push(at);
    }
  }
  return out;
}

/** Where the piece comes to rest. */
export const restOf = (from: number, path: PathStep[]) => (path.length ? path[path.length - 1]!.square : from);

const STEP_MS = 110;
const ROLL_MS = 550;
const READ_MS = 600;
const EFFECT_MS = 700;

/**
 * The plan of a transition of a race game: per `piece.moved`, roll → (read pause) → path →
 * square effects, each after the one before. `board` names the squares whose resting effect
 * (the inn, the prison) gets its own step.
 */
export function racePlan(game: string, board: Board, t: Transition<Projection>): PresentationPlan {
  const steps: PlanStep[] = [];
  const at: Record<string, number> = { ...(t.from.view?.positions ?? {}) };
  let previous: string | null = null;
  const push = (s: Omit<PlanStep, "trigger">) => {
    steps.push({ ...s, trigger: { after: previous ? [previous] : [] } } as PlanStep);
    previous = s.id;
  };
  t.to.events.forEach((e, i) => {
    if (e.type !== "piece.moved") return;
    const m = e.data as Moved;
    const from = at[m.seat] ?? 0;
    push({ id: `roll-${i}`, effect: "dice.roll", params: { seat: m.seat, roll: m.roll }, blocking: true, timeoutMs: 2000 });
    if (m.seat !== t.to.seat) push({ id: `read-${i}`, effect: "pause.read", params: { ms: READ_MS }, blocking: true, timeoutMs: 2000 });
    const squares = walked(from, m.path);
    if (squares.length) {
      push({
        id: `path-${i}`,
        effect: "piece.path",
        params: { seat: m.seat, squares },
        markers: ["landed"],
        blocking: true,
        timeoutMs: Math.min(6000, 1000 + squares.length * STEP_MS * 2),
      });
    }
    let square = squares.length ? squares[squares.length - 1]! : from;
    m.path.forEach((p, k) => {
      if (p.via === "step" || p.via === "bounce") return;
      push({ id: `effect-${i}-${k}`, effect: "square.effect", params: { seat: m.seat, from: square, to: p.square, via: p.via }, blocking: true, timeoutMs: 2500 });
      square = p.square;
    });
    const rest = restOf(from, m.path);
    const last = m.path[m.path.length - 1];
    const resting = board.effects.get(rest);
    if (resting && resting !== "well" && last && (last.via === "step" || last.via === "bounce")) {
      push({ id: `effect-${i}-rest`, effect: "square.effect", params: { seat: m.seat, from: rest, to: rest, via: resting }, blocking: true, timeoutMs: 2500 });
    }
    at[m.seat] = rest;
  });
  return { ...PLAN_FORMAT, id: `${game}.r${t.to.revision}`, steps };
}

/** Where a square is drawn: its grid row and column (1-based). */
export type Layout = (square: number) => { row: number; column: number };

export interface RaceSpec {
  game: string;
  board: Board;
  rows: number;
  columns: number;
  layout: Layout;
  /** The visible short label of a special square and its full name for screen readers. */
  label(square: number, api: Pick<BoardApi, "t">): { short: string; full: string } | null;
  /** Lines drawn over the board (the ladders and snakes), or none. */
  lines?: { from: number; to: number; kind: string }[];
  /** Extra words about a seat for the players' list (turns to lose, the well). */
  seatNote?(p: Projection, seat: string, api: Pick<BoardApi, "t">): string;
}

const DIE = ["", "⚀", "⚁", "⚂", "⚃", "⚄", "⚅"];

/** The lobby's clock preset: 30 s a roll; the server rolls for a seat whose time runs out. */
export const TURN_CLOCK = { mode: { kind: "perTurn", turnMs: 30_000 }, policy: "defaultMove" };

/** The seats of a race view, in seat order. */
export const seatsOf = (p: Projection): string[] =>
  Object.keys(p.view?.positions ?? {}).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));

/** The board, the players' squares, the die and the roll button (R rolls from anywhere in it). */
export function mountRace(host: HTMLElement, api: BoardApi, spec: RaceSpec): Renderer {
  const k = (key: string) => `${spec.game}.${key}`;
  let p: Projection | null = null;
  /** Pieces the path and effects show ahead of the displayed projection. */
  const overlay = new Map<string, number>();
  let shownRoll: { seat: string; roll: number[] } | null = null;
  const grid = el("ol", { class: `race-board race-${spec.game}`, style: `--rows:${spec.rows};--cols:${spec.columns}` });
  const start = el("div", { class: "race-start" });
  const svgHost = el("div", { class: "race-lines", "aria-hidden": "true" });
  const boardBox = el("section", { class: "race-wrap" }, el("h2", { class: "sr-only", id: `${spec.game}-board-h` }), start, el("div", { class: "race-grid" }, grid, svgHost));
  const die = el("p", { class: "race-die", id: "race-die" });
  const clock = el("p", { class: "race-clock", role: "timer", hidden: true });
  const cue = el("p", { class: "race-cue", "aria-hidden": "true" });
  const rollBtn = el("button", { type: "button", class: "primary race-roll", "data-key": "roll", onclick: () => roll() });
  const seats = el("ul", { class: "race-seats" });
  const hint = el("p", { class: "hint", id: `${spec.game}-hint` });
  const side = el("div", { class: "race-side" }, el("div", { class: "race-actions" }, rollBtn, die), clock, cue, seats, hint);
  const root = el("div", { class: "race" }, boardBox, side);
  host.replaceChildren(root);
  rollBtn.setAttribute("aria-describedby", `${spec.game}-hint`);

  function roll() {
    if (api.locked() || !api.offer("roll")) return;
    api.command("roll", {});
  }
  root.addEventListener("keydown", (ev) => {
    if ((ev.key === "r" || ev.key === "R") && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      roll();
    }
  });

  const positionOf = (seat: string) => overlay.get(seat) ?? (p!.view.positions[seat] as number) ?? 0;
  const seatNo = (seat: string) => Number(seat.slice(1)) + 1;
  const piece = (seat: string) =>
    el("span", { class: `piece ${seat}`, "data-seat": seat }, el("span", { "aria-hidden": "true", text: String(seatNo(seat)) }), el("span", { class: "sr-only", text: api.name(seat) }));

  function drawLines() {
    if (!spec.lines?.length) return;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${spec.columns} ${spec.rows}`);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("focusable", "false");
    for (const l of spec.lines) {
      const a = spec.layout(l.from);
      const b = spec.layout(l.to);
      const line = document.createElementNS(ns, "line");
      line.setAttribute("x1", String(a.column - 0.5));
      line.setAttribute("y1", String(a.row - 0.5));
      line.setAttribute("x2", String(b.column - 0.5));
      line.setAttribute("y2", String(b.row - 0.5));
      line.setAttribute("class", `race-line ${l.kind}`);
      svg.append(line);
    }
    svgHost.replaceChildren(svg);
  }
  drawLines();

  function render() {
    if (!p) return;
    const v = p.view;
    const all = seatsOf(p);
    const at = new Map<number, string[]>();
    for (const s of all) at.set(positionOf(s), [...(at.get(positionOf(s)) ?? []), s]);
    boardBox.setAttribute("aria-labelledby", `${spec.game}-board-h`);
    boardBox.querySelector("h2")!.textContent = api.t(k("board"));
    start.replaceChildren(el("span", { class: "race-start-label", text: api.t(k("start")) }), ...(at.get(0) ?? []).map(piece));
    const items: HTMLElement[] = [];
    for (let n = 1; n <= spec.board.goal; n++) {
      const { row, column } = spec.layout(n);
      const label = spec.label(n, api);
      const here = at.get(n) ?? [];
      items.push(
        el(
          "li",
          { class: `race-sq${label ? " special" : ""}${spec.board.names.has(n) ? ` sq-${spec.board.names.get(n)}` : ""}`, "data-square": n, style: `grid-row:${row};grid-column:${column}` },
          el("span", { class: "num", text: String(n) }),
          label ? el("span", { class: "name", "aria-hidden": "true", text: label.short }) : null,
          label ? el("span", { class: "sr-only", text: `: ${label.full}` }) : null,
          here.length ? el("span", { class: "pieces" }, ...here.map(piece)) : null,
        ),
      );
    }
    grid.replaceChildren(...items);
    const lr = shownRoll ?? v.lastRoll ?? null;
    die.replaceChildren(
      lr
        ? el("span", {}, el("span", { class: "faces", "aria-hidden": "true", text: (lr.roll as number[]).map((d) => DIE[d] ?? String(d)).join(" ") }), " ", api.t(k("last-roll"), { name: api.name(lr.seat), roll: (lr.roll as number[]).join(" + ") }))
        : api.t(k("no-roll")),
    );
    const can = !api.locked() && !!api.offer("roll");
    rollBtn.textContent = api.t(v.dice === 2 ? k("roll-2") : k("roll"));
    rollBtn.setAttribute("aria-disabled", String(!can));
    rollBtn.classList.toggle("idle", !can);
    seats.setAttribute("aria-label", api.t(k("players")));
    seats.replaceChildren(
      ...all.map((s) => {
        const sq = positionOf(s);
        const note = spec.seatNote?.(p!, s, api) ?? "";
        return el("li", { class: "race-seat" }, piece(s), " ", `${s === p!.seat ? api.t("seat.you", { name: api.name(s) }) : api.name(s)}: ${sq === 0 ? api.t(k("at-start")) : api.t(k("at-square"), { n: sq })}${note}`);
      }),
    );
    hint.textContent = api.t(k("hint"));
  }

  /**
   * The turn clock (`config.clock`), from the CONFIRMED projection: it is a live reading of
   * the server's clock, not part of the animated board. Ticks while a turn's time runs.
   */
  let ticker: ReturnType<typeof setInterval> | null = null;
  function drawClock() {
    const c = api.confirmed();
    const view = c?.view?.clock;
    if (!c || c.result || !isClockView(view)) {
      clock.hidden = true;
      clock.replaceChildren();
      if (ticker !== null) clearInterval(ticker);
      ticker = null;
      return;
    }
    clock.hidden = false;
    const times = seatTimes(view, seatsOf(c), api.serverNow());
    clock.replaceChildren(
      el("span", { class: "race-clock-label", text: `${api.t("clock.label")}: ` }),
      ...times.map((x, i) =>
        el(
          "span",
          { class: `race-clock-seat${x.running ? " running" : ""}${x.low ? " low" : ""}`, "data-seat": x.seat },
          i ? " · " : "",
          api.t(x.running ? "clock.running" : "clock.seat", { name: api.name(x.seat), time: formatClock(x.ms) }),
        ),
      ),
    );
    if (ticker === null && view.state.running) ticker = setInterval(drawClock, 250);
    if (ticker !== null && !view.state.running) {
      clearInterval(ticker);
      ticker = null;
    }
  }

  const pieceEls = (seat: string) => grid.querySelectorAll<HTMLElement>(`.piece[data-seat="${seat}"]`);
  return {
    update(next: Projection) {
      p = next;
      overlay.clear();
      shownRoll = null;
      cue.textContent = "";
      cue.className = "race-cue";
      render();
      drawClock();
    },
    refresh() {
      render();
      drawClock();
    },
    dispose() {
      if (ticker !== null) clearInterval(ticker);
      host.replaceChildren();
    },
    effects: {
      "dice.roll": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && Array.isArray((x as Moved).roll) && typeof (x as Moved).seat === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const r = params as { seat: string; roll: number[] };
          return {
            async play() {
              if (!ctx.live()) return;
              const faces = die.querySelector(".faces") ?? die;
              await animate(faces, [{ transform: "rotate(0) scale(1)" }, { transform: "rotate(200deg) scale(1.25)" }, { transform: "rotate(360deg) scale(1)" }], ROLL_MS, ctx.signal);
              if (!ctx.live()) return;
              shownRoll = r;
              render();
            },
            dispose() {},
          };
        },
      },
      "pause.read": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { ms?: unknown }).ms === "number",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const ms = Math.min(2000, (params as { ms: number }).ms);
          return {
            async play() {
              if (ctx.live()) await wait(ms, ctx.signal);
            },
            dispose() {},
          };
        },
      },
      "piece.path": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && Array.isArray((x as { squares?: unknown }).squares) && typeof (x as Moved).seat === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean; emit(m: string): void }) {
          const m = params as { seat: string; squares: number[] };
          return {
            async play() {
              for (const sq of m.squares) {
                if (!ctx.live()) return;
                overlay.set(m.seat, sq);
                render();
                const el0 = pieceEls(m.seat)[0];
                if (el0) await animate(el0, [{ transform: "translateY(-8px) scale(1.15)" }, { transform: "none" }], STEP_MS, ctx.signal);
                else await wait(STEP_MS, ctx.signal);
              }
              if (ctx.live()) ctx.emit("landed");
            },
            dispose() {},
          };
        },
      },
      "square.effect": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { via?: unknown }).via === "string" && typeof (x as { to?: unknown }).to === "number",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const e = params as { seat: string; from: number; to: number; via: string };
          return {
            async play() {
              if (!ctx.live()) return;
              cue.textContent = api.t(k(`cue.${e.via}`));
              cue.className = `race-cue ${e.via}`;
              const sq = grid.querySelector(`[data-square="${e.from}"]`);
              if (sq) await animate(sq, [{ filter: "brightness(1.5)", transform: "scale(1.12)" }, { filter: "none", transform: "none" }], EFFECT_MS / 2, ctx.signal);
              if (!ctx.live()) return;
              overlay.set(e.seat, e.to);
              render();
              const el0 = pieceEls(e.seat)[0];
              if (el0) await animate(el0, [{ transform: "scale(1.6)", opacity: 0.4 }, { transform: "none", opacity: 1 }], EFFECT_MS / 2, ctx.signal);
            },
            dispose() {},
          };
        },
      },
    },
  };
}

/**
 * The server instant a roll's live snapshot states as just past: the start of the turn the
 * roll began (the clock re-arms at the roll's captured instant). The page's `ServerClock`
 * learns from it.
 */
export function raceInstants(p: Projection, live: boolean): number[] {
  const running = p.view?.clock?.state?.running;
  return live && running && p.events.some((e) => e.type === "piece.moved") && typeof running.startedMs === "number" ? [running.startedMs] : [];
}

/** The seat after `seat` in seat order, among `seats`. */
export const nextSeat = (seats: string[], seat: string) => seats[(seats.indexOf(seat) + 1) % seats.length]!;
