/** The app the engine serves at `/`: the lobby, or a match when the URL names one. */
import "./styles.css";
import { catalog } from "../lib/http";
import { GAMES } from "../games";
import { el } from "./dom";
import { LANGS, addMessages, lang, onLangChange, setLang, t } from "./i18n";
import { mountLobby } from "./lobby";
import { mountMatch } from "./match";
import { parseLink, remember } from "./routes";

for (const game of Object.values(GAMES)) {
  addMessages(game.messages);
  for (const l of LANGS) {
    const tr = game.manifest.translations[l] ?? {};
    addMessages({ [l]: Object.fromEntries(Object.entries(tr).map(([k, v]) => [`${game.id}:${k}`, v])) });
  }
}

const app = document.getElementById("app")!;
setLang(lang());

async function boot() {
  const link = parseLink(location.search);
  let entries;
  try {
    entries = await catalog(location.origin);
  } catch (e) {
    entries = e as Error;
  }
  const skip = el("a", { href: "#main", class: "skip-link", text: t("app.skip") });
  const body = el("div", { id: "screen" });
  app.replaceChildren(skip, body);
  onLangChange(() => (skip.textContent = t("app.skip")));
  if (link && GAMES[link.game] && !(entries instanceof Error)) {
    const entry = entries.find((g) => g.id === link.game);
    if (entry) {
      if (!link.watch) remember(link);
      mountMatch(body, GAMES[link.game]!, entry, link, () => location.assign("/"));
      return;
    }
  }
  const draw = () => mountLobby(body, GAMES, entries);
  draw();
  // The lobby has its own language switch.
  const sel = el("select", { id: "lobby-lang", "aria-label": "Idioma / Language", onchange: () => setLang(sel.value as "es" | "en") }, ...LANGS.map((l) => el("option", { value: l, text: l === "es" ? "Español" : "English" })));
  sel.value = lang();
  app.prepend(el("header", { class: "top-lang" }, sel));
  onLangChange(() => {
    draw();
    sel.value = lang();
  });
}

void boot();
