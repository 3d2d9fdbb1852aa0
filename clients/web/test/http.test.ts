// The platform HTTP calls of the client library: the platform token as a bearer, JSON bodies
// declared as such, and a refusal typed with its code and the field it names.
import { afterEach, expect, it, vi } from "vitest";
import { HttpError, createMatch, describeMatch } from "../src/lib/http";
import type { MatchSummary } from "../src/protocol/generated";

afterEach(() => vi.unstubAllGlobals());

function answering(status: number, body: unknown) {
  const calls: { url: string; init: RequestInit }[] = [];
  vi.stubGlobal("fetch", async (url: URL, init: RequestInit) => {
    calls.push({ url: String(url), init });
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  });
  return calls;
}

it("sends the platform token and JSON, and types a refusal with its field", async () => {
  const calls = answering(400, { code: "INVALID_SEATS", message: "seats.p1: conecta4 needs exactly 2 seats", field: "seats.p1" });
  const refused = await createMatch("http://server", "conecta4", { p0: "alice", p2: { agent: "default" } }, {}, {
    platformToken: "secret",
    more: { expiry: { unjoinedMs: 0, idleMs: 3_600_000 }, handover: { kind: "forfeit", afterMs: 30_000 } },
  }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(HttpError);
  expect(refused).toMatchObject({ status: 400, code: "INVALID_SEATS", field: "seats.p1" });
  const headers = calls[0].init.headers as Record<string, string>;
  expect(headers.authorization).toBe("Bearer secret");
  expect(headers["content-type"]).toBe("application/json");
  expect(JSON.parse(String(calls[0].init.body))).toEqual({
    game: "conecta4",
    seats: { p0: "alice", p2: { agent: "default" } },
    config: {},
    expiry: { unjoinedMs: 0, idleMs: 3_600_000 },
    handover: { kind: "forfeit", afterMs: 30_000 },
  });
});

it("reads a summary with every kind of controller and who made the moves", async () => {
  const summary: MatchSummary = {
    matchId: "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69",
    game: { id: "conecta4", rulesVersion: "1.0.0" },
    gameVersion: "1.0.0",
    rulesDigest: "d",
    package: null,
    status: "finished",
    revision: 9,
    seats: [
      { seat: "p0", controller: { kind: "agent", profile: "default" }, status: "active", moves: { own: 4, standIn: 0 } },
      { seat: "p1", controller: { kind: "handover", principal: "bob", profile: "default" }, status: "active", moves: { own: 1, standIn: 3 } },
    ],
    result: { kind: "cancelled", reasonCode: "match.expired.abandoned" },
    createdMs: 1_796_551_200_000,
  };
  const calls = answering(200, summary);
  const read = await describeMatch("http://server", summary.matchId, { platformToken: "secret" });
  expect(read.seats[1].moves).toEqual({ own: 1, standIn: 3 });
  expect((calls[0].init.headers as Record<string, string>).authorization).toBe("Bearer secret");
  expect((calls[0].init.headers as Record<string, string>)["content-type"]).toBeUndefined();
});
