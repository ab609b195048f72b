import { useEffect, useMemo, useState } from "preact/hooks";
import { renderMarkdown } from "../shared/markdown";
import { onRenderersChanged, renderersVersion } from "../shared/rich/loaded";

/** Model text as sanitized HTML (see shared/markdown.ts: marked, highlight.js, KaTeX, diagrams,
 * DOMPurify). It renders again when a renderer it waited for (a chunk, a drawn diagram) is ready. */
export function Markdown({ text, class: className = "" }: { text: string; class?: string }) {
  const [version, setVersion] = useState(renderersVersion);
  useEffect(() => onRenderersChanged(() => setVersion(renderersVersion())), []);
  const html = useMemo(() => renderMarkdown(text), [text, version]);
  return <div class={`markdown ${className}`} dangerouslySetInnerHTML={{ __html: html }} />;
}
