// The answer being streamed, kept in sessionStorage so that a reload mid-answer can pick it up again:
// the view so far and the last event id, for a re-attach where the server offers one, else the
// conversation to reload from the history.
import type { MessageView } from "./state";

export interface Pending {
  conversationId: string;
  taskId: string | null;
  lastEventId: string | null;
  view: MessageView;
}

const SLOT = (appId: string) => `loopwright.chat.pending:${appId}`;

export function savePending(session: Storage, appId: string, pending: Pending): void {
  try {
    session.setItem(SLOT(appId), JSON.stringify(pending));
  } catch {
    // storage full or off: a reload then shows the history only
  }
}

export function loadPending(session: Storage, appId: string): Pending | null {
  try {
    const raw = session.getItem(SLOT(appId));
    if (!raw) return null;
    const value = JSON.parse(raw) as Pending;
    return typeof value.conversationId === "string" && value.view ? value : null;
  } catch {
    return null;
  }
}

export function clearPending(session: Storage, appId: string): void {
  session.removeItem(SLOT(appId));
}

// Messages this browser stopped: the history shows a stopped answer as a normal one (Dify's status
// "normal"), so the page remembers which ones it stopped, to say "Stopped." under them after a reload.
const STOPPED_SLOT = (appId: string) => `loopwright.chat.stopped:${appId}`;
const STOPPED_KEPT = 200;

export function stoppedIds(local: Storage, appId: string): Set<string> {
  try {
    const value: unknown = JSON.parse(local.getItem(STOPPED_SLOT(appId)) ?? "[]");
    return new Set(Array.isArray(value) ? value.filter((x): x is string => typeof x === "string") : []);
  } catch {
    return new Set();
  }
}

export function rememberStopped(local: Storage, appId: string, messageId: string): void {
  const ids = [...stoppedIds(local, appId)].filter((id) => id !== messageId);
  ids.push(messageId);
  try {
    local.setItem(STOPPED_SLOT(appId), JSON.stringify(ids.slice(-STOPPED_KEPT)));
  } catch {
    // storage full or off: the answer still shows, without the marker
  }
}
