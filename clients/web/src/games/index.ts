/** The catalog's presentation modules; a new game adds one line here. */
import { brisca } from "./brisca";
import { conecta4 } from "./conecta4";
import { hundido } from "./hundido";
import { laberinto } from "./laberinto";
import { oca } from "./oca";
import { serpientes } from "./serpientes";
import { solitario } from "./solitario";
import type { GameModule } from "./types";

export const GAMES: Record<string, GameModule> = { brisca, conecta4, hundido, laberinto, oca, serpientes, solitario };
export { brisca, conecta4, hundido, laberinto, oca, serpientes, solitario };
export type { BoardApi, GameModule, Projection, Renderer } from "./types";
