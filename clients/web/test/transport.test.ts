// The transports under Node (this Node 20 has no global WebSocket): each connection attempt
// ends in exactly one typed `close`, whatever the WebSocket implementation does. Against
// local HTTP servers: the `ws` package's view of a refused handshake (401, 503 with
// Retry-After) and of a connection closed while connecting (no unhandled `error` event);
// fake WHATWG WebSockets that send `error` without `close` (Node's built-in one) or nothing
// at all; and Socket.IO against a minimal engine.io server (a refused token, a full server,
// a silent one), which used to wait forever under Node 20.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket as WsWebSocket, WebSocketServer } from "ws";
import {
  type CloseInfo,
  type TransportFactory,
  type TransportOptions,
  type WebSocketConstructor,
  handshakeRefusal,
  parseRetryAfter,
  socketIoTransport,
  webSocketTransport,
} from "../src/lib/transport";
import type { ServerMessage } from "../src/protocol/generated";

const servers: Server[] = [];
/** Upgraded sockets: the HTTP server no longer tracks them, so they are destroyed here. */
const sockets: Duplex[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** An HTTP server on 127.0.0.1 answering `/healthz`, with `upgrade` handling WebSocket handshakes. */
async function server(upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void): Promise<string> {
  const s = createServer((req, res) => {
    res.writeHead(req.url === "/healthz" ? 200 : 404);
    res.end("ok");
  });
  if (upgrade) {
    s.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      sockets.push(socket);
      upgrade(req, socket, head);
    });
  }
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const address = s.address();
  if (!address || typeof address === "string") throw new Error("no address");
  return `http://127.0.0.1:${address.port}`;
}

