/**
 * La Oca: the 63-square spiral read from its board component (`board-games/oca63`: the
 * special squares named by its nodes, the jumps by its edges), the players' squares, turns
 * to lose and the well, and one button (or R) to roll. The plan of each roll (race.ts): the
 * die → a read pause for someone else's roll → the path square by square (back from 63 on a
 * bounce) → each square effect (goose, bridge, dice, maze, death, well, inn, prison).
 */
import manifest from "../../../../libs/games/oca/package/game.json";
import component from "../../../../libs/packages/libraries/board-games/components/oca63.json";
import type { Transition } from "../present/coordinator";
import type { PresentationPlan } from "../present/plan";
import { TURN_CLOCK, type Board, type BoardComponent, type Moved, mountRace, raceInstants, racePlan, readBoard, restOf } from "./race/race";
import { type BoardApi, type GameModule, type Manifest, type Projection } from "./types";

export const board: Board = readBoard(component as BoardComponent);
const COLUMNS = 9;
const ROWS = 7;

/** The spiral: square 1 at the bottom left, counter-clockwise inwards, 63 in the middle. */
const SPIRAL: { row: number; column: number }[] = (() => {
  const out: { row: number; column: number }[] = [];
  let [top, bottom, left, right] = [1, ROWS, 1, COLUMNS];
  while (top <= bottom && left <= right) {
    for (let c = left; c <= right; c++) out.push({ row: bottom, column: c });
    for (let r = bottom - 1; r >= top; r--) out.push({ row: r, column: right });
    if (top < bottom) for (let c = right - 1; c >= left; c--) out.push({ row: top, column: c });
    if (left < right) for (let r = top + 1; r <= bottom - 1; r++) out.push({ row: r, column: left });
    [top, bottom, left, right] = [top + 1, bottom - 1, left + 1, right - 1];
  }
  return out;
})();

export function buildTransitionPlan(t: Transition<Projection>): PresentationPlan {
  return racePlan("oca", board, t);
}

/** Square effects that move the piece, as the events' `via` names them. */
const JUMPS = new Set(["goose", "bridge", "dice", "maze", "death"]);
/** Who rolls now: the view says it (`turn`, null once the match is over). */
export function actorOf(p: Projection): string | null {
  if (p.result) return null;
  return (p.view?.turn as string | null | undefined) ?? null;
}

