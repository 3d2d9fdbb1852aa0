/**
 * Solitario (Klondike): every pile is a button (select a card or a run, then a target; the
 * stock draws or recycles; double-click or F sends a card to a foundation). The plan of a
 * transition: each card move flies from its pile to its target, and a revealed card turns
 * over after the move that uncovered it.
 */
import manifest from "../../../../libs/games/solitario/package/game.json";
import { el, animate } from "../app/dom";
import type { Transition } from "../present/coordinator";
import type { PlanStep, PresentationPlan } from "../present/plan";
import { type BoardApi, type GameModule, type Manifest, type Projection, PLAN_FORMAT } from "./types";

interface Card {
  suit: string;
  rank: number;
  colour?: string;
  faceDown?: boolean;
}

export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  const steps: PlanStep[] = [];
  let previous: string | null = null;
  t.to.events.forEach((e, i) => {
    const d = e.data as { from?: string; to?: string; count?: number; zone?: string };
    let step: PlanStep | null = null;
    if (e.type === "cards.moved") {
      step = { id: `move-${i}`, effect: "card.move", params: { from: d.from, to: d.to, count: d.count }, trigger: { after: [] }, blocking: true, timeoutMs: 1000 };
    } else if (e.type === "card.drawn") {
      step = { id: `draw-${i}`, effect: "card.move", params: { from: "stock", to: "waste", count: 1 }, trigger: { after: [] }, blocking: true, timeoutMs: 1000 };
    } else if (e.type === "card.revealed") {
      step = { id: `flip-${i}`, effect: "card.flip", params: { zone: d.zone }, trigger: { after: [] }, blocking: true, timeoutMs: 1000 };
    }
    if (!step) return;
    step.trigger = { after: previous ? [previous] : [] };
    steps.push(step);
    previous = step.id;
  });
  return { ...PLAN_FORMAT, id: `solitario.r${t.to.revision}`, steps };
}

const SUIT: Record<string, string> = { clubs: "♣", diamonds: "♦", hearts: "♥", spades: "♠" };
const RANK = ["", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];

