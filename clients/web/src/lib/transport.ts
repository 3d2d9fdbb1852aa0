/**
 * The two transports of the protocol: WebSocket (`/v1/ws`, one JSON message per text frame,
 * the token as `access_token`) and Socket.IO (`/socket.io`, event name = message type, the
 * message as its single argument, the token in the handshake's `auth.token`). Neither
 * retries by itself: reconnection, resync and retries are the client's job (`MatchClient`).
 *
 * Every attempt ends in exactly one `close` event, whatever the implementation does: a
 * handshake that fails with only an `error` event (Node's built-in WebSocket), with `error`
 * then `close` (browsers, the `ws` package) or with nothing at all (a server that never
 * answers: the connect timeout) is reported once, with a `kind` that says what to do next
 * (`CloseKind`), and never as an exception or an unhandled `error` event.
 *
 * The WebSocket implementation, for both transports: the `webSocket` option when given, else
 * the global `WebSocket` (browsers, Node 22 and later), else the `ws` package (Node 20, which
 * has no global WebSocket). `ws` is an optional dependency of the package and is imported
 * lazily, only when there is no global WebSocket, through a specifier bundlers do not follow:
 * a browser bundle never contains it, and Node 20 needs no flag and no setup.
 */
import { WebSocket as EngineWebSocket, io } from "socket.io-client";
import type { ClientMessage, ServerMessage } from "../protocol/generated";

/**
 * What the transports use of a WebSocket: the WHATWG API, as browsers, Node 22's global
 * `WebSocket` and the `ws` package's `WebSocket` class all offer it. The handlers' events are
 * `any` because each implementation has event types of its own.
 */
export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: `WebSocket` in a browser, `(await import("ws")).WebSocket` in Node. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/**
 * Why a connection ended, or never opened. What the client does about each:
 * - `unauthenticated`: the server refused the token (HTTP 401 on the WebSocket handshake,
 *   Socket.IO's `UNAUTHENTICATED`): ask for a new token, then retry with backoff;
 * - `unavailable`: the server is full or throttles this address (HTTP 429 or 503, Socket.IO's
 *   `connect_error` `UNAVAILABLE` or `RATE_LIMITED`): retry with the same token, not before
 *   `retryAfterMs` when the server said so;
 * - `refused`: the server answered but refused the handshake, and the implementation hides
 *   why (browsers and WHATWG WebSockets never show a handshake's HTTP status): perhaps the
 *   token, perhaps a full server, so a new token and backoff;
 * - `network`: no server answered (refused connection, unknown host, no route);
 * - `timeout`: the handshake did not complete within the connect timeout;
 * - `closed`: an open connection ended (the server closed it, or it dropped);
 * - `client`: `Transport.close` was called;
 * - `unsupported`: there is no WebSocket implementation (no global `WebSocket`, no `ws`
 *   package, no `webSocket` option): retrying cannot help.
 */
export type CloseKind = "unauthenticated" | "unavailable" | "refused" | "network" | "timeout" | "closed" | "client" | "unsupported";

export interface CloseInfo {
  /** Whether the connection had opened (a refused handshake never does). */
  opened: boolean;
  kind: CloseKind;
  /** For people and logs: what happened, e.g. `handshake refused (HTTP 401 UNAUTHENTICATED)`. */
  reason: string;
  /** The handshake's HTTP status, when the implementation shows it (the `ws` package). */
  status?: number;
  /** The protocol's error code, when the server gave one (`UNAUTHENTICATED`, `RATE_LIMITED`…). */
  code?: string;
  /** How long the server asked to wait before retrying (its `Retry-After`), when it did. */
  retryAfterMs?: number;
}

export interface TransportEvents {
  open(): void;
  message(message: ServerMessage): void;
  /** The connection ended or never opened: called exactly once per connection attempt. */
  close(info: CloseInfo): void;
}

export interface Transport {
  /** Sends one message; false when the connection is not open. */
  send(message: ClientMessage): boolean;
  close(): void;
}

export interface TransportOptions {
  /** The WebSocket implementation (see the module's doc for the default). */
  webSocket?: WebSocketConstructor;
  /** A handshake not complete after this long is given up (`timeout`). */
  connectTimeoutMs?: number;
}

/** Opens a connection to the server at `baseUrl` (an http(s) origin) with `token`. */
export type TransportFactory = (baseUrl: string, token: string, events: TransportEvents, options?: TransportOptions) => Transport;

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** How long the reachability check of a refused handshake may take. */
const PROBE_TIMEOUT_MS = 3000;
/** The longest `Retry-After` honoured, so that a wrong header cannot park a client for hours. */
const MAX_RETRY_AFTER_MS = 60_000;
/** The optional dependency that gives Node 20 a WebSocket; in a variable, so bundlers leave it out. */
const WS_PACKAGE = "ws";

