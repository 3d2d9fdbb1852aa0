/**
 * A component's visual binding, resolved in the client (spec/packages.md § Resources): a
 * resource set maps each definition id of a deck (a card's id) to a slot of a resource, and a
 * `graphic` resource is a GraphicDefinition that draws a fresh SVG element for a slot. The
 * client bundles the bound libraries' files (the set, the graphic, the deck definition) and
 * draws a card face from its `{suit, rank}` — the only identity a view gives a face-up card —
 * through the deck's definition id. A slot that cannot be drawn gives `null`: the caller shows
 * the resource's declared fallback (a text) instead.
 */

/** A `graphic` resource's module: draws one slot as a new element its owner inserts and removes. */
export interface GraphicDefinition {
  resourceId: string;
  aspectRatio: { width: number; height: number };
  draw(args: { document: Document; slot: string; language: string }): Element;
}

export interface Slot {
  resource: string;
  region?: string;
  slot?: string;
}

/** A resource set file (`format: juegoland.resource-set`). */
export interface ResourceSetFile {
  format: string;
  formatVersion: number;
  aspectRatio: { width: number; height: number };
  slots: Record<string, Slot>;
  back?: Slot;
}

/** A deck component definition: its cards' ids and faces. */
export interface DeckFile {
  kind: string;
  cards: { id: string; suit: string; rank: number }[];
}

export class CardArt {
  private readonly ids = new Map<string, string>();

  constructor(
    private readonly set: ResourceSetFile,
    private readonly graphics: Record<string, GraphicDefinition>,
    deck: DeckFile,
    private readonly onProblem: (message: string) => void = () => {},
  ) {
    for (const c of deck.cards) this.ids.set(`${c.suit}/${c.rank}`, c.id);
  }

  get aspectRatio(): { width: number; height: number } {
    return this.set.aspectRatio;
  }

  /** The deck's definition id of a face, if the deck has that card. */
  idOf(suit: string, rank: number): string | undefined {
    return this.ids.get(`${suit}/${rank}`);
  }

  /** The face's drawing, or null (then its fallback text shows). */
  face(suit: string, rank: number, doc: Document, language: string): Element | null {
    const id = this.idOf(suit, rank);
    const slot = id === undefined ? undefined : this.set.slots[id];
    if (!slot) {
      this.onProblem(`no slot for ${suit} ${rank}`);
      return null;
    }
    return this.draw(slot, id!, doc, language);
  }

  /** A face-down card's drawing, or null. */
  back(doc: Document, language: string): Element | null {
    return this.set.back ? this.draw(this.set.back, "back", doc, language) : null;
  }

  private draw(slot: Slot, fallbackSlot: string, doc: Document, language: string): Element | null {
    const graphic = this.graphics[slot.resource];
    if (!graphic) {
      this.onProblem(`no graphic ${slot.resource}`);
      return null;
    }
    try {
      return graphic.draw({ document: doc, slot: slot.slot ?? fallbackSlot, language });
    } catch (e) {
      this.onProblem(`${slot.resource} cannot draw ${slot.slot ?? fallbackSlot}: ${String(e)}`);
      return null;
    }
  }
}
