// The chat page: conversations on the side, the exchange in the middle, the composer at the bottom.
import { t } from "../shared/i18n";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ServiceClient } from "../shared/api";
import { Menu } from "../shared/icons";
import { AgentLogDialog } from "./AgentLog";
import { Reader } from "./audio";
import { Composer } from "./Composer";
import { handoffNames } from "./handoff";
import { HandoffNamesContext } from "./Handoffs";
import { formFields, formProblem, initialValues } from "./form";
import { InputForm } from "./InputForm";
import { Markdown } from "./Markdown";
import { Message, type MessageActions } from "./Message";
import { loadPins, setPin } from "./pins";
import { Sidebar } from "./Sidebar";
import { finalAnswer, isRunning, type FileView, type MessageView } from "./state";
import { ThemeToggle } from "./theme";
import { requestFile, type Attachment } from "./uploads";
import { useChat, type SendRequest } from "./useChat";
import { parentFor, placeOf, type VersionMap } from "./versions";
import type { VersionSwitch } from "./Versions";

export interface AppSettings {
  name: string;
  description: string;
  icon: string; // an emoji, "" for none
  iconBackground: string; // a CSS colour (checked by the server)
  footer: string; // a line under the message box
  mode: string; // agent-chat, chat (no tools: no agent log) or completion (CompletionApp's page)
  parameters: Record<string, unknown>;
}

interface FileUpload {
  enabled?: boolean;
  allowed_file_types?: string[];
  number_limits?: number;
}

