/**
 * Laberinto's view read and drawn (spec/games.md § Laberinto): the view is a list of records
 * of at most 512 bytes each (`libs/games/laberinto/src/view.rs` cuts them), which together
 * carry each cell, object and player exactly once; the header fields repeat in every record
 * and the status is in chunk 0 only.
 *
 * - `readMaze` joins the records into one `Maze`, checking what the contract promises (chunk
 *   indices exactly 0..k-1, one header, each cell and player once, the status in chunk 0,
 *   the 512-byte bound) and throwing a typed `ViewError` otherwise;
 * - `FogMemory` keeps the walls (which never change) of every cell the player has seen, and
 *   the places of the exits and compasses (which never move): the fog of war shows them dim
 *   where the player no longer sees, never an object that may have moved;
 * - `fogCells` and `mazeSvg` draw it: lit cells (seen now), remembered cells, and the dark
 *   rest; walls as two paths, objects and players on top. Pure: markup from data.
 */

/** The bound of one record as serialized (`RECORD_MAX_BYTES` in view.rs). */
export const RECORD_MAX_BYTES = 512;

export type Direction = "north" | "east" | "south" | "west";
export const DIRECTIONS: Direction[] = ["north", "east", "south", "west"];
export type Bearing = "n" | "ne" | "e" | "se" | "s" | "sw" | "w" | "nw";
export type Phase = "countdown" | "racing" | "finished";
export type Role = "p0" | "p1" | "observer";

/** A cell's passages: true where the wall on that side is open. */
export interface Passages {
  n: boolean;
  e: boolean;
  s: boolean;
  w: boolean;
}

export interface MazeObject {
  kind: "key" | "compass" | "artifact" | "exit";
  owner: string | null;
  variant: string | null;
  cell: number;
}

export interface PlayerStatus {
  /** The owner of the carried key, or null. */
  inventory: string | null;
  visionMoves: number;
  compass: Bearing | null;
  exitOpen: boolean;
}

export interface Maze {
  seq: number;
  role: Role;
  phase: Phase;
  width: number;
  height: number;
  meetingSeq: number;
  cells: Map<number, Passages>;
  objects: MazeObject[];
  /** Seat → cell, for every player the view shows (a player's `self`/`opponent` named by seat). */
  positions: Record<string, number>;
  /** Seat → status: a player's own only, an observer's both. */
  status: Record<string, PlayerStatus>;
}

export type ViewErrorKind = "no-records" | "header" | "chunks" | "status" | "duplicate" | "bounds" | "too-large";

/** A view that breaks the records' contract. */
export class ViewError extends Error {
  constructor(
    readonly kind: ViewErrorKind,
    message: string,
  ) {
    super(`laberinto view: ${message}`);
  }
}

interface RecordShape {
  seq: number;
  role: Role;
  phase: Phase;
  width: number;
  height: number;
  meetingSeq: number;
  chunk: number;
  chunks: number;
  cells?: ({ index: number } & Passages)[];
  objects?: MazeObject[];
  players?: Record<string, number>;
  status?: PlayerStatus | Record<string, PlayerStatus>;
}

const HEADER = ["seq", "role", "phase", "width", "height", "meetingSeq", "chunks"] as const;
const encoder = new TextEncoder();
const other = (seat: string) => (seat === "p0" ? "p1" : "p0");

const cache = new WeakMap<object, Maze>();

