// Rule checks for both peer implementations: `node --test selftest.mjs`.
// boardgame.io through a local (single-process) Client; Colyseus through a
// real server on a loopback port and two colyseus.js clients.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { ConnectFour } from './boardgameio-game.mjs';

const require = createRequire(import.meta.url);

test('boardgame.io: full column is INVALID_MOVE, turns alternate, vertical win', () => {
  const { Client } = require('boardgame.io/client');
  const client = Client({ game: ConnectFour, numPlayers: 2, debug: false });
  client.start();
  // Fill column 3: 0,1,0,1,0,1.
  for (let i = 0; i < 6; i++) {
    assert.equal(client.getState().ctx.currentPlayer, String(i % 2));
    client.moves.drop(3);
  }
  const full = client.getState();
  assert.equal(full.G.cells[3], '1'); // top row, last piece
  client.moves.drop(3); // invalid: full column
  const after = client.getState();
  assert.equal(after._stateID, full._stateID);
  assert.equal(after.ctx.currentPlayer, full.ctx.currentPlayer);
  client.moves.drop(7); // invalid: no such column
  assert.equal(client.getState()._stateID, full._stateID);
  // Player 0 stacks column 0, player 1 column 1: 0 wins on its 4th piece.
  for (let i = 0; i < 3; i++) { client.moves.drop(0); client.moves.drop(1); }
  assert.equal(client.getState().ctx.gameover, undefined);
  client.moves.drop(0);
  assert.deepEqual(client.getState().ctx.gameover, { winner: '0' });
  client.stop();
});

test('boardgame.io: diagonal win and draw detection', () => {
  const { Client } = require('boardgame.io/client');
  const client = Client({ game: ConnectFour, numPlayers: 2, debug: false });
  client.start();
  // 0:c0 1:c1 0:c1 1:c2 0:c2 1:c3 0:c2 1:c3 0:c3 1:c6 0:c3 -> diagonal for 0
  for (const c of [0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3]) client.moves.drop(c);
  assert.deepEqual(client.getState().ctx.gameover, { winner: '0' });
  client.stop();

  const draw = Client({ game: ConnectFour, numPlayers: 2, debug: false });
  draw.start();
  // Columns filled in pairs in an order that never lines up four.
  const order = [0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 2, 3, 2, 3, 2, 3, 3, 2, 3, 2, 3, 2,
    4, 5, 4, 5, 4, 5, 5, 4, 5, 4, 5, 4, 6, 6, 6, 6, 6, 6];
  for (const c of order) draw.moves.drop(c);
  assert.deepEqual(draw.getState().ctx.gameover, { draw: true });
  draw.stop();
});

let gameServer;
const PORT = 25000 + (process.pid % 5000);
before(async () => {
  const { Server } = await import('@colyseus/core');
  const { WebSocketTransport } = await import('@colyseus/ws-transport');
  const { ConnectFourRoom } = await import('./colyseus-room.mjs');
  gameServer = new Server({ transport: new WebSocketTransport(), greet: false, gracefullyShutdown: false });
  gameServer.define('connect_four', ConnectFourRoom);
  await gameServer.listen(PORT, '127.0.0.1');
});
after(async () => { await gameServer.gracefullyShutdown(false); });

test('Colyseus: turn and column validation, immediate patches, win', async () => {
  const { Client } = require('colyseus.js');
  const client = new Client(`ws://127.0.0.1:${PORT}`);
  const a = await client.create('connect_four');
  const b = await client.joinById(a.roomId);
  const errors = { a: [], b: [] };
  a.onMessage('error', (m) => errors.a.push(m.code));
  b.onMessage('error', (m) => errors.b.push(m.code));
  const nextState = (room, pred) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no patch')), 2000);
    const check = (s) => { if (pred(s)) { clearTimeout(t); resolve(s); } };
    room.onStateChange(check);
    if (room.state && room.state.players) check(room.state);
  });
  await nextState(a, (s) => s.currentPlayer === 1 && s.players.size === 2);
  await nextState(b, (s) => s.currentPlayer === 1 && s.players.size === 2);
  assert.equal(a.state.players.get(a.sessionId), 1);
  assert.equal(b.state.players.get(b.sessionId), 2);

  b.send('drop', { column: 0 }); // not b's turn
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(errors.b, ['not_your_turn']);

  // Fill column 5, alternating, then try a 7th piece.
  let n = 0;
  for (let i = 0; i < 6; i++) {
    (i % 2 === 0 ? a : b).send('drop', { column: 5 });
    await nextState(a, (s) => s.moveNumber === n + 1);
    n++;
  }
  assert.equal(a.state.board[5], 2);
  a.send('drop', { column: 5 });
  a.send('drop', { column: 9 });
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(errors.a, ['column_full', 'bad_column']);

  // a stacks column 0, b column 1: a wins.
  for (let i = 0; i < 7; i++) {
    (i % 2 === 0 ? a : b).send('drop', { column: i % 2 === 0 ? 0 : 1 });
    await nextState(a, (s) => s.moveNumber === n + 1);
    n++;
  }
  assert.equal(a.state.winner, 1);
  b.send('drop', { column: 2 });
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(errors.b, ['not_your_turn', 'game_over']);
  await a.leave();
  await b.leave();
});
