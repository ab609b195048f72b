// The heavy renderers (KaTeX, Mermaid, ECharts, more highlight.js languages) are separate chunks, loaded
// the first time a message needs one. Rendering Markdown stays synchronous: until a renderer is there, its
// block shows as plain source and the load is started; when it (or an async render) finishes, `changed`
// tells every mounted Markdown view to render again. `version` lets views memoize on it.

type Listener = () => void;

const listeners = new Set<Listener>();
let version = 0;

export function renderersVersion(): number {
  return version;
}

/** Something a Markdown text may use became ready: views render again. */
export function changed(): void {
  version += 1;
  for (const listener of [...listeners]) listener();
}

export function onRenderersChanged(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/** A loader that runs once: `get()` is the module when loaded (else null, and the load is started);
 * `ready()` waits for it. A failed load is not retried (its blocks stay as source). */
export function lazy<T>(load: () => Promise<T>): { get: () => T | null; ready: () => Promise<T | null> } {
  let value: T | null = null;
  let pending: Promise<T | null> | null = null;
  const ready = (): Promise<T | null> => {
    pending ??= load().then(
      (v) => {
        value = v;
        changed();
        return v;
      },
      () => null,
    );
    return pending;
  };
  return {
    get: () => {
      if (value === null) void ready();
      return value;
    },
    ready,
  };
}
