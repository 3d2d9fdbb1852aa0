/**
 * Hundido (battleship): placement (pick a ship, R rotates, place it on your grid, ready) then
 * battle (fire at the rival's grid). Each grid is a real ARIA grid with one tab stop and
 * arrow keys. The plan of a shot: the mark on the target cell (water, hit or sunk) with an
 * `impact` marker, then, for a sinking, the ship's cells lit up.
 */
import manifest from "../../../../libs/games/hundido/package/game.json";
import { el, animate, wait } from "../app/dom";
import type { Transition } from "../present/coordinator";
import type { PlanStep, PresentationPlan } from "../present/plan";
import { type BoardApi, type GameModule, type Manifest, type Projection, PLAN_FORMAT } from "./types";

interface Cell {
  row: number;
  column: number;
}
interface Shot extends Cell {
  seat: "p0" | "p1";
  outcome: "water" | "hit" | "sunk";
  ship?: string | null;
  cells?: Cell[] | null;
}

export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  const steps: PlanStep[] = [];
  let previous: string | null = null;
  t.to.events.forEach((e, i) => {
    if (e.type !== "shot.fired") return;
    const s = e.data as Shot;
    const id = `shot-${i}`;
    steps.push({
      id,
      effect: "shot.mark",
      params: { seat: s.seat, row: s.row, column: s.column, outcome: s.outcome },
      trigger: { after: previous ? [previous] : [] },
      markers: ["impact"],
      blocking: true,
      timeoutMs: 1500,
    });
    previous = id;
    if (s.outcome === "sunk" && s.cells) {
      const sunk = `sunk-${i}`;
      steps.push({
        id: sunk,
        effect: "ship.sunk",
        params: { seat: s.seat, cells: s.cells.map((c) => [c.row, c.column]) },
        trigger: { after: [id] },
        blocking: true,
        timeoutMs: 1500,
      });
      previous = sunk;
    }
  });
  return { ...PLAN_FORMAT, id: `hundido.r${t.to.revision}`, steps };
}

