/**
 * Brisca: your hand (one tab stop; arrows move, Enter or 1–3 plays), the face-up trump and
 * the stock, the table (who played what), the others' hand counts (partner or rival, with
 * four players in two teams), your side's points and the tricks. The plan of a transition:
 * each card flies from its player to the table; a finished trick stays a moment to be read,
 * then goes to its winner; each draw flies from the stock; an exchange turns the trump.
 *
 * The cards are drawn as the package binds its deck (`mainDeck` → `cards-spanish/standard`,
 * a resource set over `spanish-cards/spanish40`): each face by its definition id, through
 * the library's graphic; a face it cannot draw falls back to its rank and suit in text.
 */
import manifest from "../../../../libs/games/brisca/package/game.json";
import spanishGraphic from "../../../../libs/packages/libraries/cards-spanish/graphics/spanish.js";
import spanishSet from "../../../../libs/packages/libraries/cards-spanish/sets/standard.json";
import deck from "../../../../libs/packages/libraries/spanish-cards/components/spanish40.json";
import { el, animate, wait } from "../app/dom";
import { lang } from "../app/i18n";
import { CardArt, type GraphicDefinition } from "../present/cardart";
import type { Transition } from "../present/coordinator";
import type { PlanStep, PresentationPlan } from "../present/plan";
import { type BoardApi, type GameModule, type Manifest, type Projection, PLAN_FORMAT } from "./types";

export interface Face {
  suit: "oros" | "copas" | "espadas" | "bastos";
  rank: number;
}
interface TableCard {
  seat: string;
  card: Face;
}

const PLAY_MS = 320;
const READ_MS = 700;
const COLLECT_MS = 380;
const DRAW_MS = 180;

export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  const steps: PlanStep[] = [];
  let previous: string | null = null;
  t.to.events.forEach((e, i) => {
    const d = e.data as { seat: string; card?: Face | null; cards?: TableCard[] };
    let step: Omit<PlanStep, "trigger"> | null = null;
    if (e.type === "card.played") step = { id: `play-${i}`, effect: "card.play", params: { seat: d.seat, card: d.card }, blocking: true, timeoutMs: 1500 };
    else if (e.type === "trick.won") step = { id: `trick-${i}`, effect: "trick.collect", params: { seat: d.seat, cards: d.cards ?? [] }, blocking: true, timeoutMs: 2500 };
    else if (e.type === "card.drawn") step = { id: `draw-${i}`, effect: "card.draw", params: { seat: d.seat }, blocking: true, timeoutMs: 1000 };
    else if (e.type === "trump.exchanged") step = { id: `exchange-${i}`, effect: "trump.exchange", params: { seat: d.seat, card: d.card }, blocking: true, timeoutMs: 1500 };
    if (!step) return;
    steps.push({ ...step, trigger: { after: previous ? [previous] : [] } } as PlanStep);
    previous = step.id;
  });
  return { ...PLAN_FORMAT, id: `brisca.r${t.to.revision}`, steps };
}

/** Brisca's deck art: the `cards-spanish/standard` set the package binds to `mainDeck`. */
export const art = new CardArt(spanishSet, { [spanishGraphic.resourceId]: spanishGraphic as GraphicDefinition }, deck, (m) => console.warn(`brisca art: ${m}`));

/** Brisca's points: as 11, tres 10, rey 4, caballo 3, sota 2. */
export const pointsOf = (c: Face) => ({ 1: 11, 3: 10, 12: 4, 11: 3, 10: 2 })[c.rank as 1] ?? 0;

/** Who plays now: after the last card on the table, else the last trick's winner (p0 first). */
export function actorOf(p: Projection): string | null {
  if (p.result) return null;
  if (p.context?.yourTurn && p.seat) return p.seat;
  const v = p.view;
  const n = (v.players as number) || 2;
  const table = v.table as TableCard[];
  if (table.length) return `p${(Number(table[table.length - 1]!.seat.slice(1)) + 1) % n}`;
  return v.lastTrick?.winner ?? "p0";
}

