/**
 * Where the pending command of an account in a match is kept, so a reload resends the same
 * envelope (same command id) instead of inventing a new move.
 */
import type { GameCommand } from "../protocol/generated";

export interface PendingStore {
  load(key: string): GameCommand | null;
  save(key: string, command: GameCommand): void;
  clear(key: string): void;
}

/** The key of an account's pending command in a match. */
export function pendingKey(principal: string, matchId: string): string {
  return `juegoland.pending.${principal}.${matchId}`;
}

/** Keeps pending commands in a `Storage` (the browser's `localStorage` by default). */
export function storagePendingStore(storage: Pick<Storage, "getItem" | "setItem" | "removeItem">): PendingStore {
  return {
    load(key) {
      try {
        const text = storage.getItem(key);
        if (!text) return null;
        const value = JSON.parse(text) as GameCommand;
        return value && value.type === "game.command" && typeof value.commandId === "string" ? value : null;
      } catch {
        return null;
      }
    },
    save(key, command) {
      try {
        storage.setItem(key, JSON.stringify(command));
      } catch {
        // A full or disabled storage only loses the reload guarantee, never the move.
      }
    },
    clear(key) {
      try {
        storage.removeItem(key);
      } catch {
        /* as above */
      }
    },
  };
}

/** A store that forgets on reload (tests, or a browser without storage). */
export function memoryPendingStore(): PendingStore & { entries: Map<string, GameCommand> } {
  const entries = new Map<string, GameCommand>();
  return {
    entries,
    load: (key) => entries.get(key) ?? null,
    save: (key, command) => void entries.set(key, command),
    clear: (key) => void entries.delete(key),
  };
}
