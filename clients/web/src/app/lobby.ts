/**
 * The lobby: the catalog with each game's cover (its package's `catalog.cover` resource, with
 * the declared fallback when it cannot load), a form per game (your name, against the
 * computer or a friend, a variant), the matches this browser can resume, and the matches
 * being played that a spectator grant can follow (a "watch" link for each active match of a
 * game with a spectator projection: `GET /v1/matches`, open in the dev profile).
 */
import { activeMatches, createMatch, type CatalogEntry, type MatchListing } from "../lib/http";
import type { GameModule } from "../games/types";
import { el } from "./dom";
import { t } from "./i18n";
import { resourcesOf } from "./match";
import { type MatchLink, linkOf, recent, remember } from "./routes";

export function mountLobby(root: HTMLElement, games: Record<string, GameModule>, catalog: CatalogEntry[] | Error): void {
  const list = el("ul", { class: "catalog", "aria-labelledby": "catalog-h" });
  const main = el("main", { id: "main", class: "lobby" }, el("h1", { id: "catalog-h", text: t("lobby.heading") }));
  if (catalog instanceof Error) {
    main.append(el("p", { class: "msg", role: "alert", text: t("lobby.catalog-error", { error: catalog.message }) }));
  } else {
    for (const entry of catalog) {
      const game = games[entry.id];
      if (game) list.append(card(game, entry));
    }
    main.append(list);
  }
  const mine = recent().filter((l) => games[l.game]);
  main.append(
    el("h2", { text: t("lobby.resume-heading") }),
    mine.length
      ? el(
          "ul",
          { class: "recent" },
          ...mine.map((l) =>
            el("li", {}, el("a", { href: linkOf(l), class: "resume", text: t("lobby.resume", { game: t(`${l.game}:game.title`), when: new Date(l.at ?? 0).toLocaleString() }) })),
          ),
        )
      : el("p", { text: t("lobby.none") }),
  );
  if (!(catalog instanceof Error)) {
    const watchable = new Set(catalog.filter((g) => g.spectators && games[g.id]).map((g) => g.id));
    const box = el("section", { class: "watch", "aria-labelledby": "watch-h" }, el("h2", { id: "watch-h", text: t("lobby.watch-heading") }));
    main.append(box);
    activeMatches(location.origin).then(
      (matches) => {
        const list = matches.filter((m) => watchable.has(m.game.id)).slice(0, 10);
        box.append(list.length ? el("ul", { class: "watch-list" }, ...list.map((m) => el("li", {}, watchLink(m)))) : el("p", { text: t("lobby.watch-none") }));
      },
      () => box.append(el("p", { class: "hint", text: t("lobby.watch-unavailable") })),
    );
  }
  root.replaceChildren(main);
}

/** A watch link for an active match: its seats' names ride along, as a player's link's do. */
function watchLink(m: MatchListing): HTMLElement {
  const names: Record<string, string> = {};
  for (const s of m.seats) names[s.seat] = "principal" in s.controller ? s.controller.principal : `bot:${"profile" in s.controller ? s.controller.profile : s.seat}`;
  const shown = m.seats.map((s) => ("principal" in s.controller ? s.controller.principal : t("match.bot")));
  const link: MatchLink = { matchId: m.matchId, game: m.game.id, as: "", names, watch: true };
  return el("a", { href: linkOf(link), class: "watch-link", "data-match": m.matchId, text: t("lobby.watch", { game: t(`${m.game.id}:game.title`), players: shown.join(t("lobby.versus")) }) });
}

