/**
 * Conecta 4: a board of column buttons (one tab stop; arrows move, Enter/Space or 1–9 drop),
 * the drop plan of the packages issue (libs/games/conecta4/package/plans/drop.plan.json: the
 * disc falls, the impact sound plays on its `impact` marker, a win line lights up after it).
 */
import manifest from "../../../../libs/games/conecta4/package/game.json";
import { el, animate, wait } from "../app/dom";
import type { Transition } from "../present/coordinator";
import type { PlanStep, PresentationPlan } from "../present/plan";
import { type BoardApi, type GameModule, type Manifest, type Projection, PLAN_FORMAT } from "./types";

interface Cell {
  row: number;
  column: number;
}
interface Dropped extends Cell {
  seat: "p0" | "p1";
  line?: Cell[] | null;
}

const DROP_MS = 450;
const HIGHLIGHT_MS = 900;

/** The plan of one transition: each disc's fall, its impact sound, then its win line. */
export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  const steps: PlanStep[] = [];
  let previous: string | null = null;
  t.to.events.forEach((e, i) => {
    if (e.type !== "disc.dropped") return;
    const d = e.data as Dropped;
    const drop = `drop-${i}`;
    steps.push({
      id: drop,
      effect: "piece.drop",
      params: { column: d.column, row: d.row, seat: d.seat, rows: t.to.view.rows },
      trigger: { after: previous ? [previous] : [] },
      markers: ["impact"],
      blocking: true,
      timeoutMs: 1500,
    });
    steps.push({
      id: `impact-sound-${i}`,
      effect: "sound.play",
      params: { resource: "drop-sound" },
      trigger: { marker: { step: drop, marker: "impact" } },
      blocking: false,
      timeoutMs: 1000,
      audio: { channel: "effects", policy: "mix", maxDelayMs: 80 },
    });
    previous = drop;
    if (d.line && d.line.length) {
      const line = `win-line-${i}`;
      steps.push({
        id: line,
        effect: "cells.highlight",
        params: { cells: d.line.map((c) => [c.row, c.column]) },
        trigger: { after: [drop] },
        blocking: true,
        timeoutMs: 2000,
      });
      previous = line;
    }
  });
  return { ...PLAN_FORMAT, id: `conecta4.r${t.to.revision}`, steps };
}

const messages = {
  es: {
    "conecta4.board": "Tablero de Conecta 4",
    "conecta4.column": "Columna {n}",
    "conecta4.column-drop": "Columna {n}: {contents}. Soltar ficha",
    "conecta4.column-full": "Columna {n}: {contents}. Llena",
    "conecta4.column-locked": "Columna {n}: {contents}",
    "conecta4.empty": "vacía",
    "conecta4.hint": "Elige una columna con las flechas y pulsa Intro, o pulsa 1–7.",
    "conecta4.dropped": "{name} soltó una ficha en la columna {n}.",
    "conecta4.connected": "{name} conecta cuatro.",
    "conecta4.reason.connect": "cuatro en raya",
    "conecta4.reason.board-full": "tablero lleno",
    "conecta4.reason.withdrawal": "abandono",
    "conecta4.reason.timeout": "tiempo agotado",
    "conecta4.expired": "Se acabó el tiempo de {name}.",
  },
  en: {
    "conecta4.board": "Connect Four board",
    "conecta4.column": "Column {n}",
    "conecta4.column-drop": "Column {n}: {contents}. Drop a disc",
    "conecta4.column-full": "Column {n}: {contents}. Full",
    "conecta4.column-locked": "Column {n}: {contents}",
    "conecta4.empty": "empty",
    "conecta4.hint": "Choose a column with the arrow keys and press Enter, or press 1–7.",
    "conecta4.dropped": "{name} dropped a disc in column {n}.",
    "conecta4.connected": "{name} connects four.",
    "conecta4.reason.connect": "four in a row",
    "conecta4.reason.board-full": "board full",
    "conecta4.reason.withdrawal": "withdrawal",
    "conecta4.reason.timeout": "time ran out",
    "conecta4.expired": "{name} ran out of time.",
  },
};

