/**
 * A game's presentation module: everything the app needs to show one game, so that a new
 * game (Brisca's tricks, the dice games, Laberinto) plugs in as one more module.
 *
 * - `buildTransitionPlan` is pure: from a transition (the displayed and the destination
 *   projections and the destination's visible events) it builds a presentation plan that
 *   validates against the `presentation-plan` schema, using only effects the module (or the
 *   shared `sound.play`) registers;
 * - `mount` draws the board into a host element and returns a renderer: `update` installs a
 *   projection (the coordinator's settle), `effects` are the effects it registers;
 * - `describe` and `status` are the text a screen reader (and everyone) reads: what changed,
 *   whose turn it is, the result — never colour or sound alone.
 */
import type { GameCommand, MatchResult, WireEvent, WireOffer } from "../protocol/generated";
import type { QueueReceipt } from "../lib/client";
import type { Effect, Transition } from "../present/coordinator";
import type { PresentationPlan } from "../present/plan";
import type { ResourceDecl } from "../present/resources";

/** One confirmed or displayed projection, as the coordinator handles it. */
export interface Projection {
  revision: number;
  view: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- each module reads its own view
  context: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  actions: WireOffer[];
  result: MatchResult | null;
  seat: string | null;
  events: WireEvent[];
}

/** What a board may ask of the app. */
export interface BoardApi {
  /**
   * Sends a board command from an offer; false when input is locked or nothing offers it.
   * A `queue` offer's command (real-time input) carries the caller's payload.
   */
  command(type: string, payload?: Record<string, unknown>): boolean;
  /** The offer of `type` (admitting `payload`, when given) in the confirmed snapshot, if the board may act now. */
  offer(type: string, payload?: Record<string, unknown>): WireOffer | undefined;
  /**
   * Real-time input not yet seen in a view: `queue` commands waiting for their receipts, plus
   * one when an applied receipt's view has not arrived yet.
   */
  inFlight(): number;
  /** The newest confirmed projection (what the server has said, ahead of the board while it animates). */
  confirmed(): Projection | null;
  /** The match's config as this page knows it: the creation's over the catalog's defaults. */
  config(): Record<string, unknown>;
  /** The server's time now (ms since the epoch), as estimated by the page (`ServerClock`). */
  serverNow(): number;
  /** Whether board input is locked (pending command, stale view, offline, animation, over). */
  locked(): boolean;
  /** A player's display name for a seat. */
  name(seat: string): string;
  /** Says something to the player (the message line, read by screen readers). */
  say(text: string): void;
  t(key: string, vars?: Record<string, string | number>): string;
}

export interface Renderer {
  update(p: Projection): void;
  /** Input may have become locked or unlocked without a new projection. */
  refresh(): void;
  effects: Record<string, Effect<Projection>>;
  /** A `queue` command's receipt (real-time games: a refused move's cue). */
  queued?(receipt: QueueReceipt, command: GameCommand): void;
  dispose(): void;
}

export interface Preset {
  id: string;
  /** A message key of the module. */
  label: string;
  config: unknown;
}

/** The public part of a game's package manifest (`game.json`) the client builds with. */
export interface Manifest {
  id: string;
  version: string;
  presentation: { resources: ResourceDecl[]; catalog: { cover: string; thumbnail: string; icon: string } };
  translations: Record<string, Record<string, string>>;
}

export interface GameModule {
  id: string;
  manifest: Manifest;
  /** Keys of the module's own texts, per language (namespaced `<id>.`). */
  messages: Record<"es" | "en", Record<string, string>>;
  presets: Preset[];
  /** The player counts the lobby offers (default: the catalog's seats when they are one number). */
  seats?: number[];
  /** What the config must say for `seats` players (merged over the chosen preset's). */
  seatConfig?(seats: number): Record<string, unknown>;
  /**
   * A real-time game: its input goes as `queue` commands, which a pending command, a stale
   * view or an animation never lock (the connection, the end of the match and the in-flight
   * bound still do).
   */
  realtime?: boolean;
  /**
   * Server instants a snapshot's revision captured, already past when it arrives (`live`: a
   * live snapshot's own revision): the page's `ServerClock` learns from them.
   */
  instants?(p: Projection, live: boolean): number[];
  buildTransitionPlan(t: Transition<Projection>): PresentationPlan;
  mount(host: HTMLElement, api: BoardApi): Renderer;
  /** Sentences describing what changed from `t.from` to `t.to` (its events). */
  describe(t: Transition<Projection>, api: Pick<BoardApi, "name" | "t">): string[];
  /** Whose turn / what to do now, for the status line; null for the app's default. */
  status(p: Projection, api: Pick<BoardApi, "name" | "t">): string | null;
  /** A game-specific result sentence; null for the app's default. */
  resultText?(p: Projection, api: Pick<BoardApi, "name" | "t">): string | null;
}

export const PLAN_FORMAT = { format: "juegoland.presentation-plan" as const, formatVersion: 1 as const };
