// Connect Four rules shared by both peer implementations and by the driver's
// result check. Board: 7 columns x 6 rows, flat array of 42 cells,
// index = row * 7 + column, row 0 at the top, row 5 at the bottom.
// An empty cell is `empty` (null for boardgame.io, 0 for Colyseus).

export const COLUMNS = 7;
export const ROWS = 6;
export const CELLS = COLUMNS * ROWS;

/** Row where a piece dropped in `column` lands, or -1 if the column is full. */
export function landingRow(cells, column, empty) {
  for (let row = ROWS - 1; row >= 0; row--) {
    if (cells[row * COLUMNS + column] === empty) return row;
  }
  return -1;
}

/** Columns that are not full. */
export function legalColumns(cells, empty) {
  const out = [];
  for (let c = 0; c < COLUMNS; c++) if (cells[c] === empty) out.push(c);
  return out;
}

const DIRECTIONS = [[0, 1], [1, 0], [1, 1], [1, -1]];

/** Owner of a four-in-a-row anywhere on the board, or `empty` if none. */
export function findWinner(cells, empty) {
  for (let r = 0; r < ROWS; r++) {
    for (let c = 0; c < COLUMNS; c++) {
      const v = cells[r * COLUMNS + c];
      if (v === empty) continue;
      for (const [dr, dc] of DIRECTIONS) {
        const r3 = r + 3 * dr;
        const c3 = c + 3 * dc;
        if (r3 < 0 || r3 >= ROWS || c3 < 0 || c3 >= COLUMNS) continue;
        if (
          cells[(r + dr) * COLUMNS + c + dc] === v &&
          cells[(r + 2 * dr) * COLUMNS + c + 2 * dc] === v &&
          cells[r3 * COLUMNS + c3] === v
        ) {
          return v;
        }
      }
    }
  }
  return empty;
}

export function isFull(cells, empty) {
  for (let c = 0; c < COLUMNS; c++) if (cells[c] === empty) return false;
  return true;
}
