// Where the user writes: Enter sends, Shift+Enter makes a new line, Esc stops the answer; files are
// uploaded as soon as they are picked, with previews.
import { t } from "../shared/i18n";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ServiceClient } from "../shared/api";
import { Clip, Mic } from "../shared/icons";
import { Recorder } from "./audio";
import { acceptFor, startUpload, type Attachment } from "./uploads";

export interface ComposerProps {
  client: ServiceClient;
  running: boolean;
  uploadTypes: string[] | null; // null: the app takes no files
  speechOn: boolean; // the app turns speech into text: a microphone button
  onError: (message: string) => void;
  maxFiles: number;
  onSend: (text: string, attachments: Attachment[]) => boolean; // false: not sent (text kept)
  onStop: () => void;
}

export function Composer({ client, running, uploadTypes, speechOn, onError, maxFiles, onSend, onStop }: ComposerProps) {
  const [text, setText] = useState("");
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  const fileInput = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLTextAreaElement>(null);
  const [recorder] = useState(() => new Recorder());
  const [listening, setListening] = useState<"off" | "recording" | "transcribing">("off");
  useEffect(() => () => recorder.cancel(), [recorder]);
  const toggleMic = async () => {
    try {
      if (listening === "off") {
        await recorder.start();
        setListening("recording");
        return;
      }
      if (listening !== "recording") return;
      setListening("transcribing");
      const said = (await recorder.finish(client)).trim();
      if (said) setText((t) => (t.trim() ? `${t.trimEnd()} ${said}` : said));
      box.current?.focus();
    } catch (e) {
      recorder.cancel();
      onError(e instanceof Error && e.name !== "NotAllowedError" ? e.message : t("mic_failed"));
    } finally {
      setListening((l) => (l === "transcribing" ? "off" : l));
    }
  };
  // The message box has the focus when the page opens (not on touch screens: it would open the keyboard).
  useEffect(() => {
    if (window.matchMedia?.("(pointer: fine)").matches) box.current?.focus();
  }, []);
  const uploading = attachments.some((a) => a.state === "uploading");

  const send = () => {
    if (running || uploading || text.trim() === "") return;
    const ready = attachments.filter((a) => a.state === "ready");
    if (onSend(text.trim(), ready)) {
      setText("");
      setAttachments([]);
    }
  };
  const [dragging, setDragging] = useState(false);
  const pick = (files: FileList | File[] | null) => {
    for (const file of Array.from(files ?? []).slice(0, Math.max(0, maxFiles - attachments.length))) {
      const a = startUpload(client, file, (done) =>
        setAttachments((all) => all.map((x) => (x.localId === done.localId ? done : x))),
      );
      setAttachments((all) => [...all, a]);
    }
    if (fileInput.current) fileInput.current.value = "";
  };

  // Files pasted into the box or dropped on it are attached as if picked (when the app takes files).
  const takesFiles = uploadTypes !== null && attachments.length < maxFiles;
  const onPaste = (e: ClipboardEvent) => {
    const files = e.clipboardData?.files;
    if (!takesFiles || !files || files.length === 0) return; // text is pasted as usual
    e.preventDefault();
    pick(files);
  };
  const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
  const onDragOver = (e: DragEvent) => {
    if (!takesFiles || !hasFiles(e)) return;
    e.preventDefault();
    setDragging(true);
  };
  const onDrop = (e: DragEvent) => {
    setDragging(false);
    if (!takesFiles || !e.dataTransfer?.files.length) return;
    e.preventDefault();
    pick(e.dataTransfer.files);
  };

  return (
    <div class={`composer ${dragging ? "dragging" : ""}`} onDragOver={onDragOver} onDragLeave={() => setDragging(false)} onDrop={onDrop}>
      {dragging && <p class="drop-hint">{t("drop_hint")}</p>}
      {attachments.length > 0 && (
        <ul class="attachments">
          {attachments.map((a) => (
            <li key={a.localId} class={`attachment ${a.state}`} title={a.error ?? a.name}>
              {a.previewUrl ? <img src={a.previewUrl} alt={a.name} /> : <span class="file-name">{a.name}</span>}
              <span class="attachment-state">{a.state === "uploading" ? "uploading…" : a.state === "failed" ? a.error : ""}</span>
              <button
                type="button"
                class="icon remove"
                aria-label={`Remove ${a.name}`}
                onClick={() => {
                  if (a.previewUrl) URL.revokeObjectURL(a.previewUrl); // not sent: its preview is not shown again
                  setAttachments((all) => all.filter((x) => x.localId !== a.localId));
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="composer-row">
        {uploadTypes !== null && (
          <>
            <input ref={fileInput} type="file" class="hidden" accept={acceptFor(uploadTypes)} multiple={maxFiles > 1} aria-label={t("attach_files")} onChange={(e) => pick((e.target as HTMLInputElement).files)} />
            <button type="button" class="icon attach" title={t("attach")} aria-label={t("attach")} disabled={attachments.length >= maxFiles} onClick={() => fileInput.current?.click()}>
              <Clip />
            </button>
          </>
        )}
        <textarea
          ref={box}
          class="message-input"
          rows={1}
          placeholder={t("message_placeholder")}
          title={t("message_help")}
          aria-label={t("message")}
          value={text}
          onPaste={onPaste}
          onInput={(e) => {
            const el = e.target as HTMLTextAreaElement;
            setText(el.value);
            el.style.height = "auto";
            el.style.height = `${Math.min(el.scrollHeight, 240)}px`;
          }}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              send();
            } // Esc (stop) is handled for the whole page (ChatApp)
          }}
        />
        {speechOn && Recorder.supported() && (
          <button
            type="button"
            class={`icon mic ${listening}`}
            aria-label={listening === "recording" ? t("stop_recording") : t("speak")}
            aria-pressed={listening === "recording"}
            title={listening === "recording" ? t("stop_recording_help") : t("speak_help")}
            disabled={listening === "transcribing"}
            onClick={() => void toggleMic()}
          >
            <Mic />
          </button>
        )}
        {running ? (
          <button type="button" class="stop" onClick={onStop} title={t("stop_help")}>
            {t("stop")}
          </button>
        ) : (
          <button type="button" class="send" onClick={send} disabled={uploading || text.trim() === ""}>
            {t("send")}
          </button>
        )}
      </div>
    </div>
  );
}
