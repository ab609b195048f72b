// Handoffs on screen (an app's `handoffs:`, docs/multi-agent.md#handoffs-between-apps): when the app
// answering hands the conversation to another, the server sends a thought row of its own, "NAME answers
// from here on: REASON", with `answered_by` (the app's id) beside Dify's fields, after the round that
// called `handoff_to_<APP_ID>`; the stored message keeps `answered_by` (the app that answered). The page
// shows that row as a line at the handoff, and the answer with the name of the app that gave it.
import type { MessageView, RoundView } from "./state";

export const HANDOFF_TOOL = "handoff_to_";
const LINE = /^(.+?) answers from here on(?::\s*([\s\S]*)|\.)$/;

export interface HandoffView {
  appId: string;
  name: string;
  reason: string;
}

/** A handoff round's app, name and reason, or null for any other round. */
export function handoffOf(round: RoundView): HandoffView | null {
  if (round.answeredBy === undefined) return null;
  const m = LINE.exec(round.text.trim());
  return { appId: round.answeredBy, name: m?.[1] ?? round.answeredBy, reason: m?.[2]?.trim() ?? "" };
}

/** The rounds of a stored message with its handoff rows marked (the history has no `answered_by` on a
 * thought row): a round without calls, right after a round whose `handoff_to_<APP>` call succeeded,
 * whose text is the server's line. */
export function markHandoffs(rounds: RoundView[]): RoundView[] {
  return rounds.map((round, i) => {
    const before = rounds[i - 1];
    if (before === undefined || round.tools.length > 0 || round.answeredBy !== undefined || !LINE.test(round.text.trim())) return round;
    const call = before.tools.find((t) => t.name.startsWith(HANDOFF_TOOL) && !t.error && t.output !== null);
    return call === undefined ? round : { ...round, answeredBy: call.name.slice(HANDOFF_TOOL.length) };
  });
}

/** The apps' names the page has seen in handoff lines, by id (a later line wins). */
export function handoffNames(messages: readonly MessageView[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) {
    for (const r of m.rounds) {
      const h = handoffOf(r);
      if (h !== null) names.set(h.appId, h.name);
    }
  }
  return names;
}

/** The name of the app that answered `m`, when another app than the page's own did: the last handoff
 * in it, else the stored `answered_by` named by an earlier handoff line. Null for the page's own app. */
export function answeredByName(m: MessageView, names: ReadonlyMap<string, string>, ownApp: string): string | null {
  let appId = m.answeredBy;
  let name: string | null = null;
  for (const r of m.rounds) {
    const h = handoffOf(r);
    if (h !== null) [appId, name] = [h.appId, h.name];
  }
  if (appId === null || appId === ownApp) return null;
  return name ?? names.get(appId) ?? null;
}