let wsPackage: Promise<WebSocketConstructor | null> | null = null;

/**
 * The WebSocket implementation to use: the given one, the global one, or the `ws` package's;
 * null when there is none. The global is read at each call, so a polyfill installed after
 * this module was imported is seen.
 */
export async function resolveWebSocket(given?: WebSocketConstructor): Promise<WebSocketConstructor | null> {
  if (given) return given;
  const global = (globalThis as { WebSocket?: unknown }).WebSocket;
  if (typeof global === "function") return global as WebSocketConstructor;
  wsPackage ??= import(/* @vite-ignore */ /* webpackIgnore: true */ WS_PACKAGE).then(
    (m: { WebSocket?: WebSocketConstructor; default?: WebSocketConstructor }) => m.WebSocket ?? m.default ?? null,
    () => null,
  );
  return wsPackage;
}

const UNSUPPORTED: CloseInfo = {
  opened: false,
  kind: "unsupported",
  reason: "no WebSocket implementation: pass the `webSocket` option, or install the `ws` package (Node 20 has no global WebSocket)",
};

/** Seconds or an HTTP date, as milliseconds from now (bounded); undefined when absent or invalid. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)) : undefined;
}

/** The typed close of a handshake the server answered with HTTP `status` instead of 101. */
export function handshakeRefusal(status: number, code?: string, retryAfter?: string | null): CloseInfo {
  const kind: CloseKind = status === 401 ? "unauthenticated" : status === 429 || status === 503 ? "unavailable" : "refused";
  const info: CloseInfo = { opened: false, kind, reason: `handshake refused (HTTP ${status}${code ? ` ${code}` : ""})`, status };
  if (code) info.code = code;
  const retryAfterMs = parseRetryAfter(retryAfter);
  if (retryAfterMs !== undefined) info.retryAfterMs = retryAfterMs;
  return info;
}

/** Error codes of Node's sockets that mean no server answered. */
const NETWORK_ERRORS = /\b(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ECONNRESET|ETIMEDOUT)\b/;

/**
 * The typed close of a handshake that failed before opening, from what the implementation
 * told (`detail`: an error or an error event). The `ws` package names the HTTP status or the
 * socket error; a WHATWG WebSocket tells nothing, so the server's origin is fetched: if it
 * answers, it refused the handshake (`refused`), else it is unreachable (`network`).
 */
async function handshakeFailure(baseUrl: string, detail: unknown): Promise<CloseInfo> {
  const message = errorMessage(detail);
  const status = /Unexpected server response: (\d{3})/.exec(message);
  if (status) return handshakeRefusal(Number(status[1]));
  if (NETWORK_ERRORS.test(message)) return { opened: false, kind: "network", reason: `connection failed (${message})` };
  return (await reachable(baseUrl))
    ? { opened: false, kind: "refused", reason: "handshake refused (the server answered; this WebSocket does not show why)" }
    : { opened: false, kind: "network", reason: "connection failed (the server does not answer)" };
}

