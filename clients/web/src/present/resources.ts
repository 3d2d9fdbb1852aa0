/**
 * A game's presentation resources as its package manifest declares them (`game.json`'s
 * `presentation.resources`): path, type, whether required, and a fallback. Loading follows
 * the fallback chain: another resource, a text (a translation key) or, for an optional
 * resource, omission. A missing resource never blocks the rules: the caller gets what to show.
 */
export type Fallback = { kind: "text"; key: string } | { kind: "resource"; id: string } | { kind: "omit" };

export interface ResourceDecl {
  id: string;
  path: string;
  type: string;
  required: boolean;
  fallback: Fallback;
  alt?: string;
}

/** What to show for a resource: its loaded URL, a text, or nothing. */
export type Resolved = { kind: "url"; id: string; url: string } | { kind: "text"; key: string } | { kind: "omit" };

export class Resources {
  private readonly byId: Map<string, ResourceDecl>;
  private readonly cache = new Map<string, Promise<Resolved>>();

  /**
   * `urlOf` maps a declared path to where it is served; `probe` loads it (an image element,
   * a fetch…) and rejects when it cannot be had.
   */
  constructor(
    decls: ResourceDecl[],
    private readonly urlOf: (decl: ResourceDecl) => string,
    private readonly probe: (url: string, decl: ResourceDecl) => Promise<void>,
  ) {
    this.byId = new Map(decls.map((d) => [d.id, d]));
  }

  declaration(id: string): ResourceDecl | undefined {
    return this.byId.get(id);
  }

  /** Resolves `id` through its fallback chain (at most as long as the declarations). */
  resolve(id: string): Promise<Resolved> {
    let cached = this.cache.get(id);
    if (!cached) {
      cached = this.walk(id, new Set());
      this.cache.set(id, cached);
      // A temporary failure is not remembered: the next use tries again.
      void cached.then((r) => {
        if (r.kind !== "url" || r.id !== id) this.cache.delete(id);
      });
    }
    return cached;
  }

  private async walk(id: string, seen: Set<string>): Promise<Resolved> {
    const decl = this.byId.get(id);
    if (!decl || seen.has(id)) return { kind: "omit" };
    seen.add(id);
    const url = this.urlOf(decl);
    try {
      await this.probe(url, decl);
      return { kind: "url", id, url };
    } catch {
      const f = decl.fallback;
      if (f.kind === "text") return { kind: "text", key: f.key };
      if (f.kind === "resource") return this.walk(f.id, seen);
      return { kind: "omit" };
    }
  }
}
