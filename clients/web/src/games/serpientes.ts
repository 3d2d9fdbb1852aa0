/**
 * Serpientes y escaleras: the classic 10 × 10 board read from its board component
 * (`board-games/serpientes100`: the ladders and snakes are its jump edges, drawn over the
 * board and named on their squares), the players' squares and one button (or R) to roll.
 * The plan of each roll (race.ts): the die → a read pause for someone else's roll → the path
 * square by square (back from 100 on a bounce) → the ladder or snake.
 */
import manifest from "../../../../libs/games/serpientes/package/game.json";
import component from "../../../../libs/packages/libraries/board-games/components/serpientes100.json";
import type { Transition } from "../present/coordinator";
import type { PresentationPlan } from "../present/plan";
import { TURN_CLOCK, type Board, type BoardComponent, type Moved, mountRace, nextSeat, raceInstants, racePlan, readBoard, restOf, seatsOf } from "./race/race";
import { type BoardApi, type GameModule, type Manifest, type Projection } from "./types";

export const board: Board = readBoard(component as BoardComponent);

/** Boustrophedon from the bottom left: 1–10 left to right, 11–20 right to left, … 100 top left. */
export function layout(n: number) {
  const band = Math.floor((n - 1) / 10);
  const offset = (n - 1) % 10;
  return { row: 10 - band, column: band % 2 === 0 ? offset + 1 : 10 - offset };
}

export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  return racePlan("serpientes", board, t);
}

/** Who rolls now: the seat after the last roller (the rules pass the turn in seat order). */
export function actorOf(p: Projection): string | null {
  if (p.result) return null;
  if (p.context?.yourTurn && p.seat) return p.seat;
  const seats = seatsOf(p);
  const last = p.view.lastRoll?.seat as string | undefined;
  return last ? nextSeat(seats, last) : (seats[0] ?? null);
}

const messages = {
  es: {
    "serpientes.board": "Tablero de serpientes y escaleras",
    "serpientes.start": "Salida",
    "serpientes.roll": "Tirar el dado (R)",
    "serpientes.roll-2": "Tirar los dados (R)",
    "serpientes.last-roll": "{name} sacó {roll}",
    "serpientes.no-roll": "Aún no ha tirado nadie",
    "serpientes.players": "Jugadores y casillas",
    "serpientes.at-start": "en la salida",
    "serpientes.at-square": "casilla {n}",
    "serpientes.hint": "Cuando sea tu turno, pulsa «Tirar» o la tecla R. Las escaleras suben, las serpientes bajan.",
    "serpientes.ladder": "Escalera hasta la {n}",
    "serpientes.snake": "Serpiente hasta la {n}",
    "serpientes.cue.ladder": "¡Escalera!",
    "serpientes.cue.snake": "¡Serpiente!",
    "serpientes.rolled": "{name} saca {roll}",
    "serpientes.to-square": "y llega a la casilla {n}.",
    "serpientes.no-move": "y no puede pasar de la 100: se queda en la {n}.",
    "serpientes.via.ladder": "¡Una escalera! Sube a la {n}.",
    "serpientes.via.snake": "¡Una serpiente! Baja a la {n}.",
    "serpientes.via.bounce": "Se pasa de la 100 y retrocede a la {n}.",
    "serpientes.expired": "Se acabó el tiempo de {name}: el servidor tira por él.",
    "serpientes.status.your-turn": "Tu turno: tira el dado",
    "serpientes.status.their-turn": "Turno de {name}",
    "serpientes.reason.finished": "llegó a la casilla 100",
    "serpientes.reason.withdrawal": "abandono",
    "serpientes.preset.exact": "Final exacto en el 100",
    "serpientes.preset.bounce": "Rebote en el 100",
    "serpientes.preset.clock": "Con reloj (30 s por tirada)",
  },
  en: {
    "serpientes.board": "Snakes and Ladders board",
    "serpientes.start": "Start",
    "serpientes.roll": "Roll the die (R)",
    "serpientes.roll-2": "Roll the dice (R)",
    "serpientes.last-roll": "{name} rolled {roll}",
    "serpientes.no-roll": "Nobody has rolled yet",
    "serpientes.players": "Players and squares",
    "serpientes.at-start": "at the start",
    "serpientes.at-square": "square {n}",
    "serpientes.hint": "When it is your turn, press “Roll” or the R key. Ladders go up, snakes go down.",
    "serpientes.ladder": "Ladder up to {n}",
    "serpientes.snake": "Snake down to {n}",
    "serpientes.cue.ladder": "A ladder!",
    "serpientes.cue.snake": "A snake!",
    "serpientes.rolled": "{name} rolls {roll}",
    "serpientes.to-square": "and reaches square {n}.",
    "serpientes.no-move": "and cannot go past 100: stays on {n}.",
    "serpientes.via.ladder": "A ladder! Up to {n}.",
    "serpientes.via.snake": "A snake! Down to {n}.",
    "serpientes.via.bounce": "Past 100, counted back to {n}.",
    "serpientes.expired": "{name} ran out of time: the server rolls for them.",
    "serpientes.status.your-turn": "Your turn: roll the die",
    "serpientes.status.their-turn": "{name}'s turn",
    "serpientes.reason.finished": "reached square 100",
    "serpientes.reason.withdrawal": "withdrawal",
    "serpientes.preset.exact": "Exact finish on 100",
    "serpientes.preset.bounce": "Bounce back from 100",
    "serpientes.preset.clock": "With a clock (30 s a roll)",
  },
};

