// Builds the client library as an npm package of its own, `@juegoland/client`, for platform
// developers who render matches in their own pages: `npm run pack:lib [DIR]` writes the
// package to DIR (default dist/client) and packs it (`npm pack`) into a tarball there, which
// `npm install <tarball>` installs. Three entry points, as in README.md:
//   "@juegoland/client"          the protocol's types, MatchClient, transports, pending store
//   "@juegoland/client/present"  the presentation coordinator, audio, resources, card art
//   "@juegoland/client/games"    each catalog game's presentation module
// JavaScript: ES modules built by Vite in library mode (socket.io-client, the games' package
// manifests and card art are bundled in). Types: tsc's declarations (tsconfig.lib.json).
// One optional dependency, `ws`: the WebSocket of Node 20, which has no global one
// (src/lib/transport.ts imports it lazily, only then, through a specifier bundlers do not
// follow). Optional rather than peer: npm installs it by default, so plain Node 20 works with
// no setup, while `--omit=optional` leaves it out and browser bundles never contain it.
// test/package.test.ts builds it, installs it into a fresh project, runs it under Node and
// type-checks README.md's example against it.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const ENTRIES = { index: "lib", present: "present", games: "games" };

/** Builds the package into `out`; answers the tarball's path. */
export async function packLib(out) {
  out = resolve(out);
  rmSync(out, { recursive: true, force: true });
  await build({
    configFile: false,
    root: web,
    logLevel: "warn",
    build: {
      outDir: out,
      emptyOutDir: true,
      minify: false,
      sourcemap: true,
      lib: {
        entry: Object.fromEntries(Object.entries(ENTRIES).map(([name, dir]) => [name, join(web, "src", dir, "index.ts")])),
        formats: ["es"],
      },
      rollupOptions: { output: { entryFileNames: "[name].js", chunkFileNames: "chunks/[name].js" } },
    },
  });
  execFileSync(process.execPath, [join(web, "node_modules/typescript/bin/tsc"), "-p", join(web, "tsconfig.lib.json"), "--outDir", join(out, "types")], { stdio: "inherit" });
  const source = JSON.parse(readFileSync(join(web, "package.json"), "utf8"));
  const exports = Object.fromEntries(
    Object.entries(ENTRIES).map(([name, dir]) => [name === "index" ? "." : `./${name}`, { types: `./types/${dir}/index.d.ts`, import: `./${name}.js` }]),
  );
  const manifest = {
    name: source.name,
    version: source.version,
    description: "Juegoland's client library: the protocol client (WebSocket or Socket.IO, sync barrier, pending commands), the presentation coordinator and the games' presentation modules",
    license: "Apache-2.0",
    type: "module",
    engines: source.engines,
    sideEffects: false,
    exports,
    // The version the tests run with (package.json's devDependencies), or any later 8.x.
    optionalDependencies: { ws: `^${source.devDependencies.ws}` },
  };
  writeFileSync(join(out, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(out, "README.md"), "# @juegoland/client\n\nBuilt from the Juegoland repository's `clients/web` (`npm run pack:lib`); its README, \"The client library, for platform developers\", shows how to use it.\n");
  const tarball = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: out, encoding: "utf8" }).trim().split("\n").at(-1);
  return join(out, tarball);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await packLib(process.argv[2] ?? join(web, "dist/client")));
}
