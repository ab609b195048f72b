// Diagrams and charts in Markdown: a ```mermaid block (Mermaid) and Dify's ```echarts block (ECharts,
// options as JSON). Both are drawn to an SVG document that the page shows as an <img> (a data: URL): an
// SVG image runs no script and loads nothing, whatever its text says, and needs no inline style in the
// page (so the page's CSP keeps style-src 'self').
// - ECharts draws in its server-side mode (no DOM, no canvas) in a chunk of its own. The options are
//   JSON only (never evaluated, so no function can be in them); links and javascript: strings are
//   dropped.
// - Mermaid needs a document to measure text and styles its SVG inline, which the page's CSP refuses; it
//   runs in a hidden same-origin frame (/chat-renderer, its own page and CSP: scripts from this origin
//   only, inline styles allowed, no request anywhere) with securityLevel "strict", and sends back the
//   SVG's text.
// Only a closed block is drawn (not one still streaming); each result is kept, so a view rendering
// again finds it.
import { changed, escapeHtml, lazy } from "./loaded";

export type DiagramKind = "mermaid" | "echarts";

type Drawn = { svg: string } | { error: string };

const MAX_SOURCE = 100_000; // characters of a block drawn at all
const KEPT = 64; // drawn blocks kept
const drawn = new Map<string, Drawn | null>(); // null: being drawn

const keyOf = (kind: DiagramKind, source: string) => `${kind}\n${source}`;

/** The figure for a block when it is drawn, the source and why when it could not be, or null while it is
 * being drawn (drawing starts here the first time). */
export function diagramHtml(kind: DiagramKind, source: string, alt: string): string | null {
  const key = keyOf(kind, source);
  if (!drawn.has(key)) {
    void draw(kind, source);
    return null;
  }
  const result = drawn.get(key);
  if (result == null) return null;
  if ("error" in result) return null;
  const url = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(result.svg)}`;
  return `<figure class="diagram diagram-${kind}"><img src="${url}" alt="${escapeHtml(alt)}"></figure>`;
}

/** Why a block could not be drawn (null when it was, or is being drawn). */
export function diagramError(kind: DiagramKind, source: string): string | null {
  const result = drawn.get(keyOf(kind, source));
  return result != null && "error" in result ? result.error : null;
}

/** Draw a block (once per source); views render again when it is done. */
export async function draw(kind: DiagramKind, source: string): Promise<Drawn> {
  const key = keyOf(kind, source);
  const known = drawn.get(key);
  if (known != null) return known;
  drawn.set(key, null);
  let result: Drawn;
  try {
    if (source.length > MAX_SOURCE) throw new Error("too large to draw");
    result = { svg: kind === "echarts" ? await chartSvg(source) : await mermaidSvg(source) };
  } catch (e) {
    result = { error: e instanceof Error ? e.message : String(e) };
  }
  drawn.set(key, result);
  while (drawn.size > KEPT) drawn.delete(drawn.keys().next().value!);
  changed();
  return result;
}

// ---- ECharts ----

const echarts = lazy(() => import("echarts"));

const DROPPED_KEYS = new Set(["link", "sublink", "target", "subtarget"]);

/** The chart options a block may give: JSON, an object, without links or javascript: strings. */
export function chartOptions(source: string): Record<string, unknown> {
  const value: unknown = JSON.parse(source);
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("the options are not an object");
  return clean(value) as Record<string, unknown>;
}

function clean(value: unknown): unknown {
  if (typeof value === "string") return /^\s*(javascript|vbscript|data):/i.test(value) ? "" : value;
  if (Array.isArray(value)) return value.map(clean);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!DROPPED_KEYS.has(k) && k !== "__proto__") out[k] = clean(v);
    return out;
  }
  return value;
}

export async function chartSvg(source: string, width = 640, height = 360): Promise<string> {
  const options = chartOptions(source);
  const ec = await echarts.ready();
  if (ec === null) throw new Error("the chart renderer could not be loaded");
  const chart = ec.init(null as unknown as HTMLElement, undefined, { renderer: "svg", ssr: true, width, height });
  try {
    chart.setOption({ ...options, animation: false });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

// ---- Mermaid (in its frame) ----

export const RENDERER_PATH = "/chat-renderer";
const TIMEOUT_MS = 20_000;

let frame: Promise<Window> | null = null;
let nextId = 0;
const waiting = new Map<number, (reply: { svg?: string; error?: string }) => void>();

function rendererFrame(): Promise<Window> {
  frame ??= new Promise((resolve, reject) => {
    const el = document.createElement("iframe");
    el.className = "renderer-frame";
    el.title = "Diagram renderer";
    el.setAttribute("aria-hidden", "true");
    el.tabIndex = -1;
    const onMessage = (e: MessageEvent) => {
      if (e.origin !== window.location.origin || e.source !== el.contentWindow) return;
      const data = e.data as { ready?: boolean; id?: number; svg?: string; error?: string };
      if (data.ready === true) resolve(el.contentWindow!);
      else if (typeof data.id === "number") {
        waiting.get(data.id)?.(data);
        waiting.delete(data.id);
      }
    };
    window.addEventListener("message", onMessage);
    el.addEventListener("error", () => reject(new Error("the diagram renderer could not be loaded")));
    el.src = RENDERER_PATH;
    document.body.appendChild(el);
  });
  return frame;
}

async function mermaidSvg(source: string): Promise<string> {
  const win = await rendererFrame();
  const id = ++nextId;
  const reply = await new Promise<{ svg?: string; error?: string }>((resolve) => {
    waiting.set(id, resolve);
    setTimeout(() => {
      if (waiting.delete(id)) resolve({ error: "the diagram took too long to draw" });
    }, TIMEOUT_MS);
    win.postMessage({ id, source }, window.location.origin);
  });
  if (typeof reply.svg !== "string") throw new Error(reply.error ?? "the diagram could not be drawn");
  return reply.svg;
}
