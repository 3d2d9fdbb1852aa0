// boardgame.io Server (Koa + socket.io, lobby API on the same port) with the
// default in-memory storage, serving Connect Four.
// Usage: node boardgameio-server.mjs [--port 8000] [--host 127.0.0.1]
import { createRequire } from 'node:module';
import { ConnectFour } from './boardgameio-game.mjs';

const require = createRequire(import.meta.url);
const { Server, Origins } = require('boardgame.io/server');
const version = require('boardgame.io/package.json').version;

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const port = Number(opt('port', process.env.PORT || 8000));
const host = opt('host', '127.0.0.1');

const server = Server({
  games: [ConnectFour],
  // Node clients send no Origin header; this only matters for browsers.
  origins: [Origins.LOCALHOST],
});

// server.run() calls app.listen(port, cb), which binds every interface.
// koa-socket-2 has replaced app.listen with app.server.listen, so pass the
// host through to keep the benchmark on loopback.
const listen = server.app.listen;
server.app.listen = (p, cb) => listen.call(server.app, p, host, cb);

await server.run({ port });
console.log(`boardgame.io ${version} listening on http://${host}:${port} pid=${process.pid}`);

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
