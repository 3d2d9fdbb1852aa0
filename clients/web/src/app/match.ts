/**
 * The match screen: a `MatchClient` (protocol), a `Coordinator` (presentation) and the game's
 * module (board, plan, texts), plus what stays usable whatever the board does — skip the
 * animation, sound, animations, language, leave, rematch.
 *
 * Board input is locked while a command is pending, the displayed view is stale, the
 * connection is down or a blocking animation runs (`locked`). A real-time game's input
 * (`queue` commands) is locked only by the connection, the end of the match and the bound
 * of commands in flight: it never waits for a view or an animation.
 *
 * A spectator (a `watch` link) syncs with a spectator grant instead of a seat: the same
 * board, no input. Each seat in the players' list says who plays it: the confirmed snapshot's
 * `controllers` when it carries them (a server sends them while some seat is not played by
 * its human: a bot, a hand-over, a replay, an agent), else what the platform API's match
 * summary and the link tell (a human, or a bot chosen at creation).
 */
import { MatchClient, type Confirmed, type QueueStats, type SeatController } from "../lib/client";
import { contractOf, createMatch, describeMatch, devToken, grantSpectator, type CatalogEntry } from "../lib/http";
import { storagePendingStore } from "../lib/pending";
import { ServerClock } from "../lib/servertime";
import { Coordinator, type Effect, type Transition } from "../present/coordinator";
import { Mixer, htmlAudioBackend, soundEffect } from "../present/audio";
import { Resources } from "../present/resources";
import type { GameModule, Projection, Renderer } from "../games/types";
import { el } from "./dom";
import { type Lang, LANGS, lang, onLangChange, setLang, t } from "./i18n";
import { prefs, savePrefs } from "./prefs";
import { type MatchLink, linkOf, remember } from "./routes";

export interface DebugState {
  confirmed: number | null;
  displayed: number | null;
  animating: boolean;
  pending: string | null;
  connection: string;
  locked: boolean;
  result: boolean;
  sounds: string[];
  /** Every projection the board displayed, in order, with why (the coordinator's settle reason). */
  history: [number, string][];
  /** The displayed and the confirmed views (the tests compare the board with them). */
  view: unknown;
  confirmedView: unknown;
  /** The recipient's seat (null for a spectator). */
  seat: string | null;
  /** What happened to the real-time commands sent, and how many are in flight. */
  queue: QueueStats & { inFlight: number };
  /** Who plays each seat, as the players' list says it. */
  controllers: Record<string, SeatController>;
}

declare global {
  interface Window {
    __juegoland?: () => DebugState;
  }
}

export function resourcesOf(game: GameModule): Resources {
  return new Resources(
    game.manifest.presentation.resources,
    (d) => `/games/${game.id}/${d.path}`,
    (url, d) =>
      d.type === "image"
        ? new Promise<void>((resolve, reject) => {
            const img = new Image();
            img.onload = () => resolve();
            img.onerror = () => reject(new Error(`cannot load ${url}`));
            img.src = url;
          })
        : fetch(url, { method: "HEAD" }).then((r) => {
            if (!r.ok) throw new Error(`${url}: ${r.status}`);
          }),
  );
}