const messages = {
  es: {
    "solitario.table": "Mesa de solitario",
    "solitario.stock": "Mazo, {count} cartas: robar",
    "solitario.stock-empty": "Mazo vacío: dar la vuelta al descarte",
    "solitario.waste": "Descarte: {card} ({count} cartas)",
    "solitario.waste-empty": "Descarte vacío",
    "solitario.foundation": "Fundación {n}: {count} cartas{top}",
    "solitario.top": ", arriba {card}",
    "solitario.column": "Columna {n}",
    "solitario.column-target": "Columna {n}{empty}: mover aquí la selección",
    "solitario.empty": " (vacía)",
    "solitario.facedown": "Carta boca abajo",
    "solitario.card": "{rank} de {suit}",
    "solitario.suit.clubs": "tréboles",
    "solitario.suit.diamonds": "diamantes",
    "solitario.suit.hearts": "corazones",
    "solitario.suit.spades": "picas",
    "solitario.rank.1": "As",
    "solitario.rank.11": "Jota",
    "solitario.rank.12": "Reina",
    "solitario.rank.13": "Rey",
    "solitario.hint": "Elige una carta y luego una columna o una fundación. Doble clic o F la sube a su fundación. D roba, Esc cancela.",
    "solitario.give-up": "Rendirse",
    "solitario.confirm-give-up": "¿Seguro? Pulsa otra vez para rendirte",
    "solitario.counts": "Movimientos: {moves} · Vueltas: {recycles}",
    "solitario.status": "Tu jugada",
    "solitario.not-possible": "Ese movimiento no es posible.",
    "solitario.no-foundation": "Esa carta no puede ir a una fundación ahora.",
    "solitario.moved": "{cards} de {from} a {to}.",
    "solitario.drawn": "Robas {card}.",
    "solitario.revealed": "Se descubre {card} en {zone}.",
    "solitario.recycled": "El descarte vuelve al mazo.",
    "solitario.zone.waste": "el descarte",
    "solitario.zone.stock": "el mazo",
    "solitario.zone.tableau": "la columna {n}",
    "solitario.zone.foundation": "la fundación {n}",
    "solitario.won": "¡Has ganado! Todas las cartas en las fundaciones.",
    "solitario.gave-up": "Te has rendido.",
    "solitario.reason.all-foundations": "todas las cartas en las fundaciones",
    "solitario.reason.gave-up": "rendición",
    "solitario.reason.withdrawal": "abandono",
  },
  en: {
    "solitario.table": "Solitaire table",
    "solitario.stock": "Stock, {count} cards: draw",
    "solitario.stock-empty": "Empty stock: recycle the waste",
    "solitario.waste": "Waste: {card} ({count} cards)",
    "solitario.waste-empty": "Empty waste",
    "solitario.foundation": "Foundation {n}: {count} cards{top}",
    "solitario.top": ", top {card}",
    "solitario.column": "Column {n}",
    "solitario.column-target": "Column {n}{empty}: move the selection here",
    "solitario.empty": " (empty)",
    "solitario.facedown": "Face-down card",
    "solitario.card": "{rank} of {suit}",
    "solitario.suit.clubs": "clubs",
    "solitario.suit.diamonds": "diamonds",
    "solitario.suit.hearts": "hearts",
    "solitario.suit.spades": "spades",
    "solitario.rank.1": "Ace",
    "solitario.rank.11": "Jack",
    "solitario.rank.12": "Queen",
    "solitario.rank.13": "King",
    "solitario.hint": "Pick a card, then a column or a foundation. Double-click or F sends it to its foundation. D draws, Esc clears.",
    "solitario.give-up": "Give up",
    "solitario.confirm-give-up": "Sure? Press again to give up",
    "solitario.counts": "Moves: {moves} · Recycles: {recycles}",
    "solitario.status": "Your move",
    "solitario.not-possible": "That move is not possible.",
    "solitario.no-foundation": "That card cannot go to a foundation now.",
    "solitario.moved": "{cards} from {from} to {to}.",
    "solitario.drawn": "You draw {card}.",
    "solitario.revealed": "{card} turns over in {zone}.",
    "solitario.recycled": "The waste goes back to the stock.",
    "solitario.zone.waste": "the waste",
    "solitario.zone.stock": "the stock",
    "solitario.zone.tableau": "column {n}",
    "solitario.zone.foundation": "foundation {n}",
    "solitario.won": "You win! Every card is on the foundations.",
    "solitario.gave-up": "You gave up.",
    "solitario.reason.all-foundations": "all cards on the foundations",
    "solitario.reason.gave-up": "gave up",
    "solitario.reason.withdrawal": "withdrawal",
  },
};

type Api = Pick<BoardApi, "t">;
function cardName(api: Api, c: Card) {
  const rk = api.t(`solitario.rank.${c.rank}`);
  return api.t("solitario.card", { rank: rk.startsWith("solitario.") ? String(c.rank) : rk, suit: api.t(`solitario.suit.${c.suit}`) });
}
function zoneName(api: Api, zone: string) {
  const m = /^(tableau|foundation)(\d+)$/.exec(zone);
  if (m) return api.t(`solitario.zone.${m[1]}`, { n: Number(m[2]) + 1 });
  return api.t(`solitario.zone.${zone}`);
}