const messages = {
  es: {
    "hundido.own": "Tu flota",
    "hundido.enemy": "Flota de {name}",
    "hundido.fleet": "Barcos por colocar",
    "hundido.rotate": "Girar (R): {orientation}",
    "hundido.horizontal": "horizontal",
    "hundido.vertical": "vertical",
    "hundido.ready": "¡Listo!",
    "hundido.ship.carrier": "Portaaviones",
    "hundido.ship.battleship": "Acorazado",
    "hundido.ship.cruiser": "Crucero",
    "hundido.ship.submarine": "Submarino",
    "hundido.ship.destroyer": "Destructor",
    "hundido.ship-size": "{ship} ({size})",
    "hundido.placed": "colocado",
    "hundido.cell.empty": "{cell}: agua sin disparar",
    "hundido.cell.ship": "{cell}: tu barco",
    "hundido.cell.water": "{cell}: agua",
    "hundido.cell.hit": "{cell}: tocado",
    "hundido.cell.sunk": "{cell}: hundido",
    "hundido.cell.unknown": "{cell}: sin disparar",
    "hundido.place-hint": "Elige un barco, colócalo en tu tablero con Intro (flechas para moverte, R para girar) y pulsa «¡Listo!».",
    "hundido.fire-hint": "Dispara al tablero rival: flechas para moverte, Intro para disparar.",
    "hundido.status.place": "Coloca tu flota ({placed}/{total})",
    "hundido.status.wait-ready": "Esperando a que {name} esté listo",
    "hundido.status.your-shot": "Tu disparo",
    "hundido.status.their-shot": "Dispara {name}",
    "hundido.doesnt-fit": "El {ship} no cabe ahí.",
    "hundido.pick-ship": "Elige primero un barco.",
    "hundido.shot.water": "{name} disparó a {cell}: agua.",
    "hundido.shot.hit": "{name} disparó a {cell}: ¡tocado!",
    "hundido.shot.sunk": "{name} disparó a {cell}: ¡hundido! ({ship})",
    "hundido.cue.water": "¡Agua!",
    "hundido.cue.hit": "¡Tocado!",
    "hundido.cue.sunk": "¡Hundido!",
    "hundido.battle": "¡Empieza la batalla! Dispara {name}.",
    "hundido.ready-event": "{name} está listo.",
    "hundido.afloat": "{name}: {afloat} barcos a flote",
    "hundido.afloat-1": "{name}: 1 barco a flote",
    "hundido.reason.fleet-destroyed": "flota destruida",
    "hundido.reason.withdrawal": "abandono",
    "hundido.reason.withdrawal-in-placement": "un jugador salió durante la colocación",
    "hundido.reason.timeout": "tiempo agotado",
    "hundido.reason.abandoned": "abandonada",
    "hundido.preset.classic": "Clásica (10 × 10, cinco barcos)",
    "hundido.preset.quick": "Rápida (6 × 6, dos barcos)",
  },
  en: {
    "hundido.own": "Your fleet",
    "hundido.enemy": "{name}'s fleet",
    "hundido.fleet": "Ships to place",
    "hundido.rotate": "Rotate (R): {orientation}",
    "hundido.horizontal": "horizontal",
    "hundido.vertical": "vertical",
    "hundido.ready": "Ready!",
    "hundido.ship.carrier": "Carrier",
    "hundido.ship.battleship": "Battleship",
    "hundido.ship.cruiser": "Cruiser",
    "hundido.ship.submarine": "Submarine",
    "hundido.ship.destroyer": "Destroyer",
    "hundido.ship-size": "{ship} ({size})",
    "hundido.placed": "placed",
    "hundido.cell.empty": "{cell}: open water",
    "hundido.cell.ship": "{cell}: your ship",
    "hundido.cell.water": "{cell}: water",
    "hundido.cell.hit": "{cell}: hit",
    "hundido.cell.sunk": "{cell}: sunk",
    "hundido.cell.unknown": "{cell}: not fired at",
    "hundido.place-hint": "Pick a ship, place it on your grid with Enter (arrow keys move, R rotates), then press “Ready!”.",
    "hundido.fire-hint": "Fire at your rival's grid: arrow keys move, Enter fires.",
    "hundido.status.place": "Place your fleet ({placed}/{total})",
    "hundido.status.wait-ready": "Waiting for {name} to get ready",
    "hundido.status.your-shot": "Your shot",
    "hundido.status.their-shot": "{name} is firing",
    "hundido.doesnt-fit": "The {ship} does not fit there.",
    "hundido.pick-ship": "Pick a ship first.",
    "hundido.shot.water": "{name} fired at {cell}: water.",
    "hundido.shot.hit": "{name} fired at {cell}: hit!",
    "hundido.shot.sunk": "{name} fired at {cell}: sunk! ({ship})",
    "hundido.cue.water": "Water!",
    "hundido.cue.hit": "Hit!",
    "hundido.cue.sunk": "Sunk!",
    "hundido.battle": "The battle starts! {name} fires first.",
    "hundido.ready-event": "{name} is ready.",
    "hundido.afloat": "{name}: {afloat} ships afloat",
    "hundido.afloat-1": "{name}: 1 ship afloat",
    "hundido.reason.fleet-destroyed": "fleet destroyed",
    "hundido.reason.withdrawal": "withdrawal",
    "hundido.reason.withdrawal-in-placement": "a player left during placement",
    "hundido.reason.timeout": "time ran out",
    "hundido.reason.abandoned": "abandoned",
    "hundido.preset.classic": "Classic (10 × 10, five ships)",
    "hundido.preset.quick": "Quick (6 × 6, two ships)",
  },
};

const cellName = (r: number, c: number) => `${String.fromCharCode(65 + r)}${c + 1}`;
const shipName = (api: Pick<BoardApi, "t">, ship: string) => {
  const key = `hundido.ship.${ship}`;
  const text = api.t(key);
  return text === key ? ship : text;
};

