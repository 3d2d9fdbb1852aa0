// The README's client-library example is the type-checked one in test/readme.example.ts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";

it("README.md's example is test/readme.example.ts (which tsc checks)", () => {
  const readme = readFileSync(join(__dirname, "../../../README.md"), "utf8");
  const example = readFileSync(join(__dirname, "readme.example.ts"), "utf8");
  const code = /```ts\n(import \{ MatchClient[\s\S]*?)```/.exec(readme)?.[1];
  expect(code, "the README has no client-library example").toBeTruthy();
  expect(example.includes(code!), "the README's example differs from test/readme.example.ts: copy it over").toBe(true);
});
