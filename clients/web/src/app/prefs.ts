/** The player's presentation preferences: sound and animations, remembered per browser. */
import type { Preferences } from "../present/coordinator";

const KEY = "juegoland.prefs";

export function prefs(): Preferences {
  const reduced = typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
  let saved: Partial<Preferences> = {};
  try {
    saved = JSON.parse(localStorage.getItem(KEY) ?? "{}") as Partial<Preferences>;
  } catch {
    /* none */
  }
  const motion = saved.motion === "off" ? "off" : reduced ? "reduced" : "full";
  return { motion, sound: saved.sound !== false };
}

export function savePrefs(p: Preferences): void {
  try {
    localStorage.setItem(KEY, JSON.stringify({ motion: p.motion === "off" ? "off" : "full", sound: p.sound }));
  } catch {
    /* no storage */
  }
}