export function ChatApp({ client, appId, settings }: { client: ServiceClient; appId: string; settings: AppSettings }) {
  const p = settings.parameters;
  const suggestionsOn = (p.suggested_questions_after_answer as { enabled?: boolean } | undefined)?.enabled === true;
  const voiceOn = (p.text_to_speech as { enabled?: boolean } | undefined)?.enabled === true;
  const speechOn = (p.speech_to_text as { enabled?: boolean } | undefined)?.enabled === true;
  const [reading, setReading] = useState<string | null>(null); // the local id of the message read aloud
  const [reader] = useState(() => new Reader(() => setReading(null)));
  useEffect(() => () => reader.stop(), [reader]);
  const chat = useChat(client, appId, suggestionsOn);
  const fields = useMemo(() => formFields(p.user_input_form), [p]);
  const [inputs, setInputs] = useState<Record<string, unknown>>(() => initialValues(fields));
  const [logFor, setLogFor] = useState<string | null>(null);
  const [menuOpen, setMenuOpen] = useState(false);
  const [pins, setPins] = useState<string[]>(() => loadPins(localStorage, appId));
  const bottom = useRef<HTMLDivElement>(null);
  const fileUpload = (p.file_upload ?? {}) as FileUpload;
  const uploadTypes = fileUpload.enabled ? (fileUpload.allowed_file_types ?? []) : null;
  const conversation = chat.conversations.find((c) => c.id === chat.currentId);
  const isNew = chat.currentId === null && chat.messages.length === 0;
  const handoffs = useMemo(() => ({ names: handoffNames(chat.messages), ownApp: appId }), [chat.messages, appId]);
  // A new conversation keeps the opening statement while its first answer streams (it is listed with
  // it from its first event on).
  const openingStatement = String(p.opening_statement ?? "");
  const opening = conversation?.introduction ?? (chat.currentId === null ? openingStatement : "");
  const starters = isNew && Array.isArray(p.suggested_questions) ? (p.suggested_questions as string[]) : [];

  useEffect(() => {
    bottom.current?.scrollIntoView({ block: "end" });
  }, [chat.messages]);

  // Esc stops the answer wherever the focus is.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && chat.running && logFor === null) void chat.stop();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [chat, logFor]);

  const sendText = useCallback(
    (text: string, attachments: Attachment[] = [], branch?: SendRequest["branch"]): boolean => {
      const values = chat.currentId === null ? inputs : (conversation?.inputs ?? inputs);
      const problem = chat.currentId === null ? formProblem(fields, values) : null;
      if (problem !== null) {
        chat.setNotice(problem);
        return false;
      }
      const previews: FileView[] = attachments.map((a) => ({
        id: a.uploaded?.id ?? a.localId,
        type: a.type,
        url: a.previewUrl ?? "",
        name: a.name,
        mimeType: a.uploaded?.mime_type ?? "",
        belongsTo: "user",
      }));
      void chat.send({ query: text, introduction: openingStatement, inputs: values, files: attachments.map(requestFile), previews, branch });
      return true;
    },
    [chat, conversation, fields, inputs, openingStatement],
  );

  /** A new version of the message shown at `index` (Regenerate, an edited question) with `query`. */
  const newVersion = (index: number, query: string) =>
    sendText(query, [], { replaces: index, parentId: parentFor(chat.versions, chat.messages, index) });
  const actions = (m: MessageView, index: number): MessageActions => ({
    onCopy: (x) => void copy(finalAnswer(x) || x.answer),
    onRegenerate: !chat.running && m.id !== null ? (x) => newVersion(index, x.query) : null,
    onEdit: !chat.running && m.id !== null && !isRunning(m) ? (_, query) => newVersion(index, query) : null,
    versions: versionSwitch(chat.versions, m.id, chat.running, (id) => void chat.showVersion(id)),
    onFeedback: (x, rating, content) => void chat.setFeedback(x, rating, content ?? ""),
    onAgentLog: settings.mode === "chat" ? null : (x) => x.id !== null && setLogFor(x.id),
    onOpenSteps: (x) => void chat.loadTimes(x),
    onAnswer: (x, answer) => void chat.answer(x, answer),
    reading: reading === m.localId,
    onReadAloud: voiceOn
      ? (x) => {
          if (reading === x.localId || x.id === null) {
            reader.stop();
            return;
          }
          setReading(x.localId);
          reader.play(client, x.id).catch((e: unknown) => {
            reader.stop();
            chat.setNotice(e instanceof Error && e.name !== "NotAllowedError" ? e.message : t("read_failed"));
          });
        }
      : null,
  });

  return (
    <div class={`chat-page ${menuOpen ? "menu-open" : ""}`}>
      <header class="topbar">
        <button type="button" class="icon menu" aria-label={t("conversations")} onClick={() => setMenuOpen(!menuOpen)}>
          <Menu />
        </button>
        <AppBadge settings={settings} />
        <div class="app-title">
          <h1>{settings.name}</h1>
          {settings.description && <p class="app-description muted">{settings.description}</p>}
        </div>
        <ThemeToggle />
      </header>
      <Sidebar
        conversations={chat.conversations}
        currentId={chat.currentId}
        onOpen={(id) => {
          setMenuOpen(false);
          void chat.open(id);
        }}
        onRename={(id, name) => void chat.rename(id, name)}
        onDelete={(id) => void chat.remove(id)}
        onMore={chat.moreConversations ? () => void chat.loadMoreConversations() : null}
        pins={pins}
        onPin={(id, on) => setPins((ps) => setPin(localStorage, appId, ps, id, on))}
      />
      <main class="conversation-view">
        <div class="messages" aria-live="polite">
          {opening && <Markdown text={opening} class="opening" />}
          {starters.length > 0 && (
            <div class="suggestions starters">
              {starters.map((q) => (
                <button type="button" key={q} class="chip" onClick={() => sendText(q)}>
                  {q}
                </button>
              ))}
            </div>
          )}
          {fields.length > 0 && (
            <InputForm
              fields={fields}
              values={chat.currentId === null ? inputs : (conversation?.inputs ?? inputs)}
              onChange={setInputs}
              client={client}
              onError={chat.setNotice}
              readOnly={chat.currentId !== null}
            />
          )}
          {chat.loading && <p class="muted">{t("loading")}</p>}
          {chat.earlierMessages && !chat.loading && (
            <button type="button" class="link earlier" onClick={() => void chat.loadEarlier()}>
              {t("earlier")}
            </button>
          )}
          <HandoffNamesContext.Provider value={handoffs}>
            {chat.messages.map((m, i) => (
              <Message key={m.localId} m={m} actions={actions(m, i)} />
            ))}
          </HandoffNamesContext.Provider>
          {chat.suggested.length > 0 && !chat.running && (
            <div class="suggestions follow-ups">
              {chat.suggested.map((q) => (
                <button type="button" key={q} class="chip" onClick={() => sendText(q)}>
                  {q}
                </button>
              ))}
            </div>
          )}
          <div ref={bottom} />
        </div>
        {chat.notice && (
          <div class="notice" role="alert">
            <span>{chat.notice}</span>
            <button type="button" class="icon" aria-label={t("dismiss")} onClick={() => chat.setNotice(null)}>
              ×
            </button>
          </div>
        )}
        <Composer
          client={client}
          running={chat.running}
          uploadTypes={uploadTypes}
          speechOn={speechOn}
          onError={chat.setNotice}
          maxFiles={fileUpload.number_limits ?? 3}
          onSend={sendText}
          onStop={() => void chat.stop()}
        />
        {settings.footer && <p class="footer-line muted">{settings.footer}</p>}
      </main>
      {logFor !== null && <AgentLogDialog client={client} messageId={logFor} onClose={() => setLogFor(null)} />}
    </div>
  );
}

/** The "1 / 2" switcher of a message with more than one version (null otherwise). */
function versionSwitch(map: VersionMap, id: string | null, busy: boolean, show: (id: string) => void): VersionSwitch | null {
  const place = placeOf(map, id);
  if (place === null) return null;
  return { i: place.i, n: place.n, busy, onSwitch: (to) => show(place.ids[to - 1]) };
}

export async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http): copy through a selected, hidden text area.
    const area = document.createElement("textarea");
    area.value = text;
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

/** The app's emoji on its colour, else the first letter of its name. */
export function AppBadge({ settings }: { settings: AppSettings }) {
  const badge = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    // set through the CSSOM: the page's CSP allows no inline style attribute
    if (badge.current && settings.iconBackground) badge.current.style.background = settings.iconBackground;
  }, [settings.iconBackground]);
  return (
    <span class={`app-badge ${settings.icon ? "emoji" : ""}`} aria-hidden="true" ref={badge}>
      {settings.icon || settings.name.trim().charAt(0).toUpperCase() || "?"}
    </span>
  );
}