const messages = {
  es: {
    "brisca.table": "Mesa de brisca",
    "brisca.hand": "Tu mano",
    "brisca.others": "Los demás jugadores",
    "brisca.partner": "compañero",
    "brisca.rival": "rival",
    "brisca.cards-n": "{n} cartas",
    "brisca.cards-1": "1 carta",
    "brisca.turn": "le toca",
    "brisca.trump": "Triunfo: {card}",
    "brisca.trump-suit": "Triunfo: {suit} (la muestra ya se robó)",
    "brisca.stock": "Mazo: {n} cartas",
    "brisca.on-table": "En la mesa",
    "brisca.table-empty": "La mesa está vacía",
    "brisca.played-by": "{name}: {card}",
    "brisca.points-you": "Tus puntos: {points}",
    "brisca.points-team": "Puntos de tu equipo: {points}",
    "brisca.points-side": "Puntos de {side}: {points}",
    "brisca.tricks": "Bazas jugadas: {n}",
    "brisca.last-trick": "Última baza, para {name}: {cards}",
    "brisca.teams": "Tu equipo: {you} y {partner}. Rivales: {a} y {b}.",
    "brisca.exchange": "Cambiar el siete por el triunfo",
    "brisca.card-play": "{card}: jugar",
    "brisca.card-cannot": "{card}: no se puede jugar ahora",
    "brisca.hint": "Elige una carta con las flechas y pulsa Intro, o pulsa 1–3.",
    "brisca.card": "{rank} de {suit}",
    "brisca.rank.1": "as",
    "brisca.rank.2": "dos",
    "brisca.rank.3": "tres",
    "brisca.rank.4": "cuatro",
    "brisca.rank.5": "cinco",
    "brisca.rank.6": "seis",
    "brisca.rank.7": "siete",
    "brisca.rank.10": "sota",
    "brisca.rank.11": "caballo",
    "brisca.rank.12": "rey",
    "brisca.suit.oros": "oros",
    "brisca.suit.copas": "copas",
    "brisca.suit.espadas": "espadas",
    "brisca.suit.bastos": "bastos",
    "brisca.played": "{name} juega el {card}.",
    "brisca.won": "{name} se lleva la baza ({points} puntos).",
    "brisca.drew": "Robas el {card}.",
    "brisca.exchanged": "{name} cambia el {card} por el triunfo.",
    "brisca.status.your-turn": "Tu turno: juega una carta",
    "brisca.status.their-turn": "Turno de {name}",
    "brisca.result.win": "¡Has ganado, {mine} a {theirs}!",
    "brisca.result.loss": "Has perdido, {mine} a {theirs}",
    "brisca.result.team-win": "¡Tu equipo gana, {mine} a {theirs}!",
    "brisca.result.team-loss": "Tu equipo pierde, {mine} a {theirs}",
    "brisca.result.draw": "Empate a 60",
    "brisca.reason.points": "puntos",
    "brisca.reason.withdrawal": "abandono",
    "brisca.preset.classic": "Clásica",
    "brisca.preset.seven": "Con cambio del siete",
    "brisca.preset.follow": "Arrastre (hay que asistir)",
  },
  en: {
    "brisca.table": "Brisca table",
    "brisca.hand": "Your hand",
    "brisca.others": "The other players",
    "brisca.partner": "partner",
    "brisca.rival": "rival",
    "brisca.cards-n": "{n} cards",
    "brisca.cards-1": "1 card",
    "brisca.turn": "to play",
    "brisca.trump": "Trump: {card}",
    "brisca.trump-suit": "Trump: {suit} (the trump card has been drawn)",
    "brisca.stock": "Stock: {n} cards",
    "brisca.on-table": "On the table",
    "brisca.table-empty": "The table is empty",
    "brisca.played-by": "{name}: {card}",
    "brisca.points-you": "Your points: {points}",
    "brisca.points-team": "Your team's points: {points}",
    "brisca.points-side": "{side}'s points: {points}",
    "brisca.tricks": "Tricks played: {n}",
    "brisca.last-trick": "Last trick, to {name}: {cards}",
    "brisca.teams": "Your team: {you} and {partner}. Rivals: {a} and {b}.",
    "brisca.exchange": "Exchange the seven for the trump",
    "brisca.card-play": "{card}: play",
    "brisca.card-cannot": "{card}: cannot be played now",
    "brisca.hint": "Choose a card with the arrow keys and press Enter, or press 1–3.",
    "brisca.card": "{rank} of {suit}",
    "brisca.rank.1": "Ace",
    "brisca.rank.2": "Two",
    "brisca.rank.3": "Three",
    "brisca.rank.4": "Four",
    "brisca.rank.5": "Five",
    "brisca.rank.6": "Six",
    "brisca.rank.7": "Seven",
    "brisca.rank.10": "Jack",
    "brisca.rank.11": "Knight",
    "brisca.rank.12": "King",
    "brisca.suit.oros": "coins",
    "brisca.suit.copas": "cups",
    "brisca.suit.espadas": "swords",
    "brisca.suit.bastos": "clubs",
    "brisca.played": "{name} plays the {card}.",
    "brisca.won": "{name} takes the trick ({points} points).",
    "brisca.drew": "You draw the {card}.",
    "brisca.exchanged": "{name} exchanges the {card} for the trump.",
    "brisca.status.your-turn": "Your turn: play a card",
    "brisca.status.their-turn": "{name}'s turn",
    "brisca.result.win": "You win, {mine} to {theirs}!",
    "brisca.result.loss": "You lose, {mine} to {theirs}",
    "brisca.result.team-win": "Your team wins, {mine} to {theirs}!",
    "brisca.result.team-loss": "Your team loses, {mine} to {theirs}",
    "brisca.result.draw": "A draw, 60 all",
    "brisca.reason.points": "points",
    "brisca.reason.withdrawal": "withdrawal",
    "brisca.preset.classic": "Classic",
    "brisca.preset.seven": "With the trump seven exchange",
    "brisca.preset.follow": "Must follow suit",
  },
};

