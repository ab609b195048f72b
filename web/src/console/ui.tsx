// Small pieces the console's pages share: loading something with a reload, an error line, a busy
// button that reports its action's error.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { t } from "./i18n";

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  reload: () => void;
}

/** ``load()`` run on mount and again on ``reload()`` (or when ``deps`` change). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (value) => {
        if (live) {
          setData(value);
          setError(null);
        }
      },
      (e: unknown) => {
        if (live) setError(message(e));
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, reload };
}

export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p class="error-text" role="alert">
      {error}
    </p>
  ) : null;
}

/** A button that runs ``action``, disabled while it runs; its error is shown beside it. */
export function Action({
  action,
  children,
  kind = "",
  confirm,
  title,
}: {
  action: () => Promise<unknown>;
  children: ComponentChildren;
  kind?: string;
  confirm?: string;
  title?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <span class="action">
      <button
        type="button"
        class={kind}
        disabled={busy}
        title={title}
        onClick={async () => {
          if (confirm && !window.confirm(confirm)) return;
          setBusy(true);
          setError(null);
          try {
            await action();
          } catch (e) {
            setError(message(e));
          } finally {
            setBusy(false);
          }
        }}
      >
        {children}
      </button>
      {error && (
        <span class="error-text" role="alert">
          {" "}
          {error}
        </span>
      )}
    </span>
  );
}

export function Section({ title, children, aside }: { title: string; children: ComponentChildren; aside?: ComponentChildren }) {
  return (
    <section class="card">
      <div class="card-head">
        <h2>{title}</h2>
        {aside}
      </div>
      {children}
    </section>
  );
}

/** Save ``text`` as a file download (made in the page: the export needs the admin token). */
export function download(name: string, text: string, type = "application/x-yaml"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.rel = "noopener";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A button that copies ``text``; says so (role=status) when it did, or that the browser refused. */
export function Copy({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState("");
  return (
    <span class="action">
      <button
        type="button"
        class="small"
        aria-label={label}
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setSaid(t("copied"));
          } catch {
            setSaid(t("copy_refused"));
          }
        }}
      >
        {t("copy")}
      </button>
      <span class="muted small" role="status">
        {said}
      </span>
    </span>
  );
}
