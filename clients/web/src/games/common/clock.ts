/**
 * A turn clock as a view shows it (the SDK's `TurnClock` settings and `ClockState`
 * bookkeeping: `{"settings": {"mode": …, "policy": …}, "state": {"running": …,
 * "remainingMs": …}}`), read into what each seat has left at a server instant, and the
 * clock's text. Pure: the caller passes the server time (`ServerClock`).
 */

export type ClockMode = { kind: "perTurn"; turnMs: number } | { kind: "perPlayer"; budgetMs: number; incrementMs?: number };

export interface ClockView {
  settings: { mode: ClockMode; policy: string };
  state: {
    serial?: number;
    /** The running turn: whose, when it started and when time runs out (server instants). */
    running: { seat?: string | null; startedMs: number; dueMs: number } | null;
    /** Per-player mode: each seat's budget NOT counting the running turn. */
    remainingMs?: Record<string, number>;
  };
}

/** Below this a clock is shown as running low. */
export const LOW_MS = 10_000;

export interface SeatTime {
  seat: string;
  /** What the seat has left (never negative). */
  ms: number;
  /** Whether this seat's time is running now. */
  running: boolean;
  low: boolean;
}

/**
 * What each seat has left at `serverNow`: per turn, only the running seat (its turn's
 * remainder); per player, every seat of `seats` (the running one's budget is its live
 * remainder, `dueMs - now`, which the state already counts down to).
 */
export function seatTimes(clock: ClockView, seats: string[], serverNow: number): SeatTime[] {
  const running = clock.state.running;
  const live = running ? Math.max(0, running.dueMs - serverNow) : 0;
  const entry = (seat: string, ms: number, isRunning: boolean): SeatTime => ({ seat, ms, running: isRunning, low: ms < LOW_MS });
  if (clock.settings.mode.kind === "perTurn") {
    return running?.seat ? [entry(running.seat, live, true)] : [];
  }
  return seats.map((s) => (running?.seat === s ? entry(s, live, true) : entry(s, Math.max(0, clock.state.remainingMs?.[s] ?? 0), false)));
}

/**
 * A clock's text: `m:ss`, or `h:mm:ss` from an hour, rounded UP to the second so that
 * `0:00` shows only once the time is really out.
 */
export function formatClock(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** Whether `x` looks like a view's clock (the dice games carry one only with `config.clock`). */
export function isClockView(x: unknown): x is ClockView {
  const c = x as ClockView | null;
  return !!c && typeof c === "object" && !!c.settings?.mode && !!c.state && (c.settings.mode.kind === "perTurn" || c.settings.mode.kind === "perPlayer");
}
