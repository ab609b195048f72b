// Math in Markdown: `$…$` and `\(…\)` inline, `$$…$$` and `\[…\]` as a block (Dify's forms), rendered
// by KaTeX as MathML only: the browser lays it out, so no KaTeX stylesheet, font or inline style is
// needed and the page's CSP stays as it is. trust is off (no \href, \url, \includegraphics, \htmlClass…);
// expansion and sizes are bounded; an error shows the source, never throws. The output still goes
// through DOMPurify with the rest of the message.
import type { TokenizerAndRendererExtension } from "marked";
import { escapeHtml, lazy } from "./loaded";

const katex = lazy(() => import("katex").then((m) => m.default));

export const mathReady = (): Promise<unknown> => katex.ready();

export function renderMath(tex: string, display: boolean): string {
  const k = katex.get();
  if (k === null) return `<code class="math-source">${escapeHtml(tex)}</code>`;
  return k.renderToString(tex, {
    displayMode: display,
    output: "mathml",
    throwOnError: false,
    trust: false,
    strict: "ignore",
    maxSize: 50,
    maxExpand: 200,
  });
}

// A dollar that opens inline math is followed by a non-space; the closing one follows a non-space and
// is not followed by a digit ("$5 and $10" stays text); it does not reach across a code span.
const INLINE_DOLLAR = /^\$(?![\s$])((?:\\[\s\S]|[^\\$\n`])+?)(?<!\s)\$(?!\d)/;
const INLINE_PAREN = /^\\\(([\s\S]+?)\\\)/;
const INLINE_DISPLAY = /^(?:\$\$([^$]+?)\$\$|\\\[([\s\S]+?)\\\])/;
const BLOCK = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/;

interface MathToken {
  type: string;
  raw: string;
  text: string;
  display: boolean;
}

const blockMath: TokenizerAndRendererExtension = {
  name: "blockMath",
  level: "block",
  start: (src) => src.match(/^(?:\$\$|\\\[)/m)?.index,
  tokenizer(src): MathToken | undefined {
    const m = BLOCK.exec(src);
    if (m) return { type: "blockMath", raw: m[0], text: (m[1] ?? m[2]).trim(), display: true };
    return undefined;
  },
  renderer: (token) => `<div class="math math-display">${renderMath(token.text as string, true)}</div>`,
};

const inlineMath: TokenizerAndRendererExtension = {
  name: "inlineMath",
  level: "inline",
  start(src) {
    const i = src.search(/\$|\\[([]/);
    return i < 0 ? undefined : i;
  },
  tokenizer(src): MathToken | undefined {
    const display = INLINE_DISPLAY.exec(src);
    if (display) return { type: "inlineMath", raw: display[0], text: (display[1] ?? display[2]).trim(), display: true };
    const m = INLINE_PAREN.exec(src) ?? INLINE_DOLLAR.exec(src);
    if (m) return { type: "inlineMath", raw: m[0], text: m[1].trim(), display: false };
    return undefined;
  },
  renderer: (token) =>
    token.display
      ? `<span class="math math-display">${renderMath(token.text as string, true)}</span>`
      : `<span class="math">${renderMath(token.text as string, false)}</span>`,
};

export const mathExtensions = [blockMath, inlineMath];
