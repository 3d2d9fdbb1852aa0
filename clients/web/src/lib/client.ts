/**
 * `MatchClient`: one account's connection to one match, over WebSocket or Socket.IO.
 *
 * It owns the client half of the protocol (spec/protocol.md):
 * - the sync barrier: only the answer to the latest `game.sync` and the messages of the
 *   subscription it opened are accepted; duplicates are dropped; a gap, a cursor ahead of the
 *   confirmed revision or an applied receipt whose view does not follow triggers a resync,
 *   bounded (one in flight, at most one per `minSyncIntervalMs`);
 * - the pending command: one board command at a time, kept in a `PendingStore` per account and
 *   match so that a reload resends the same envelope (same command id), never a new move;
 *   when its receipt is uncertain (a reconnection, a silence) it asks `game.command-status`
 *   and resends the exact envelope on `game.command-unknown`;
 * - reconnection with capped exponential backoff (reset only once a sync is answered, so a
 *   server that accepts connections and then refuses them is not hammered), a fresh token
 *   after a refused handshake (`CloseInfo.kind` `unauthenticated` or `refused`) or a
 *   `reauthenticate` error, the server's `Retry-After` when it is full (`unavailable`), and
 *   a stop when there is no WebSocket implementation at all (`unsupported`).
 *
 * - real-time input (`queue` commands, spec/engine.md § Real-time commands): several may be in
 *   flight at once, bounded by `maxInFlight`; each is kept by its command id until its receipt,
 *   resent unchanged on `RATE_LIMITED` or `UNAVAILABLE` (retry-same-command), asked for with
 *   `game.command-status` after a silence or a reconnection. They are NOT kept across reloads,
 *   and one whose receipt is still unknown after a reconnection is given up once it is older
 *   than `queueStaleMs` (resending a stale real-time move would move the player long after
 *   the key was pressed; if a late copy still arrives, the next snapshot shows its effect).
 *
 * It never changes a view by itself: a receipt only settles the pending command, views come
 * only in snapshots.
 */
import type {
  AckStatus,
  ClientMessage,
  ContractTuple,
  ControllerKind,
  GameAck,
  GameCommand,
  GameError,
  GameSnapshot,
  MatchResult,
  RejectionCode,
  ServerMessage,
  WireOffer,
} from "../protocol/generated";
import { type Clock, realClock } from "./clock";
import { type PendingStore, memoryPendingStore, pendingKey } from "./pending";
import {
  type CloseInfo,
  type TransportFactory,
  type Transport,
  type WebSocketConstructor,
  DEFAULT_CONNECT_TIMEOUT_MS,
  socketIoTransport,
  webSocketTransport,
} from "./transport";

/** Who answers a seat's "your move?" (spec/engine.md § Seats; the protocol's `ControllerKind`). */
export type SeatController = ControllerKind;

/** The confirmed state of the match for this recipient: the newest accepted snapshot. */
export interface Confirmed {
  revision: number;
  view: unknown;
  context: unknown;
  actions: WireOffer[];
  result: MatchResult | null;
  seat: string | null;
  /** The seats' controllers this snapshot carried; `null`: every seat is played by its human. */
  controllers: Record<string, SeatController> | null;
}

/** The receipt of a `queue` command, as the listener gets it. */
export interface QueueReceipt {
  status: AckStatus;
  code: RejectionCode | null;
  revision: number | null;
  sequence: number | null;
  duplicate: boolean;
}

/** What happened to the `queue` commands this client sent (tests and the debug state read it). */
export interface QueueStats {
  sent: number;
  applied: number;
  rejected: number;
  /** Given up without a receipt (stale after a reconnection, or too many refusals). */
  dropped: number;
  /** The most commands in flight at once. */
  maxInFlight: number;
  /** The highest command sequence an applied or rejected receipt carried. */
  lastSequence: number | null;
}

export type ConnectionState = "connecting" | "open" | "closed";