/** The maze a view's records describe (memoized per view object). Throws a `ViewError`. */
export function readMaze(view: unknown): Maze {
  if (view && typeof view === "object") {
    const hit = cache.get(view);
    if (hit) return hit;
  }
  const records = (view as { records?: RecordShape[] } | null)?.records;
  if (!Array.isArray(records) || records.length === 0) throw new ViewError("no-records", "no records");
  const first = records[0]!;
  const seen = new Set<number>();
  for (const r of records) {
    for (const k of HEADER) if (r[k] !== first[k]) throw new ViewError("header", `record ${r.chunk} says ${k} ${String(r[k])}, record ${first.chunk} ${String(first[k])}`);
    if (!Number.isInteger(r.chunk) || r.chunk < 0 || r.chunk >= r.chunks || seen.has(r.chunk)) throw new ViewError("chunks", `chunk ${r.chunk} of ${r.chunks}`);
    seen.add(r.chunk);
    if ((r.status !== undefined) !== (r.chunk === 0)) throw new ViewError("status", `the status is in chunk ${r.chunk}`);
    const bytes = encoder.encode(JSON.stringify(r)).length;
    if (bytes > RECORD_MAX_BYTES) throw new ViewError("too-large", `record ${r.chunk} is ${bytes} bytes`);
  }
  if (seen.size !== first.chunks) throw new ViewError("chunks", `${seen.size} of ${first.chunks} chunks`);
  const size = first.width * first.height;
  const maze: Maze = {
    seq: first.seq,
    role: first.role,
    phase: first.phase,
    width: first.width,
    height: first.height,
    meetingSeq: first.meetingSeq,
    cells: new Map(),
    objects: [],
    positions: {},
    status: {},
  };
  const inBounds = (cell: number, what: string) => {
    if (!Number.isInteger(cell) || cell < 0 || cell >= size) throw new ViewError("bounds", `${what} at cell ${cell} of ${size}`);
  };
  for (const r of [...records].sort((a, b) => a.chunk - b.chunk)) {
    for (const c of r.cells ?? []) {
      inBounds(c.index, "a cell");
      if (maze.cells.has(c.index)) throw new ViewError("duplicate", `cell ${c.index} twice`);
      maze.cells.set(c.index, { n: c.n, e: c.e, s: c.s, w: c.w });
    }
    for (const o of r.objects ?? []) {
      inBounds(o.cell, `a ${o.kind}`);
      maze.objects.push({ kind: o.kind, owner: o.owner ?? null, variant: o.variant ?? null, cell: o.cell });
    }
    for (const [who, cell] of Object.entries(r.players ?? {})) {
      inBounds(cell, who);
      const seat = who === "self" ? first.role : who === "opponent" ? other(first.role) : who;
      if (seat in maze.positions) throw new ViewError("duplicate", `player ${who} twice`);
      maze.positions[seat] = cell;
    }
    if (r.status) {
      if (first.role === "observer") Object.assign(maze.status, r.status as Record<string, PlayerStatus>);
      else maze.status[first.role] = r.status as PlayerStatus;
    }
  }
  if (view && typeof view === "object") cache.set(view, maze);
  return maze;
}

/** A cell's row and column (row 0 on top). */
export const rowCol = (width: number, cell: number) => ({ row: Math.floor(cell / width), column: cell % width });

/** The cell beyond `side` of `cell`, or null past the border. */
export function neighbour(m: Pick<Maze, "width" | "height">, cell: number, side: Direction): number | null {
  const { row, column } = rowCol(m.width, cell);
  if (side === "north") return row > 0 ? cell - m.width : null;
  if (side === "south") return row + 1 < m.height ? cell + m.width : null;
  if (side === "west") return column > 0 ? cell - 1 : null;
  return column + 1 < m.width ? cell + 1 : null;
}

const FLAG: Record<Direction, keyof Passages> = { north: "n", east: "e", south: "s", west: "w" };

/** The open directions out of a cell whose passages are known. */
export const openWays = (p: Passages): Direction[] => DIRECTIONS.filter((d) => p[FLAG[d]]);

/** The side of the border an exit leads out through (p0's on the bottom row, p1's on the top). */
export function exitSide(m: Pick<Maze, "width" | "height">, cell: number): Direction {
  const { row, column } = rowCol(m.width, cell);
  if (row === m.height - 1) return "south";
  if (row === 0) return "north";
  return column === 0 ? "west" : "east";
}

