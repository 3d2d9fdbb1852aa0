/**
 * The server's clock as this page can know it, for what a view states as server instants
 * (a turn clock's `dueMs`, Laberinto's `raceStartsMs`: milliseconds since the Unix epoch on
 * the server's clock).
 *
 * The protocol carries no time stamps, so the estimate starts from the page's own clock
 * (`Date.now()`) and is corrected by observations: a server instant a live snapshot states
 * as just past (the revision's own captured instant, such as the start of the turn a roll
 * began) is at most the server's time when the snapshot arrives, so
 * `offset >= instant - arrival`. The estimate is the largest such bound, and never below
 * zero: a server clock AHEAD of the page's is detected (a view would otherwise show more
 * time than is left), one BEHIND it is not, which only ever shows a clock with less time
 * than it has — the safe side for a turn clock and a countdown.
 */
export class ServerClock {
  private offset = 0;

  constructor(private readonly localNow: () => number = () => Date.now()) {}

  /** `serverMs` is a server instant already past when the page's clock read `atLocalMs`. */
  observe(serverMs: number, atLocalMs: number = this.localNow()): void {
    if (!Number.isFinite(serverMs)) return;
    this.offset = Math.max(this.offset, serverMs - atLocalMs);
  }

  /** The estimated server time now. */
  now(): number {
    return this.localNow() + this.offset;
  }

  /** How far ahead of the page's clock the server's is estimated to be (ms, never negative). */
  get ahead(): number {
    return this.offset;
  }
}
