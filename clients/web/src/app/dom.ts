/** A small element builder: `el("button", {type: "button", onclick}, "text")`. */
export type Props = Record<string, unknown>;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: (Node | string | null | undefined | false)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = String(v);
    else if (k === "text") e.textContent = String(v);
    else if (k === "style") e.style.cssText = String(v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v as EventListener);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

/** Runs a Web Animation; resolves when it finishes or the signal aborts (cancelling it). */
export function animate(target: Element, keyframes: Keyframe[], ms: number, signal: AbortSignal, easing = "ease-out"): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  const a = target.animate(keyframes, { duration: ms, easing, fill: "forwards" });
  return new Promise((resolve) => {
    const stop = () => {
      a.cancel();
      resolve();
    };
    signal.addEventListener("abort", stop, { once: true });
    a.finished.then(
      () => {
        signal.removeEventListener("abort", stop);
        resolve();
      },
      () => resolve(),
    );
  });
}

/** Waits `ms` on the effect's clock unless the signal aborts first. */
export function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}