/** Whether the server at `baseUrl` answers HTTP at all (any status). */
async function reachable(baseUrl: string): Promise<boolean> {
  if (typeof fetch !== "function") return true;
  try {
    // `no-cors`: a platform's page on another origin gets an opaque answer rather than a
    // CORS failure, and an answer is all that is asked.
    await fetch(new URL("/healthz", baseUrl), { mode: "no-cors", cache: "no-store", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    return true;
  } catch {
    return false;
  }
}

function errorMessage(detail: unknown): string {
  if (detail == null) return "";
  if (typeof detail === "string") return detail;
  const d = detail as { message?: unknown; error?: unknown; description?: unknown };
  const parts = [d.message, errorMessage(d.error), d.description !== detail ? errorMessage(d.description) : ""];
  return parts.filter((p) => typeof p === "string" && p !== "").join("; ");
}

/** The node:http response the `ws` package hands to `unexpected-response`, as far as it is read. */
interface HandshakeResponse {
  statusCode?: number;
  headers: Record<string, string | string[] | undefined>;
  setEncoding(encoding: string): void;
  on(event: string, listener: (chunk?: string) => void): void;
}

/**
 * The `ws` package's `unexpected-response` event (an EventEmitter's `on`): the handshake's
 * HTTP answer, its status, `Retry-After` and JSON body's `code`. Calls `done` once the body is
 * read; the caller then terminates the socket (`ws` leaves that to a listener of the event).
 */
function onUnexpectedResponse(ws: WebSocketLike, done: (info: CloseInfo) => void): void {
  const emitter = ws as unknown as { on?: (event: string, listener: (req: unknown, res: HandshakeResponse) => void) => void };
  if (typeof emitter.on !== "function") return;
  emitter.on("unexpected-response", (_req, res) => {
    const status = res.statusCode ?? 0;
    const header = res.headers["retry-after"];
    const retryAfter = Array.isArray(header) ? header[0] : header;
    let body = "";
    const finish = () => {
      let code: string | undefined;
      try {
        const parsed = JSON.parse(body) as { code?: unknown };
        if (typeof parsed.code === "string") code = parsed.code;
      } catch {
        // Not JSON: the status alone types the refusal.
      }
      done(handshakeRefusal(status, code, retryAfter));
    };
    res.setEncoding("utf8");
    res.on("data", (chunk) => {
      if (body.length < 4096) body += chunk ?? "";
    });
    res.on("end", finish);
    res.on("error", finish);
  });
}

/**
 * The bookkeeping both transports share: one `open`, exactly one `close`, the connect
 * timeout, and `close` before the implementation is even loaded.
 */
class Attempt {
  opened = false;
  ended = false;
  private timer: ReturnType<typeof setTimeout> | null;

  constructor(
    private readonly events: TransportEvents,
    timeoutMs: number,
    onTimeout: () => void,
  ) {
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.opened || this.ended) return;
      onTimeout();
      this.end({ opened: false, kind: "timeout", reason: `no handshake within ${timeoutMs} ms` });
    }, timeoutMs);
  }

  open(): void {
    if (this.ended || this.opened) return;
    this.opened = true;
    this.clearTimer();
    this.events.open();
  }

  end(info: CloseInfo): void {
    if (this.ended) return;
    this.ended = true;
    this.clearTimer();
    this.events.close({ ...info, opened: this.opened });
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

export const webSocketTransport: TransportFactory = (baseUrl, token, events, options = {}) => {
  const url = new URL("/v1/ws", baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("access_token", token);
  let ws: WebSocketLike | null = null;
  // Set from the first `error` or `close` before opening: the attempt is over, its kind is
  // still being worked out (a body to read, a reachability check).
  let failing = false;
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const attempt = new Attempt(events, timeoutMs, () => release());
  /**
   * Detaches from the socket and closes it. An `error` it emits later (the `ws` package emits
   * one when a connecting socket is closed) still finds a listener: an EventEmitter without
   * one would throw it.
   */
  const release = () => {
    const s = ws;
    ws = null;
    if (!s) return;
    s.onopen = s.onmessage = s.onclose = null;
    s.onerror = () => {};
    try {
      s.close(1000);
    } catch {
      // Already closing or closed.
    }
  };
  const fail = (info: CloseInfo | Promise<CloseInfo>) => {
    if (failing || attempt.ended) return;
    failing = true;
    release();
    void Promise.resolve(info).then((i) => attempt.end(i));
  };
  const start = (WebSocketImpl: WebSocketConstructor | null) => {
    if (attempt.ended) return;
    if (!WebSocketImpl) return attempt.end(UNSUPPORTED);
    let s: WebSocketLike;
    try {
      s = new WebSocketImpl(url.toString());
    } catch (e) {
      return attempt.end({ opened: false, kind: "network", reason: `cannot open a WebSocket (${errorMessage(e)})` });
    }
    ws = s;
    onUnexpectedResponse(s, (info) => fail(info));
    s.onopen = () => attempt.open();
    s.onmessage = (ev: { data?: unknown }) => {
      if (typeof ev.data !== "string") return;
      let message: ServerMessage;
      try {
        message = JSON.parse(ev.data) as ServerMessage;
      } catch {
        return;
      }
      events.message(message);
    };
    // Before opening, an `error` alone ends the attempt (Node's built-in WebSocket may send
    // no `close` after it); after opening, `close` normally follows, but nothing waits for it.
    s.onerror = (ev: unknown) => {
      if (!attempt.opened) fail(handshakeFailure(baseUrl, ev));
      else {
        release();
        attempt.end({ opened: true, kind: "closed", reason: `connection error${errorMessage(ev) ? ` (${errorMessage(ev)})` : ""}` });
      }
    };
    s.onclose = (ev: { code?: number; reason?: string }) => {
      if (!attempt.opened) fail(handshakeFailure(baseUrl, ev));
      else {
        release();
        attempt.end({ opened: true, kind: "closed", reason: `closed (${ev.code ?? "no code"}${ev.reason ? ` ${ev.reason}` : ""})` });
      }
    };
  };
  const given = options.webSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof given === "function") start(given);
  else void resolveWebSocket().then(start);
  return {
    send(message) {
      if (!ws || !attempt.opened || attempt.ended || ws.readyState !== 1) return false;
      ws.send(JSON.stringify(message));
      return true;
    },
    close() {
      release();
      attempt.end({ opened: attempt.opened, kind: "client", reason: "closed by the client" });
    },
  };
};

const SERVER_TYPES = ["game.snapshot", "game.ack", "game.command-unknown", "game.cursor", "game.error"];

/**
 * The typed close of a Socket.IO `connect_error`: the server's refusals are `CODE: message`
 * (`UNAVAILABLE: this gateway is full; retry later`); `timeout` is socket.io-client's own;
 * anything else is the WebSocket under it failing, typed as the WebSocket transport types it.
 */
async function connectError(baseUrl: string, e: Error & { description?: unknown }): Promise<CloseInfo> {
  const code = /^([A-Z_]+):/.exec(e.message)?.[1];
  if (code === "UNAUTHENTICATED") return { opened: false, kind: "unauthenticated", code, reason: `connect error (${e.message})` };
  if (code === "UNAVAILABLE" || code === "RATE_LIMITED") return { opened: false, kind: "unavailable", code, reason: `connect error (${e.message})` };
  if (code) return { opened: false, kind: "refused", code, reason: `connect error (${e.message})` };
  if (e.message === "timeout") return { opened: false, kind: "timeout", reason: "connect error (timeout)" };
  const info = await handshakeFailure(baseUrl, e.description ?? e);
  return { ...info, reason: `connect error (${e.message}): ${info.reason}` };
}

export const socketIoTransport: TransportFactory = (baseUrl, token, events, options = {}) => {
  let socket: ReturnType<typeof io> | null = null;
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const attempt = new Attempt(events, timeoutMs, () => release());
  const release = () => {
    const s = socket;
    socket = null;
    if (!s) return;
    s.removeAllListeners();
    s.offAny();
    s.disconnect();
  };
  const end = (info: CloseInfo | Promise<CloseInfo>) => {
    const s = socket;
    release();
    if (!s) return;
    void Promise.resolve(info).then((i) => attempt.end(i));
  };
  const start = (WebSocketImpl: WebSocketConstructor | null) => {
    if (attempt.ended) return;
    if (!WebSocketImpl) return attempt.end(UNSUPPORTED);
    // socket.io-client's WebSocket transport, on the resolved implementation. Its own reads
    // the global `WebSocket` once, when the module loads: without one (Node 20) its
    // constructor throws inside `open()` before its error listeners are attached, the error
    // is lost and the connection waits for its timeout, attempt after attempt.
    class Ws extends EngineWebSocket {
      override createSocket(uri: string, protocols: string | string[] | undefined) {
        return protocols ? new WebSocketImpl!(uri, protocols) : new WebSocketImpl!(uri);
      }
    }
    const s = io(baseUrl, { auth: { token }, transports: [Ws], reconnection: false, forceNew: true, timeout: timeoutMs });
    socket = s;
    s.on("connect", () => attempt.open());
    s.onAny((event: string, message: ServerMessage) => {
      if (!SERVER_TYPES.includes(event) || !message || typeof message !== "object") return;
      // The server's refusal of the handshake's token: a `game.error` UNAUTHENTICATED right
      // after connecting, then a disconnect.
      if (message.type === "game.error" && message.code === "UNAUTHENTICATED") {
        return end({ opened: attempt.opened, kind: "unauthenticated", code: message.code, reason: "token refused (UNAUTHENTICATED)" });
      }
      events.message(message);
    });
    s.on("disconnect", (reason) => end({ opened: attempt.opened, kind: "closed", reason: `disconnected (${reason})` }));
    s.on("connect_error", (e) => end(connectError(baseUrl, e)));
  };
  const given = options.webSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof given === "function") start(given);
  else void resolveWebSocket().then(start);
  return {
    send(message) {
      if (!socket?.connected || attempt.ended) return false;
      socket.emit(message.type, message);
      return true;
    },
    close() {
      release();
      attempt.end({ opened: attempt.opened, kind: "client", reason: "closed by the client" });
    },
  };
};
