// Pinned conversations: kept by this browser (localStorage, per app), listed first. The Service API has
// no pins (Dify's pins belong to its own web app's API), so they are the browser's, like its end user.
const SLOT = (appId: string) => `loopwright.chat.pinned:${appId}`;

export function loadPins(local: Storage, appId: string): string[] {
  try {
    const value: unknown = JSON.parse(local.getItem(SLOT(appId)) ?? "[]");
    return Array.isArray(value) ? value.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}

/** The pins after pinning (first in the list) or unpinning `id`; saved. */
export function setPin(local: Storage, appId: string, pins: string[], id: string, on: boolean): string[] {
  const next = on ? [id, ...pins.filter((p) => p !== id)] : pins.filter((p) => p !== id);
  try {
    local.setItem(SLOT(appId), JSON.stringify(next));
  } catch {
    // storage full or off: pinned for this page only
  }
  return next;
}

/** The conversations with the pinned ones first (in pin order), the rest as they came. */
export function pinnedFirst<T extends { id: string }>(items: T[], pins: string[]): T[] {
  const pinned = pins.map((id) => items.find((c) => c.id === id)).filter((c): c is T => c !== undefined);
  return [...pinned, ...items.filter((c) => !pins.includes(c.id))];
}