type Api = Pick<BoardApi, "t">;
export function cardName(api: Api, c: Face): string {
  return api.t("brisca.card", { rank: api.t(`brisca.rank.${c.rank}`), suit: api.t(`brisca.suit.${c.suit}`) });
}
const same = (a: Face, b: Face) => a.suit === b.suit && a.rank === b.rank;
const keyOf = (c: Face) => `${c.rank}-${c.suit}`;

function mount(host: HTMLElement, api: BoardApi) {
  let p: Projection | null = null;
  let focusIndex = 0;
  /** What the effects show ahead of the displayed projection. */
  let extra: TableCard[] = [];
  let cleared = false;
  const delta: Record<string, number> = {};
  let stockDelta = 0;
  const root = el("div", { class: "br" });
  host.replaceChildren(root);

  const me = () => p?.seat ?? "p0";
  const offerOf = (c: Face) => (api.locked() ? undefined : p?.actions.find((a) => a.type === "play" && "payload" in a && same((a.payload as { card: Face }).card, c)));
  const play = (c: Face, i: number) => {
    focusIndex = i;
    if (!offerOf(c)) return;
    api.command("play", { card: { suit: c.suit, rank: c.rank } });
  };

  const face = (c: Face, extraClass = "") => {
    const drawn = art.face(c.suit, c.rank, document, lang());
    return el(
      "span",
      { class: `bc ${c.suit}${drawn ? " art" : ""}${extraClass}`, "aria-hidden": "true", "data-face": `${c.rank}-${c.suit}` },
      ...(drawn ? [drawn] : [el("span", { class: "bc-rank", text: String(c.rank) }), el("span", { class: "bc-suit", text: api.t(`brisca.suit.${c.suit}`) })]),
    );
  };
  const back = (extraClass = "") => {
    const drawn = art.back(document, lang());
    return el("span", { class: `bc back${drawn ? " art" : ""}${extraClass}`, "aria-hidden": "true" }, drawn);
  };

  function render() {
    if (!p) return;
    const v = p.view;
    const ctx = p.context ?? {};
    const hadFocus = root.querySelector(".br-hand")?.contains(document.activeElement) ?? false;
    const focusedExchange = (document.activeElement as HTMLElement | null)?.dataset?.key === "exchange";
    const n = (v.players as number) || 2;
    const turn = actorOf(p);
    const seats = Array.from({ length: n }, (_, i) => `p${i}`);
    const mine = Number(me().slice(1));
    const others = seats.filter((s) => s !== me()).sort((a, b) => ((Number(a.slice(1)) - mine + n) % n) - ((Number(b.slice(1)) - mine + n) % n));
    const partner = ctx.partner as string | null | undefined;

    // The others: name, partner or rival, their hand count.
    const othersBox = el(
      "ul",
      { class: "br-others", "aria-label": api.t("brisca.others") },
      ...others.map((s) => {
        const count = Math.max(0, ((v.hands?.[s] as number) ?? 0) + (delta[s] ?? 0));
        const role = n === 4 ? api.t(s === partner ? "brisca.partner" : "brisca.rival") : null;
        return el(
          "li",
          { class: `br-seat${s === turn ? " turn" : ""}${s === partner ? " partner" : ""}`, "data-seat": s },
          el("span", { class: "br-name" }, el("span", { class: `token ${s}`, "aria-hidden": "true" }), api.name(s), role ? ` (${role})` : ""),
          el("span", { class: "br-count", text: api.t(count === 1 ? "brisca.cards-1" : "brisca.cards-n", { n: count }) + (s === turn ? ` · ${api.t("brisca.turn")}` : "") }),
          el("span", { class: "br-backs", "aria-hidden": "true" }, ...Array.from({ length: count }, () => back())),
        );
      }),
    );

    // The trump and the stock.
    const stock = Math.max(0, (v.stock as number) + stockDelta);
    const deck = el(
      "div",
      { class: "br-deck" },
      v.trump
        ? el("div", { class: "br-trump", "data-key": "trump" }, face(v.trump), el("span", { class: "br-label", text: api.t("brisca.trump", { card: cardName(api, v.trump) }) }))
        : el("div", { class: "br-trump" }, el("span", { class: "br-label", text: api.t("brisca.trump-suit", { suit: api.t(`brisca.suit.${v.trumpSuit}`) }) })),
      el("div", { class: "br-stock", "data-key": "stock" }, stock ? back() : null, el("span", { class: "br-label", text: api.t("brisca.stock", { n: stock }) })),
    );

    // The table: the current trick, in play order.
    const cards = cleared ? [] : [...((v.table as TableCard[]) ?? []), ...extra];
    const table = el(
      "div",
      { class: "br-table", "data-key": "table" },
      el("h2", { class: "br-h", text: api.t("brisca.on-table") }),
      cards.length
        ? el(
            "ul",
            { class: "br-trick" },
            ...cards.map((tc) => el("li", { class: "br-played", "data-seat": tc.seat }, face(tc.card), el("span", { class: "br-label", text: api.t("brisca.played-by", { name: api.name(tc.seat), card: cardName(api, tc.card) }) }))),
          )
        : el("p", { class: "br-empty", text: api.t("brisca.table-empty") }),
    );

    // Points, tricks, the last trick, the teams.
    const points = (v.points ?? {}) as Record<string, number>;
    const info = el("div", { class: "br-info" });
    if (p.result) {
      for (const [side, pts] of Object.entries(points)) info.append(el("p", { text: api.t("brisca.points-side", { side: sideName(side), points: pts }) }));
    } else if (ctx.side && points[ctx.side] !== undefined) {
      info.append(el("p", { text: api.t(n === 4 ? "brisca.points-team" : "brisca.points-you", { points: points[ctx.side] }) }));
    }
    info.append(el("p", { text: api.t("brisca.tricks", { n: v.tricks ?? 0 }) }));
    if (v.lastTrick) {
      info.append(el("p", { class: "br-last", text: api.t("brisca.last-trick", { name: api.name(v.lastTrick.winner), cards: (v.lastTrick.cards as TableCard[]).map((c) => cardName(api, c.card)).join(", ") }) }));
    }
    if (n === 4 && partner) {
      const rivals = others.filter((s) => s !== partner);
      info.append(el("p", { class: "br-teams", text: api.t("brisca.teams", { you: api.name(me()), partner: api.name(partner), a: api.name(rivals[0] ?? ""), b: api.name(rivals[1] ?? "") }) }));
    }

    // My hand.
    const hand = ((v.hand ?? []) as Face[]).filter((c) => !extra.some((x) => x.seat === me() && same(x.card, c)));
    focusIndex = Math.min(focusIndex, Math.max(0, hand.length - 1));
    const handGroup = el("div", { class: "br-hand", role: "group", "aria-label": api.t("brisca.hand"), "aria-describedby": "brisca-hint" });
    hand.forEach((c, i) => {
      const ok = !!offerOf(c);
      handGroup.append(
        el(
          "button",
          {
            type: "button",
            class: `br-card${ok ? " playable" : ""}`,
            "data-card": keyOf(c),
            "data-index": i,
            tabindex: i === focusIndex ? 0 : -1,
            "aria-disabled": String(!ok),
            onclick: () => play(c, i),
            onfocus: () => (focusIndex = i),
          },
          face(c),
          el("span", { class: "sr-only", text: api.t(ok ? "brisca.card-play" : "brisca.card-cannot", { card: cardName(api, c) }) }),
        ),
      );
    });
    const canExchange = !api.locked() && !!api.offer("exchangeTrump");
    const mySeat = el(
      "section",
      { class: `br-me${turn === me() ? " turn" : ""}`, "data-seat": me(), "aria-labelledby": "brisca-hand-h" },
      el("h2", { class: "br-h", id: "brisca-hand-h", text: api.t("brisca.hand") }),
      handGroup,
      canExchange ? el("button", { type: "button", class: "tool", "data-key": "exchange", onclick: () => api.command("exchangeTrump", {}), text: api.t("brisca.exchange") }) : null,
      el("p", { class: "hint", id: "brisca-hint", text: api.t("brisca.hint") }),
    );
    root.replaceChildren(el("div", { class: "br-felt", role: "group", "aria-label": api.t("brisca.table") }, othersBox, el("div", { class: "br-middle" }, deck, table), info), mySeat);
    if (hadFocus || focusedExchange) (handGroup.querySelector<HTMLElement>('[tabindex="0"]') ?? handGroup)?.focus();

    function sideName(side: string) {
      const m = /^team(\d)$/.exec(side);
      if (m) {
        const i = Number(m[1]);
        return `${api.name(`p${i}`)} + ${api.name(`p${i + 2}`)}`;
      }
      return api.name(side);
    }
  }

  root.addEventListener("keydown", (ev) => {
    const group = root.querySelector<HTMLElement>(".br-hand");
    if (!p || !group?.contains(ev.target as Node)) return;
    const buttons = [...group.querySelectorAll<HTMLButtonElement>(".br-card")];
    if (!buttons.length) return;
    let next = focusIndex;
    if (ev.key === "ArrowRight" || ev.key === "ArrowDown") next = (focusIndex + 1) % buttons.length;
    else if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") next = (focusIndex - 1 + buttons.length) % buttons.length;
    else if (ev.key === "Home") next = 0;
    else if (ev.key === "End") next = buttons.length - 1;
    else if (/^[1-9]$/.test(ev.key) && Number(ev.key) <= buttons.length) {
      ev.preventDefault();
      buttons[Number(ev.key) - 1]!.click();
      return;
    } else return;
    ev.preventDefault();
    focusIndex = next;
    buttons.forEach((b, i) => (b.tabIndex = i === next ? 0 : -1));
    buttons[next]!.focus();
  });

  const seatEl = (seat: string) => root.querySelector<HTMLElement>(`[data-seat="${seat}"]:not(.br-played)`);
  const keyEl = (key: string) => root.querySelector<HTMLElement>(`[data-key="${key}"]`);
  /** A card (or a back) flies from one element to another; the ghost is removed at the end. */
  async function fly(from: HTMLElement | null, to: HTMLElement | null, card: Face | null, ms: number, signal: AbortSignal) {
    if (!from || !to) return;
    const a = from.getBoundingClientRect();
    const b = to.getBoundingClientRect();
    const ghost = card ? face(card, " ghost") : back(" ghost");
    ghost.style.cssText = `position:fixed;left:${a.left + a.width / 2 - 24}px;top:${a.top + a.height / 2 - 34}px;z-index:20;pointer-events:none`;
    document.body.append(ghost);
    try {
      await animate(ghost, [{ transform: "translate(0,0)" }, { transform: `translate(${b.left + b.width / 2 - (a.left + a.width / 2)}px, ${b.top + b.height / 2 - (a.top + a.height / 2)}px)` }], ms, signal);
    } finally {
      ghost.remove();
    }
  }

  return {
    update(next: Projection) {
      p = next;
      extra = [];
      cleared = false;
      for (const k of Object.keys(delta)) delete delta[k];
      stockDelta = 0;
      render();
    },
    refresh: render,
    dispose() {
      host.replaceChildren();
    },
    effects: {
      "card.play": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as TableCard).seat === "string" && !!(x as TableCard).card,
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const tc = params as TableCard;
          return {
            async play() {
              if (!ctx.live()) return;
              const from = tc.seat === me() ? root.querySelector<HTMLElement>(`.br-card[data-card="${keyOf(tc.card)}"]`) ?? seatEl(tc.seat) : seatEl(tc.seat);
              if (cleared) {
                cleared = false;
                extra = [];
              }
              await fly(from, keyEl("table"), tc.card, PLAY_MS, ctx.signal);
              if (!ctx.live()) return;
              extra.push(tc);
              if (tc.seat !== me()) delta[tc.seat] = (delta[tc.seat] ?? 0) - 1;
              render();
            },
            dispose() {},
          };
        },
      },
      "trick.collect": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { seat?: unknown }).seat === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const w = params as { seat: string };
          return {
            async play() {
              if (!ctx.live()) return;
              await wait(READ_MS, ctx.signal);
              if (!ctx.live()) return;
              const trick = root.querySelector<HTMLElement>(".br-trick");
              const target = seatEl(w.seat);
              if (trick && target) {
                const a = trick.getBoundingClientRect();
                const b = target.getBoundingClientRect();
                await animate(trick, [{ transform: "none", opacity: 1 }, { transform: `translate(${b.left - a.left}px, ${b.top - a.top}px) scale(.4)`, opacity: 0.2 }], COLLECT_MS, ctx.signal);
              }
              if (!ctx.live()) return;
              cleared = true;
              render();
            },
            dispose() {},
          };
        },
      },
      "card.draw": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { seat?: unknown }).seat === "string",
        prepare(params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          const d = params as { seat: string };
          return {
            async play() {
              if (!ctx.live()) return;
              await fly(keyEl("stock") ?? keyEl("trump"), seatEl(d.seat), null, DRAW_MS, ctx.signal);
              if (!ctx.live()) return;
              if (d.seat !== me()) delta[d.seat] = (delta[d.seat] ?? 0) + 1;
              stockDelta -= 1;
              render();
            },
            dispose() {},
          };
        },
      },
      "trump.exchange": {
        kind: "visual" as const,
        validParams: (x: unknown) => !!x && typeof (x as { seat?: unknown }).seat === "string",
        prepare(_params: unknown, ctx: { signal: AbortSignal; live(): boolean }) {
          return {
            async play() {
              const trump = keyEl("trump");
              if (trump && ctx.live()) await animate(trump, [{ transform: "rotateY(0)" }, { transform: "rotateY(90deg)" }, { transform: "rotateY(0)" }], 400, ctx.signal);
            },
            dispose() {},
          };
        },
      },
    },
  };
}