const messages = {
  es: {
    "oca.board": "Tablero de la oca",
    "oca.start": "Salida",
    "oca.roll": "Tirar el dado (R)",
    "oca.roll-2": "Tirar los dados (R)",
    "oca.last-roll": "{name} sacó {roll}",
    "oca.no-roll": "Aún no ha tirado nadie",
    "oca.players": "Jugadores y casillas",
    "oca.at-start": "en la salida",
    "oca.at-square": "casilla {n}",
    "oca.note.lost-1": " (pierde 1 turno)",
    "oca.note.lost-n": " (pierde {n} turnos)",
    "oca.note.well": " (en el pozo)",
    "oca.hint": "Cuando sea tu turno, pulsa «Tirar» o la tecla R. De oca a oca y tiro porque me toca.",
    "oca.sq.oca": "Oca",
    "oca.sq.puente": "Puente",
    "oca.sq.posada": "Posada",
    "oca.sq.dados": "Dados",
    "oca.sq.pozo": "Pozo",
    "oca.sq.laberinto": "Laberinto",
    "oca.sq.carcel": "Cárcel",
    "oca.sq.muerte": "Muerte",
    "oca.sq.jardin": "Jardín",
    "oca.explain.oca": "salta a la oca siguiente y tira otra vez",
    "oca.explain.puente": "salta al otro puente y tira otra vez",
    "oca.explain.posada": "pierde un turno",
    "oca.explain.dados": "salta a los otros dados y tira otra vez",
    "oca.explain.pozo": "espera hasta que otro caiga",
    "oca.explain.laberinto": "vuelve a la casilla 30",
    "oca.explain.carcel": "pierde dos turnos",
    "oca.explain.muerte": "vuelve a la casilla 1",
    "oca.explain.jardin": "la meta",
    "oca.cue.goose": "¡De oca a oca!",
    "oca.cue.bridge": "¡De puente a puente!",
    "oca.cue.dice": "¡De dados a dados!",
    "oca.cue.maze": "¡El laberinto!",
    "oca.cue.death": "¡La muerte!",
    "oca.cue.well": "¡Al pozo!",
    "oca.cue.inn": "La posada",
    "oca.cue.prison": "La cárcel",
    "oca.rolled": "{name} saca {roll}",
    "oca.to-square": "y llega a la casilla {n}.",
    "oca.via.goose": "¡De oca a oca! Salta a la {n} y tira otra vez.",
    "oca.via.bridge": "De puente a puente: a la {n}, y tira otra vez.",
    "oca.via.dice": "De dados a dados: a la {n}, y tira otra vez.",
    "oca.via.maze": "El laberinto: vuelve a la {n}.",
    "oca.via.death": "La muerte: vuelve a la {n}.",
    "oca.via.bounce": "Se pasa de la 63 y retrocede a la {n}.",
    "oca.via.well": "Cae en el pozo: espera a que caiga otro jugador.",
    "oca.rest.inn": "La posada: pierde un turno.",
    "oca.rest.prison": "La cárcel: pierde dos turnos.",
    "oca.expired": "Se acabó el tiempo de {name}: el servidor tira por él.",
    "oca.status.your-turn": "Tu turno: tira el dado",
    "oca.status.their-turn": "Turno de {name}",
    "oca.reason.finished": "llegó a la casilla 63",
    "oca.reason.withdrawal": "abandono",
    "oca.preset.one": "Un dado",
    "oca.preset.two": "Dos dados",
    "oca.preset.clock": "Con reloj (30 s por tirada)",
  },
  en: {
    "oca.board": "Game of the Goose board",
    "oca.start": "Start",
    "oca.roll": "Roll the die (R)",
    "oca.roll-2": "Roll the dice (R)",
    "oca.last-roll": "{name} rolled {roll}",
    "oca.no-roll": "Nobody has rolled yet",
    "oca.players": "Players and squares",
    "oca.at-start": "at the start",
    "oca.at-square": "square {n}",
    "oca.note.lost-1": " (loses 1 turn)",
    "oca.note.lost-n": " (loses {n} turns)",
    "oca.note.well": " (in the well)",
    "oca.hint": "When it is your turn, press “Roll” or the R key. From goose to goose, roll again!",
    "oca.sq.oca": "Goose",
    "oca.sq.puente": "Bridge",
    "oca.sq.posada": "Inn",
    "oca.sq.dados": "Dice",
    "oca.sq.pozo": "Well",
    "oca.sq.laberinto": "Maze",
    "oca.sq.carcel": "Prison",
    "oca.sq.muerte": "Death",
    "oca.sq.jardin": "Garden",
    "oca.explain.oca": "jump to the next goose and roll again",
    "oca.explain.puente": "jump to the other bridge and roll again",
    "oca.explain.posada": "lose one turn",
    "oca.explain.dados": "jump to the other dice and roll again",
    "oca.explain.pozo": "wait until another player falls in",
    "oca.explain.laberinto": "back to square 30",
    "oca.explain.carcel": "lose two turns",
    "oca.explain.muerte": "back to square 1",
    "oca.explain.jardin": "the goal",
    "oca.cue.goose": "From goose to goose!",
    "oca.cue.bridge": "From bridge to bridge!",
    "oca.cue.dice": "From dice to dice!",
    "oca.cue.maze": "The maze!",
    "oca.cue.death": "Death!",
    "oca.cue.well": "Into the well!",
    "oca.cue.inn": "The inn",
    "oca.cue.prison": "The prison",
    "oca.rolled": "{name} rolls {roll}",
    "oca.to-square": "and reaches square {n}.",
    "oca.via.goose": "From goose to goose! On to {n}, and roll again.",
    "oca.via.bridge": "From bridge to bridge: on to {n}, and roll again.",
    "oca.via.dice": "From dice to dice: on to {n}, and roll again.",
    "oca.via.maze": "The maze: back to {n}.",
    "oca.via.death": "Death: back to {n}.",
    "oca.via.bounce": "Past 63, counted back to {n}.",
    "oca.via.well": "Into the well: waiting for another player to fall in.",
    "oca.rest.inn": "The inn: one turn lost.",
    "oca.rest.prison": "The prison: two turns lost.",
    "oca.expired": "{name} ran out of time: the server rolls for them.",
    "oca.status.your-turn": "Your turn: roll the die",
    "oca.status.their-turn": "{name}'s turn",
    "oca.reason.finished": "reached square 63",
    "oca.reason.withdrawal": "withdrawal",
    "oca.preset.one": "One die",
    "oca.preset.two": "Two dice",
    "oca.preset.clock": "With a clock (30 s a roll)",
  },
};

