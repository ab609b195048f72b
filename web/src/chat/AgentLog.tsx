// A message's agent log (GET /v1/messages/{id}/agent-log): rounds, tool calls with their times and
// status, tokens — what the server stored, so it also works for past messages.
import { useEffect, useState } from "preact/hooks";
import type { AgentLog, ServiceClient } from "../shared/api";
import { Markdown } from "./Markdown";

export function AgentLogDialog({ client, messageId, onClose }: { client: ServiceClient; messageId: string; onClose: () => void }) {
  const [log, setLog] = useState<AgentLog | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    client.agentLog(messageId).then(setLog, (e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  }, [client, messageId]);
  useEffect(() => {
    const close = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", close);
    return () => window.removeEventListener("keydown", close);
  }, [onClose]);
  const meta = log?.meta ?? {};
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="dialog agent-log" role="dialog" aria-modal="true" aria-label="Agent log">
        <header>
          <h2>Agent log</h2>
          <button type="button" class="icon" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </header>
        {error && <p class="error-text">{error}</p>}
        {!log && !error && <p class="muted">Loading…</p>}
        {log && (
          <>
            <dl class="log-meta">
              <dt>Status</dt>
              <dd class={meta.status === "error" ? "error-text" : ""}>{String(meta.status ?? "")}</dd>
              <dt>Strategy</dt>
              <dd>{String(meta.agent_mode ?? "")}</dd>
              <dt>Time</dt>
              <dd>{typeof meta.elapsed_time === "number" ? `${meta.elapsed_time.toFixed(2)} s` : "—"}</dd>
              <dt>Tokens</dt>
              <dd>{String(meta.total_tokens ?? "—")}</dd>
              <dt>Rounds</dt>
              <dd>{String(meta.iterations ?? log.iterations.length)}</dd>
            </dl>
            <ol class="log-rounds">
              {log.iterations.map((it, i) => (
                <li key={i}>
                  <div class="muted">
                    Round {i + 1} · {it.tokens} tokens
                  </div>
                  {it.thought && <Markdown text={it.thought} class="log-thought" />}
                  {it.tool_calls.map((c, j) => (
                    <details key={j} class={`tool-call ${c.status === "error" ? "failed" : ""}`}>
                      <summary>
                        <span class="tool-label">{c.tool_name}</span>
                        <span class="tool-state">
                          {c.status} · {c.time_cost.toFixed(3)} s
                        </span>
                      </summary>
                      <div class="tool-io">
                        <h4>Arguments</h4>
                        <pre>{JSON.stringify(c.tool_input, null, 2)}</pre>
                        <h4>Output</h4>
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
