// cards-poker's GraphicDefinition: draws every face of playing-cards/poker52 and the back as
// a fresh SVG element from (resource id, slot, definition, language). It keeps no state, sets
// no timers and sends no commands; the presentation coordinator owns its lifetime and any
// animation.

const SVG_NS = "http://www.w3.org/2000/svg";
const SUITS = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };
const RED = new Set(["D", "H"]);
const WIDTH = 250;
const HEIGHT = 350;

/** The rank symbol and suit initial of a slot such as "10H" or "QS". */
function parseSlot(slot) {
  const match = /^(A|[2-9]|10|J|Q|K)([CDHS])$/.exec(slot);
  if (!match) {
    throw new Error(`cards-poker: unknown slot ${JSON.stringify(slot)}`);
  }
  return { rank: match[1], suit: match[2] };
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

function frame(document, language, label) {
  const svg = element(document, "svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", lang: language });
  svg.append(element(document, "title", {}, label));
  svg.append(element(document, "rect", { x: 2, y: 2, width: WIDTH - 4, height: HEIGHT - 4, rx: 18, fill: "#fffdf7", stroke: "#333", "stroke-width": 3 }));
  return svg;
}

function drawBack(document, language) {
  const svg = frame(document, language, "back");
  svg.append(element(document, "rect", { x: 18, y: 18, width: WIDTH - 36, height: HEIGHT - 36, rx: 10, fill: "#1d4e89" }));
  for (let i = 0; i < 6; i += 1) {
    svg.append(element(document, "circle", { cx: WIDTH / 2, cy: HEIGHT / 2, r: 20 + i * 18, fill: "none", stroke: "#8fb8de", "stroke-width": 4 }));
  }
  return svg;
}

function drawFace(document, slot, language) {
  const { rank, suit } = parseSlot(slot);
  const colour = RED.has(suit) ? "#c1121f" : "#111";
  const symbol = SUITS[suit];
  const svg = frame(document, language, `${rank}${symbol}`);
  const corner = { "font-family": "serif", "font-size": 44, fill: colour };
  svg.append(element(document, "text", { ...corner, x: 20, y: 56 }, rank));
  svg.append(element(document, "text", { ...corner, x: 20, y: 100 }, symbol));
  svg.append(element(document, "text", { ...corner, x: WIDTH - 20, y: HEIGHT - 20, "text-anchor": "end", transform: `rotate(180 ${WIDTH - 20} ${HEIGHT - 34})` }, rank));
  svg.append(element(document, "text", { "font-family": "serif", "font-size": 140, fill: colour, x: WIDTH / 2, y: HEIGHT / 2 + 48, "text-anchor": "middle" }, symbol));
  return svg;
}

/** The GraphicDefinition: `draw` returns a new SVG element its owner inserts and removes. */
export default {
  resourceId: "poker-graphic",
  aspectRatio: { width: 5, height: 7 },
  draw({ document, slot, language }) {
    return slot === "back" ? drawBack(document, language) : drawFace(document, slot, language);
  },
};
