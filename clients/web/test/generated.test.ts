// The committed protocol types are what the committed JSON Schemas generate.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { OUT, generate } from "../scripts/gen-types.mjs";

it("src/protocol/generated.ts is fresh (else run `npm run gen` in clients/web)", async () => {
  const fresh: string = await generate();
  expect(readFileSync(OUT, "utf8") === fresh, "stale: run `npm run gen` in clients/web").toBe(true);
});
