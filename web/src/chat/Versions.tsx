// A message's versions on screen: the "1 / 2" switcher (after Regenerate or an edited question) and the
// editor of a sent question (sending it makes a new version of the message).
import { useEffect, useRef, useState } from "preact/hooks";
import { t } from "../shared/i18n";
import "./versions.css";

export interface VersionSwitch {
  i: number; // 1-based
  n: number;
  onSwitch: (to: number) => void; // the 1-based place to show
  busy: boolean; // an answer is being written: no switching meanwhile
}

export function VersionSwitcher({ v }: { v: VersionSwitch }) {
  return (
    <span class="version-switcher" role="group" aria-label={t("versions")}>
      <button
        type="button"
        class="icon"
        aria-label={t("previous_version")}
        title={t("previous_version")}
        disabled={v.busy || v.i <= 1}
        onClick={() => v.onSwitch(v.i - 1)}
      >
        ‹
      </button>
      <span class="version-place" aria-label={t("version_of", { i: v.i, n: v.n })}>
        {v.i} / {v.n}
      </span>
      <button
        type="button"
        class="icon"
        aria-label={t("next_version")}
        title={t("next_version")}
        disabled={v.busy || v.i >= v.n}
        onClick={() => v.onSwitch(v.i + 1)}
      >
        ›
      </button>
    </span>
  );
}

/** The Edit button of a sent question, and its editor once pressed. */
export function QuestionEditor({ query, onSend }: { query: string; onSend: (query: string) => void }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(query);
  const area = useRef<HTMLTextAreaElement>(null);
  const editButton = useRef<HTMLButtonElement>(null);
  const cancelled = useRef(false); // back on the Edit button after Cancel or Esc (keyboard users)
  useEffect(() => {
    if (editing) area.current?.focus();
    else if (cancelled.current) editButton.current?.focus();
    cancelled.current = false;
  }, [editing]);
  const cancel = () => {
    cancelled.current = true;
    setEditing(false);
  };
  if (!editing) {
    return (
      <button
        type="button"
        class="icon edit-question"
        title={t("edit_help")}
        ref={editButton}
        onClick={() => {
          setText(query);
          setEditing(true);
        }}
      >
        {t("edit")}
      </button>
    );
  }
  const send = () => {
    if (text.trim() === "") return;
    setEditing(false);
    onSend(text);
  };
  return (
    <form
      class="question-editor"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <textarea
        ref={area}
        rows={3}
        aria-label={t("edit_question")}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            send();
          } else if (e.key === "Escape") {
            e.stopPropagation();
            cancel();
          }
        }}
      />
      <div class="question-editor-actions">
        <button type="button" onClick={cancel}>
          {t("cancel")}
        </button>
        <button type="submit" disabled={text.trim() === ""}>
          {t("send")}
        </button>
      </div>
    </form>
  );
}