export interface ClientListener {
  /**
   * A snapshot was accepted. `live` is true for the contiguous next revision (with its
   * visible events); false for a sync answer (initial, reconnect, recovery: show it without
   * replaying history or sounds).
   */
  snapshot?(confirmed: Confirmed, events: GameSnapshot["events"], live: boolean): void;
  /** The connection, the pending command or the sync state changed. */
  status?(): void;
  /** The pending command was rejected with `code` (a final receipt). */
  rejected?(code: RejectionCode, command: GameCommand): void;
  /** The pending command was applied at `revision`. */
  applied?(revision: number, command: GameCommand): void;
  /** A `queue` command got its receipt (applied or rejected; never a board change by itself). */
  queued?(receipt: QueueReceipt, command: GameCommand): void;
  /** A `game.error` arrived (after the client applied its recovery). */
  error?(error: GameError): void;
  /** The client gave up (a `reload-client` error, an incompatible client, no WebSocket: `NO_WEBSOCKET`). */
  stopped?(reason: string): void;
  /** A connection ended or a handshake failed: why (`info.kind`); a reconnection follows unless stopped. */
  disconnected?(info: CloseInfo): void;
}

export interface MatchClientOptions {
  /** The server's origin, e.g. `https://juegos.example` (the page's `location.origin`). */
  baseUrl: string;
  matchId: string;
  /** The account: names where the pending command is kept. */
  principal: string;
  /** The contract tuples this client can read (from `GET /v1/games`). */
  accept: ContractTuple[];
  /** A token for the account; called again when the server refuses the current one. */
  getToken: () => Promise<string>;
  transport?: "websocket" | "socketio" | TransportFactory;
  /**
   * The WebSocket implementation both transports use; by default the global `WebSocket`
   * (browsers, Node 22), else the `ws` package (Node 20), loaded only then.
   */
  webSocket?: WebSocketConstructor;
  /** A handshake not complete after this long is given up and retried. */
  connectTimeoutMs?: number;
  pending?: PendingStore;
  clock?: Clock;
  newId?: () => string;
  listener?: ClientListener;
  /** Without a receipt after this long, ask for the command's status. */
  statusAfterMs?: number;
  /** An applied receipt's view must follow within this long, else resync. */
  viewAfterAckMs?: number;
  /** A sync unanswered after this long is sent again. */
  syncTimeoutMs?: number;
  minSyncIntervalMs?: number;
  /** Resends of one command after `game.command-unknown` before the client resyncs. */
  maxResends?: number;
  /** The most `queue` commands in flight at once (the match's FIFO holds 16 for all seats). */
  maxInFlight?: number;
  /** A `queue` command unknown after a reconnection and older than this is given up. */
  queueStaleMs?: number;
}

/** A `queue` command waiting for its receipt. */
interface InFlight {
  command: GameCommand;
  sentAt: number;
  /** When its status was last asked (or it was last sent). */
  checkedAt: number;
  resends: number;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 10_000;

export class MatchClient {
  readonly matchId: string;
  readonly principal: string;
  connection: ConnectionState = "closed";
  confirmed: Confirmed | null = null;
  /** The subscription whose messages are accepted; null while a sync is outstanding. */
  subscriptionId: string | null = null;
  pending: GameCommand | null = null;
  /** The `queue` commands in flight, by command id, oldest first. */
  readonly inFlight = new Map<string, InFlight>();
  readonly queueStats: QueueStats = { sent: 0, applied: 0, rejected: 0, dropped: 0, maxInFlight: 0, lastSequence: null };
  /** Why the last connection ended or failed (null before any did). */
  lastClose: CloseInfo | null = null;

  private readonly opts: Required<Omit<MatchClientOptions, "listener" | "transport" | "webSocket">> & {
    transport: TransportFactory;
    webSocket?: WebSocketConstructor;
  };
  private listener: ClientListener;
  private transport: Transport | null = null;
  private token: string | null = null;
  private latestRequestId: string | null = null;
  private lastSyncAt = -Infinity;
  private syncTimer: unknown = null;
  private statusTimer: unknown = null;
  private resendTimer: unknown = null;
  private viewTimer: unknown = null;
  private reconnectTimer: unknown = null;
  private queueTimer: unknown = null;
  /** The revision an applied receipt promised a view of (`viewTimer` waits for it). */
  private viewWanted: number | null = null;
  private backoff = 0;
  private resends = 0;
  private stoppedReason: string | null = null;
  private started = false;

