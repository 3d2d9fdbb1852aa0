/**
 * Builds the app into libs/edge/assets/web, which the engine embeds and serves at `/`
 * (libs/edge/src/assets.rs). File names are fixed (no content hashes): the server lists each
 * file at compile time, and `test/bundle.test.ts` fails when the committed bundle differs
 * from a fresh build. Each catalog game's public presentation files (cover, thumbnail,
 * icon, sounds: its `game.json`'s resources) are copied to `games/<id>/<path>`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vitest/config";

const here = dirname(fileURLToPath(import.meta.url));
/** The games with a presentation module (`src/games/<id>.ts`). */
const GAMES = readdirSync(join(here, "src/games"))
  .filter((f) => f.endsWith(".ts") && f !== "types.ts" && f !== "index.ts")
  .map((f) => f.slice(0, -3))
  .sort();
export const OUT_DIR = join(here, "../../libs/edge/assets/web");

function gameResources(): Plugin {
  return {
    name: "juegoland-game-resources",
    generateBundle() {
      for (const id of GAMES) {
        const dir = join(here, "../../libs/games", id, "package");
        const manifest = JSON.parse(readFileSync(join(dir, "game.json"), "utf8")) as { presentation: { resources: { path: string }[] } };
        for (const r of manifest.presentation.resources) {
          this.emitFile({ type: "asset", fileName: `games/${id}/${r.path}`, source: readFileSync(join(dir, r.path)) });
        }
      }
    },
  };
}

export default defineConfig({
  plugins: [gameResources()],
  build: {
    outDir: process.env.JUEGOLAND_WEB_OUT ?? OUT_DIR,
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
      },
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