export const brisca: GameModule = {
  id: "brisca",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [
    { id: "classic", label: "brisca.preset.classic", config: {} },
    { id: "seven", label: "brisca.preset.seven", config: { trumpExchange: "seven" } },
    { id: "follow", label: "brisca.preset.follow", config: { mustFollow: true } },
  ],
  seats: [2, 4],
  seatConfig: (n) => ({ players: n }),
  buildTransitionPlan,
  mount,
  describe(t, api) {
    const out: string[] = [];
    for (const e of t.to.events) {
      const d = e.data as { seat: string; card?: Face | null; cards?: TableCard[]; took?: Face | null };
      if (e.type === "card.played" && d.card) out.push(api.t("brisca.played", { name: api.name(d.seat), card: cardName(api, d.card) }));
      else if (e.type === "trick.won") out.push(api.t("brisca.won", { name: api.name(d.seat), points: (d.cards ?? []).reduce((s, c) => s + pointsOf(c.card), 0) }));
      else if (e.type === "card.drawn" && d.card && d.seat === t.to.seat) out.push(api.t("brisca.drew", { card: cardName(api, d.card) }));
      else if (e.type === "trump.exchanged" && d.card) out.push(api.t("brisca.exchanged", { name: api.name(d.seat), card: cardName(api, d.card) }));
    }
    return out;
  },
  status(p, api) {
    if (!p.seat) return null;
    if (p.context?.yourTurn) return api.t("brisca.status.your-turn");
    const who = actorOf(p);
    return who ? api.t("brisca.status.their-turn", { name: api.name(who) }) : null;
  },
  resultText(p, api) {
    const r = p.result;
    if (r?.kind !== "completed" || r.reasonCode !== "points" || !p.seat) return null;
    const mine = r.participants[p.seat];
    const rival = Object.entries(r.participants).find(([s]) => Number(s.slice(1)) % 2 !== Number(p.seat!.slice(1)) % 2)?.[1];
    if (!mine || !rival) return null;
    const vars = { mine: mine.score ?? 0, theirs: rival.score ?? 0 };
    const team = Object.keys(r.participants).length === 4;
    if (mine.outcome === "draw") return api.t("brisca.result.draw");
    if (mine.outcome === "win") return api.t(team ? "brisca.result.team-win" : "brisca.result.win", vars);
    return api.t(team ? "brisca.result.team-loss" : "brisca.result.loss", vars);
  },
};