  constructor(options: MatchClientOptions) {
    const transport =
      options.transport === "socketio"
        ? socketIoTransport
        : options.transport === undefined || options.transport === "websocket"
          ? webSocketTransport
          : options.transport;
    this.opts = {
      pending: memoryPendingStore(),
      clock: realClock,
      newId: () => crypto.randomUUID(),
      statusAfterMs: 5000,
      viewAfterAckMs: 2000,
      syncTimeoutMs: 5000,
      minSyncIntervalMs: 1000,
      maxResends: 5,
      maxInFlight: 4,
      queueStaleMs: 1000,
      connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS,
      ...options,
      transport,
    };
    this.matchId = options.matchId;
    this.principal = options.principal;
    this.listener = options.listener ?? {};
    // A command left pending by a previous page of this account stays pending: its receipt
    // is asked for as soon as the connection opens.
    this.pending = this.opts.pending.load(this.key);
    if (this.pending && this.pending.matchId !== this.matchId) this.pending = null;
  }

  setListener(listener: ClientListener): void {
    this.listener = listener;
  }

  private get key(): string {
    return pendingKey(this.principal, this.matchId);
  }

  /** Whether a board command may be sent now (connected, synced, nothing pending, not over). */
  get canCommand(): boolean {
    return (
      this.connection === "open" &&
      this.subscriptionId !== null &&
      this.pending === null &&
      this.confirmed !== null &&
      this.confirmed.result === null
    );
  }

  /** Whether a `queue` command may be sent now (connected, a view, not over, room in flight). */
  get canEnqueue(): boolean {
    return this.connection === "open" && this.confirmed !== null && this.confirmed.result === null && this.inFlight.size < this.opts.maxInFlight;
  }

  get stopped(): string | null {
    return this.stoppedReason;
  }

  /** Opens the connection (and reopens it whenever it drops, until `close`). */
  start(): void {
    if (this.started) return;
    this.started = true;
    void this.connect();
  }

  /** Ends the connection for good. */
  close(): void {
    this.started = false;
    this.clearTimers();
    const t = this.transport;
    this.transport = null;
    t?.close();
    this.setConnection("closed");
  }

  private clearTimers(): void {
    const c = this.opts.clock;
    for (const t of [this.syncTimer, this.statusTimer, this.resendTimer, this.viewTimer, this.reconnectTimer, this.queueTimer]) {
      if (t !== null) c.clearTimeout(t);
    }
    this.syncTimer = this.statusTimer = this.resendTimer = this.viewTimer = this.reconnectTimer = this.queueTimer = null;
  }

  private setConnection(state: ConnectionState): void {
    this.connection = state;
    this.listener.status?.();
  }

  private async connect(): Promise<void> {
    if (!this.started || this.stoppedReason) return;
    this.setConnection("connecting");
    try {
      this.token ??= await this.opts.getToken();
    } catch {
      this.scheduleReconnect();
      return;
    }
    if (!this.started || this.transport) return;
    const options = { webSocket: this.opts.webSocket, connectTimeoutMs: this.opts.connectTimeoutMs };
    const transport = this.opts.transport(this.opts.baseUrl, this.token, {
      open: () => {
        if (this.transport !== transport) return;
        this.setConnection("open");
        this.sync(true);
        if (this.pending) {
          // A new connection: the command may or may not have reached the server.
          this.resends = 0;
          this.askStatus();
        }
        // The same for every real-time command in flight.
        for (const q of this.inFlight.values()) this.askQueueStatus(q);
        this.armQueueTimer();
      },
      message: (m) => {
        if (this.transport === transport) this.receive(m);
      },
      close: (info) => {
        if (this.transport !== transport) return;
        this.transport = null;
        this.subscriptionId = null;
        this.latestRequestId = null;
        // A transport of the caller's written before `kind` existed: a handshake that never
        // opened is taken as refused.
        const kind = info.kind ?? (info.opened ? "closed" : "refused");
        this.lastClose = { ...info, kind };
        if (kind === "unsupported") {
          this.stop("NO_WEBSOCKET");
          this.listener.disconnected?.(this.lastClose);
          return;
        }
        // The token was refused (a server restarted with another secret, an expired token),
        // or may have been (a browser does not show why a handshake failed): the next attempt
        // asks for a new one.
        if (kind === "unauthenticated" || kind === "refused") this.token = null;
        this.setConnection("closed");
        this.listener.disconnected?.(this.lastClose);
        this.scheduleReconnect(kind === "unavailable" ? info.retryAfterMs : undefined);
      },
    }, options);
    this.transport = transport;
  }

