// Connect Four as a Colyseus 0.16 Room with @colyseus/schema 3 state.
//
// Patches: the automatic patch interval is switched off (`patchRate = null`)
// and the room calls `broadcastPatch()` right after every state change, so a
// move's patch leaves in the same event-loop turn as the "drop" message that
// caused it ("immediate patches"). With Colyseus' default patchRate (50 ms)
// a move would wait 0-50 ms (25 ms on average) for the next tick, and the
// latency figure would measure the tick, not the server.
import { Room } from '@colyseus/core';
import { ArraySchema, MapSchema, Schema, defineTypes } from '@colyseus/schema';
import { CELLS, COLUMNS, findWinner, isFull, landingRow } from './connect4-rules.mjs';

export const EMPTY = 0;
export const DRAW = 3;

export class ConnectFourState extends Schema {
  constructor() {
    super();
    // 42 cells, row * 7 + column, row 0 at the top; 0 empty, 1 or 2 a player.
    this.board = new ArraySchema(...Array(CELLS).fill(EMPTY));
    // Player to move (1 or 2); 0 while waiting for the second player.
    this.currentPlayer = 0;
    // 0 none yet, 1 or 2 the winner, 3 a draw.
    this.winner = 0;
    // Number of moves applied (lets clients tell which move a patch carries).
    this.moveNumber = 0;
    // sessionId -> seat (1 or 2), so each client can find its own seat.
    this.players = new MapSchema();
  }
}
defineTypes(ConnectFourState, {
  board: ['uint8'],
  currentPlayer: 'uint8',
  winner: 'uint8',
  moveNumber: 'uint16',
  players: { map: 'uint8' },
});

export class ConnectFourRoom extends Room {
  maxClients = 2;
  patchRate = null; // no interval: broadcastPatch() after each change
  state = new ConnectFourState();

  onCreate() {
    this.onMessage('drop', (client, message) => this.drop(client, message));
  }

  onJoin(client) {
    const taken = new Set(this.state.players.values());
    this.state.players.set(client.sessionId, taken.has(1) ? 2 : 1);
    if (this.state.players.size === 2 && this.state.winner === 0 && this.state.currentPlayer === 0) {
      this.state.currentPlayer = 1;
    }
    this.broadcastPatch();
  }

  onLeave(client) {
    this.state.players.delete(client.sessionId);
    this.broadcastPatch();
  }

  drop(client, message) {
    const seat = this.state.players.get(client.sessionId);
    const state = this.state;
    const column = message && message.column;
    let error = null;
    if (state.winner !== 0) error = 'game_over';
    else if (state.currentPlayer === 0) error = 'not_started';
    else if (seat !== state.currentPlayer) error = 'not_your_turn';
    else if (!Number.isInteger(column) || column < 0 || column >= COLUMNS) error = 'bad_column';
    const row = error ? -1 : landingRow(state.board, column, EMPTY);
    if (!error && row < 0) error = 'column_full';
    if (error) {
      client.send('error', { code: error });
      return;
    }
    state.board[row * COLUMNS + column] = seat;
    state.moveNumber += 1;
    const winner = findWinner(state.board, EMPTY);
    if (winner !== EMPTY) state.winner = winner;
    else if (isFull(state.board, EMPTY)) state.winner = DRAW;
    else state.currentPlayer = seat === 1 ? 2 : 1;
    this.broadcastPatch();
  }
}
