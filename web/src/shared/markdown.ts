// Model output → safe HTML: Markdown by marked (raw HTML in it shown as text), code highlighted by highlight.js (core and a few
// languages, so the bundle stays small; any other language highlight.js has is loaded when a block names
// it), math by KaTeX, ```mermaid and ```echarts blocks drawn as images (shared/rich/: those renderers
// are chunks loaded on first use), then sanitized by DOMPurify. Nothing the model writes can add a
// script, an event handler or a style; links open in a new tab without a referrer.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdownLang from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";
import { t } from "./i18n";
import { diagramError, diagramHtml, type DiagramKind } from "./rich/diagrams";
import { loadLanguage, loadableLanguage } from "./rich/languages";
import { escapeHtml } from "./rich/loaded";
import { mathExtensions } from "./rich/math";

const languages = { bash, css, javascript, json, markdown: markdownLang, python, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(["sh", "shell", "zsh"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

const DIAGRAMS: Record<string, DiagramKind> = { mermaid: "mermaid", echarts: "echarts" };

// A fenced block is drawn only once its closing fence has arrived (not while it streams).
const closed = (raw: string): boolean => /\n[ \t]*(`{3,}|~{3,})[ \t]*\n?$/.test(raw);

function codeBlock(text: string, language: string): string {
  const known = language !== "" && hljs.getLanguage(language) !== undefined;
  if (!known && language !== "" && loadableLanguage(language) !== null) void loadLanguage(hljs, language);
  const html = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHtml(text);
  const label = language ? `<span class="code-lang">${escapeHtml(language)}</span>` : "";
  return `<pre class="code">${label}<code class="hljs">${html}</code></pre>`;
}

function diagramBlock(kind: DiagramKind, text: string): string {
  const figure = diagramHtml(kind, text, t(kind === "echarts" ? "chart" : "diagram"));
  if (figure !== null) return figure;
  const error = diagramError(kind, text);
  const note = error !== null ? `<p class="diagram-error">${escapeHtml(t("diagram_failed", { error }))}</p>` : "";
  return codeBlock(text, kind) + note;
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // HTML in the model's text is shown as text, never parsed as markup (DOMPurify stays as a second
    // guard for what Markdown itself makes: links, images).
    html({ text }) {
      return escapeHtml(text);
    },
    code({ text, lang, raw }) {
      const language = (lang ?? "").trim().split(/\s+/)[0].toLowerCase();
      const kind = DIAGRAMS[language];
      if (kind !== undefined && closed(raw)) return diagramBlock(kind, text);
      return codeBlock(text, language);
    },
  },
  extensions: mathExtensions,
});

const purify = DOMPurify;
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const SANITIZE = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style", "id", "name"],
  ALLOW_DATA_ATTR: false,
};

/** Sanitized HTML for Markdown `text` (which may be cut mid-way while it streams). */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return purify.sanitize(html, SANITIZE);
}
