// Spanish and English say the same things: every key of the app, of each game module and of
// each game package's translations exists in both languages.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GAMES } from "../src/games";
import { appMessages } from "../src/app/i18n";

/** The rejection codes of the committed protocol schema: a new code without a sentence fails. */
const REJECTION_CODES: string[] = JSON.parse(
  readFileSync(new URL("../../../libs/protocol/schemas/server-message.json", import.meta.url), "utf8"),
).$defs.RejectionCode.oneOf.map((c: { const: string }) => c.const);

const keys = (o: Record<string, string>) => Object.keys(o).sort();

describe("es and en", () => {
  it("the app's keys", () => expect(keys(appMessages.es)).toEqual(keys(appMessages.en)));
  it("every rejection code is a sentence in both", () => {
    for (const l of ["es", "en"] as const) {
      expect(REJECTION_CODES.length).toBeGreaterThan(5);
      for (const code of REJECTION_CODES) {
        expect(appMessages[l][`rejection.${code}`], `${l} rejection.${code}`).toMatch(/\.$/);
      }
    }
  });
  for (const game of Object.values(GAMES)) {
    it(`${game.id}'s module keys`, () => expect(keys(game.messages.es)).toEqual(keys(game.messages.en)));
    it(`${game.id}'s package translations`, () => {
      expect(keys(game.manifest.translations.es ?? {})).toEqual(keys(game.manifest.translations.en ?? {}));
      expect(game.manifest.translations.es?.["game.title"]).toBeTruthy();
    });
  }
});
