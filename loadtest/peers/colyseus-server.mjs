// Colyseus 0.16 Server (WebSocket transport, matchmaking HTTP on the same
// port, default local presence/driver) serving the Connect Four room.
// Usage: node colyseus-server.mjs [--port 2567] [--host 127.0.0.1]
import { readFileSync } from 'node:fs';
import { Server } from '@colyseus/core';
import { WebSocketTransport } from '@colyseus/ws-transport';
import { ConnectFourRoom } from './colyseus-room.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const port = Number(opt('port', process.env.PORT || 2567));
const host = opt('host', '127.0.0.1');
const version = JSON.parse(
  readFileSync(new URL('./node_modules/@colyseus/core/package.json', import.meta.url), 'utf8'),
).version;

const gameServer = new Server({
  transport: new WebSocketTransport(),
  greet: false,
});
gameServer.define('connect_four', ConnectFourRoom);

await gameServer.listen(port, host);
console.log(`colyseus ${version} listening on ws://${host}:${port} pid=${process.pid}`);

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