function mount(host: HTMLElement, api: BoardApi) {
  let p: Projection | null = null;
  let focusColumn = 0;
  /** Discs the drop effect has landed but the displayed projection does not hold yet. */
  const landed = new Map<string, string>();
  const lit = new Set<string>();
  const board = el("div", { class: "c4-board", role: "group", "aria-label": api.t("conecta4.board") });
  const wrap = el("div", { class: "c4-wrap" }, board);
  const hint = el("p", { class: "hint", id: "board-hint", text: api.t("conecta4.hint") });
  host.replaceChildren(wrap, hint);
  board.setAttribute("aria-describedby", "board-hint");

  const playable = (c: number) =>
    !api.locked() && p !== null && p.actions.some((a) => a.type === "drop" && "payload" in a && a.payload.column === c);
  const drop = (c: number) => {
    focusColumn = c;
    api.command("drop", { column: c });
  };
  const cellEl = (r: number, c: number) => board.querySelector<HTMLElement>(`[data-row="${r}"][data-column="${c}"]`);
  const seatWord = (s: string) => api.name(s);

  function render() {
    if (!p) return;
    const v = p.view;
    const hadFocus = board.contains(document.activeElement);
    const cols: HTMLElement[] = [];
    const win = new Set(((v.line ?? []) as Cell[]).map((c) => `${c.row},${c.column}`));
    for (let c = 0; c < v.columns; c++) {
      const contents: string[] = [];
      const btn = el("button", {
        type: "button",
        class: "c4-col",
        "data-column": c,
        tabindex: c === focusColumn ? 0 : -1,
        onclick: () => drop(c),
      });
      for (let r = 0; r < v.rows; r++) {
        const seat = v.grid[r]?.[c];
        if (seat) contents.push(seatWord(seat));
      }
      for (let r = v.rows - 1; r >= 0; r--) btn.append(buildCell(r, c));
      const text = contents.length ? contents.join(", ") : api.t("conecta4.empty");
      const ok = playable(c);
      const full = contents.length >= v.rows;
      btn.setAttribute("aria-label", api.t(ok ? "conecta4.column-drop" : full ? "conecta4.column-full" : "conecta4.column-locked", { n: c + 1, contents: text }));
      btn.setAttribute("aria-disabled", String(!ok));
      btn.classList.toggle("playable", ok);
      cols.push(btn);
    }
    board.replaceChildren(...cols);
    if (hadFocus) cols[focusColumn]?.focus();

    function buildCell(r: number, c: number) {
      const seat = v.grid[r]?.[c] ?? landed.get(`${r},${c}`) ?? null;
      const cell = el("span", { class: "c4-cell", "data-row": r, "data-column": c });
      if (seat) {
        const key = `${r},${c}`;
        const last = v.lastMove && v.lastMove.row === r && v.lastMove.column === c;
        cell.append(el("span", { class: `disc ${seat}${win.has(key) || lit.has(key) ? " win" : ""}${last ? " last" : ""}`, "aria-hidden": "true" }));
      }
      return cell;
    }
  }

  board.addEventListener("keydown", (ev) => {
    if (!p) return;
    const n = p.view.columns as number;
    let next = focusColumn;
    if (ev.key === "ArrowRight") next = (focusColumn + 1) % n;
    else if (ev.key === "ArrowLeft") next = (focusColumn - 1 + n) % n;
    else if (ev.key === "Home") next = 0;
    else if (ev.key === "End") next = n - 1;
    else if (/^[1-9]$/.test(ev.key) && Number(ev.key) <= n) {
      ev.preventDefault();
      focusColumn = Number(ev.key) - 1;
      drop(focusColumn);
      render();
      return;
    } else return;
    ev.preventDefault();
    focusColumn = next;
    for (const b of board.querySelectorAll<HTMLElement>(".c4-col")) b.tabIndex = Number(b.dataset.column) === next ? 0 : -1;
    board.querySelector<HTMLElement>(`.c4-col[data-column="${next}"]`)?.focus();
  });

  return {
    update(next: Projection) {
      p = next;
      landed.clear();
      lit.clear();
      render();
    },
    refresh: render,
    dispose() {
      host.replaceChildren();
    },
    effects: {
      "piece.drop": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as Cell).column === "number" && typeof (x as Cell).row === "number",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean; emit(m: string): void }) {
          const d = params as Dropped & { rows: number };
          let ghost: HTMLElement | null = null;
          return {
            async play() {
              const target = cellEl(d.row, d.column);
              if (!target || !ctx.live()) return;
              ghost = el("span", { class: `disc ${d.seat} ghost`, "aria-hidden": "true" });
              target.append(ghost);
              const fall = (d.rows - d.row) * (target.getBoundingClientRect().height + 6);
              await animate(ghost, [{ transform: `translateY(-${fall}px)` }, { transform: "translateY(0)" }], DROP_MS, ctx.signal, "cubic-bezier(.5,0,.75,1.2)");
              if (!ctx.live()) return;
              landed.set(`${d.row},${d.column}`, d.seat);
              ctx.emit("impact");
            },
            dispose() {
              ghost?.remove();
              ghost = null;
              if (landed.size) render();
            },
          };
        },
      },
      "cells.highlight": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && Array.isArray((x as { cells?: unknown }).cells),
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const cells = (params as { cells: [number, number][] }).cells;
          return {
            async play() {
              if (!ctx.live()) return;
              for (const [r, c] of cells) lit.add(`${r},${c}`);
              render();
              await wait(HIGHLIGHT_MS, ctx.signal);
            },
            dispose() {
              lit.clear();
            },
          };
        },
      },
    },
  };
}

export const conecta4: GameModule = {
  id: "conecta4",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [],
  buildTransitionPlan,
  mount,
  describe(t, api) {
    const out: string[] = [];
    for (const e of t.to.events) {
      if (e.type === "disc.dropped") {
        const d = e.data as Dropped;
        out.push(api.t("conecta4.dropped", { name: api.name(d.seat), n: d.column + 1 }));
        if (d.line) out.push(api.t("conecta4.connected", { name: api.name(d.seat) }));
      } else if (e.type === "clock.expired") {
        out.push(api.t("conecta4.expired", { name: api.name((e.data as { seat: string }).seat) }));
      }
    }
    return out;
  },
  status(p, api) {
    if (!p.seat) return null;
    if (p.context?.yourTurn) return api.t("status.your-turn");
    const other = p.seat === "p0" ? "p1" : "p0";
    return api.t("status.their-turn", { name: api.name(other) });
  },
};