function card(game: GameModule, entry: CatalogEntry): HTMLElement {
  const id = game.id;
  const solo = entry.maxSeats === 1;
  const cover = el("div", { class: "cover", "data-resource": "cover" });
  void resourcesOf(game)
    .resolve(game.manifest.presentation.catalog.cover)
    .then((r) => {
      const decl = game.manifest.presentation.resources.find((d) => d.id === game.manifest.presentation.catalog.cover);
      if (r.kind === "url") cover.append(el("img", { src: r.url, alt: t(`${id}:${decl?.alt ?? "game.title"}`), width: 1200, height: 630 }));
      else if (r.kind === "text") cover.append(el("span", { class: "cover-text", text: t(`${id}:${r.key}`) }));
      cover.dataset.state = r.kind;
    });
  const err = el("p", { class: "msg", role: "alert" });
  const nameId = `${id}-me`;
  const friendId = `${id}-friend`;
  const me = el("input", { type: "text", id: nameId, name: "me", autocomplete: "nickname", required: true, value: localStorage.getItem("juegoland.name") ?? "" });
  const friend = el("input", { type: "text", id: friendId, name: "friend", autocomplete: "off" });
  const friendWrap = el("p", { class: "field", hidden: true }, el("label", { for: friendId, text: t("lobby.friend-name") }), friend);
  const opp = solo
    ? null
    : el(
        "fieldset",
        { class: "opp" },
        el("legend", { text: t("lobby.opponent") }),
        el("label", {}, el("input", { type: "radio", name: `${id}-opp`, value: "bot", checked: true }), " ", t("lobby.vs-bot")),
        el("label", {}, el("input", { type: "radio", name: `${id}-opp`, value: "friend" }), " ", t("lobby.vs-friend")),
        friendWrap,
      );
  const presetSel = game.presets.length
    ? el("select", { id: `${id}-variant`, name: "variant" }, ...game.presets.map((p) => el("option", { value: p.id, text: t(p.label) })))
    : null;
  // The player counts on offer: the module's, else the catalog's when it has one (bots fill the rest).
  const counts = (game.seats ?? []).filter((n) => n >= entry.minSeats && n <= entry.maxSeats);
  const seatsSel =
    counts.length > 1
      ? el("select", { id: `${id}-players`, name: "players" }, ...counts.map((n) => el("option", { value: n, text: t("lobby.players-n", { n }) })))
      : null;
  const title = t(`${id}:game.title`);
  const form = el(
    "form",
    { class: "play", "aria-label": title },
    el("p", { class: "field" }, el("label", { for: nameId, text: t("lobby.name") }), me),
    opp,
    seatsSel ? el("p", { class: "field" }, el("label", { for: `${id}-players`, text: t("lobby.player-count") }), seatsSel) : null,
    presetSel ? el("p", { class: "field" }, el("label", { for: `${id}-variant`, text: t("lobby.variant") }), presetSel) : null,
    el("button", { class: "primary", type: "submit", text: t("lobby.play", { game: title }) }),
    err,
  );
  form.addEventListener("change", () => {
    const vsFriend = (form.querySelector<HTMLInputElement>(`input[name="${id}-opp"]:checked`)?.value ?? "bot") === "friend";
    friendWrap.hidden = !vsFriend;
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const name = me.value.trim();
    const vsFriend = !solo && (form.querySelector<HTMLInputElement>(`input[name="${id}-opp"]:checked`)?.value ?? "bot") === "friend";
    const other = friend.value.trim();
    if (!name) return void (err.textContent = t("lobby.name-needed"));
    if (vsFriend && (!other || other === name)) return void (err.textContent = t("lobby.names-differ"));
    localStorage.setItem("juegoland.name", name);
    const bot = entry.bots[0] ?? "default";
    const count = solo ? 1 : seatsSel ? Number(seatsSel.value) : counts[0] ?? Math.max(2, entry.minSeats);
    // You are p0; the friend, if any, p1; bots take every other seat.
    const names: Record<string, string> = { p0: name };
    for (let i = 1; i < count; i++) names[`p${i}`] = i === 1 && vsFriend ? other : `bot:${bot}`;
    const seats: Record<string, string | { bot: string }> = {};
    for (const [s, n] of Object.entries(names)) seats[s] = n.startsWith("bot:") ? { bot: n.slice(4) } : n;
    const preset = (game.presets.find((p) => p.id === presetSel?.value)?.config ?? {}) as Record<string, unknown>;
    const config = game.seatConfig ? { ...preset, ...game.seatConfig(count) } : preset;
    try {
      const created = await createMatch(location.origin, id, seats, config);
      const link: MatchLink = { matchId: created.matchId, game: id, as: name, names, config, host: vsFriend };
      remember(link);
      location.assign(linkOf(link));
    } catch (e) {
      err.textContent = (e as Error).message;
    }
  });
  const players = solo ? t("lobby.solo") : entry.minSeats === entry.maxSeats ? t("lobby.players-n", { n: entry.maxSeats }) : t("lobby.players", { min: entry.minSeats, max: entry.maxSeats });
  return el(
    "li",
    { class: "game", "data-game": id },
    el("article", { "aria-labelledby": `${id}-title` }, cover, el("h2", { id: `${id}-title`, text: title }), el("p", { text: t(`${id}:game.description`) }), el("p", { class: "hint", text: players }), form),
  );
}