/** Answers a WebSocket handshake with an HTTP error, as the engine's `/v1/ws` does. */
function refuse(status: number, code: string, headers: Record<string, string> = {}) {
  return (_req: IncomingMessage, socket: Duplex) => {
    const body = JSON.stringify({ code, message: "refused" });
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${extra}Connection: close\r\n\r\n${body}`);
  };
}

/** A port where nothing listens. */
const NOWHERE = "http://127.0.0.1:1";

interface Run {
  opened: boolean;
  messages: ServerMessage[];
  closes: CloseInfo[];
  /** Resolves with the first close. */
  closed: Promise<CloseInfo>;
  opening: Promise<void>;
  transport: ReturnType<TransportFactory>;
}

/** Opens `factory` and records its events. */
function connect(factory: TransportFactory, base: string, token: string, options: TransportOptions = {}): Run {
  let onClose!: (i: CloseInfo) => void;
  let onOpen!: () => void;
  const run = {
    opened: false,
    messages: [] as ServerMessage[],
    closes: [] as CloseInfo[],
    closed: new Promise<CloseInfo>((r) => (onClose = r)),
    opening: new Promise<void>((r) => (onOpen = r)),
  } as Run;
  run.transport = factory(
    base,
    token,
    {
      open: () => {
        run.opened = true;
        onOpen();
      },
      message: (m) => run.messages.push(m),
      close: (info) => {
        run.closes.push(info);
        onClose(info);
      },
    },
    options,
  );
  return run;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fake WHATWG WebSocket whose behaviour each test scripts through `script`. */
function fakeWebSocket(script: (ws: FakeWs) => void): WebSocketConstructor {
  return class extends FakeWs {
    constructor(url: string) {
      super(url);
      setTimeout(() => script(this), 5);
    }
  };
}
class FakeWs {
  readyState = 0;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  sent: string[] = [];
  closedByClient = false;
  constructor(readonly url: string) {}
  send(data: string) {
    this.sent.push(data);
  }
  close() {
    this.closedByClient = true;
  }
}

describe("the WebSocket transport", () => {
  it("a handshake error without a close event (Node's built-in WebSocket) ends the attempt once: refused when the server answers", async () => {
    const base = await server();
    const OnlyError = fakeWebSocket((ws) => {
      ws.onerror?.({ type: "error" });
      // A late close, if one comes, is not reported a second time.
      setTimeout(() => ws.onclose?.({ code: 1006 }), 5);
    });
    const run = connect(webSocketTransport, base, "t", { webSocket: OnlyError });
    expect(await run.closed).toMatchObject({ opened: false, kind: "refused" });
    await sleep(30);
    expect(run.closes).toHaveLength(1);
  });

  it("the same error when no server answers is a network failure", async () => {
    const OnlyError = fakeWebSocket((ws) => ws.onerror?.({ type: "error" }));
    const run = connect(webSocketTransport, NOWHERE, "t", { webSocket: OnlyError });
    expect(await run.closed).toMatchObject({ opened: false, kind: "network" });
  });

  it("a handshake that never completes times out", async () => {
    const Silent = fakeWebSocket(() => {});
    const run = connect(webSocketTransport, NOWHERE, "t", { webSocket: Silent, connectTimeoutMs: 50 });
    expect(await run.closed).toMatchObject({ opened: false, kind: "timeout" });
  });

  it("an error after opening, without a close event, ends the connection once", async () => {
    let fake: FakeWs | null = null;
    const Flaky = fakeWebSocket((ws) => {
      fake = ws;
      ws.readyState = 1;
      ws.onopen?.({});
      ws.onmessage?.({ data: JSON.stringify({ protocolVersion: 1, type: "game.cursor", matchId: "m", subscriptionId: "s", revision: 3 }) });
      ws.onerror?.({ type: "error" });
    });
    const run = connect(webSocketTransport, NOWHERE, "t", { webSocket: Flaky });
    expect(await run.closed).toMatchObject({ opened: true, kind: "closed" });
    expect(run.messages.map((m) => m.type)).toEqual(["game.cursor"]);
    expect(fake!.closedByClient).toBe(true);
    expect(run.transport.send({ protocolVersion: 1, type: "game.unsubscribe", matchId: "m", subscriptionId: "s" })).toBe(false);
  });

  it("with the ws package, a 401 is unauthenticated, typed from the status and the body's code, and throws nothing", async () => {
    const base = await server(refuse(401, "UNAUTHENTICATED"));
    const run = connect(webSocketTransport, base, "bad", { webSocket: WsWebSocket });
    expect(await run.closed).toEqual({ opened: false, kind: "unauthenticated", status: 401, code: "UNAUTHENTICATED", reason: "handshake refused (HTTP 401 UNAUTHENTICATED)" });
    await sleep(30); // the ws package's own error and close events come later, and are handled
    expect(run.closes).toHaveLength(1);
  });

  it("with the ws package, a 503 with Retry-After is unavailable, with the delay", async () => {
    const base = await server(refuse(503, "UNAVAILABLE", { "Retry-After": "7" }));
    const run = connect(webSocketTransport, base, "t", { webSocket: WsWebSocket });
    expect(await run.closed).toMatchObject({ opened: false, kind: "unavailable", status: 503, code: "UNAVAILABLE", retryAfterMs: 7000 });
  });

  it("without a webSocket option, Node 20 loads the ws package (Node 22's global WebSocket hides the status)", async () => {
    const base = await server(refuse(401, "UNAUTHENTICATED"));
    const run = connect(webSocketTransport, base, "bad");
    const info = await run.closed;
    expect(info.kind).toBe(typeof globalThis.WebSocket === "function" ? "refused" : "unauthenticated");
  });

  it("with the ws package, a refused connection is a network failure", async () => {
    const run = connect(webSocketTransport, NOWHERE, "t", { webSocket: WsWebSocket });
    expect(await run.closed).toMatchObject({ opened: false, kind: "network" });
  });

  it("with the ws package, closing while connecting reports the client's close once and throws nothing", async () => {
    const base = await server(() => {}); // never answers the handshake
    const run = connect(webSocketTransport, base, "t", { webSocket: WsWebSocket });
    await sleep(30);
    run.transport.close();
    await sleep(30);
    expect(run.closes).toEqual([{ opened: false, kind: "client", reason: "closed by the client" }]);
  });

  it("with the ws package, a connection opens, carries messages both ways and reports the server's close", async () => {
    const wss = new WebSocketServer({ noServer: true });
    const received: string[] = [];
    const base = await server((req, socket, head) => {
      const token = new URL(req.url!, "http://x").searchParams.get("access_token");
      if (token !== "good") return refuse(401, "UNAUTHENTICATED")(req, socket);
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on("message", (d) => {
          received.push(String(d));
          ws.send(JSON.stringify({ protocolVersion: 1, type: "game.cursor", matchId: "m", subscriptionId: "s", revision: 1 }));
          ws.close(1001, "going away");
        });
      });
    });
    const run = connect(webSocketTransport, base, "good", { webSocket: WsWebSocket });
    await run.opening;
    expect(run.transport.send({ protocolVersion: 1, type: "game.unsubscribe", matchId: "m", subscriptionId: "s" })).toBe(true);
    expect(await run.closed).toMatchObject({ opened: true, kind: "closed", reason: "closed (1001 going away)" });
    expect(run.messages.map((m) => m.type)).toEqual(["game.cursor"]);
    expect(JSON.parse(received[0]!)).toMatchObject({ type: "game.unsubscribe" });
    wss.close();
  });
});

/**
 * A minimal Socket.IO server (engine.io v4 over WebSocket only) at `/socket.io/`: `onConnect`
 * gets the CONNECT packet's auth and answers with raw packets.
 */
async function socketIoServer(onConnect: (auth: { token?: string }, send: (packet: string) => void, received: string[]) => void): Promise<{ base: string; received: string[] }> {
  const wss = new WebSocketServer({ noServer: true });
  const received: string[] = [];
  const base = await server((req, socket, head) => {
    if (!req.url?.startsWith("/socket.io/")) return refuse(404, "NOT_FOUND")(req, socket);
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.send(`0${JSON.stringify({ sid: "engine", upgrades: [], pingInterval: 25000, pingTimeout: 20000, maxPayload: 1000000 })}`);
      ws.on("message", (d) => {
        const packet = String(d);
        if (packet.startsWith("40")) onConnect(JSON.parse(packet.slice(2) || "{}"), (p) => ws.send(p), received);
        else received.push(packet);
      });
    });
  });
  servers.at(-1)!.on("close", () => wss.close());
  return { base, received };
}

const UNAUTHENTICATED = { protocolVersion: 1, type: "game.error", code: "UNAUTHENTICATED", messageKey: "error.unauthenticated", recovery: "reauthenticate" };

describe("the Socket.IO transport under Node 20", () => {
  it("connects (no global WebSocket: the ws package), carries messages both ways", async () => {
    const { base, received } = await socketIoServer((auth, send) => {
      expect(auth.token).toBe("good");
      send(`40${JSON.stringify({ sid: "s1" })}`);
      send(`42${JSON.stringify(["game.cursor", { protocolVersion: 1, type: "game.cursor", matchId: "m", subscriptionId: "s", revision: 1 }])}`);
    });
    const run = connect(socketIoTransport, base, "good", { connectTimeoutMs: 5000 });
    await run.opening;
    expect(run.transport.send({ protocolVersion: 1, type: "game.unsubscribe", matchId: "m", subscriptionId: "s" })).toBe(true);
    await sleep(50);
    expect(run.messages.map((m) => m.type)).toEqual(["game.cursor"]);
    expect(received.some((p) => p.startsWith('42["game.unsubscribe"'))).toBe(true);
    run.transport.close();
    expect(run.closes).toEqual([{ opened: true, kind: "client", reason: "closed by the client" }]);
  });

  it("a refused token (game.error UNAUTHENTICATED, then a disconnect) is unauthenticated", async () => {
    const { base } = await socketIoServer((_auth, send) => {
      send(`40${JSON.stringify({ sid: "s1" })}`);
      send(`42${JSON.stringify(["game.error", UNAUTHENTICATED])}`);
      send("41");
    });
    const run = connect(socketIoTransport, base, "bad", { connectTimeoutMs: 5000 });
    expect(await run.closed).toMatchObject({ kind: "unauthenticated", code: "UNAUTHENTICATED" });
    await sleep(30);
    expect(run.closes).toHaveLength(1);
    expect(run.messages).toEqual([]);
  });

  it("a full server (connect_error UNAVAILABLE) is unavailable", async () => {
    const { base } = await socketIoServer((_auth, send) => send(`44${JSON.stringify({ message: "UNAVAILABLE: this gateway is full; retry later" })}`));
    const run = connect(socketIoTransport, base, "t", { connectTimeoutMs: 5000 });
    expect(await run.closed).toMatchObject({ opened: false, kind: "unavailable", code: "UNAVAILABLE" });
  });

  it("a server that never answers the CONNECT times out", async () => {
    const { base } = await socketIoServer(() => {});
    const run = connect(socketIoTransport, base, "t", { connectTimeoutMs: 200 });
    expect(await run.closed).toMatchObject({ opened: false, kind: "timeout" });
  });

  it("no server is a network failure, at once", async () => {
    const started = Date.now();
    const run = connect(socketIoTransport, NOWHERE, "t", { connectTimeoutMs: 5000 });
    expect(await run.closed).toMatchObject({ opened: false, kind: "network" });
    expect(Date.now() - started).toBeLessThan(4000);
  });
});

describe("refusals from their HTTP answer", () => {
  it("types each status", () => {
    expect(handshakeRefusal(401).kind).toBe("unauthenticated");
    expect(handshakeRefusal(429, "RATE_LIMITED", "3")).toMatchObject({ kind: "unavailable", code: "RATE_LIMITED", retryAfterMs: 3000 });
    expect(handshakeRefusal(503).kind).toBe("unavailable");
    expect(handshakeRefusal(404).kind).toBe("refused");
  });

  it("reads Retry-After as seconds or a date, bounded", () => {
    const now = Date.parse("2026-12-01T00:00:00Z");
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter("Tue, 01 Dec 2026 00:00:10 GMT", now)).toBe(10_000);
    expect(parseRetryAfter("86400", now)).toBe(60_000);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
