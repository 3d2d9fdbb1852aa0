/**
 * Where the app is: the lobby (`/`), a match (`/?match=<id>&game=<id>&as=<principal>&p0=…&p1=…`)
 * or a match watched as a spectator (`/?watch=<id>&game=<id>&p0=…`). A match link carries the
 * seats' display names (`bot:<name>` for a bot) so every player sees names, not seats; the
 * friend's link is the same with `as` set to the friend.
 */
export interface MatchLink {
  matchId: string;
  game: string;
  /** The principal playing; empty for a spectator. */
  as: string;
  /** Watching as a spectator (a grant instead of a seat). */
  watch?: boolean;
  names: Record<string, string>;
  config?: unknown;
  /** Whether this browser created the match (it shows the friend's link). */
  host?: boolean;
  at?: number;
}

export function parseLink(search: string): MatchLink | null {
  const q = new URLSearchParams(search);
  const names: Record<string, string> = {};
  for (const [k, v] of q) if (/^p\d+$/.test(k)) names[k] = v;
  const watched = q.get("watch");
  const game = q.get("game");
  if (watched && game) return { matchId: watched, game, as: "", names, watch: true };
  const matchId = q.get("match");
  const as = q.get("as");
  if (!matchId || !game || !as) return null;
  let config: unknown = undefined;
  try {
    config = q.get("config") ? JSON.parse(q.get("config")!) : undefined;
  } catch {
    config = undefined;
  }
  return { matchId, game, as, names, config, host: q.get("host") === "1" };
}

export function linkOf(l: MatchLink): string {
  const q = l.watch ? new URLSearchParams({ watch: l.matchId, game: l.game }) : new URLSearchParams({ match: l.matchId, game: l.game, as: l.as });
  for (const [k, v] of Object.entries(l.names)) q.set(k, v);
  if (l.config !== undefined && JSON.stringify(l.config) !== "{}") q.set("config", JSON.stringify(l.config));
  if (l.host) q.set("host", "1");
  return `/?${q}`;
}

const RECENT = "juegoland.matches";

/** The matches this browser played, newest first (the lobby offers to resume them). */
export function recent(): MatchLink[] {
  try {
    const list = JSON.parse(localStorage.getItem(RECENT) ?? "[]") as MatchLink[];
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

export function remember(l: MatchLink): void {
  const list = [{ ...l, at: Date.now() }, ...recent().filter((x) => !(x.matchId === l.matchId && x.as === l.as))].slice(0, 8);
  try {
    localStorage.setItem(RECENT, JSON.stringify(list));
  } catch {
    /* no storage */
  }
}
