/**
 * Spanish and English. The language comes from the browser (`navigator.languages`), can be
 * switched, and is remembered. Keys are the spec's translatable keys: the app's own below,
 * each game module's `messages`, and each package's `translations` (game.title…).
 */
export type Lang = "es" | "en";
export const LANGS: Lang[] = ["es", "en"];
type Dict = Record<string, string>;

const APP: Record<Lang, Dict> = {
  es: {
    "app.title": "Juegoland",
    "app.skip": "Saltar al contenido",
    "lobby.heading": "Elige un juego",
    "lobby.name": "Tu nombre",
    "lobby.opponent": "Rival",
    "lobby.vs-bot": "Contra la máquina",
    "lobby.vs-friend": "Con un amigo",
    "lobby.friend-name": "Nombre de tu amigo",
    "lobby.variant": "Variante",
    "lobby.play": "Jugar a {game}",
    "lobby.resume-heading": "Tus partidas",
    "lobby.resume": "Volver a {game} ({when})",
    "lobby.none": "Aún no tienes partidas.",
    "lobby.catalog-error": "No se pudo cargar el catálogo: {error}",
    "lobby.names-differ": "Escribe dos nombres distintos.",
    "lobby.name-needed": "Escribe tu nombre.",
    "lobby.solo": "Un jugador",
    "lobby.players": "{min}–{max} jugadores",
    "lobby.players-n": "{n} jugadores",
    "lobby.player-count": "Jugadores",
    "lobby.watch-heading": "Partidas en juego",
    "lobby.watch": "Ver {game}: {players}",
    "lobby.watch-none": "Ahora no hay partidas que se puedan ver.",
    "lobby.watch-unavailable": "Este servidor no deja ver la lista de partidas.",
    "lobby.versus": " contra ",
    "controller.bot": "máquina",
    "controller.handover": "{name}: juega la máquina hasta que vuelva",
    "controller.agent": "agente de IA",
    "controller.replay": "repetición",
    "match.watching": "Observas la partida",
    "clock.label": "Reloj",
    "clock.running": "{name}: {time} (le toca)",
    "clock.seat": "{name}: {time}",
    "match.leave": "Salir al vestíbulo",
    "match.skip": "Saltar animación",
    "match.sound-on": "Sonido: activado",
    "match.sound-off": "Sonido: silenciado",
    "match.motion-on": "Animaciones: activadas",
    "match.motion-off": "Animaciones: desactivadas",
    "match.language": "Idioma",
    "match.rematch": "Revancha",
    "match.share": "Envía este enlace a {name} para que se siente:",
    "match.you": "tú",
    "match.bot": "Máquina",
    "match.bot-n": "Máquina {n}",
    "match.players": "Jugadores",
    "match.status": "Estado de la partida",
    "match.revision": "Revisión {revision}",
    "match.loading": "Cargando la partida…",
    "status.your-turn": "Tu turno",
    "status.their-turn": "Turno de {name}",
    "status.sending": "Enviando tu jugada…",
    "status.animating": "Mostrando la jugada…",
    "status.offline": "Sin conexión: reconectando…",
    "status.offline-pending": "Sin conexión: tu jugada se enviará al reconectar",
    "status.connecting": "Conectando…",
    "status.spectating": "Observando",
    "status.stopped": "Este cliente ya no puede seguir: recarga la página ({code})",
    "conn.open": "Conectado",
    "conn.connecting": "Conectando",
    "conn.closed": "Desconectado",
    "result.win": "¡Has ganado!",
    "result.loss": "Has perdido",
    "result.draw": "Empate",
    "result.winner": "Gana {name}",
    "result.cancelled": "Partida cancelada",
    "result.over": "Partida terminada",
    "rejection.ILLEGAL_ACTION": "Esa jugada no está permitida.",
    "rejection.STALE_REVISION": "La partida cambió antes de tu jugada; mira el tablero y vuelve a intentarlo.",
    "rejection.STALE_EPOCH": "La fase cambió antes de tu jugada; vuelve a intentarlo.",
    "rejection.ACTOR_NOT_ENABLED": "Ahora no te toca.",
    "rejection.UNKNOWN_ACTION": "Este juego no conoce esa jugada.",
    "rejection.INVALID_PAYLOAD": "La jugada no es válida.",
    "rejection.MATCH_FINISHED": "La partida ya ha terminado.",
    "rejection.PRECONDITION_MISMATCH": "Esa jugada no venía del tablero actual; mira el tablero y vuelve a intentarlo.",
    "error.generic": "Error del servidor ({code}).",
    "error.RATE_LIMITED": "Vas demasiado rápido; reintentando.",
    "error.UNAVAILABLE": "La partida no está disponible ahora mismo; reintentando.",
    "error.MATCH_NOT_FOUND": "Esa partida no existe.",
    "error.FORBIDDEN": "No tienes sitio en esta partida.",
    "error.INCOMPATIBLE_CLIENT": "Este cliente no sabe mostrar esta versión del juego.",
    "seat.you": "{name} (tú)",
  },
  en: {
    "app.title": "Juegoland",
    "app.skip": "Skip to content",
    "lobby.heading": "Choose a game",
    "lobby.name": "Your name",
    "lobby.opponent": "Opponent",
    "lobby.vs-bot": "Against the computer",
    "lobby.vs-friend": "With a friend",
    "lobby.friend-name": "Your friend's name",
    "lobby.variant": "Variant",
    "lobby.play": "Play {game}",
    "lobby.resume-heading": "Your matches",
    "lobby.resume": "Back to {game} ({when})",
    "lobby.none": "No matches yet.",
    "lobby.catalog-error": "Could not load the catalog: {error}",
    "lobby.names-differ": "Enter two different names.",
    "lobby.name-needed": "Enter your name.",
    "lobby.solo": "One player",
    "lobby.players": "{min}–{max} players",
    "lobby.players-n": "{n} players",
    "lobby.player-count": "Players",
    "lobby.watch-heading": "Matches being played",
    "lobby.watch": "Watch {game}: {players}",
    "lobby.watch-none": "No match can be watched right now.",
    "lobby.watch-unavailable": "This server does not list its matches.",
    "lobby.versus": " vs ",
    "controller.bot": "computer",
    "controller.handover": "{name}: the computer plays until they return",
    "controller.agent": "AI agent",
    "controller.replay": "replay",
    "match.watching": "You are watching this match",
    "clock.label": "Clock",
    "clock.running": "{name}: {time} (to play)",
    "clock.seat": "{name}: {time}",
    "match.leave": "Leave to the lobby",
    "match.skip": "Skip animation",
    "match.sound-on": "Sound: on",
    "match.sound-off": "Sound: muted",
    "match.motion-on": "Animations: on",
    "match.motion-off": "Animations: off",
    "match.language": "Language",
    "match.rematch": "Rematch",
    "match.share": "Send this link to {name} to take their seat:",
    "match.you": "you",
    "match.bot": "Computer",
    "match.bot-n": "Computer {n}",
    "match.players": "Players",
    "match.status": "Match status",
    "match.revision": "Revision {revision}",
    "match.loading": "Loading the match…",
    "status.your-turn": "Your turn",
    "status.their-turn": "{name}'s turn",
    "status.sending": "Sending your move…",
    "status.animating": "Showing the move…",
    "status.offline": "Connection lost: reconnecting…",
    "status.offline-pending": "Connection lost: your move will be sent when reconnected",
    "status.connecting": "Connecting…",
    "status.spectating": "Spectating",
    "status.stopped": "This client cannot go on: reload the page ({code})",
    "conn.open": "Connected",
    "conn.connecting": "Connecting",
    "conn.closed": "Disconnected",
    "result.win": "You win!",
    "result.loss": "You lose",
    "result.draw": "Draw",
    "result.winner": "{name} wins",
    "result.cancelled": "Match cancelled",
    "result.over": "Match over",
    "rejection.ILLEGAL_ACTION": "That move is not allowed.",
    "rejection.STALE_REVISION": "The match changed before your move; look at the board and try again.",
    "rejection.STALE_EPOCH": "The phase changed before your move; try again.",
    "rejection.ACTOR_NOT_ENABLED": "It is not your turn.",
    "rejection.UNKNOWN_ACTION": "This game does not know that move.",
    "rejection.INVALID_PAYLOAD": "That move is not valid.",
    "rejection.MATCH_FINISHED": "The match is over.",
    "rejection.PRECONDITION_MISMATCH": "That move was not made from the current board; look at the board and try again.",
    "error.generic": "Server error ({code}).",
    "error.RATE_LIMITED": "Too fast; retrying.",
    "error.UNAVAILABLE": "The match is briefly unavailable; retrying.",
    "error.MATCH_NOT_FOUND": "That match does not exist.",
    "error.FORBIDDEN": "You have no seat in this match.",
    "error.INCOMPATIBLE_CLIENT": "This client cannot show this version of the game.",
    "seat.you": "{name} (you)",
  },
};

