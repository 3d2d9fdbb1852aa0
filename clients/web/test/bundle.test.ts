// The committed bundle (libs/edge/assets/web, embedded in the engine's binary) is what the
// sources build: a fresh `vite build` into a temporary directory must produce the same files,
// byte for byte. Stale? Run `npm run build` in clients/web and commit libs/edge/assets/web.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { build } from "vite";
import { afterAll, expect, it } from "vitest";
import { OUT_DIR } from "../vite.config";

const out = mkdtempSync(join(tmpdir(), "juegoland-web-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function files(dir: string): Map<string, Buffer> {
  const found = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else found.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return found;
}

it("libs/edge/assets/web is what clients/web builds (else: npm run build in clients/web)", async () => {
  // Vitest runs with NODE_ENV=test, which a build would inline; build as `npm run build` does.
  const env = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({ root: join(__dirname, ".."), mode: "production", logLevel: "silent", build: { outDir: out, emptyOutDir: true } });
  } finally {
    process.env.NODE_ENV = env;
  }
  const fresh = files(out);
  const committed = files(OUT_DIR);
  expect([...committed.keys()].sort(), "the committed bundle's files").toEqual([...fresh.keys()].sort());
  const stale = [...fresh].filter(([path, bytes]) => !committed.get(path)?.equals(bytes)).map(([p]) => p);
  expect(stale, "stale files: run `npm run build` in clients/web").toEqual([]);
}, 120_000);
