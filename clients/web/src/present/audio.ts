/**
 * Audio synchronized to markers: the `sound.play` effect and the channels it plays on.
 *
 * A sound step declares a channel, a policy — `mix` (play alongside), `replace` (stop what the
 * channel plays), `skip-if-busy` (skip when the channel plays) — and the longest delay it
 * tolerates between its trigger (a marker) and its start: a sound that arrives later has
 * lost its relation to the move and is skipped. A browser that blocks audio never blocks
 * play: a refused or failing sound just ends.
 */
import type { Effect, EffectHandle } from "./coordinator";
import type { Resources } from "./resources";

export interface Playing {
  /** Resolves when the sound has ended (or was stopped); rejects if the browser refuses it. */
  ended: Promise<void>;
  stop(): void;
}

/** Plays a loaded sound; the browser's is `htmlAudioBackend`. */
export interface AudioBackend {
  /** Loads the sound at `url`; rejects when it cannot. */
  load(url: string, signal: AbortSignal): Promise<unknown>;
  play(sound: unknown): Playing;
}

export class Mixer {
  private readonly channels = new Map<string, Set<Playing>>();
  /** What the mixer decided, newest last (tests and the debug log read it). */
  readonly log: string[] = [];

  constructor(readonly backend: AudioBackend) {}

  busy(channel: string): boolean {
    return (this.channels.get(channel)?.size ?? 0) > 0;
  }

  /** Starts `sound` on `channel` under `policy`; null when skipped. */
  start(channel: string, policy: "mix" | "replace" | "skip-if-busy", sound: unknown, label: string): Playing | null {
    const playing = this.channels.get(channel) ?? new Set<Playing>();
    this.channels.set(channel, playing);
    if (policy === "skip-if-busy" && playing.size > 0) {
      this.log.push(`skip-busy ${label}`);
      return null;
    }
    if (policy === "replace") {
      for (const p of playing) p.stop();
      playing.clear();
    }
    const p = this.backend.play(sound);
    playing.add(p);
    this.log.push(`play ${label} on ${channel}`);
    const done = () => playing.delete(p);
    p.ended.then(done, done);
    return p;
  }

  stopAll(): void {
    for (const set of this.channels.values()) {
      for (const p of set) p.stop();
      set.clear();
    }
  }
}

/** `sound.play` `{resource}`: plays a declared sound resource when its step starts. */
export function soundEffect<P>(mixer: Mixer, resources: () => Resources | null): Effect<P> {
  return {
    kind: "audio",
    validParams: (p) => !!p && typeof (p as { resource?: unknown }).resource === "string",
    async prepare(params, ctx): Promise<EffectHandle> {
      const id = (params as { resource: string }).resource;
      const audio = ctx.step.audio ?? { channel: "effects", policy: "mix" as const, maxDelayMs: 200 };
      const resolved = await (resources()?.resolve(id) ?? Promise.resolve({ kind: "omit" as const }));
      let sound: unknown = null;
      if (resolved.kind === "url" && ctx.live()) {
        try {
          sound = await mixer.backend.load(resolved.url, ctx.signal);
        } catch {
          sound = null; // an optional sound falls back to silence
        }
      }
      let playing: Playing | null = null;
      return {
        async play() {
          if (sound === null || !ctx.live()) return;
          const delay = ctx.clock.now() - ctx.startedAt;
          if (delay > audio.maxDelayMs) {
            mixer.log.push(`late ${id} (${Math.round(delay)} ms > ${audio.maxDelayMs} ms)`);
            return;
          }
          playing = mixer.start(audio.channel, audio.policy, sound, id);
          if (!playing) return;
          try {
            await playing.ended;
          } catch {
            mixer.log.push(`blocked ${id}`); // the browser refused to play: never block the game
          }
        },
        dispose() {
          playing?.stop();
          playing = null;
        },
      };
    },
  };
}

const loaded = new Map<string, Promise<unknown>>();

function loadAudio(url: string): Promise<HTMLAudioElement> {
  return new Promise((resolve, reject) => {
    const a = new Audio();
    a.preload = "auto";
    a.addEventListener("canplaythrough", () => resolve(a), { once: true });
    a.addEventListener("error", () => reject(new Error(`cannot load ${url}`)), { once: true });
    a.src = url;
    a.load();
  });
}

/** Sounds through `HTMLAudioElement`s; each URL is loaded once (a failure is retried next time). */
export const htmlAudioBackend: AudioBackend = {
  load(url, signal) {
    let p = loaded.get(url);
    if (!p) {
      p = loadAudio(url);
      loaded.set(url, p);
      p.catch(() => loaded.delete(url));
    }
    return signal.aborted ? Promise.reject(new Error("aborted")) : p;
  },
  play(sound) {
    const a = (sound as HTMLAudioElement).cloneNode(true) as HTMLAudioElement;
    let stop: () => void = () => {};
    const ended = new Promise<void>((resolve, reject) => {
      stop = () => {
        a.pause();
        resolve();
      };
      a.addEventListener("ended", () => resolve(), { once: true });
      a.play().catch(reject);
    });
    return { ended, stop: () => stop() };
  },
};