const jumpFrom = new Map(board.jumps.map((j) => [j.from, j]));
function label(square: number, api: Pick<BoardApi, "t">) {
  const j = jumpFrom.get(square);
  if (!j) return null;
  return { short: `${j.kind === "ladder" ? "↑" : "↓"}${j.to}`, full: api.t(`serpientes.${j.kind}`, { n: j.to }) };
}

export function describeMove(m: Moved, from: number, api: Pick<BoardApi, "t" | "name">): string {
  const words = [api.t("serpientes.rolled", { name: api.name(m.seat), roll: m.roll.join(" + ") })];
  const first = m.path[0];
  words[0] += " " + (first ? api.t("serpientes.to-square", { n: first.square }) : api.t("serpientes.no-move", { n: from }));
  for (const p of m.path.slice(1)) words.push(api.t(`serpientes.via.${p.via}`, { n: p.square }));
  return words.join(" ");
}

export const serpientes: GameModule = {
  id: "serpientes",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [
    { id: "exact", label: "serpientes.preset.exact", config: {} },
    { id: "bounce", label: "serpientes.preset.bounce", config: { finish: "bounce" } },
    { id: "clock", label: "serpientes.preset.clock", config: { clock: TURN_CLOCK } },
  ],
  seats: [2, 3, 4, 5, 6],
  buildTransitionPlan,
  instants: raceInstants,
  mount(host, api) {
    return mountRace(host, api, { game: "serpientes", board, rows: 10, columns: 10, layout, label, lines: board.jumps });
  },
  describe(t, api) {
    const at: Record<string, number> = { ...(t.from.view?.positions ?? {}) };
    const out: string[] = [];
    for (const e of t.to.events) {
      // With a turn clock, the server rolls for a seat whose time ran out (`clock.expired`, then its roll).
      if (e.type === "clock.expired") out.push(api.t("serpientes.expired", { name: api.name((e.data as { seat: string }).seat) }));
      if (e.type !== "piece.moved") continue;
      const m = e.data as Moved;
      out.push(describeMove(m, at[m.seat] ?? 0, api));
      at[m.seat] = restOf(at[m.seat] ?? 0, m.path);
    }
    return out;
  },
  status(p, api) {
    if (!p.seat) return null;
    if (p.context?.yourTurn) return api.t("serpientes.status.your-turn");
    const who = actorOf(p);
    return who ? api.t("serpientes.status.their-turn", { name: api.name(who) }) : null;
  },
};
