// A message's agent log (GET /v1/messages/{id}/agent-log): rounds, tool calls with their times and
// status, tokens — what the server stored, so it also works for past messages.
import { useEffect, useRef, useState } from "preact/hooks";
import type { AgentLog, ServiceClient } from "../shared/api";
import { duration, strategyName } from "../shared/format";
import { count, t } from "../shared/i18n";
import { Markdown } from "./Markdown";
import { labelOf } from "./state";

export function AgentLogDialog({ client, messageId, onClose }: { client: ServiceClient; messageId: string; onClose: () => void }) {
  const [log, setLog] = useState<AgentLog | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    client.agentLog(messageId).then(setLog, (e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [client, messageId]);
  const dialog = useRef<HTMLDivElement>(null);
  // Keyboard: the dialog takes the focus, Tab stays inside it, Esc closes it and the focus goes back
  // to where it was (the button that opened it).
  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onClose();
      else if (e.key === "Tab" && dialog.current) trapTab(e, dialog.current);
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      before?.focus();
    };
  }, [onClose]);
  const meta = log?.meta ?? {};
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="dialog agent-log" role="dialog" aria-modal="true" aria-label={t("agent_log")} tabIndex={-1} ref={dialog}>
        <header>
          <h2>{t("agent_log")}</h2>
          <button type="button" class="icon" aria-label={t("dismiss")} onClick={onClose}>
            ×
          </button>
        </header>
        {error && <p class="error-text">{error}</p>}
        {!log && !error && <p class="muted">{t("loading")}</p>}
        {log && (
          <>
            <dl class="log-meta">
              <dt>{t("log_status")}</dt>
              <dd class={meta.status === "error" ? "error-text" : ""}>{String(meta.status ?? "")}</dd>
              <dt>{t("log_strategy")}</dt>
              <dd>{strategyName(meta.agent_mode)}</dd>
              <dt>{t("log_time")}</dt>
              <dd>{duration(typeof meta.elapsed_time === "number" ? meta.elapsed_time : null) || "—"}</dd>
              <dt>{t("log_tokens")}</dt>
              <dd>{typeof meta.total_tokens === "number" && meta.total_tokens > 0 ? meta.total_tokens.toLocaleString() : "—"}</dd>
              <dt>{t("log_rounds")}</dt>
              <dd>{String(meta.iterations ?? log.iterations.length)}</dd>
            </dl>
            <ol class="log-rounds">
              {log.iterations.map((it, i) => (
                <li key={i}>
                  <div class="muted">
                    {t("log_round", { n: i + 1 })}
                    {it.tokens > 0 && ` · ${count(it.tokens, "token")}`}
                  </div>
                  {it.thought && <Markdown text={it.thought} class="log-thought" />}
                  {it.tool_calls.map((c, j) => (
                    <details key={j} class={`tool-call ${c.status === "error" ? "failed" : ""}`}>
                      <summary>
                        <span class="tool-label">{labelOf(c.tool_label, c.tool_name)}</span>
                        {labelOf(c.tool_label, c.tool_name) !== c.tool_name && <code class="tool-name">{c.tool_name}</code>}
                        <span class="tool-state">
                          {t(c.status === "error" ? "tool_failed" : "tool_done")}
                          {c.time_cost > 0 && ` · ${duration(c.time_cost)}`}
                        </span>
                      </summary>
                      <div class="tool-io">
                        <h4>{t("arguments")}</h4>
                        <pre>{JSON.stringify(c.tool_input, null, 2)}</pre>
                        <h4>{t("output")}</h4>
                        <pre>{typeof c.tool_output === "string" ? c.tool_output : JSON.stringify(c.tool_output, null, 2)}</pre>
                        {c.error && <p class="error-text">{c.error}</p>}
                      </div>
                    </details>
                  ))}
                </li>
              ))}
            </ol>
          </>
        )}
      </div>
    </div>
  );
}

const FOCUSABLE = "button:not(:disabled), [href], input:not(:disabled), summary, [tabindex]:not([tabindex='-1'])";

/** Keeps Tab and Shift+Tab among the dialog's own controls. */
function trapTab(e: KeyboardEvent, within: HTMLElement): void {
  const items = Array.from(within.querySelectorAll<HTMLElement>(FOCUSABLE));
  if (items.length === 0) return;
  const first = items[0];
  const last = items[items.length - 1];
  const active = document.activeElement;
  if (e.shiftKey && (active === first || active === within)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (active === last || !within.contains(active))) {
    e.preventDefault();
    first.focus();
  }
}