/**
 * What the player has seen of the maze: walls of every cell seen (they never change) and the
 * exits and compasses (they never move). Reset when the maze's size changes (another match).
 */
export class FogMemory {
  readonly cells = new Map<number, Passages>();
  readonly landmarks = new Map<string, MazeObject>();
  private size = "";

  remember(m: Maze): void {
    const size = `${m.width}x${m.height}`;
    if (size !== this.size) {
      this.cells.clear();
      this.landmarks.clear();
      this.size = size;
    }
    for (const [i, p] of m.cells) this.cells.set(i, p);
    for (const o of m.objects) if (o.kind === "exit" || o.kind === "compass") this.landmarks.set(`${o.kind}:${o.owner}`, { ...o, variant: o.kind === "exit" ? o.variant : null });
  }
}

export type CellState = "lit" | "remembered";

/** Every cell to draw: the view's (lit) and the remembered ones it no longer shows. */
export function fogCells(m: Maze, memory: FogMemory | null): { index: number; state: CellState; passages: Passages }[] {
  const out: { index: number; state: CellState; passages: Passages }[] = [];
  for (const [index, passages] of m.cells) out.push({ index, state: "lit", passages });
  if (memory) for (const [index, passages] of memory.cells) if (!m.cells.has(index)) out.push({ index, state: "remembered", passages });
  return out.sort((a, b) => a.index - b.index);
}

/** The size of a cell in the SVG's user units. */
export const CELL = 10;

const n2 = (x: number) => (Math.round(x * 100) / 100).toString();

/** The path of a cell's closed sides. */
function wallPath(width: number, index: number, p: Passages): string {
  const { row, column } = rowCol(width, index);
  const x = column * CELL;
  const y = row * CELL;
  let d = "";
  if (!p.n) d += `M${x} ${y}h${CELL}`;
  if (!p.e) d += `M${x + CELL} ${y}v${CELL}`;
  if (!p.s) d += `M${x} ${y + CELL}h${CELL}`;
  if (!p.w) d += `M${x} ${y}v${CELL}`;
  return d;
}

/** The centre of a cell. */
export function centre(width: number, cell: number): { x: number; y: number } {
  const { row, column } = rowCol(width, cell);
  return { x: column * CELL + CELL / 2, y: row * CELL + CELL / 2 };
}

function keyGlyph(x: number, y: number, owner: string | null, small = false): string {
  const k = small ? 0.6 : 1;
  return `<g class="mz-key ${owner ?? ""}${small ? " carried" : ""}" transform="translate(${n2(x)} ${n2(y)}) scale(${k})"><circle cx="-1.8" cy="0" r="1.7"/><path d="M-0.1 0H3.4M2.3 0v1.6M3.4 0v1.2"/></g>`;
}

function objectSvg(m: Pick<Maze, "width" | "height">, o: MazeObject, dim: boolean): string {
  const { x, y } = centre(m.width, o.cell);
  const cls = dim ? " dim" : "";
  switch (o.kind) {
    case "key":
      return o.variant === "carried" ? "" : keyGlyph(x, y, o.owner);
    case "compass":
      return `<g class="mz-compass ${o.owner ?? ""}${cls}" transform="translate(${n2(x)} ${n2(y)})"><circle r="3"/><path d="M0 -2.4L0.9 0H-0.9Z"/></g>`;
    case "artifact":
      return `<path class="mz-artifact${cls}" d="M${n2(x)} ${n2(y - 3.2)}L${n2(x + 1)} ${n2(y - 1)}L${n2(x + 3.2)} ${n2(y)}L${n2(x + 1)} ${n2(y + 1)}L${n2(x)} ${n2(y + 3.2)}L${n2(x - 1)} ${n2(y + 1)}L${n2(x - 3.2)} ${n2(y)}L${n2(x - 1)} ${n2(y - 1)}Z"/>`;
    case "exit": {
      // A door on the border side the exit leads out through.
      const side = exitSide(m, o.cell);
      const { row, column } = rowCol(m.width, o.cell);
      const x0 = column * CELL;
      const y0 = row * CELL;
      const d =
        side === "south" ? `M${x0 + 1.5} ${y0 + CELL}h${CELL - 3}` : side === "north" ? `M${x0 + 1.5} ${y0}h${CELL - 3}` : side === "west" ? `M${x0} ${y0 + 1.5}v${CELL - 3}` : `M${x0 + CELL} ${y0 + 1.5}v${CELL - 3}`;
      const open = o.variant === "open";
      return `<g class="mz-exit ${o.owner ?? ""}${open ? " open" : ""}${cls}"><rect x="${x0 + 2}" y="${y0 + 2}" width="${CELL - 4}" height="${CELL - 4}" rx="1"/><path d="${d}"/></g>`;
    }
  }
}