function mount(host: HTMLElement, api: BoardApi) {
  let p: Projection | null = null;
  let ship: string | null = null;
  let orientation: "horizontal" | "vertical" = "horizontal";
  let advance = false;
  const focus = { own: [0, 0] as [number, number], enemy: [0, 0] as [number, number] };
  /** Marks the shot effect has shown ahead of the displayed projection. */
  const marks = new Map<string, string>();
  const cue = el("p", { class: "hd-cue", "aria-hidden": "true" });
  const root = el("div", { class: "hd" });
  host.replaceChildren(root, cue);

  const me = () => p?.seat ?? "p0";
  const other = () => (me() === "p0" ? "p1" : "p0");
  const pub = (seat: string) => (p!.view.seats as any[]).find((s) => s.seat === seat) ?? { shots: [], sunk: [], afloat: 0, placed: 0, ready: false };
  const placing = () => p?.context?.phase === "placement";

  function shipCells(name: string, r: number, c: number): [number, number][] {
    const spec = (p!.view.fleet as { ship: string; size: number }[]).find((s) => s.ship === name);
    return Array.from({ length: spec?.size ?? 0 }, (_, k) => (orientation === "horizontal" ? [r, c + k] : [r + k, c]));
  }
  function fits(name: string, r: number, c: number) {
    const v = p!.view;
    const taken = new Set<string>();
    for (const s of v.own?.ships ?? []) if (s.ship !== name) for (const x of s.cells) taken.add(`${x.row},${x.column}`);
    return shipCells(name, r, c).every(([y, x]) => y < v.rows && x < v.columns && !taken.has(`${y},${x}`));
  }
  function place(r: number, c: number) {
    if (!p || !placing()) return;
    const hitShip = (p.view.own?.ships ?? []).find((s: any) => s.cells.some((x: Cell) => x.row === r && x.column === c));
    if (hitShip && hitShip.ship !== ship) {
      ship = hitShip.ship;
      render();
      return;
    }
    if (!ship) return api.say(api.t("hundido.pick-ship"));
    if (!fits(ship, r, c)) return api.say(api.t("hundido.doesnt-fit", { ship: shipName(api, ship) }));
    if (api.command("placeShip", { ship, row: r, column: c, orientation })) advance = true;
  }
  function fire(r: number, c: number) {
    if (pub(me()).shots.some((s: Cell) => s.row === r && s.column === c)) return;
    api.command("fire", { row: r, column: c });
  }

  function grid(which: "own" | "enemy") {
    const v = p!.view;
    const label = which === "own" ? api.t("hundido.own") : api.t("hundido.enemy", { name: api.name(other()) });
    const g = el("div", { class: `hd-grid hd-${which}`, role: "grid", "aria-label": label, style: `--cols:${v.columns}` });
    const state = new Map<string, string>();
    if (which === "own") {
      for (const s of v.own?.ships ?? []) for (const x of s.cells) state.set(`${x.row},${x.column}`, s.sunk ? "sunk" : "ship");
      for (const s of v.own?.ships ?? []) for (const x of s.hits) state.set(`${x.row},${x.column}`, s.sunk ? "sunk" : "hit");
      for (const s of pub(other()).shots) if (s.outcome === "water") state.set(`${s.row},${s.column}`, "water");
    } else {
      for (const s of pub(me()).shots) state.set(`${s.row},${s.column}`, s.outcome);
      for (const s of pub(other()).sunk) for (const x of s.cells) state.set(`${x.row},${x.column}`, "sunk");
    }
    for (const [k, m] of marks) if (k.startsWith(which + ":")) state.set(k.slice(which.length + 1), m);
    const canAct = !api.locked() && (which === "enemy" ? !!api.offer("fire") : placing() && !!api.offer("placeShip"));
    const [fr, fc] = focus[which];
    for (let r = 0; r < v.rows; r++) {
      const row = el("div", { role: "row", class: "hd-row" });
      for (let c = 0; c < v.columns; c++) {
        const s = state.get(`${r},${c}`) ?? "";
        const key = s ? `hundido.cell.${s}` : which === "own" ? "hundido.cell.empty" : "hundido.cell.unknown";
        const fired = which === "enemy" && s !== "";
        const cell = el("div", {
          role: "gridcell",
          class: `hd-cell ${s}${canAct && !fired ? " can" : ""}`,
          tabindex: r === fr && c === fc ? 0 : -1,
          "data-r": r,
          "data-c": c,
          "aria-label": api.t(key, { cell: cellName(r, c) }),
          "aria-disabled": String(!canAct || fired),
          onfocus: () => {
            focus[which] = [r, c];
          },
          onclick: () => {
            focus[which] = [r, c];
            if (which === "own") place(r, c);
            else fire(r, c);
          },
        });
        row.append(cell);
      }
      g.append(row);
    }
    g.addEventListener("keydown", (ev) => {
      const [r0, c0] = focus[which];
      let [r, c] = [r0, c0];
      if (ev.key === "ArrowUp") r = Math.max(0, r - 1);
      else if (ev.key === "ArrowDown") r = Math.min(v.rows - 1, r + 1);
      else if (ev.key === "ArrowLeft") c = Math.max(0, c - 1);
      else if (ev.key === "ArrowRight") c = Math.min(v.columns - 1, c + 1);
      else if (ev.key === "Home") c = 0;
      else if (ev.key === "End") c = v.columns - 1;
      else if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        if (which === "own") place(r0, c0);
        else fire(r0, c0);
        return;
      } else if ((ev.key === "r" || ev.key === "R") && placing()) {
        ev.preventDefault();
        rotate();
        return;
      } else return;
      ev.preventDefault();
      focus[which] = [r, c];
      for (const x of g.querySelectorAll<HTMLElement>("[role=gridcell]")) x.tabIndex = -1;
      const target = g.querySelector<HTMLElement>(`[data-r="${r}"][data-c="${c}"]`);
      if (target) {
        target.tabIndex = 0;
        target.focus();
      }
    });
    return g;
  }

  function afloat(seat: string) {
    const n = pub(seat).afloat as number;
    return api.t(n === 1 ? "hundido.afloat-1" : "hundido.afloat", { name: api.name(seat), afloat: n });
  }

  function rotate() {
    orientation = orientation === "horizontal" ? "vertical" : "horizontal";
    render();
  }

  function render() {
    if (!p) return;
    const v = p.view;
    const active = document.activeElement as HTMLElement | null;
    const focusedGrid = active?.closest(".hd-grid")?.classList.contains("hd-own") ? "own" : active?.closest(".hd-grid") ? "enemy" : null;
    const focusedControl = active?.dataset?.control ?? null;
    const parts: HTMLElement[] = [];
    if (placing() && v.own) {
      const unplaced = (v.own.unplaced as { ship: string }[]).map((s) => s.ship);
      if (ship && !(v.fleet as { ship: string }[]).some((s) => s.ship === ship)) ship = null;
      // After placing the selected ship, the next unplaced one is selected.
      if (advance && ship && !unplaced.includes(ship)) {
        ship = unplaced[0] ?? ship;
        advance = false;
      }
      if (!ship) ship = unplaced[0] ?? null;
      const fleet = el("div", { class: "hd-fleet", role: "group", "aria-label": api.t("hundido.fleet") });
      for (const spec of v.fleet as { ship: string; size: number }[]) {
        const placed = v.own.ships.some((s: any) => s.ship === spec.ship);
        fleet.append(
          el("button", {
            type: "button",
            class: `hd-ship${placed ? " placed" : ""}`,
            "data-control": `ship-${spec.ship}`,
            "aria-pressed": String(ship === spec.ship),
            onclick: () => {
              ship = spec.ship;
              render();
            },
            text: api.t("hundido.ship-size", { ship: shipName(api, spec.ship), size: spec.size }) + (placed ? ` ✓ ${api.t("hundido.placed")}` : ""),
          }),
        );
      }
      const tools = el(
        "div",
        { class: "hd-tools" },
        el("button", { type: "button", class: "tool", "data-control": "rotate", onclick: rotate, text: api.t("hundido.rotate", { orientation: api.t(`hundido.${orientation}`) }) }),
        el("button", {
          type: "button",
          class: "primary",
          "data-control": "ready",
          disabled: api.locked() || !api.offer("ready"),
          onclick: () => api.command("ready", {}),
          text: api.t("hundido.ready"),
        }),
      );
      parts.push(fleet, tools, el("p", { class: "hint", text: api.t("hundido.place-hint") }));
    } else {
      parts.push(el("p", { class: "hint", text: api.t("hundido.fire-hint") }));
    }
    const boards = el(
      "div",
      { class: "hd-boards" },
      el("section", { class: "hd-side", "aria-label": api.t("hundido.own") }, el("h2", { class: "hd-h", text: api.t("hundido.own") }), grid("own"), el("p", { class: "hd-afloat", text: afloat(me()) })),
      el(
        "section",
        { class: "hd-side", "aria-label": api.t("hundido.enemy", { name: api.name(other()) }) },
        el("h2", { class: "hd-h", text: api.t("hundido.enemy", { name: api.name(other()) }) }),
        grid("enemy"),
        el("p", { class: "hd-afloat", text: afloat(other()) }),
      ),
    );
    parts.push(boards);
    root.replaceChildren(...parts);
    if (focusedGrid) root.querySelector<HTMLElement>(`.hd-${focusedGrid} [tabindex="0"]`)?.focus();
    else if (focusedControl) (root.querySelector<HTMLElement>(`[data-control="${focusedControl}"]`) ?? root.querySelector<HTMLElement>(".hd-own [tabindex='0']"))?.focus();
  }

  const gridOf = (seat: string) => (seat === me() ? "enemy" : "own");
  return {
    update(next: Projection) {
      p = next;
      marks.clear();
      render();
    },
    refresh: render,
    dispose() {
      host.replaceChildren();
    },
    effects: {
      "shot.mark": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && ["water", "hit", "sunk"].includes((x as Shot).outcome),
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean; emit(m: string): void }) {
          const s = params as Shot;
          return {
            async play() {
              if (!ctx.live()) return;
              const which = gridOf(s.seat);
              marks.set(`${which}:${s.row},${s.column}`, s.outcome === "sunk" ? "hit" : s.outcome);
              render();
              cue.textContent = api.t(`hundido.cue.${s.outcome}`);
              cue.className = `hd-cue ${s.outcome}`;
              const target = root.querySelector(`.hd-${which} [data-r="${s.row}"][data-c="${s.column}"]`);
              if (target) await animate(target, [{ transform: "scale(1.7)", filter: "brightness(1.6)" }, { transform: "scale(1)", filter: "none" }], 550, ctx.signal);
              if (ctx.live()) ctx.emit("impact");
            },
            dispose() {
              /* the marks go with the next settle */
            },
          };
        },
      },
      "ship.sunk": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && Array.isArray((x as { cells?: unknown }).cells),
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const s = params as { seat: string; cells: [number, number][] };
          return {
            async play() {
              if (!ctx.live()) return;
              const which = gridOf(s.seat);
              for (const [r, c] of s.cells) marks.set(`${which}:${r},${c}`, "sunk");
              render();
              const g = root.querySelector(`.hd-${which}`);
              if (g) await animate(g, [{ transform: "translateX(-6px)" }, { transform: "translateX(6px)" }, { transform: "none" }], 450, ctx.signal);
              await wait(200, ctx.signal);
            },
            dispose() {},
          };
        },
      },
    },
  };
}

