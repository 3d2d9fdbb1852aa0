// cards-spanish's GraphicDefinition: draws every face of spanish-cards/spanish40 (oros, copas,
// espadas and bastos; 1 to 7, sota 10, caballo 11 and rey 12) and the back as a fresh SVG
// element from (resource id, slot, definition, language). A slot is a card's definition id,
// its rank's number and its suit's initial ("1O" is the as de oros, "12B" the rey de bastos),
// or "back". The faces follow the Spanish deck's conventions: the pips of each suit laid out
// by rank, the figures (sota, caballo, rey) holding their suit, and the "pinta", the gaps in
// the frame's line that tell the suit at a glance (oros none, copas one, espadas two, bastos
// three). It keeps no state, sets no timers and sends no commands; the presentation
// coordinator owns its lifetime and any animation.

const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 200;
const HEIGHT = 310;
const SUITS = {
  O: { id: "oros", ink: "#9a6a00", fill: "#e8b23a", gaps: 0 },
  C: { id: "copas", ink: "#a3221b", fill: "#d94a3d", gaps: 1 },
  E: { id: "espadas", ink: "#1d4f9e", fill: "#5b86c9", gaps: 2 },
  B: { id: "bastos", ink: "#1c6b2c", fill: "#7a5230", gaps: 3 },
};
const WORDS = {
  es: {
    oros: "oros",
    copas: "copas",
    espadas: "espadas",
    bastos: "bastos",
    of: (rank, suit) => `${rank} de ${suit}`,
    ranks: { 1: "as", 2: "dos", 3: "tres", 4: "cuatro", 5: "cinco", 6: "seis", 7: "siete", 10: "sota", 11: "caballo", 12: "rey" },
    back: "reverso de una carta",
  },
  en: {
    oros: "coins",
    copas: "cups",
    espadas: "swords",
    bastos: "clubs",
    of: (rank, suit) => `${rank} of ${suit}`,
    ranks: { 1: "ace", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 10: "jack", 11: "knight", 12: "king" },
    back: "the back of a card",
  },
};

/** The rank and suit of a slot such as "1O" or "12B". */
function parseSlot(slot) {
  const match = /^([1-7]|1[0-2])([OCEB])$/.exec(slot);
  if (!match) {
    throw new Error(`cards-spanish: unknown slot ${JSON.stringify(slot)}`);
  }
  return { rank: Number(match[1]), suit: match[2] };
}

function element(document, name, attributes, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, String(value));
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function group(document, transform, ...children) {
  const g = element(document, "g", transform ? { transform } : {});
  for (const child of children) {
    g.append(child);
  }
  return g;
}

// ---- the four suit symbols, each drawn around (0, 0) about 40 units tall ----

function oro(document) {
  const s = SUITS.O;
  return group(
    document,
    "",
    element(document, "circle", { r: 19, fill: s.fill, stroke: s.ink, "stroke-width": 2.5 }),
    element(document, "circle", { r: 12, fill: "none", stroke: s.ink, "stroke-width": 1.6 }),
    element(document, "circle", { r: 4.5, fill: s.ink }),
  );
}

function copa(document) {
  const s = SUITS.C;
  return group(
    document,
    "",
    element(document, "path", { d: "M-16 -17H16C16 -2 9 6 0 7C-9 6 -16 -2 -16 -17Z", fill: s.fill, stroke: s.ink, "stroke-width": 2.2, "stroke-linejoin": "round" }),
    element(document, "rect", { x: -17, y: -20, width: 34, height: 5, rx: 2, fill: "#e8b23a", stroke: s.ink, "stroke-width": 1.4 }),
    element(document, "path", { d: "M-3 7V14H3V7", fill: s.fill, stroke: s.ink, "stroke-width": 1.8 }),
    element(document, "path", { d: "M-11 20C-11 15 -6 13 0 13C6 13 11 15 11 20Z", fill: s.fill, stroke: s.ink, "stroke-width": 1.8, "stroke-linejoin": "round" }),
  );
}