function mount(host: HTMLElement, api: BoardApi) {
  let p: Projection | null = null;
  let sel: { from: string; count: number } | null = null;
  let confirmGiveUp = false;
  const root = el("div", { class: "sol-wrap" });
  host.replaceChildren(root);

  // The accessible name is the button's own (visually hidden) text, so it matches what is
  // read; the corner's symbols are decoration for the eyes.
  const face = (c: Card, props: Record<string, unknown>) => {
    const { "aria-label": label, ...rest } = props;
    return el(
      "button",
      { type: "button", class: `card ${c.colour === "red" || c.suit === "hearts" || c.suit === "diamonds" ? "red" : "black"}`, ...rest },
      el("span", { class: "sr-only" }, String(label ?? cardName(api, c))),
      el("span", { class: "corner", "aria-hidden": "true" }, `${RANK[c.rank]}${SUIT[c.suit] ?? "?"}`),
      el("span", { class: "big", "aria-hidden": "true" }, SUIT[c.suit] ?? "?"),
    );
  };
  const offerOf = (type: string) => (api.locked() ? undefined : api.offer(type));
  const constraints = (type: string) => (offerOf(type) as { constraints?: any } | undefined)?.constraints;

  function pick(zone: string, count: number) {
    sel = sel && sel.from === zone && sel.count === count ? null : { from: zone, count };
    api.say("");
    render();
  }
  function toColumn(i: number) {
    const to = `tableau${i}`;
    if (!sel || sel.from === to) return;
    const s = sel;
    sel = null;
    const k = constraints("moveStack");
    const src = k?.sources?.find((x: { zone: string }) => x.zone === s.from);
    if (!offerOf("moveStack") || (k && (!src || s.count > src.maxCount || !(k.targets ?? []).includes(to)))) {
      api.say(api.t("solitario.not-possible"));
      render();
      return;
    }
    api.command("moveStack", { from: s.from, to, count: s.count });
  }
  function toFoundation(from: string) {
    sel = null;
    const k = constraints("moveToFoundation");
    if (!offerOf("moveToFoundation") || (k?.sources && !k.sources.includes(from))) {
      api.say(api.t("solitario.no-foundation"));
      render();
      return;
    }
    api.command("moveToFoundation", { from });
  }
  function stock() {
    sel = null;
    if (!api.command("draw", {}) && !api.command("recycle", {})) render();
  }

  // The control the player was on, kept while a re-render disables it (the stock while a draw
  // is pending): focus falls to the page then, and comes back when the control does.
  let lastFocusKey: string | undefined;
  root.addEventListener("focusin", (ev) => {
    lastFocusKey = (ev.target as HTMLElement).dataset?.key ?? lastFocusKey;
  });

  function render() {
    if (!p) return;
    const v = p.view;
    const ctx = p.context ?? {};
    const active = document.activeElement as HTMLElement | null;
    // Focus elsewhere on the page (settings, chat) is the player's choice: left alone.
    const focusKey = active && root.contains(active) ? active.dataset?.key : !active || active === document.body ? lastFocusKey : undefined;
    const isSel = (zone: string, index: number, len: number) => !!sel && sel.from === zone && (zone.startsWith("tableau") ? index >= len - sel.count : true);
    const top = el("div", { class: "sol-row" });
    const stockBtn = v.stock.count
      ? el("button", { type: "button", class: "card back", "data-key": "stock", "aria-label": api.t("solitario.stock", { count: v.stock.count }), onclick: stock, disabled: !offerOf("draw") }, String(v.stock.count))
      : el("button", { type: "button", class: "slot", "data-key": "stock", "aria-label": api.t("solitario.stock-empty"), onclick: stock, disabled: !offerOf("recycle") }, "↻");
    top.append(el("div", { class: "pile", "data-zone": "stock" }, stockBtn));
    const w = v.waste as Card[];
    const wt = w[w.length - 1];
    top.append(
      el(
        "div",
        { class: "pile", "data-zone": "waste" },
        wt
          ? face(wt, {
              "data-key": "waste",
              "aria-label": api.t("solitario.waste", { card: cardName(api, wt), count: w.length }),
              "aria-pressed": String(isSel("waste", 0, 1)),
              class: `card ${wt.colour === "red" ? "red" : "black"}${isSel("waste", 0, 1) ? " sel" : ""}`,
              onclick: () => pick("waste", 1),
              ondblclick: () => toFoundation("waste"),
            })
          : el("div", { class: "slot", role: "img", "aria-label": api.t("solitario.waste-empty") }),
      ),
    );
    top.append(el("div", { class: "sol-spacer" }));
    (v.foundations as { count: number; top?: Card | null }[]).forEach((f, i) => {
      const zone = `foundation${i}`;
      const label = api.t("solitario.foundation", { n: i + 1, count: f.count, top: f.top ? api.t("solitario.top", { card: cardName(api, f.top) }) : "" });
      const onclick = () => {
        if (sel && sel.from !== zone) {
          if (sel.count === 1) toFoundation(sel.from);
          else {
            sel = null;
            api.say(api.t("solitario.not-possible"));
            render();
          }
        } else if (f.count) pick(zone, 1);
      };
      top.append(
        el(
          "div",
          { class: "pile", "data-zone": zone },
          f.top
            ? face(f.top, { "data-key": zone, "aria-label": label, onclick, class: `card ${f.top.colour === "red" ? "red" : "black"}${isSel(zone, 0, 1) ? " sel" : ""}` })
            : el("button", { type: "button", class: "slot", "data-key": zone, "aria-label": label, onclick }, "A"),
        ),
      );
    });
    const tab = el("div", { class: "sol-row" });
    (v.tableau as Card[][]).forEach((cards, i) => {
      const zone = `tableau${i}`;
      const col = el(
        "div",
        { class: "sol-col pile", role: "group", "aria-label": api.t("solitario.column", { n: i + 1 }), "data-zone": zone },
        el("button", {
          type: "button",
          class: "slot",
          "data-key": `${zone}-slot`,
          "aria-label": api.t("solitario.column-target", { n: i + 1, empty: cards.length ? "" : api.t("solitario.empty") }),
          onclick: () => toColumn(i),
          text: cards.length ? "" : "K",
        }),
      );
      let y = 0;
      cards.forEach((c, k) => {
        const style = `top:${y}px`;
        if (c.faceDown) col.append(el("div", { class: "card back", style, role: "img", "aria-label": api.t("solitario.facedown") }));
        else {
          const count = cards.length - k;
          col.append(
            face(c, {
              style,
              "data-key": `${zone}-${k}`,
              class: `card ${c.colour === "red" ? "red" : "black"}${isSel(zone, k, cards.length) ? " sel" : ""}`,
              "aria-pressed": String(isSel(zone, k, cards.length)),
              onclick: () => (sel && sel.from !== zone ? toColumn(i) : pick(zone, count)),
              ondblclick: () => count === 1 && toFoundation(zone),
            }),
          );
        }
        y += c.faceDown ? 12 : 24;
      });
      col.style.height = `calc(${Math.max(0, y - (cards.length ? (cards[cards.length - 1]!.faceDown ? 12 : 24) : 0))}px + var(--ch))`;
      tab.append(col);
    });
    const give = el("button", {
      type: "button",
      class: "tool",
      "data-key": "give-up",
      disabled: !offerOf("giveUp"),
      onclick: () => {
        if (!confirmGiveUp) {
          confirmGiveUp = true;
          render();
          return;
        }
        confirmGiveUp = false;
        api.command("giveUp", {});
      },
      text: confirmGiveUp ? api.t("solitario.confirm-give-up") : api.t("solitario.give-up"),
    });
    root.replaceChildren(
      el("div", { class: "sol", role: "group", "aria-label": api.t("solitario.table") }, top, tab),
      el("div", { class: "sol-info" }, el("span", { text: api.t("solitario.counts", { moves: ctx.moves ?? 0, recycles: ctx.recycles ?? 0 }) }), " ", give),
      el("p", { class: "hint", text: api.t("solitario.hint") }),
    );
    const target = focusKey ? root.querySelector<HTMLButtonElement>(`[data-key="${focusKey}"]`) : null;
    if (target && !target.disabled) target.focus();
  }

  root.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      sel = null;
      render();
    } else if (ev.key === "d" || ev.key === "D") {
      ev.preventDefault();
      stock();
    } else if ((ev.key === "f" || ev.key === "F") && sel && sel.count === 1) {
      ev.preventDefault();
      toFoundation(sel.from);
    }
  });

  const pileEl = (zone: string) => root.querySelector<HTMLElement>(`.pile[data-zone="${zone}"]`);
  return {
    update(next: Projection) {
      p = next;
      if (sel) {
        const cards = sel.from.startsWith("tableau") ? (p.view.tableau[Number(sel.from.slice(7))] as Card[]) : null;
        if (cards && (sel.count > cards.length || cards.slice(cards.length - sel.count).some((c) => c.faceDown))) sel = null;
      }
      if (p.result) confirmGiveUp = false;
      render();
    },
    refresh: render,
    dispose() {
      host.replaceChildren();
    },
    effects: {
      "card.move": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { from?: unknown }).from === "string" && typeof (x as { to?: unknown }).to === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const m = params as { from: string; to: string; count: number };
          let ghost: HTMLElement | null = null;
          return {
            async play() {
              const from = pileEl(m.from);
              const to = pileEl(m.to);
              if (!from || !to || !ctx.live()) return;
              const cards = from.querySelectorAll<HTMLElement>(".card");
              const source = cards[Math.max(0, cards.length - Math.max(1, m.count))] ?? from;
              const a = source.getBoundingClientRect();
              const b = to.getBoundingClientRect();
              ghost = el("div", { class: "card ghost", "aria-hidden": "true", style: `position:fixed;left:${a.left}px;top:${a.top}px;width:${a.width}px;height:${a.height}px` });
              ghost.innerHTML = source.innerHTML;
              document.body.append(ghost);
              source.style.visibility = "hidden";
              const dy = b.top + (m.to.startsWith("tableau") ? to.querySelectorAll(".card").length * 24 : 0) - a.top;
              await animate(ghost, [{ transform: "translate(0,0)" }, { transform: `translate(${b.left - a.left}px, ${dy}px)` }], 320, ctx.signal);
            },
            dispose() {
              ghost?.remove();
              ghost = null;
            },
          };
        },
      },
      "card.flip": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { zone?: unknown }).zone === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const z = (params as { zone: string }).zone;
          return {
            async play() {
              const cards = pileEl(z)?.querySelectorAll<HTMLElement>(".card");
              const card = cards?.[cards.length - 1];
              if (card && ctx.live()) await animate(card, [{ transform: "rotateY(0)" }, { transform: "rotateY(90deg)" }, { transform: "rotateY(0)" }], 300, ctx.signal);
            },
            dispose() {},
          };
        },
      },
    },
  };
}

export const solitario: GameModule = {
  id: "solitario",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [],
  buildTransitionPlan,
  mount,
  describe(t, api) {
    const out: string[] = [];
    for (const e of t.to.events) {
      const d = e.data as any;
      if (e.type === "cards.moved") {
        out.push(api.t("solitario.moved", { cards: (d.cards as Card[]).map((c) => cardName(api, c)).join(", "), from: zoneName(api, d.from), to: zoneName(api, d.to) }));
      } else if (e.type === "card.drawn") out.push(api.t("solitario.drawn", { card: cardName(api, d.card) }));
      else if (e.type === "card.revealed") out.push(api.t("solitario.revealed", { card: cardName(api, d.card), zone: zoneName(api, d.zone) }));
      else if (e.type === "stock.recycled") out.push(api.t("solitario.recycled"));
    }
    return out;
  },
  status(p, api) {
    return p.seat ? api.t("solitario.status") : null;
  },
  resultText(p, api) {
    const r = p.result;
    if (r?.kind !== "completed") return null;
    if (r.participants.p0?.outcome === "win") return api.t("solitario.won");
    if (r.reasonCode === "gave-up") return api.t("solitario.gave-up");
    return null;
  },
};