const extra: Record<Lang, Dict> = { es: {}, en: {} };
let current: Lang = detect();
const listeners = new Set<() => void>();

function detect(): Lang {
  try {
    const saved = localStorage.getItem("juegoland.lang");
    if (saved === "es" || saved === "en") return saved;
  } catch {
    /* no storage */
  }
  const langs = typeof navigator !== "undefined" ? navigator.languages ?? [navigator.language] : [];
  for (const l of langs) {
    const base = l.slice(0, 2).toLowerCase();
    if (base === "es" || base === "en") return base;
  }
  return "es"; // the platform's players are Spanish
}

/** Adds a game's or package's translations (keys are namespaced by the caller). */
export function addMessages(messages: Partial<Record<Lang, Dict>>): void {
  for (const l of LANGS) Object.assign(extra[l], messages[l] ?? {});
}

export function lang(): Lang {
  return current;
}

export function setLang(l: Lang): void {
  current = l;
  document.documentElement.lang = l;
  try {
    localStorage.setItem("juegoland.lang", l);
  } catch {
    /* no storage */
  }
  for (const f of listeners) f();
}

export function onLangChange(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** The text of `key` in the current language, `{name}` placeholders filled from `vars`. */
export function t(key: string, vars: Record<string, string | number> = {}): string {
  const text = extra[current][key] ?? APP[current][key] ?? extra.en[key] ?? APP.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? `{${k}}`));
}

export function has(key: string): boolean {
  return key in extra[current] || key in APP[current];
}

/** Every app key, per language (tests check both languages define the same keys). */
export const appMessages = APP;