function espada(document) {
  const s = SUITS.E;
  return group(
    document,
    "",
    element(document, "path", { d: "M0 -21L4 -15V9H-4V-15Z", fill: "#dfe6f2", stroke: s.ink, "stroke-width": 1.8, "stroke-linejoin": "round" }),
    element(document, "rect", { x: -11, y: 9, width: 22, height: 4.5, rx: 2, fill: s.fill, stroke: s.ink, "stroke-width": 1.4 }),
    element(document, "rect", { x: -2.5, y: 13.5, width: 5, height: 6, fill: "#e8b23a", stroke: s.ink, "stroke-width": 1.2 }),
    element(document, "circle", { cy: 21.5, r: 2.8, fill: s.fill, stroke: s.ink, "stroke-width": 1.2 }),
  );
}

function basto(document) {
  const s = SUITS.B;
  return group(
    document,
    "",
    element(document, "path", { d: "M-5 20L-7 -10C-7 -18 7 -20 7 -12L5 20Z", fill: s.fill, stroke: "#3f2812", "stroke-width": 1.8, "stroke-linejoin": "round" }),
    element(document, "circle", { cx: -5.5, cy: -3, r: 2.2, fill: "#3f2812" }),
    element(document, "circle", { cx: 5, cy: 4, r: 2, fill: "#3f2812" }),
    element(document, "circle", { cx: -4.5, cy: 11, r: 1.8, fill: "#3f2812" }),
    element(document, "path", { d: "M6 -13C10 -15 12 -12 10 -9", fill: "none", stroke: "#1c6b2c", "stroke-width": 2.2, "stroke-linecap": "round" }),
  );
}

const SYMBOL = { O: oro, C: copa, E: espada, B: basto };

function symbol(document, suit, x, y, scale = 1) {
  return group(document, `translate(${x} ${y}) scale(${scale})`, SYMBOL[suit](document));
}

// ---- the pips of 1–7: where each symbol goes ----

const COLS = [66, 134];
const PIPS = {
  1: [[100, 155, 2.2]],
  2: [[100, 85], [100, 225]],
  3: [[100, 75], [100, 155], [100, 235]],
  4: [[COLS[0], 90], [COLS[1], 90], [COLS[0], 220], [COLS[1], 220]],
  5: [[COLS[0], 85], [COLS[1], 85], [100, 155], [COLS[0], 225], [COLS[1], 225]],
  6: [[COLS[0], 80], [COLS[1], 80], [COLS[0], 155], [COLS[1], 155], [COLS[0], 230], [COLS[1], 230]],
  7: [[COLS[0], 70, 1], [COLS[1], 70, 1], [100, 114, 1], [COLS[0], 160, 1], [COLS[1], 160, 1], [COLS[0], 238, 1], [COLS[1], 238, 1]],
};

// ---- the figures: sota (a standing page), caballo (a rider on a horse), rey (a crowned king) ----

function figure(document, rank, suit) {
  const s = SUITS[suit];
  const skin = "#f2c9a0";
  const line = { stroke: "#2a2a2a", "stroke-width": 1.8, "stroke-linejoin": "round" };
  const parts = [];
  if (rank === 11) {
    // The horse, then its rider.
    parts.push(
      element(document, "path", { d: "M40 200C40 168 62 150 98 150H132C146 150 154 136 160 122L176 128C172 150 166 168 154 178V236H140V196H74V236H60V200Z", fill: "#c79a6b", ...line }),
      element(document, "path", { d: "M160 122L166 104L174 110L176 128Z", fill: "#c79a6b", ...line }),
      element(document, "circle", { cx: 168, cy: 118, r: 1.8, fill: "#2a2a2a" }),
      element(document, "path", { d: "M84 150V112C84 100 92 94 100 94C108 94 116 100 116 112V150Z", fill: s.fill, ...line }),
      element(document, "circle", { cx: 100, cy: 80, r: 13, fill: skin, ...line }),
      element(document, "path", { d: "M86 74C88 62 112 62 114 74Z", fill: s.ink, ...line }),
    );
    parts.push(symbol(document, suit, 60, 116, 0.95));
  } else {
    const robe = rank === 12 ? "M62 246L74 118C78 104 122 104 126 118L138 246Z" : "M72 246L78 186H122L128 246ZM76 190L80 120C82 108 118 108 120 120L124 190Z";
    parts.push(
      element(document, "path", { d: robe, fill: s.fill, ...line }),
      element(document, "path", { d: rank === 12 ? "M74 150H126" : "M80 150H120", stroke: "#e8b23a", "stroke-width": 5 }),
      element(document, "circle", { cx: 100, cy: 92, r: 15, fill: skin, ...line }),
    );
    if (rank === 12) {
      parts.push(element(document, "path", { d: "M84 80L86 58L94 70L100 54L106 70L114 58L116 80Z", fill: "#e8b23a", ...line }));
      parts.push(element(document, "path", { d: "M88 100C92 112 108 112 112 100", fill: "#8a6a4a", stroke: "#2a2a2a", "stroke-width": 1.4 }));
    } else {
      parts.push(element(document, "path", { d: "M84 86C84 70 116 70 116 86C110 80 90 80 84 86Z", fill: "#6a4a2a", ...line }));
    }
    parts.push(symbol(document, suit, 142, 150, 1.05));
  }
  return group(document, "", ...parts);
}