function playerSvg(width: number, seat: string, cell: number, self: boolean, carried: string | null): string {
  const { x, y } = centre(width, cell);
  // p0 a disc, p1 a diamond: told apart by shape as well as colour.
  const shape = seat === "p0" ? `<circle r="3.3"/>` : `<path d="M0 -3.9L3.9 0L0 3.9L-3.9 0Z"/>`;
  const key = carried ? keyGlyph(2.6, -2.6, carried, true) : "";
  return `<g class="mz-player ${seat}${self ? " self" : ""}" data-seat="${seat}" data-cell="${cell}"><g transform="translate(${n2(x)} ${n2(y)})">${shape}${key}</g></g>`;
}

/**
 * The maze as SVG markup: the dark background, the floor of lit and remembered cells, their
 * walls, the objects in sight (and remembered exits and compasses, dim), the players. `seat`
 * is the recipient's (null for an observer).
 */
export function mazeSvg(m: Maze, memory: FogMemory | null, seat: string | null): string {
  const w = m.width * CELL;
  const h = m.height * CELL;
  const cells = fogCells(m, memory);
  const floor: Record<CellState, string> = { lit: "", remembered: "" };
  const walls: Record<CellState, string> = { lit: "", remembered: "" };
  for (const c of cells) {
    const { row, column } = rowCol(m.width, c.index);
    floor[c.state] += `M${column * CELL} ${row * CELL}h${CELL}v${CELL}h-${CELL}z`;
    walls[c.state] += wallPath(m.width, c.index, c.passages);
  }
  const objects: string[] = [];
  const shown = new Set(m.objects.map((o) => `${o.kind}:${o.owner}`));
  if (memory) for (const [k, o] of memory.landmarks) if (!shown.has(k) && !m.cells.has(o.cell)) objects.push(objectSvg(m, o, true));
  for (const o of m.objects) objects.push(objectSvg(m, o, false));
  const carried = (s: string) => m.objects.find((o) => o.kind === "key" && o.variant === "carried" && o.cell === m.positions[s])?.owner ?? m.status[s]?.inventory ?? null;
  const players = Object.entries(m.positions)
    .sort(([a], [b]) => (a === seat ? 1 : b === seat ? -1 : a.localeCompare(b)))
    .map(([s, cell]) => playerSvg(m.width, s, cell, s === seat, carried(s)));
  return (
    `<svg class="mz-svg" viewBox="-1.5 -1.5 ${w + 3} ${h + 3}" focusable="false" aria-hidden="true" data-lit="${cells.filter((c) => c.state === "lit").length}" data-remembered="${cells.filter((c) => c.state === "remembered").length}">` +
    `<rect class="mz-dark" x="0" y="0" width="${w}" height="${h}"/>` +
    `<path class="mz-floor remembered" d="${floor.remembered}"/>` +
    `<path class="mz-floor lit" d="${floor.lit}"/>` +
    `<path class="mz-walls remembered" d="${walls.remembered}"/>` +
    `<path class="mz-walls lit" d="${walls.lit}"/>` +
    objects.join("") +
    players.join("") +
    `</svg>`
  );
}
