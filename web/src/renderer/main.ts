// The diagram renderer's frame (/chat-renderer, hidden in the chat page): Mermaid measures text in a
// document and styles its SVG inline, which the chat page's CSP refuses, so it runs here under a CSP of
// its own (scripts from this origin only, inline styles allowed, no request anywhere). It answers only
// its parent on this origin: {id, source} → {id, svg} (a standalone SVG document, sized, as XML) or
// {id, error}. securityLevel "strict": labels are text, no click handlers; the parent shows the SVG as
// an image, so nothing in it can run in any case.
import mermaid from "mermaid";

mermaid.initialize({
  startOnLoad: false,
  securityLevel: "strict",
  htmlLabels: false,
  flowchart: { htmlLabels: false },
  maxTextSize: 100_000,
  fontFamily: "system-ui, -apple-system, 'Segoe UI', sans-serif",
  theme: "default", // the page shows it on a light card in both themes
});

/** The SVG as a standalone XML document with its size set from its viewBox (an image needs one). */
function standalone(svg: string): string {
  const doc = new DOMParser().parseFromString(svg, "text/html"); // inert: nothing in it runs
  const root = doc.querySelector("svg");
  if (root === null) throw new Error("the diagram could not be drawn");
  const box = (root.getAttribute("viewBox") ?? "").split(/[\s,]+/).map(Number);
  if (box.length === 4 && box.every(Number.isFinite)) {
    root.setAttribute("width", String(Math.ceil(box[2])));
    root.setAttribute("height", String(Math.ceil(box[3])));
  }
  root.removeAttribute("style");
  root.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  return new XMLSerializer().serializeToString(root);
}

let drawing = 0;

window.addEventListener("message", (e: MessageEvent) => {
  if (e.origin !== window.location.origin || e.source !== window.parent) return;
  const { id, source } = e.data as { id?: unknown; source?: unknown };
  if (typeof id !== "number" || typeof source !== "string") return;
  drawing += 1;
  mermaid
    .render(`diagram-${drawing}`, source)
    .then(
      ({ svg }) => ({ id, svg: standalone(svg) }),
      (err: unknown) => ({ id, error: err instanceof Error ? err.message : String(err) }),
    )
    .then((reply) => window.parent.postMessage(reply, window.location.origin));
});

window.parent.postMessage({ ready: true }, window.location.origin);