// ---- the card ----

function frame(document, language, label) {
  const svg = element(document, "svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", lang: language });
  svg.append(element(document, "title", {}, label));
  svg.append(element(document, "rect", { x: 2, y: 2, width: WIDTH - 4, height: HEIGHT - 4, rx: 16, fill: "#fffaf0", stroke: "#3a3a3a", "stroke-width": 3 }));
  return svg;
}

/** The inner frame line with the suit's "pinta": 0 to 3 gaps at its top and bottom. */
function pinta(document, suit) {
  const { ink, gaps } = SUITS[suit];
  const x0 = 30;
  const x1 = WIDTH - 30;
  const g = element(document, "g", { fill: "none", stroke: ink, "stroke-width": 2.4 });
  for (const y of [30, HEIGHT - 30]) {
    let d = "";
    if (gaps === 0) {
      d = `M${x0} ${y}H${x1}`;
    } else {
      const gap = 9;
      const span = (x1 - x0 - gaps * gap) / (gaps + 1);
      let x = x0;
      for (let i = 0; i <= gaps; i += 1) {
        d += `M${x} ${y}H${x + span}`;
        x += span + gap;
      }
    }
    g.append(element(document, "path", { d }));
  }
  g.append(element(document, "path", { d: `M${x0} 30V${HEIGHT - 30}M${x1} 30V${HEIGHT - 30}` }));
  return g;
}

function drawBack(document, language) {
  const svg = frame(document, language, (WORDS[language] ?? WORDS.es).back);
  svg.append(element(document, "rect", { x: 14, y: 14, width: WIDTH - 28, height: HEIGHT - 28, rx: 10, fill: "#8c1d18" }));
  for (let i = 0; i < 7; i += 1) {
    svg.append(element(document, "rect", { x: 22 + i * 9, y: 22 + i * 9, width: WIDTH - 44 - i * 18, height: HEIGHT - 44 - i * 18, rx: 8, fill: "none", stroke: i % 2 ? "#e8b23a" : "#f3d9a4", "stroke-width": 2 }));
  }
  svg.append(symbol(document, "O", WIDTH / 2, HEIGHT / 2, 0.9));
  return svg;
}

function drawFace(document, slot, language) {
  const { rank, suit } = parseSlot(slot);
  const words = WORDS[language] ?? WORDS.es;
  const s = SUITS[suit];
  const svg = frame(document, language, words.of(words.ranks[rank], words[s.id]));
  svg.append(pinta(document, suit));
  const index = { "font-family": "Georgia, serif", "font-size": 26, "font-weight": 700, fill: s.ink, "text-anchor": "middle" };
  svg.append(element(document, "text", { ...index, x: 16, y: 26 }, String(rank)));
  svg.append(element(document, "text", { ...index, x: WIDTH - 16, y: HEIGHT - 8, transform: `rotate(180 ${WIDTH - 16} ${HEIGHT - 17})` }, String(rank)));
  if (rank <= 7) {
    for (const [x, y, scale] of PIPS[rank]) {
      svg.append(symbol(document, suit, x, y, scale ?? (rank <= 3 ? 1.3 : 1.15)));
    }
  } else {
    svg.append(figure(document, rank, suit));
  }
  return svg;
}

/** The GraphicDefinition: `draw` returns a new SVG element its owner inserts and removes. */
export default {
  resourceId: "spanish-graphic",
  aspectRatio: { width: 20, height: 31 },
  draw({ document, slot, language }) {
    return slot === "back" ? drawBack(document, language) : drawFace(document, slot, language);
  },
};