export const hundido: GameModule = {
  id: "hundido",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [
    { id: "classic", label: "hundido.preset.classic", config: {} },
    {
      id: "quick",
      label: "hundido.preset.quick",
      config: { rows: 6, columns: 6, fleet: [{ ship: "cruiser", size: 3 }, { ship: "destroyer", size: 2 }] },
    },
  ],
  buildTransitionPlan,
  mount,
  describe(t, api) {
    const out: string[] = [];
    for (const e of t.to.events) {
      const d = e.data as any;
      if (e.type === "shot.fired") {
        const s = d as Shot;
        out.push(api.t(`hundido.shot.${s.outcome}`, { name: api.name(s.seat), cell: cellName(s.row, s.column), ship: s.ship ? shipName(api, s.ship) : "" }));
      } else if (e.type === "battle.started") out.push(api.t("hundido.battle", { name: api.name(d.shooter) }));
      else if (e.type === "player.ready" && d.seat !== t.to.seat) out.push(api.t("hundido.ready-event", { name: api.name(d.seat) }));
    }
    return out;
  },
  status(p, api) {
    if (!p.seat) return null;
    const other = p.seat === "p0" ? "p1" : "p0";
    if (p.context?.phase === "placement") {
      const own = p.view.own;
      if (own?.ready) return api.t("hundido.status.wait-ready", { name: api.name(other) });
      return api.t("hundido.status.place", { placed: own?.ships.length ?? 0, total: p.view.fleet.length });
    }
    return p.context?.yourTurn ? api.t("hundido.status.your-shot") : api.t("hundido.status.their-shot", { name: api.name(other) });
  },
};
