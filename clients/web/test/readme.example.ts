// The README's example for platform developers, type-checked by `npm run typecheck` (it is
// never run: it needs a platform). Keep it equal to the README's (test/readme.test.ts).
declare const matchId: string;
declare const platform: { tokenFor(principal: string): Promise<string> };

import { MatchClient, catalog, contractOf, storagePendingStore } from "@juegoland/client";
import { Coordinator, Mixer, htmlAudioBackend, soundEffect } from "@juegoland/client/present";
import { conecta4, type Projection } from "@juegoland/client/games";

const base = "https://juegos.example";
const entry = (await catalog(base)).find((g) => g.id === "conecta4")!;
const client = new MatchClient({
  baseUrl: base,
  matchId,                                    // from the platform's POST /v1/matches
  principal: "alice",
  accept: [contractOf(entry)],                // the contract this client reads
  getToken: () => platform.tokenFor("alice"), // a JWT whose sub is the principal; asked again when refused
  transport: "websocket",                     // or "socketio"
  pending: storagePendingStore(localStorage), // a pending move survives a reload
});

// The board and its presentation: the coordinator plays each contiguous transition's plan and
// alone installs the displayed projection (settle).
const board = conecta4.mount(document.getElementById("board")!, {
  command: (type, payload) => client.command(type, payload) !== null,
  offer: (type, payload) => client.offer(type, payload),
  locked: () => !client.canCommand || coord.animating || coord.stale,
  inFlight: () => client.inFlight.size,       // real-time (`queue`) commands awaiting receipts
  confirmed: () => (client.confirmed ? { ...client.confirmed, events: [] } : null),
  config: () => ({}),                         // the match's config, if the page knows it
  serverNow: () => Date.now(),                // or a ServerClock's estimate
  name: (seat) => seat,
  say: (text) => console.log(text),
  t: (key) => key,
});
const coord = new Coordinator<Projection>({
  effects: { ...board.effects, "sound.play": soundEffect(new Mixer(htmlAudioBackend), () => null) },
  buildPlan: (t) => conecta4.buildTransitionPlan(t),
  settle: (projection) => board.update(projection),
});
client.setListener({
  snapshot: (confirmed, events, live) => coord.receive({ ...confirmed, events }, events, live),
  rejected: (code) => console.log(`rejected: ${code}`), // STALE_REVISION, ILLEGAL_ACTION…
});
client.start();                        // connects, syncs, resends a pending command's status
client.command("drop", { column: 3 }); // from the confirmed snapshot's offer; null when not allowed now

export {};
