/**
 * The HTTP calls a client needs besides the protocol: the catalog, dev tokens, creating a
 * match, and the platform's reads a dev lobby may make (a match's seats, the active matches,
 * a spectator grant).
 */
import type { ContractTuple } from "../protocol/generated";

export interface CatalogEntry {
  id: string;
  version: string;
  rulesVersion: string;
  rulesDigest: string;
  viewSchemaVersion: number;
  eventSchemaVersion: number;
  minSeats: number;
  maxSeats: number;
  bots: string[];
  actions: string[];
  /** Whether the game defines a spectator projection (the platform may grant spectators). */
  spectators?: boolean;
  /** What an empty `config` means (`null` when the game requires some of it). */
  defaultConfig?: Record<string, unknown> | null;
}

/** Who plays a seat, as the platform API tells it. */
export type SeatHolder = { kind: "human"; principal: string } | { kind: "bot"; profile: string };

export interface SeatSummary {
  seat: string;
  controller: SeatHolder;
  status: "active" | "withdrawn";
  team?: string;
}

/** `GET /v1/matches/{id}`: a match without a seat (status, seats, revision, result). */
export interface MatchSummary {
  matchId: string;
  game: { id: string; rulesVersion: string };
  status: "active" | "finished" | "cancelled";
  revision: number;
  seats: SeatSummary[];
}

/** One match of `GET /v1/matches`. */
export interface MatchListing {
  matchId: string;
  game: { id: string; rulesVersion: string };
  status: "active" | "finished" | "cancelled";
  /** When it was created, ms since the Unix epoch. */
  createdMs: number;
  seats: SeatSummary[];
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(baseUrl: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(new URL(path, baseUrl), {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    const d = (data ?? {}) as { code?: string; message?: string };
    throw new HttpError(res.status, d.code ?? "HTTP_" + res.status, d.message ?? `${method} ${path}: ${res.status}`);
  }
  return data as T;
}

export const catalog = (baseUrl: string) => call<CatalogEntry[]>(baseUrl, "GET", "/v1/games");

/** The contract tuple a client built for `entry` accepts. */
export const contractOf = (entry: CatalogEntry): ContractTuple => ({
  id: entry.id,
  rulesVersion: entry.rulesVersion,
  viewSchemaVersion: entry.viewSchemaVersion,
  eventSchemaVersion: entry.eventSchemaVersion,
});

/** A token from the dev server (`juegoland dev`); a platform issues its own. */
export const devToken = async (baseUrl: string, principal: string) =>
  (await call<{ token: string }>(baseUrl, "POST", "/v1/dev/tokens", { principal })).token;

export type SeatSpec = string | { bot: string };

/** Creates a match (the platform API, open in the dev profile). */
export const createMatch = (baseUrl: string, game: string, seats: Record<string, SeatSpec>, config: unknown = {}) =>
  call<{ matchId: string; revision: number }>(baseUrl, "POST", "/v1/matches", { game, seats, config });

/** A match's seats and status (the platform API, open in the dev profile). */
export const describeMatch = (baseUrl: string, matchId: string) => call<MatchSummary>(baseUrl, "GET", `/v1/matches/${encodeURIComponent(matchId)}`);

/** The newest active matches (the platform API, open in the dev profile). */
export const activeMatches = async (baseUrl: string, limit = 20) =>
  (await call<{ matches: MatchListing[]; next: string | null }>(baseUrl, "GET", `/v1/matches?status=active&limit=${limit}`)).matches;

/**
 * A spectator grant for one match: a token that syncs that match as a spectator (`seat:
 * null`) and sends nothing (the platform API; a dev lobby may call it).
 */
export const grantSpectator = async (baseUrl: string, matchId: string) =>
  (await call<{ token: string; matchId: string; seat: null }>(baseUrl, "POST", `/v1/matches/${encodeURIComponent(matchId)}/spectators`, {})).token;
