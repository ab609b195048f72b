// Handoffs on screen (chat/handoff.ts): the line where the conversation went to another app, and the
// name of the app that gave an answer. The names the page has seen come down from ChatApp by context.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import { t } from "../shared/i18n";
import { answeredByName, type HandoffView } from "./handoff";
import type { MessageView } from "./state";

export interface HandoffNames {
  names: ReadonlyMap<string, string>;
  ownApp: string;
}

export const HandoffNamesContext = createContext<HandoffNames>({ names: new Map(), ownApp: "" });

/** "NAME answers from here on", with the reason the handing app gave. */
export function HandoffLine({ handoff }: { handoff: HandoffView }) {
  return (
    <p class="handoff-line" data-app={handoff.appId}>
      <span class="handoff-arrow" aria-hidden="true">
        ⇢
      </span>{" "}
      <strong>{t("handoff", { name: handoff.name })}</strong>
      {handoff.reason !== "" && <span class="muted"> · {handoff.reason}</span>}
    </p>
  );
}

/** The badge on an answer another app gave (nothing for the page's own app). */
export function AnsweredBy({ m }: { m: MessageView }) {
  const { names, ownApp } = useContext(HandoffNamesContext);
  const name = answeredByName(m, names, ownApp);
  if (name === null) return null;
  return (
    <p class="answered-by">
      <span class="agent-badge">{t("answered_by", { name })}</span>
    </p>
  );
}
