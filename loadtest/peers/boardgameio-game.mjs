// Connect Four as a boardgame.io 0.50 `Game`.
// No hidden information, so no playerView. One move per turn (maxMoves: 1
// ends the turn automatically after `drop`).
import { createRequire } from 'node:module';
import { CELLS, COLUMNS, findWinner, isFull, landingRow } from './connect4-rules.mjs';

const require = createRequire(import.meta.url);
const { INVALID_MOVE } = require('boardgame.io/core');

export const ConnectFour = {
  name: 'connect-four',

  setup: () => ({ cells: Array(CELLS).fill(null) }),

  turn: { minMoves: 1, maxMoves: 1 },

  moves: {
    drop: ({ G, playerID }, column) => {
      if (!Number.isInteger(column) || column < 0 || column >= COLUMNS) return INVALID_MOVE;
      const row = landingRow(G.cells, column, null);
      if (row < 0) return INVALID_MOVE; // full column
      G.cells[row * COLUMNS + column] = playerID;
    },
  },

  endIf: ({ G }) => {
    const winner = findWinner(G.cells, null);
    if (winner !== null) return { winner };
    if (isFull(G.cells, null)) return { draw: true };
  },
};
