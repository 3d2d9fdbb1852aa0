// The client library as platform developers get it: `npm run pack:lib` builds the package
// `@juegoland/client` (scripts/pack-lib.mjs); it is installed from its tarball into a fresh
// project, which runs it under plain Node (no bundler, no TypeScript, no global WebSocket on
// Node 20: the package's optional `ws` comes with it) and type-checks README.md's example
// (test/readme.example.ts) against the package's own declarations. Against the real server,
// services/juegoland/tests/it/client_library.rs does more with the same tarball.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { packLib } from "../scripts/pack-lib.mjs";

const web = join(__dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "juegoland-client-package-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RUN = `
import { MatchClient, memoryPendingStore } from "@juegoland/client";
import { Coordinator } from "@juegoland/client/present";
import { GAMES } from "@juegoland/client/games";

// Nothing listens on port 9: each transport's attempt ends in a typed close, not a throw.
const closes = [];
for (const transport of ["websocket", "socketio"]) {
  const c = new MatchClient({
    baseUrl: "http://127.0.0.1:9",
    matchId: "00000000-0000-4000-8000-000000000001",
    principal: "alice",
    accept: [],
    getToken: async () => "token",
    transport,
    listener: { disconnected: (info) => closes.push([transport, info.kind, info.opened]) },
  });
  c.start();
  const deadline = Date.now() + 10000;
  while (c.lastClose === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  c.close();
}
const client = new MatchClient({
  baseUrl: "http://127.0.0.1:9",
  matchId: "00000000-0000-4000-8000-000000000001",
  principal: "alice",
  accept: [],
  getToken: async () => "token",
  transport: "websocket",
  pending: memoryPendingStore(),
});
const settled = [];
const coord = new Coordinator({
  effects: {},
  buildPlan: () => ({ format: "juegoland.presentation-plan", formatVersion: 1, id: "empty", steps: [] }),
  settle: (p, why) => settled.push([p.revision, why]),
});
coord.receive({ revision: 1 }, [], false);
coord.receive({ revision: 2 }, [], true);
await new Promise((r) => setTimeout(r, 50));
const games = Object.fromEntries(Object.entries(GAMES).map(([id, g]) => [id, typeof g.buildTransitionPlan]));
console.log(JSON.stringify({ pending: client.pending, settled, games, closes }));
`;

it("installs from its tarball, runs under Node and type-checks README.md's example", { timeout: 180_000 }, async () => {
  const tarball = await packLib(join(dir, "package"));
  const project = join(dir, "project");
  execFileSync("mkdir", ["-p", project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "platform", private: true, type: "module" }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", tarball], { cwd: project, stdio: "pipe" });
  const manifest = JSON.parse(readFileSync(join(project, "node_modules/@juegoland/client/package.json"), "utf8"));
  expect(manifest.optionalDependencies, "the package's one dependency: ws, optional (Node 20's WebSocket)").toEqual({ ws: expect.stringMatching(/^\^8\./) });
  expect(existsSync(join(project, "node_modules/ws/package.json")), "ws is installed with the package").toBe(true);

  // Runs: each entry point loads, the coordinator settles a live transition in order.
  writeFileSync(join(project, "run.mjs"), RUN);
  const out = JSON.parse(execFileSync(process.execPath, ["run.mjs"], { cwd: project, encoding: "utf8" }));
  expect(out.pending).toBeNull();
  expect(out.closes).toEqual([
    ["websocket", "network", false],
    ["socketio", "network", false],
  ]);
  expect(out.settled).toEqual([
    [1, "sync"],
    [2, "plan"],
  ]);
  expect(Object.keys(out.games).sort()).toEqual(["brisca", "conecta4", "hundido", "laberinto", "oca", "serpientes", "solitario"]);
  expect(Object.values(out.games).every((t) => t === "function")).toBe(true);

  // Type-checks: README.md's example, against the installed package's declarations.
  copyFileSync(join(web, "test/readme.example.ts"), join(project, "example.ts"));
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023", "DOM"], strict: true, noEmit: true, types: [] },
      include: ["example.ts"],
    }),
  );
  const tsc = join(web, "node_modules/typescript/bin/tsc");
  const checked = (() => {
    try {
      execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, encoding: "utf8", stdio: "pipe" });
      return "";
    } catch (e) {
      return String((e as { stdout?: string }).stdout ?? e);
    }
  })();
  expect(checked, "README.md's example does not type-check against the package").toBe("");
});

it("the library (src/lib, src/present, src/protocol) imports nothing from the app", () => {
  const offenders: string[] = [];
  for (const dir of ["lib", "present", "protocol"]) {
    for (const file of readdirSync(join(web, "src", dir), { recursive: true }) as string[]) {
      if (!file.endsWith(".ts")) continue;
      const text = readFileSync(join(web, "src", dir, file), "utf8");
      for (const m of text.matchAll(/from\s+"([^"]+)"/g)) {
        if (/(^|\/)app(\/|$)|\.\.\/games/.test(m[1]!)) offenders.push(`src/${dir}/${file}: ${m[1]}`);
      }
    }
  }
  expect(offenders).toEqual([]);
});
