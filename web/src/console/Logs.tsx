// An app's logs: usage per day, its conversations (every end user's), and a conversation's messages
// with their agent logs (rounds, tool calls, times, tokens), feedback and the prompts the model received.
import { count, known, t } from "./i18n";
import { useState } from "preact/hooks";
import type { AdminClient, MessageLog, ModelCallView } from "./api";
import { duration, strategyName } from "../shared/format";
import { asText, versionMark, when, type VersionMark } from "./logic";
import { Memory } from "./Memory";
import { Action, Copy, ErrorLine, Section, download, useLoad } from "./ui";

export function Logs({ client, appId }: { client: AdminClient; appId: string }) {
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState<string | null>(null);
  const usage = useLoad(() => client.usage(appId, 30), [client, appId]);
  const conversations = useLoad(() => client.conversations(appId, page), [client, appId, page]);
  return (
    <>
      <Section title={t("logs_usage_title")} aside={<button type="button" onClick={() => { usage.reload(); conversations.reload(); }}>{t("refresh")}</button>}>
        <ErrorLine error={usage.error} />
        {usage.data && (
          <p class="stats" aria-label={t("logs_usage")}>
            <span>{count(usage.data.messages, "message")}</span>
            <span>{count(usage.data.message_tokens + usage.data.answer_tokens, "token")}</span>
            <span>{usage.data.total_price} USD</span>
            <span>{count(usage.data.errors, "error")}</span>
          </p>
        )}
        {usage.data && usage.data.days.length > 0 && (
          <table class="list compact">
            <thead>
              <tr>
                <th>{t("col_day")}</th><th>{t("col_messages")}</th><th>{t("col_conversations")}</th><th>{t("col_users")}</th><th>{t("col_tokens")}</th><th>{t("col_price")}</th><th>{t("col_errors")}</th><th>{t("col_latency")}</th>
              </tr>
            </thead>
            <tbody>
              {usage.data.days.map((d) => (
                <tr key={d.day}>
                  <td>{d.day}</td><td>{d.messages}</td><td>{d.conversations}</td><td>{d.end_users}</td>
                  <td>{d.message_tokens + d.answer_tokens}</td><td>{d.total_price}</td><td>{d.errors}</td><td>{duration(d.latency) || "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Section title={t("col_conversations")}>
        <ErrorLine error={conversations.error} />
        {conversations.data && conversations.data.total === 0 && <p class="muted">{t("no_conversations")}</p>}
        {conversations.data && conversations.data.data.length > 0 && (
          <table class="list" aria-label={t("col_conversations")}>
            <thead>
              <tr><th>{t("col_name")}</th><th>{t("col_user")}</th><th>{t("col_messages")}</th><th>{t("col_updated")}</th></tr>
            </thead>
            <tbody>
              {conversations.data.data.map((c) => (
                <tr key={c.id} class={open === c.id ? "selected" : ""}>
                  <td>
                    <button type="button" class="link" onClick={() => setOpen(open === c.id ? null : c.id)}>
                      {c.name}
                    </button>
                    {c.deleted && <span class="chip">{t("deleted")}</span>}
                  </td>
                  <td><code>{c.user}</code></td>
                  <td>{c.messages}</td>
                  <td class="muted">{when(c.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {conversations.data && (page > 1 || conversations.data.has_more) && (
          <p class="row">
            <button type="button" disabled={page === 1} onClick={() => setPage(page - 1)}>{t("newer")}</button>
            <button type="button" disabled={!conversations.data.has_more} onClick={() => setPage(page + 1)}>{t("older")}</button>
          </p>
        )}
      </Section>
      {open && <Conversation key={open} client={client} appId={appId} conversationId={open} />}
    </>
  );
}

function Conversation({ client, appId, conversationId }: { client: AdminClient; appId: string; conversationId: string }) {
  const found = useLoad(() => client.conversation(appId, conversationId), [client, appId, conversationId]);
  const [evalCase, setEvalCase] = useState<string | null>(null);
  const [memory, setMemory] = useState(false);
  if (found.error) return <ErrorLine error={found.error} />;
  if (!found.data) return <p class="muted">{t("loading")}</p>;
  const conversation = found.data.conversation;
  const byId = new Map(found.data.messages.map((m) => [m.id, m]));
  return (
    <>
      <Section
        title={t("conversation_with", { name: conversation.name, user: conversation.user })}
        aside={
          <span class="row">
            <Action
              kind="small"
              title={t("eval_help")}
              action={async () => setEvalCase((await client.evalCase(appId, conversationId)).yaml)}
            >
              {t("add_to_eval")}
            </Action>
            {conversation.end_user_id && (
              <button type="button" class="small" aria-expanded={memory} onClick={() => setMemory(!memory)}>
                {t("memory")}
              </button>
            )}
          </span>
        }
      >
        {evalCase !== null && <EvalCase yaml={evalCase} onChange={setEvalCase} name={conversation.name} />}
        <ol class="log-messages" aria-label={t("col_messages")}>
          {found.data.messages.map((m) => (
            <MessageEntry key={m.id} client={client} message={m} version={versionMark(m, byId)} />
          ))}
        </ol>
      </Section>
      {memory && <Memory client={client} appId={appId} endUser={conversation.end_user_id} name={conversation.user} />}
    </>
  );
}

/** The eval case the server made of the conversation: editable (say what to expect), then copied or
 * downloaded into an eval set's YAML (docs/evals.md). */
function EvalCase({ yaml, name, onChange }: { yaml: string; name: string; onChange: (yaml: string) => void }) {
  return (
    <div class="eval-case">
      <label>
        {t("eval_case")}
        <textarea class="code-block" rows={Math.min(20, yaml.split("\n").length + 1)} value={yaml} onInput={(e) => onChange((e.currentTarget as HTMLTextAreaElement).value)} />
      </label>
      <p class="row">
        <Copy text={yaml} label={t("copy_eval")} />
        <button type="button" class="small" onClick={() => download(`${name.replace(/[^\w.-]+/g, "_") || "case"}.eval.yaml`, yaml)}>
          {t("download")}
        </button>
      </p>
    </div>
  );
}

function MessageEntry({ client, message, version }: { client: AdminClient; message: MessageLog; version: VersionMark | null }) {
  const [prompts, setPrompts] = useState<ModelCallView[] | null>(null);
  const log = message.agent_log;
  return (
    <li class={`log-message${version && version.n < version.total ? " older-version" : ""}`} data-message-id={message.id}>
      {version && (
        <p class="versions-line small">
          <span class="chip version">{t("version_of", { n: version.n, total: version.total })}</span>{" "}
          {version.kind !== "first" && <span class={`chip ${version.kind}`}>{t(version.kind === "edited" ? "edited_question" : "regenerated")}</span>}
        </p>
      )}
      <p class="query"><strong>{t("log_user")}</strong> {message.query}</p>
      <p class={message.status === "error" ? "error-text" : "answer"}>
        <strong>{t("log_answer")}</strong> {message.status === "error" ? message.error : message.answer}
      </p>
      <p class="muted small">
        {when(message.created_at)} · {known(`status_${message.status}`, message.status)} · {count(message.message_tokens + message.answer_tokens, "token")} · {message.total_price} {message.currency} ·{" "}
        {duration(message.latency) || "—"} · {strategy(log.meta.agent_mode)} · {count(log.meta.iterations, "round")}
        {message.feedback.map((f, i) => (
          <span key={i} class={`chip ${f.rating}`}>{f.rating === "like" ? "👍" : "👎"} {f.content ?? ""}</span>
        ))}
      </p>
      <details class="agent-log">
        <summary>{t("agent_log")}</summary>
        <ol>
          {log.iterations.map((it, i) => (
            <li key={i}>
              <p class="muted small">{t("round_n", { n: i + 1 })} · {count(it.tokens, "token")}</p>
              {it.thought && <p class="thought">{it.thought}</p>}
              {it.tool_calls.map((c, j) => (
                <div key={j} class={`tool-call ${c.status}`}>
                  <p><code>{c.tool_name}</code>{Number(c.time_cost) > 0 && ` · ${duration(Number(c.time_cost))}`} {c.error && <span class="error-text">{c.error}</span>}</p>
                  <pre class="code-block">{asText(c.tool_input)}</pre>
                  <pre class="code-block">{asText(c.tool_output)}</pre>
                </div>
              ))}
            </li>
          ))}
        </ol>
      </details>
      <div>
        {prompts === null ? (
          <Action action={async () => setPrompts(await client.prompts(message.id))} kind="small">
            {t("prompts_button")}
          </Action>
        ) : (
          <Prompts calls={prompts} />
        )}
      </div>
    </li>
  );
}

/** A strategy's name in the console's language (the shared names, which are English, for the rest). */
function strategy(id: unknown): string {
  const name = strategyName(id);
  if (name === "Function calling") return t("strategy_fc_name");
  if (name === "Plan and execute") return t("strategy_plan_name");
  return name;
}

function Prompts({ calls }: { calls: ModelCallView[] }) {
  return (
    <div class="prompts" aria-label={t("prompts")}>
      {calls.map((call, i) => (
        <details key={i} open={i === 0}>
          <summary>
            {t("call_n", { n: i + 1 })} <code>{call.model}</code> · {count(call.messages.length, "message")}
            {call.tools.length > 0 && ` · ${t("call_tools", { names: call.tools.map((tool) => tool.name).join(", ") })}`}
            {call.react_tools && ` · ${t("call_react", { names: call.react_tools.join(", ") })}`}
          </summary>
          {call.messages.map((m, j) => (
            <div key={j} class={`prompt-message ${m.role}`}>
              <span class="role">{m.role}{m.name ? ` (${m.name})` : ""}</span>
              <pre>{asText(m.content)}</pre>
              {m.tool_calls && m.tool_calls.length > 0 && (
                <pre class="muted">{m.tool_calls.map((c) => `→ ${c.name}(${c.arguments})`).join("\n")}</pre>
              )}
            </div>
          ))}
        </details>
      ))}
    </div>
  );
}