export function mountMatch(root: HTMLElement, game: GameModule, entry: CatalogEntry, link: MatchLink, leave: () => void): () => void {
  /** Seats' names and holders the platform API told (a spectator's link may carry none). */
  const known: Record<string, string> = { ...link.names };
  const names = (seat: string): string => {
    const n = known[seat];
    if (!n) return seat;
    if (n.startsWith("bot:")) {
      // Several bots are told apart by their number.
      const bots = Object.keys(known).filter((s) => known[s]!.startsWith("bot:")).sort();
      return bots.length > 1 ? t("match.bot-n", { n: bots.indexOf(seat) + 1 }) : t("match.bot");
    }
    return n;
  };
  const resources = resourcesOf(game);
  const mixer = new Mixer(htmlAudioBackend);
  const serverClock = new ServerClock();
  /** The newest revision an applied `queue` receipt promised a view of. */
  let appliedRevision = 0;
  let message = "";
  let lastChange = "";
  let stopped: string | null = null;
  const history: [number, string][] = [];

  // ---- layout ----
  const title = el("h1", { id: "match-title" });
  const status = el("p", { id: "status", class: "status" });
  const players = el("ul", { id: "players", class: "players" });
  const conn = el("span", { id: "conn", class: "conn" });
  const rev = el("span", { id: "rev", class: "rev" });
  const last = el("p", { id: "last", class: "last" });
  const msg = el("p", { id: "msg", class: "msg", role: "alert" });
  const live = el("div", { id: "announce", class: "sr-only", "aria-live": "polite", "aria-atomic": "false" });
  const boardHost = el("div", { id: "board", class: "board" });
  const share = el("p", { id: "share", class: "share" });
  const skipBtn = el("button", { type: "button", class: "tool", id: "skip", onclick: () => coord.skip() });
  const soundBtn = el("button", { type: "button", class: "tool", id: "sound", onclick: () => toggle("sound") });
  const motionBtn = el("button", { type: "button", class: "tool", id: "motion", onclick: () => toggle("motion") });
  const langSel = el("select", { id: "lang", onchange: () => setLang(langSel.value as Lang) });
  const langLabel = el("label", { for: "lang", id: "lang-label" });
  const rematchBtn = el("button", { type: "button", class: "primary", id: "rematch", hidden: true, onclick: () => void rematch() });
  const leaveBtn = el("button", { type: "button", class: "tool", id: "leave", onclick: () => leave() });
  const statusBox = el("section", { class: "match-status" }, status, players, last, msg);
  const main = el(
    "main",
    { id: "main", class: "match" },
    el("header", { class: "match-head" }, title, el("div", { class: "meta" }, conn, " · ", rev)),
    statusBox,
    boardHost,
    el("div", { class: "controls" }, skipBtn, soundBtn, motionBtn, langLabel, langSel, leaveBtn, rematchBtn),
    share,
    live,
  );
  root.replaceChildren(main);

  // ---- presentation ----
  let renderer: Renderer | null = null;
  const api = {
    command: (type: string, payload?: Record<string, unknown>) => {
      if (locked()) return false;
      if (!game.realtime) message = "";
      const sent = client.command(type, payload) !== null;
      paint();
      return sent;
    },
    offer: (type: string, payload?: Record<string, unknown>) => (locked() ? undefined : client.offer(type, payload)),
    locked: () => locked(),
    inFlight: () => client.inFlight.size + (client.confirmed && client.confirmed.revision < appliedRevision ? 1 : 0),
    confirmed: () => (client.confirmed ? { ...client.confirmed, events: [] } : null),
    config: () => ({ ...(entry.defaultConfig ?? {}), ...((link.config as Record<string, unknown> | undefined) ?? {}) }),
    serverNow: () => serverClock.now(),
    name: names,
    say: (text: string) => {
      message = text;
      paint();
    },
    t,
  };
  const effects: Record<string, Effect<Projection>> = {};
  renderer = game.mount(boardHost, api);
  Object.assign(effects, renderer.effects, { "sound.play": soundEffect<Projection>(mixer, () => resources) });
  const coord = new Coordinator<Projection>({
    effects,
    buildPlan: (tr: Transition<Projection>) => game.buildTransitionPlan(tr),
    settle: (p, reason) => {
      renderer!.update(p);
      history.push([p.revision, reason]);
      paint();
    },
    prefs: prefs(),
    onChange: () => paint(),
    onProblem: (m) => console.warn(`presentation: ${m}`),
  });

  // ---- protocol ----
  const client = new MatchClient({
    baseUrl: location.origin,
    matchId: link.matchId,
    principal: link.watch ? "spectator" : link.as,
    accept: [contractOf(entry)],
    // A spectator's token is a grant for this one match; a player's, the dev server's token.
    getToken: () => (link.watch ? grantSpectator(location.origin, link.matchId) : devToken(location.origin, link.as)),
    transport: new URLSearchParams(location.search).get("transport") === "socketio" ? "socketio" : "websocket",
    pending: storagePendingStore(localStorage),
    listener: {
      snapshot(c: Confirmed, events, isLive) {
        const p: Projection = { ...c, events };
        const arrived = Date.now();
        for (const ms of game.instants?.(p, isLive) ?? []) serverClock.observe(ms, arrived);
        const from = coord.confirmed;
        if (isLive && from) {
          const said = game.describe({ from, to: p, events }, api);
          if (said.length) {
            lastChange = said.join(" ");
            announce(lastChange);
          }
        }
        const wasOver = !!coord.confirmed?.result;
        coord.receive(p, events, isLive);
        if (p.result && !wasOver) announce(resultText(p));
      },
      status: () => paint(),
      queued(receipt, command) {
        if (receipt.status === "applied" && receipt.revision !== null) appliedRevision = Math.max(appliedRevision, receipt.revision);
        renderer?.queued?.(receipt, command);
      },
      rejected(code) {
        message = t(`rejection.${code}`);
        paint();
      },
      error(e) {
        const key = `error.${e.code}`;
        message = t(key) === key ? t("error.generic", { code: e.code }) : t(key);
        paint();
      },
      stopped(code) {
        stopped = code;
        paint();
      },
    },
  });

  function locked(): boolean {
    if (link.watch) return true;
    if (game.realtime) return !client.canEnqueue || !!coord.displayed?.result;
    return client.pending !== null || coord.stale || client.connection !== "open" || coord.animating || !!coord.displayed?.result || !client.canCommand;
  }

  /** Who plays `seat`: the confirmed snapshot's word when it carries one, else the summary or the link. */
  const holders: Record<string, SeatController> = {};
  function controllerOf(seat: string): SeatController {
    return client.confirmed?.controllers?.[seat] ?? holders[seat] ?? (known[seat]?.startsWith("bot:") ? "bot" : "human");
  }

  /** A seat in the players' list: its name, "(you)", and who plays it when it is not its human. */
  function seatLabel(seat: string, mine: boolean): string {
    const base = mine ? t("seat.you", { name: names(seat) }) : names(seat);
    const c = controllerOf(seat);
    if (c === "bot") return known[seat]?.startsWith("bot:") ? base : `${base} (${t("controller.bot")})`;
    if (c === "handover") return t("controller.handover", { name: base });
    if (c === "agent") return `${base} (${t("controller.agent")})`;
    if (c === "replay") return `${base} (${t("controller.replay")})`;
    return base;
  }

  function announce(text: string) {
    if (!text) return;
    live.append(el("p", { text }));
    while (live.childNodes.length > 5) live.firstChild!.remove();
  }

  function resultText(p: Projection): string {
    const r = p.result!;
    const special = game.resultText?.(p, api);
    if (special) return special;
    const reasonKey = `${game.id}.reason.${r.reasonCode}`;
    const reason = t(reasonKey) === reasonKey ? r.reasonCode : t(reasonKey);
    if (r.kind === "cancelled") return `${t("result.cancelled")} (${reason})`;
    const mine = p.seat ? r.participants[p.seat] : undefined;
    let text: string;
    if (mine?.outcome === "win") text = t("result.win");
    else if (mine?.outcome === "loss") text = t("result.loss");
    else if (mine?.outcome === "draw") text = t("result.draw");
    else {
      const winner = Object.keys(r.participants).find((s) => r.participants[s]!.outcome === "win");
      text = winner ? t("result.winner", { name: names(winner) }) : t("result.over");
    }
    return `${text} (${reason})`;
  }

  function statusText(): string {
    if (stopped) return t("status.stopped", { code: stopped });
    const d = coord.displayed;
    if (!d) return client.connection === "open" ? t("match.loading") : t("status.connecting");
    if (d.result && !coord.stale) return resultText(d);
    if (client.connection !== "open") return client.pending ? t("status.offline-pending") : t("status.offline");
    if (client.pending) return t("status.sending");
    if (!game.realtime && (coord.animating || coord.stale)) return t("status.animating");
    return game.status(d, api) ?? t("status.spectating");
  }

  let lastLocked: boolean | null = null;
  function paint() {
    document.title = `${t(`${game.id}:game.title`)} · Juegoland`;
    title.textContent = t(`${game.id}:game.title`);
    status.textContent = statusText();
    status.dataset.locked = String(locked());
    conn.textContent = t(`conn.${client.connection}`);
    conn.dataset.state = client.connection;
    rev.textContent = coord.displayed ? t("match.revision", { revision: coord.displayed.revision }) : "";
    last.textContent = lastChange;
    msg.textContent = message;
    const seat = coord.displayed?.seat ?? null;
    const seats = new Set([...Object.keys(known), ...Object.keys(client.confirmed?.controllers ?? {})]);
    players.replaceChildren(
      ...[...seats]
        .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))
        .map((s) => el("li", { class: `player ${s}`, "data-seat": s, "data-controller": controllerOf(s) }, el("span", { class: `token ${s}`, "aria-hidden": "true" }), seatLabel(s, s === seat))),
    );
    players.setAttribute("aria-label", t("match.players"));
    statusBox.setAttribute("aria-label", t("match.status"));
    skipBtn.textContent = t("match.skip");
    skipBtn.disabled = !coord.animating;
    const pr = prefs();
    soundBtn.textContent = pr.sound ? t("match.sound-on") : t("match.sound-off");
    soundBtn.setAttribute("aria-pressed", String(!pr.sound));
    motionBtn.textContent = pr.motion === "full" ? t("match.motion-on") : t("match.motion-off");
    motionBtn.setAttribute("aria-pressed", String(pr.motion !== "full"));
    langLabel.textContent = t("match.language");
    if (!langSel.options.length) for (const l of LANGS) langSel.append(el("option", { value: l, text: l === "es" ? "Español" : "English" }));
    langSel.value = lang();
    leaveBtn.textContent = t("match.leave");
    rematchBtn.textContent = t("match.rematch");
    rematchBtn.hidden = !(coord.displayed?.result && !coord.stale && coord.displayed.seat && !link.watch);
    const l = locked();
    if (l !== lastLocked) {
      lastLocked = l;
      renderer?.refresh();
    }
  }

  function toggle(what: "sound" | "motion") {
    const p = prefs();
    if (what === "sound") p.sound = !p.sound;
    else p.motion = p.motion === "full" ? "off" : "full";
    savePrefs(p);
    coord.setPreferences(p);
    if (!p.sound) mixer.stopAll();
    paint();
  }

  async function rematch() {
    const seats: Record<string, string | { bot: string }> = {};
    for (const [s, n] of Object.entries(link.names)) seats[s] = n.startsWith("bot:") ? { bot: n.slice(4) } : n;
    try {
      const created = await createMatch(location.origin, game.id, seats, link.config ?? {});
      const next: MatchLink = { ...link, matchId: created.matchId };
      remember(next);
      location.assign(linkOf(next));
    } catch (e) {
      message = String((e as Error).message);
      paint();
    }
  }

  // A spectator is told so; a player may hand a friend their link.
  const friend = Object.entries(link.names).find(([, n]) => n !== link.as && !n.startsWith("bot:"));
  if (link.watch) share.textContent = t("match.watching");
  else if (friend && link.host) {
    const url = location.origin + linkOf({ ...link, as: friend[1], host: false });
    share.replaceChildren(document.createTextNode(t("match.share", { name: friend[1] }) + " "), el("a", { href: url, id: "friend-link", text: url }));
  }

  const offLang = onLangChange(() => {
    if (link.watch) share.textContent = t("match.watching");
    renderer?.refresh();
    paint();
  });
  const onVisible = () => {
    if (document.visibilityState === "visible") client.recover();
  };
  const onOnline = () => client.reconnectNow();
  document.addEventListener("visibilitychange", onVisible);
  window.addEventListener("online", onOnline);
  window.__juegoland = () => ({
    confirmed: coord.confirmed?.revision ?? null,
    displayed: coord.displayed?.revision ?? null,
    animating: coord.animating,
    pending: client.pending?.commandId ?? null,
    connection: client.connection,
    locked: locked(),
    result: !!coord.displayed?.result,
    sounds: mixer.log.slice(),
    history: history.slice(),
    view: coord.displayed?.view ?? null,
    confirmedView: coord.confirmed?.view ?? null,
    seat: client.confirmed?.seat ?? null,
    queue: { ...client.queueStats, inFlight: client.inFlight.size },
    controllers: Object.fromEntries([...new Set([...Object.keys(known), ...Object.keys(client.confirmed?.controllers ?? {})])].map((s) => [s, controllerOf(s)])),
  });
  // The seats' names and holders from the platform API's summary (a spectator's link may
  // carry none; a bot there is a bot until the server's snapshots say otherwise).
  describeMatch(location.origin, link.matchId).then(
    (summary) => {
      for (const s of summary.seats) {
        if ("principal" in s.controller) {
          holders[s.seat] = "human";
          known[s.seat] ??= s.controller.principal;
        } else {
          // A bot, an agent or a replay script: not a person.
          holders[s.seat] = "bot";
          known[s.seat] ??= `bot:${"profile" in s.controller ? s.controller.profile : s.seat}`;
        }
      }
      paint();
    },
    () => {
      /* A platform that guards its API: the link's names stand. */
    },
  );
  // Sounds load ahead, so the first impact is not late (a failure just means silence).
  for (const r of game.manifest.presentation.resources.filter((d) => d.type === "sound")) {
    void resources.resolve(r.id).then((x) => x.kind === "url" && htmlAudioBackend.load(x.url, new AbortController().signal).catch(() => {}));
  }
  paint();
  client.start();
  return () => {
    offLang();
    document.removeEventListener("visibilitychange", onVisible);
    window.removeEventListener("online", onOnline);
    client.close();
    coord.dispose();
    mixer.stopAll();
    renderer?.dispose();
  };
}
