/**
 * The two transports of the protocol: WebSocket (`/v1/ws`, one JSON message per text frame,
 * the token as `access_token`) and Socket.IO (`/socket.io`, event name = message type, the
 * message as its single argument, the token in the handshake's `auth.token`). Neither
 * retries by itself: reconnection, resync and retries are the client's job (`MatchClient`).
 */
import { io } from "socket.io-client";
import type { ClientMessage, ServerMessage } from "../protocol/generated";

export interface TransportEvents {
  open(): void;
  message(message: ServerMessage): void;
  /** The connection ended; `opened` says whether it had opened (a refused token never does). */
  close(info: { opened: boolean; reason: string }): void;
}

export interface Transport {
  /** Sends one message; false when the connection is not open. */
  send(message: ClientMessage): boolean;
  close(): void;
}

/** Opens a connection to the server at `baseUrl` (an http(s) origin) with `token`. */
export type TransportFactory = (baseUrl: string, token: string, events: TransportEvents) => Transport;

export const webSocketTransport: TransportFactory = (baseUrl, token, events) => {
  const url = new URL("/v1/ws", baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("access_token", token);
  const ws = new WebSocket(url);
  let opened = false;
  let closed = false;
  ws.onopen = () => {
    opened = true;
    events.open();
  };
  ws.onmessage = (ev) => {
    let message: ServerMessage;
    try {
      message = JSON.parse(String(ev.data)) as ServerMessage;
    } catch {
      return;
    }
    events.message(message);
  };
  ws.onclose = (ev) => {
    if (closed) return;
    closed = true;
    events.close({ opened, reason: `closed (${ev.code})` });
  };
  return {
    send(message) {
      if (ws.readyState !== WebSocket.OPEN) return false;
      ws.send(JSON.stringify(message));
      return true;
    },
    close() {
      if (closed) return;
      closed = true;
      ws.close();
      events.close({ opened, reason: "closed by the client" });
    },
  };
};

const SERVER_TYPES = ["game.snapshot", "game.ack", "game.command-unknown", "game.cursor", "game.error"];

export const socketIoTransport: TransportFactory = (baseUrl, token, events) => {
  const socket = io(baseUrl, { auth: { token }, transports: ["websocket"], reconnection: false, forceNew: true });
  let opened = false;
  let closed = false;
  const end = (reason: string) => {
    if (closed) return;
    closed = true;
    socket.removeAllListeners();
    socket.disconnect();
    events.close({ opened, reason });
  };
  socket.on("connect", () => {
    opened = true;
    events.open();
  });
  socket.onAny((event: string, message: ServerMessage) => {
    if (SERVER_TYPES.includes(event) && message && typeof message === "object") events.message(message);
  });
  socket.on("disconnect", (reason) => end(`disconnected (${reason})`));
  socket.on("connect_error", (e) => end(`connect error (${e.message})`));
  return {
    send(message) {
      if (!socket.connected) return false;
      socket.emit(message.type, message);
      return true;
    },
    close() {
      end("closed by the client");
    },
  };
};
