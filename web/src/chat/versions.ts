// Answer versions (pure functions, no DOM): Regenerate and an edited question add a version of a
// message (a message with the same parent); the history API (GET /v1/messages) returns one thread and,
// beside Dify's fields, each message's `versions`: the message it follows and every version's id.

export interface Versions {
  parentId: string | null; // the message it follows (null: the conversation's first message)
  ids: string[]; // every version, itself included, oldest first
}

/** Message id → its versions, as the history said last. */
export type VersionMap = Readonly<Record<string, Versions>>;

/** The versions of one history item (null: a server that does not send them). */
export function versionsOf(item: Record<string, unknown>): Versions | null {
  const v = item.versions as { parent_id?: unknown; ids?: unknown } | null | undefined;
  if (typeof v !== "object" || v === null || !Array.isArray(v.ids)) return null;
  const ids = v.ids.filter((id): id is string => typeof id === "string");
  return { parentId: typeof v.parent_id === "string" ? v.parent_id : null, ids };
}

/** `map` with the versions of every item of a history page. */
export function withVersions(map: VersionMap, items: Record<string, unknown>[]): VersionMap {
  const out: Record<string, Versions> = { ...map };
  for (const item of items) {
    const v = versionsOf(item);
    if (v !== null && typeof item.id === "string") out[item.id] = v;
  }
  return out;
}

/** The message a new version of `shown[index]` follows: its parent as the history said, else the
 * message shown before it (null for the first of a conversation). */
export function parentFor(map: VersionMap, shown: readonly { id: string | null }[], index: number): string | null {
  const id = shown[index]?.id;
  const known = id != null ? map[id] : undefined;
  if (known !== undefined) return known.parentId;
  return index > 0 ? (shown[index - 1]?.id ?? null) : null;
}

/** Where a message stands among its versions: its place (1-based) and how many there are; null for a
 * message with only one. */
export function placeOf(map: VersionMap, id: string | null): { i: number; n: number; ids: string[] } | null {
  const v = id !== null ? map[id] : undefined;
  if (v === undefined || v.ids.length < 2 || id === null) return null;
  return { i: v.ids.indexOf(id) + 1, n: v.ids.length, ids: v.ids };
}
