// Brisca's deck art (issue 22): the cards-spanish library's graphic draws all 40 faces of
// spanish-cards/spanish40 and a back, its resource set maps every definition id to a slot,
// and the client draws a face from `{suit, rank}` through the package's binding, falling
// back (null) when a slot cannot be drawn.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import graphic from "../../../libs/packages/libraries/cards-spanish/graphics/spanish.js";
import set from "../../../libs/packages/libraries/cards-spanish/sets/standard.json";
import deck from "../../../libs/packages/libraries/spanish-cards/components/spanish40.json";
import { art, brisca } from "../src/games/brisca";
import { CardArt, type GraphicDefinition } from "../src/present/cardart";

/** Just enough of a DOM for a GraphicDefinition: elements with attributes, children and text, as markup. */
class FakeElement {
  attributes: [string, string][] = [];
  children: FakeElement[] = [];
  textContent = "";
  constructor(
    readonly ns: string,
    readonly tag: string,
  ) {}
  setAttribute(k: string, v: string) {
    this.attributes.push([k, v]);
  }
  getAttribute(k: string) {
    return this.attributes.find(([a]) => a === k)?.[1] ?? null;
  }
  append(...c: FakeElement[]) {
    this.children.push(...c);
  }
  get outerHTML(): string {
    const attrs = this.attributes.map(([k, v]) => ` ${k}="${v}"`).join("");
    return `<${this.tag}${attrs}>${this.textContent}${this.children.map((c) => c.outerHTML).join("")}</${this.tag}>`;
  }
  all(tag: string): FakeElement[] {
    return [...(this.tag === tag ? [this as FakeElement] : []), ...this.children.flatMap((c) => c.all(tag))];
  }
}
const fakeDocument = { createElementNS: (ns: string, tag: string) => new FakeElement(ns, tag) } as unknown as Document;
const draw = (slot: string, language = "es") => graphic.draw({ document: fakeDocument, slot, language }) as unknown as FakeElement;

describe("the cards-spanish graphic", () => {
  const ids = deck.cards.map((c) => c.id);
  it("draws every face of spanish40 and a back, each a fresh SVG, each different", () => {
    expect(ids).toHaveLength(40);
    const drawn = [...ids, "back"].map((id) => draw(id));
    for (const svg of drawn) {
      expect(svg.tag).toBe("svg");
      expect(svg.ns).toBe("http://www.w3.org/2000/svg");
      expect(svg.getAttribute("viewBox")).toBe("0 0 200 310");
    }
    expect(new Set(drawn.map((s) => s.outerHTML)).size).toBe(41);
    expect(draw("1O")).not.toBe(draw("1O"));
  });
  it("names each card in the language asked", () => {
    const title = (slot: string, l: string) => draw(slot, l).all("title")[0]!.textContent;
    expect([title("1O", "es"), title("12B", "es"), title("11C", "en"), title("10E", "en"), title("back", "en")]).toEqual(["as de oros", "rey de bastos", "knight of cups", "jack of swords", "the back of a card"]);
  });
  it("the pips of 1–7 and a figure for sota, caballo and rey", () => {
    // Each suit symbol is a group translated to its place; a figure adds one held symbol.
    const pips = (slot: string) => draw(slot).all("g").filter((g) => /^translate\(/.test(g.getAttribute("transform") ?? "")).length;
    expect([1, 2, 3, 4, 5, 6, 7].map((r) => pips(`${r}C`))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect([10, 11, 12].map((r) => pips(`${r}E`))).toEqual([1, 1, 1]);
  });
  it("the pinta: the frame line broken 0, 1, 2, 3 times for oros, copas, espadas, bastos", () => {
    const segments = (suit: string) => {
      const pinta = draw(`4${suit}`).all("g").find((g) => g.getAttribute("stroke-width") === "2.4")!;
      const top = pinta.children[0]!.getAttribute("d")!;
      return top.match(/M/g)!.length;
    };
    expect(["O", "C", "E", "B"].map(segments)).toEqual([1, 2, 3, 4]);
  });
  it("refuses a slot that is no card", () => {
    for (const slot of ["8O", "9C", "13B", "1X", "", "AS"]) expect(() => draw(slot)).toThrow(/unknown slot/);
  });
  it("its resource set maps every card's id to its own slot, and the back", () => {
    expect(Object.keys(set.slots).sort()).toEqual([...ids].sort());
    for (const [id, slot] of Object.entries(set.slots)) expect(slot).toEqual({ resource: graphic.resourceId, slot: id });
    expect(set.back).toEqual({ resource: graphic.resourceId, slot: "back" });
    expect(set.aspectRatio).toEqual(graphic.aspectRatio);
  });
});

describe("the client's card art", () => {
  it("Brisca draws a face through its package's binding", () => {
    const binding = (brisca.manifest as unknown as { presentation: { bindings: unknown[] } }).presentation.bindings;
    expect(binding).toEqual([{ componentId: "mainDeck", resourceSet: { source: "dependency", packageId: "cards-spanish", export: "standard" } }]);
    const manifest = JSON.parse(readFileSync(join(__dirname, "../../../libs/games/brisca/package/game.json"), "utf8"));
    expect(manifest.dependencies).toContain("cards-spanish@1.0.0");
    expect(art.idOf("copas", 11)).toBe("11C");
    const face = art.face("copas", 11, fakeDocument, "en") as unknown as FakeElement;
    expect(face.all("title")[0]!.textContent).toBe("knight of cups");
    expect((art.back(fakeDocument, "es") as unknown as FakeElement).all("title")[0]!.textContent).toBe("reverso de una carta");
  });
  it("a face it cannot draw is null (the fallback text shows), and the problem is reported", () => {
    const problems: string[] = [];
    const broken: GraphicDefinition = { resourceId: "spanish-graphic", aspectRatio: { width: 20, height: 31 }, draw: () => { throw new Error("no canvas"); } };
    const a = new CardArt(set, { "spanish-graphic": broken }, deck, (m) => problems.push(m));
    expect(a.face("oros", 1, fakeDocument, "es")).toBeNull();
    expect(a.face("oros", 9, fakeDocument, "es")).toBeNull();
    expect(new CardArt(set, {}, deck, (m) => problems.push(m)).back(fakeDocument, "es")).toBeNull();
    expect(problems).toEqual(["spanish-graphic cannot draw 1O: Error: no canvas", "no slot for oros 9", "no graphic spanish-graphic"]);
  });
});