type Api = Pick<BoardApi, "t">;
function label(square: number, api: Api) {
  const name = board.names.get(square);
  if (!name) return null;
  const short = api.t(`oca.sq.${name}`);
  return { short, full: `${short}, ${api.t(`oca.explain.${name}`)}` };
}

/** The sentences of one roll: the number, the square counted to, each effect. */
export function describeMove(m: Moved, from: number, api: Pick<BoardApi, "t" | "name">): string {
  const words = [api.t("oca.rolled", { name: api.name(m.seat), roll: m.roll.join(" + ") })];
  const first = m.path[0];
  words[0] += first && first.via === "step" ? ` ${api.t("oca.to-square", { n: first.square })}` : ".";
  for (const p of m.path.slice(1)) {
    if (p.via === "step") continue;
    words.push(api.t(`oca.via.${p.via}`, { n: p.square }));
  }
  const rest = restOf(from, m.path);
  const last = m.path[m.path.length - 1];
  const eff = board.effects.get(rest);
  if (last && !JUMPS.has(last.via) && (eff === "inn" || eff === "prison")) words.push(api.t(`oca.rest.${eff}`));
  return words.join(" ");
}

export const oca: GameModule = {
  id: "oca",
  manifest: manifest as unknown as Manifest,
  messages,
  presets: [
    { id: "one", label: "oca.preset.one", config: {} },
    { id: "two", label: "oca.preset.two", config: { dice: 2 } },
    { id: "clock", label: "oca.preset.clock", config: { clock: TURN_CLOCK } },
  ],
  seats: [2, 3, 4],
  buildTransitionPlan,
  instants: raceInstants,
  mount(host, api) {
    return mountRace(host, api, {
      game: "oca",
      board,
      rows: ROWS,
      columns: COLUMNS,
      layout: (n) => SPIRAL[n - 1]!,
      label,
      seatNote(p, seat, api) {
        const lost = (p.view.turnsLost?.[seat] ?? 0) as number;
        return (p.view.well === seat ? api.t("oca.note.well") : "") + (lost === 1 ? api.t("oca.note.lost-1") : lost > 1 ? api.t("oca.note.lost-n", { n: lost }) : "");
      },
    });
  },
  describe(t, api) {
    const at: Record<string, number> = { ...(t.from.view?.positions ?? {}) };
    const out: string[] = [];
    for (const e of t.to.events) {
      // With a turn clock, the server rolls for a seat whose time ran out (`clock.expired`, then its roll).
      if (e.type === "clock.expired") out.push(api.t("oca.expired", { name: api.name((e.data as { seat: string }).seat) }));
      if (e.type !== "piece.moved") continue;
      const m = e.data as Moved;
      out.push(describeMove(m, at[m.seat] ?? 0, api));
      at[m.seat] = restOf(at[m.seat] ?? 0, m.path);
    }
    return out;
  },
  status(p, api) {
    if (!p.seat) return null;
    if (p.context?.yourTurn) return api.t("oca.status.your-turn");
    const who = actorOf(p);
    return who ? api.t("oca.status.their-turn", { name: api.name(who) }) : null;
  },
};