  /** Gives up for good: `reason` is reported to `stopped`. */
  private stop(reason: string): void {
    this.stoppedReason = reason;
    this.close();
    this.listener.stopped?.(reason);
  }

  /** Reconnects after the backoff's delay, or after `atLeastMs` (a server's `Retry-After`) if longer. */
  private scheduleReconnect(atLeastMs = 0): void {
    if (!this.started || this.stoppedReason) return;
    const c = this.opts.clock;
    const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.backoff) * (1 + Math.random() * 0.2);
    const delay = Math.max(backoff, atLeastMs);
    this.backoff = Math.min(this.backoff + 1, 6);
    if (this.reconnectTimer !== null) c.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = c.setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, delay);
  }

  /** Drops the connection and opens a new one at once (e.g. the browser went back online). */
  reconnectNow(freshToken = false): void {
    if (freshToken) this.token = null;
    const t = this.transport;
    this.transport = null;
    t?.close();
    this.backoff = 0;
    if (this.reconnectTimer !== null) this.opts.clock.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    void this.connect();
  }

  /**
   * The server refused the token of an open connection (`reauthenticate`): drop it, and
   * reconnect with a new token after the backoff (not at once: a `getToken` that keeps
   * answering a refused token must not make a busy loop).
   */
  private reauthenticate(): void {
    this.token = null;
    const t = this.transport;
    this.transport = null;
    t?.close();
    this.subscriptionId = null;
    this.latestRequestId = null;
    this.lastClose = { opened: true, kind: "unauthenticated", code: "UNAUTHENTICATED", reason: "token refused (reauthenticate)" };
    this.setConnection("closed");
    this.listener.disconnected?.(this.lastClose);
    this.scheduleReconnect();
  }

  private send(message: ClientMessage): boolean {
    return this.transport?.send(message) ?? false;
  }

  /**
   * Opens a new subscription with a `game.sync`. Bounded: one in flight (a later answer
   * replaces it), at most one per `minSyncIntervalMs` unless forced (a new connection).
   */
  sync(force = false): void {
    const c = this.opts.clock;
    if (this.connection !== "open") return;
    const now = c.now();
    if (!force && this.latestRequestId !== null && now - this.lastSyncAt < this.opts.syncTimeoutMs) return;
    if (!force && now - this.lastSyncAt < this.opts.minSyncIntervalMs) {
      // Too soon: do it once the interval has passed.
      if (this.syncTimer === null) {
        this.syncTimer = c.setTimeout(() => {
          this.syncTimer = null;
          this.sync();
        }, this.opts.minSyncIntervalMs - (now - this.lastSyncAt));
      }
      return;
    }
    const previous = this.subscriptionId;
    this.latestRequestId = this.opts.newId();
    this.lastSyncAt = now;
    this.subscriptionId = null;
    if (this.syncTimer !== null) c.clearTimeout(this.syncTimer);
    this.syncTimer = c.setTimeout(() => {
      this.syncTimer = null;
      // Unanswered: try again (a newer request id makes any late answer stale).
      this.sync(true);
    }, this.opts.syncTimeoutMs);
    if (previous) {
      this.send({ protocolVersion: 1, type: "game.unsubscribe", matchId: this.matchId, subscriptionId: previous });
    }
    this.send({
      protocolVersion: 1,
      type: "game.sync",
      requestId: this.latestRequestId,
      matchId: this.matchId,
      accept: this.opts.accept as [ContractTuple, ...ContractTuple[]],
    });
    this.listener.status?.();
  }

  /** What `game.sync` recovery means to a caller: the page came back to the foreground, etc. */
  recover(): void {
    this.sync();
  }

  /** The offer of `type` in the confirmed snapshot that admits `payload`, if any. */
  offer(type: string, payload?: Record<string, unknown>): WireOffer | undefined {
    return this.confirmed?.actions.find(
      (a) => a.type === type && (!("payload" in a) || payload === undefined || canonical(a.payload) === canonical(payload)),
    );
  }

  /**
   * Sends a board command built from the confirmed snapshot's offer of `type`; returns the
   * envelope, or null when no command may be sent now (see `canCommand`) or nothing offers it.
   */
  command(type: string, payload?: Record<string, unknown>): GameCommand | null {
    const queued = this.confirmed?.actions.find((a) => a.type === type && a.precondition.kind === "queue");
    if (queued) return this.enqueue(type, payload ?? ("payload" in queued ? queued.payload : {}));
    if (!this.canCommand) return null;
    const offer = this.offer(type, payload);
    if (!offer) return null;
    const envelope: GameCommand = {
      protocolVersion: 1,
      type: "game.command",
      matchId: this.matchId,
      commandId: this.opts.newId(),
      precondition: offer.precondition,
      action: { type, payload: payload ?? ("payload" in offer ? offer.payload : {}) },
    };
    this.pending = envelope;
    this.resends = 0;
    this.opts.pending.save(this.key, envelope);
    this.sendPending();
    this.listener.status?.();
    return envelope;
  }

  /**
   * Sends a `queue` command (real-time input): it does not wait for other commands, and the
   * payload is the caller's, since the offers a real-time view carries describe a state the
   * commands already in flight will change; the match judges each against the state it meets.
   */
  private enqueue(type: string, payload: Record<string, unknown>): GameCommand | null {
    if (!this.canEnqueue) return null;
    const now = this.opts.clock.now();
    const command: GameCommand = {
      protocolVersion: 1,
      type: "game.command",
      matchId: this.matchId,
      commandId: this.opts.newId(),
      precondition: { kind: "queue" },
      action: { type, payload },
    };
    this.inFlight.set(command.commandId, { command, sentAt: now, checkedAt: now, resends: 0 });
    this.queueStats.sent += 1;
    this.queueStats.maxInFlight = Math.max(this.queueStats.maxInFlight, this.inFlight.size);
    this.send(command);
    this.armQueueTimer();
    this.listener.status?.();
    return command;
  }

  /** Asks for the receipts of `queue` commands silent for `statusAfterMs`, until none is left. */
  private armQueueTimer(): void {
    const c = this.opts.clock;
    if (this.queueTimer !== null || this.inFlight.size === 0) return;
    this.queueTimer = c.setTimeout(() => {
      this.queueTimer = null;
      const now = c.now();
      if (this.connection === "open") {
        for (const q of this.inFlight.values()) if (now - q.checkedAt >= this.opts.statusAfterMs) this.askQueueStatus(q);
      }
      this.armQueueTimer();
    }, Math.max(100, this.opts.statusAfterMs / 2));
  }

  private askQueueStatus(q: InFlight): void {
    q.checkedAt = this.opts.clock.now();
    this.send({ protocolVersion: 1, type: "game.command-status", matchId: this.matchId, commandId: q.command.commandId });
  }

  /** Gives a `queue` command up: no receipt will be waited for. */
  private dropQueued(id: string): void {
    if (!this.inFlight.delete(id)) return;
    this.queueStats.dropped += 1;
    this.listener.status?.();
  }

  /** Resends a refused `queue` command unchanged after a short backoff, a bounded number of times. */
  private resendQueued(q: InFlight): void {
    if (q.resends >= this.opts.maxResends) {
      this.dropQueued(q.command.commandId);
      return;
    }
    q.resends += 1;
    this.opts.clock.setTimeout(() => {
      if (this.inFlight.get(q.command.commandId) !== q) return;
      q.checkedAt = this.opts.clock.now();
      this.send(q.command);
    }, 50 * 2 ** q.resends);
  }

  private sendPending(): void {
    const p = this.pending;
    if (!p) return;
    const c = this.opts.clock;
    if (this.statusTimer !== null) c.clearTimeout(this.statusTimer);
    this.statusTimer = null;
    // Disconnected: the next connection asks for its status first.
    if (!this.send(p)) return;
    this.statusTimer = c.setTimeout(() => {
      this.statusTimer = null;
      if (this.pending === p) this.askStatus();
    }, this.opts.statusAfterMs);
  }

  private askStatus(): void {
    const p = this.pending;
    if (!p) return;
    this.send({ protocolVersion: 1, type: "game.command-status", matchId: this.matchId, commandId: p.commandId });
    const c = this.opts.clock;
    if (this.statusTimer !== null) c.clearTimeout(this.statusTimer);
    this.statusTimer = c.setTimeout(() => {
      this.statusTimer = null;
      if (this.pending === p) this.askStatus();
    }, this.opts.statusAfterMs);
  }

  /** Resends the exact pending envelope after a short backoff, a bounded number of times. */
  private resend(): void {
    const p = this.pending;
    if (!p) return;
    if (this.resends >= this.opts.maxResends) {
      // The command never arrived: give it up (its precondition protects the match should
      // it still arrive) and show what the server has.
      this.settlePending();
      this.sync();
      return;
    }
    this.resends += 1;
    const c = this.opts.clock;
    if (this.resendTimer !== null) c.clearTimeout(this.resendTimer);
    this.resendTimer = c.setTimeout(() => {
      this.resendTimer = null;
      if (this.pending === p) this.sendPending();
    }, 300 * this.resends);
  }

  private settlePending(): void {
    const c = this.opts.clock;
    for (const t of [this.statusTimer, this.resendTimer]) if (t !== null) c.clearTimeout(t);
    this.statusTimer = this.resendTimer = null;
    this.pending = null;
    this.opts.pending.clear(this.key);
    this.listener.status?.();
  }

  /** Handles one server message (the transports call it; tests may too). */
  receive(m: ServerMessage): void {
    if (m.matchId != null && m.matchId !== this.matchId) return;
    switch (m.type) {
      case "game.snapshot":
        return this.onSnapshot(m);
      case "game.ack":
        return this.onAck(m);
      case "game.command-unknown": {
        if (this.pending && m.commandId === this.pending.commandId) this.resend();
        const q = this.inFlight.get(m.commandId);
        if (q) {
          // Never received (yet): resend a fresh move, give up a stale one.
          if (this.opts.clock.now() - q.sentAt > this.opts.queueStaleMs) this.dropQueued(m.commandId);
          else this.resendQueued(q);
        }
        return;
      }
      case "game.cursor":
        if (m.subscriptionId === this.subscriptionId && this.confirmed && m.revision > this.confirmed.revision) this.sync();
        return;
      case "game.error":
        return this.onError(m);
    }
  }

  private onSnapshot(m: GameSnapshot): void {
    const c = this.opts.clock;
    const confirmed: Confirmed = {
      revision: m.revision,
      view: m.view,
      context: m.context,
      actions: m.actions,
      result: m.result,
      seat: m.seat,
      controllers: m.controllers ?? null,
    };
    if (m.fromRevision == null) {
      // The answer to a sync: only the latest request's.
      if (m.requestId == null || m.requestId !== this.latestRequestId) return;
      this.latestRequestId = null;
      this.subscriptionId = m.subscriptionId;
      // The connection works (token accepted, match readable): the next drop starts the
      // backoff afresh.
      this.backoff = 0;
      if (this.syncTimer !== null) c.clearTimeout(this.syncTimer);
      this.syncTimer = null;
      if (this.confirmed && m.revision < this.confirmed.revision) {
        this.listener.status?.();
        return;
      }
      this.confirmed = confirmed;
      this.listener.snapshot?.(confirmed, [], false);
      this.listener.status?.();
      return;
    }
    if (m.subscriptionId !== this.subscriptionId || !this.confirmed) return;
    if (m.revision <= this.confirmed.revision) return; // a duplicate
    if (m.fromRevision !== this.confirmed.revision) {
      this.sync(); // a gap: never show an incomplete sequence
      return;
    }
    this.confirmed = confirmed;
    if (this.viewTimer !== null && this.viewWanted !== null && m.revision >= this.viewWanted) {
      c.clearTimeout(this.viewTimer);
      this.viewTimer = null;
      this.viewWanted = null;
    }
    this.listener.snapshot?.(confirmed, m.events, true);
    this.listener.status?.();
  }

  private onAck(m: GameAck): void {
    const q = this.inFlight.get(m.commandId);
    if (q) {
      this.inFlight.delete(m.commandId);
      const st = this.queueStats;
      if (m.status === "applied") st.applied += 1;
      else st.rejected += 1;
      if (m.sequence != null) st.lastSequence = Math.max(st.lastSequence ?? m.sequence, m.sequence);
      const receipt: QueueReceipt = { status: m.status, code: m.code ?? null, revision: m.revision ?? null, sequence: m.sequence ?? null, duplicate: m.duplicate };
      this.listener.queued?.(receipt, q.command);
      if (m.status === "applied" && m.revision != null) this.expectView(m.revision);
      this.listener.status?.();
      return;
    }
    const p = this.pending;
    if (!p || m.commandId !== p.commandId) return;
    this.settlePending();
    if (m.status === "rejected") {
      this.listener.rejected?.(m.code ?? "ILLEGAL_ACTION", p);
      // The offers the command was built from are stale: fetch the current ones.
      this.sync();
      return;
    }
    const revision = m.revision ?? 0;
    this.listener.applied?.(revision, p);
    this.expectView(revision);
  }

  /** An applied receipt's view must follow within `viewAfterAckMs`, else resync. */
  private expectView(revision: number): void {
    if (this.confirmed && this.confirmed.revision >= revision) return;
    // One timer, for the highest revision promised.
    if (this.viewWanted !== null && this.viewWanted >= revision && this.viewTimer !== null) return;
    const c = this.opts.clock;
    if (this.viewTimer !== null) c.clearTimeout(this.viewTimer);
    this.viewWanted = revision;
    this.viewTimer = c.setTimeout(() => {
      this.viewTimer = null;
      this.viewWanted = null;
      if (!this.confirmed || this.confirmed.revision < revision) this.sync();
    }, this.opts.viewAfterAckMs);
  }

  private onError(m: GameError): void {
    const q = m.commandId != null ? this.inFlight.get(m.commandId) : undefined;
    if (q) {
      // A real-time command refused before it was judged: the same envelope again (the match's
      // FIFO was full, the match was moving), or given up.
      if (m.recovery === "retry-same-command") this.resendQueued(q);
      else {
        this.dropQueued(q.command.commandId);
        if (m.recovery === "sync") this.sync(true);
        if (m.recovery === "reauthenticate") this.reauthenticate();
      }
      this.listener.error?.(m);
      return;
    }
    const mine = this.pending !== null && (m.commandId == null || m.commandId === this.pending.commandId);
    switch (m.recovery) {
      case "retry-same-command":
        if (mine) this.resend();
        else this.sync();
        break;
      case "sync":
        if (mine && m.code !== "COMMAND_PENDING") this.settlePending();
        this.sync(true);
        break;
      case "reauthenticate":
        this.reauthenticate();
        break;
      case "reload-client":
        this.stop(m.code);
        break;
      default:
        if (mine && m.code !== "COMMAND_PENDING") {
          this.settlePending();
          this.sync();
        }
        if (m.code === "INCOMPATIBLE_CLIENT" || m.code === "MATCH_NOT_FOUND" || m.code === "FORBIDDEN") this.stop(m.code);
    }
    this.listener.error?.(m);
  }
}

/** JSON with sorted keys: compares payloads whatever their key order. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, (v as Record<string, unknown>)[k]]))
      : v,
  );
}
