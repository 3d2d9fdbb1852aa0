/**
 * The HTTP calls a client needs besides the protocol: the catalog, dev tokens, creating a
 * match, the platform's reads a dev lobby may make (a match's seats, the active matches,
 * a spectator grant), and the platform's webhook endpoints (`webhooks`).
 */
import type {
  ContractTuple,
  Controller,
  CreateMatch,
  CreatedBody,
  MatchListing,
  MatchPage,
  MatchSummary,
  PingResult,
  Problem,
  RegisterWebhook,
  RegisteredWebhook,
  RotateSecret,
  RotatedSecret,
  SeatSpec,
  SpectatorGrant,
  ChangeWebhook,
  WebhookList,
  WebhookView,
} from "../protocol/generated";

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

/**
 * The platform API's bodies are generated from its schemas (`libs/api/schemas`, as the
 * protocol's are from `libs/protocol/schemas`): `MatchSummary` (seats with every kind of
 * controller, who made their moves, the result), `MatchListing`, `FeedEvent`, `WebhookBody`,
 * `AgentGrant`, `SpectatorGrant`, `CreateMatch` with its `SeatSpec`, `Problem`.
 */
export type {
  AgentGrant,
  Controller,
  CreateMatch,
  CreatedBody,
  Expiry,
  FeedEvent,
  FeedPage,
  Handover,
  MatchListing,
  MatchPage,
  MatchSummary,
  Problem,
  SeatMoves,
  SeatSpec,
  SeatSummary,
  SpectatorGrant,
  WebhookBody,
  RegisterWebhook,
  ChangeWebhook,
  RotateSecret,
  ReplayWebhook,
  WebhookView,
  WebhookList,
  RegisteredWebhook,
  RotatedSecret,
  PingResult,
} from "../protocol/generated";

/** Who plays a seat, as the platform API tells it (the generated `Controller`). */
export type SeatHolder = Controller;

/** A refusal of the HTTP API: its status, its code, and the part of the request it is about. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The offending part of the request (`seats.p1`, `config.rows`, a query parameter), when there is one. */
    readonly field?: string,
  ) {
    super(message);
  }
}

/** How a platform call authenticates: the platform token, where the server requires one. */
export interface PlatformOptions {
  platformToken?: string;
}

async function call<T>(baseUrl: string, method: string, path: string, body?: unknown, options: PlatformOptions = {}): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (options.platformToken) headers.authorization = `Bearer ${options.platformToken}`;
  const res = await fetch(new URL(path, baseUrl), {
    method,
    headers,
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
    const d = (data ?? {}) as Partial<Problem>;
    throw new HttpError(res.status, d.code ?? "HTTP_" + res.status, d.message ?? `${method} ${path}: ${res.status}`, d.field ?? undefined);
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

/**
 * Creates a match (the platform API; open in the dev profile, else with the platform token).
 * `more` carries the creation's other fields (`rulesVersion`, `packageVersion`, `handover`,
 * `expiry`).
 */
export const createMatch = (
  baseUrl: string,
  game: string,
  seats: Record<string, SeatSpec>,
  config: unknown = {},
  options: PlatformOptions & { more?: Omit<CreateMatch, "game" | "seats" | "config"> } = {},
) => call<CreatedBody>(baseUrl, "POST", "/v1/matches", { ...options.more, game, seats, config }, options);

/** A match's seats, status and result (the platform API). */
export const describeMatch = (baseUrl: string, matchId: string, options: PlatformOptions = {}) =>
  call<MatchSummary>(baseUrl, "GET", `/v1/matches/${encodeURIComponent(matchId)}`, undefined, options);

/** The newest active matches (the platform API). */
export const activeMatches = async (baseUrl: string, limit = 20, options: PlatformOptions = {}): Promise<MatchListing[]> =>
  (await call<MatchPage>(baseUrl, "GET", `/v1/matches?status=active&limit=${limit}`, undefined, options)).matches;

/**
 * A spectator grant for one match: a token that syncs that match as a spectator (`seat:
 * null`) and sends nothing (the platform API; a dev lobby may call it).
 */
export const grantSpectator = async (baseUrl: string, matchId: string, options: PlatformOptions = {}) =>
  (await call<SpectatorGrant>(baseUrl, "POST", `/v1/matches/${encodeURIComponent(matchId)}/spectators`, {}, options)).token;

const webhookPath = (id: string) => `/v1/webhooks/${encodeURIComponent(id)}`;

/**
 * The platform's webhook endpoints (`/v1/webhooks`, with the platform token): register one
 * (its secret is shown in the answer only), list, read, change its URL or kinds, remove,
 * rotate its secret (the old one keeps signing for `overlapMs`), replay the feed after a
 * cursor, and ping it (one signed request with no events, its outcome answered).
 */
export const webhooks = {
  register: (baseUrl: string, request: RegisterWebhook, options: PlatformOptions = {}) =>
    call<RegisteredWebhook>(baseUrl, "POST", "/v1/webhooks", request, options),
  list: async (baseUrl: string, options: PlatformOptions = {}) =>
    (await call<WebhookList>(baseUrl, "GET", "/v1/webhooks", undefined, options)).webhooks,
  describe: (baseUrl: string, id: string, options: PlatformOptions = {}) =>
    call<WebhookView>(baseUrl, "GET", webhookPath(id), undefined, options),
  change: (baseUrl: string, id: string, change: ChangeWebhook, options: PlatformOptions = {}) =>
    call<WebhookView>(baseUrl, "PATCH", webhookPath(id), change, options),
  remove: (baseUrl: string, id: string, options: PlatformOptions = {}) =>
    call<null>(baseUrl, "DELETE", webhookPath(id), undefined, options),
  rotate: (baseUrl: string, id: string, request: RotateSecret = {}, options: PlatformOptions = {}) =>
    call<RotatedSecret>(baseUrl, "POST", `${webhookPath(id)}/rotation`, request, options),
  replay: (baseUrl: string, id: string, after: string, options: PlatformOptions = {}) =>
    call<WebhookView>(baseUrl, "POST", `${webhookPath(id)}/replay`, { after }, options),
  ping: (baseUrl: string, id: string, options: PlatformOptions = {}) =>
    call<PingResult>(baseUrl, "POST", `${webhookPath(id)}/ping`, undefined, options),
};
