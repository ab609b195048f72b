// One exchange: the user's message, then the agent's rounds (thought and tool calls, live while it
// runs, folded away when it ends), the answer, files, citations and the message's actions.
import { count, t } from "../shared/i18n";
import { useState } from "preact/hooks";
import { Download, Speaker, ThumbDown, ThumbUp } from "../shared/icons";
import { duration, when } from "../shared/format";
import { Markdown } from "./Markdown";
import { QuestionEditor, VersionSwitcher, type VersionSwitch } from "./Versions";
import { AnsweredBy, HandoffLine } from "./Handoffs";
import { handoffOf } from "./handoff";
import { finalAnswer, isRunning, planOf, steps, type Citation, type PlanView, type FileView, type MessageView, type QuestionView, type RoundView, type ToolCallView } from "./state";

const FOLD_AT = 1200; // characters of a tool output shown before "Show all"

export interface MessageActions {
  onCopy: (m: MessageView) => void;
  onRegenerate: ((m: MessageView) => void) | null;
  onFeedback: (m: MessageView, rating: "like" | "dislike" | null, content?: string) => void;
  onAgentLog: ((m: MessageView) => void) | null; // null: a chat app (no agent, no log)
  onOpenSteps: (m: MessageView) => void; // the steps were unfolded: their times can be looked up
  onReadAloud: ((m: MessageView) => void) | null; // null: the app has no voice
  reading: boolean; // this message is being read aloud
  onEdit: ((m: MessageView, query: string) => void) | null; // a new version with an edited question
  versions: VersionSwitch | null; // null: the message has one version
  onAnswer: (m: MessageView, answer: string) => void; // the answer to the question the agent asked
}

export function Message({ m, actions }: { m: MessageView; actions: MessageActions }) {
  const running = isRunning(m);
  const shownSteps = steps(m);
  const answer = finalAnswer(m);
  const toolCount = shownSteps.reduce((n, r) => n + r.tools.length, 0);
  return (
    <article class={`exchange status-${m.status}`} data-message-id={m.id ?? ""}>
      <div class="user-turn">
        {m.userFiles.length > 0 && <Files files={m.userFiles} />}
        <div class="bubble user-bubble">{m.query}</div>
        {actions.onEdit && <QuestionEditor key={m.id} query={m.query} onSend={(q) => actions.onEdit?.(m, q)} />}
        {m.createdAt !== null && (
          <time class="when muted" dateTime={new Date(m.createdAt * 1000).toISOString()} title={new Date(m.createdAt * 1000).toLocaleString()}>
            {when(m.createdAt)}
          </time>
        )}
      </div>
      <div class="agent-turn">
        {shownSteps.length > 0 && (
          <details
            class="steps"
            open={running}
            onToggle={(e) => (e.currentTarget as HTMLDetailsElement).open && !running && actions.onOpenSteps(m)}
          >
            <summary>
              {running ? t("working") : t("worked")} · {count(shownSteps.length, "round")} · {count(toolCount, "tool_call")}
            </summary>
            {shownSteps.map((r) => (
              <Round key={r.id ?? `p${r.position}`} round={r} running={running} />
            ))}
          </details>
        )}
        {answer !== "" && <AnsweredBy m={m} />}
        {answer !== "" && <Markdown text={answer} class="answer" />}
        {running && answer === "" && <div class="typing" aria-label={t("assistant_working")}>…</div>}
        {m.files.length > 0 && <Files files={m.files} />}
        {m.citations.length > 0 && <Citations citations={m.citations} />}
        {m.status === "error" && <p class="error-text" role="alert">{m.error}</p>}
        {m.status === "stopped" && <p class="muted">{t("stopped")}</p>}
        {m.status === "interrupted" && (
          <p class="muted">{t("interrupted")}</p>
        )}
        {m.status === "paused" && m.question && <Question m={m} question={m.question} onAnswer={actions.onAnswer} />}
        {!running && m.status !== "interrupted" && m.status !== "paused" && <Toolbar m={m} actions={actions} />}
      </div>
    </article>
  );
}

/** The question the agent asked (the ask_user tool): its options as buttons, or an answer box. */
function Question({ m, question, onAnswer }: { m: MessageView; question: QuestionView; onAnswer: (m: MessageView, answer: string) => void }) {
  const [text, setText] = useState("");
  const [sent, setSent] = useState(false);
  const send = (answer: string) => {
    if (answer.trim() === "" || sent) return;
    setSent(true);
    onAnswer(m, answer.trim());
  };
  return (
    <form
      class="question"
      aria-label={t("question_label")}
      onSubmit={(e) => {
        e.preventDefault();
        send(text);
      }}
    >
      <p class="question-text">{question.text}</p>
      {question.options.length > 0 ? (
        <div class="question-options">
          {question.options.map((o) => (
            <button type="button" key={o} class="chip" disabled={sent} onClick={() => send(o)}>
              {o}
            </button>
          ))}
        </div>
      ) : (
        <div class="question-answer">
          <textarea
            aria-label={t("question_answer")}
            rows={2}
            value={text}
            disabled={sent}
            onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
          />
          <button type="submit" class="send" disabled={sent || text.trim() === ""}>
            {t("question_send")}
          </button>
        </div>
      )}
    </form>
  );
}

function Round({ round, running }: { round: RoundView; running: boolean }) {
  const handoff = handoffOf(round);
  if (handoff !== null) return <HandoffLine handoff={handoff} />;
  const plan = planOf(round.text);
  return (
    <section class="round">
      {plan !== null ? <Plan plan={plan} /> : round.text !== "" && <Markdown text={round.text} class="thought" />}
      {round.tools.map((t) => (
        <ToolCall key={t.key} call={t} running={running} />
      ))}
    </section>
  );
}

/** A plan as a checklist: its items tick (the plan's row is sent again, same id) as steps end. */
function Plan({ plan }: { plan: PlanView }) {
  const done = plan.items.filter((i) => i.mark === "done").length;
  return (
    <div class="plan">
      {plan.intro !== "" && <Markdown text={plan.intro} class="thought" />}
      <p class="plan-head">{t("plan_progress", { done, n: plan.items.length })}</p>
      <ul class="plan-items">
        {plan.items.map((item) => (
          <li key={item.id} class={`plan-item ${item.mark}`} data-step={item.id}>
            <span class="plan-mark" aria-hidden="true">
              {item.mark === "done" ? "✓" : item.mark === "failed" ? "✗" : item.mark === "skipped" ? "–" : "○"}
            </span>
            <span class="plan-task">{item.task}</span>
            {item.tool !== "" && <code class="tool-name">{item.tool}</code>}
            <span class="visually-hidden"> ({t(`plan_${item.mark}`)})</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

function ToolCall({ call, running }: { call: ToolCallView; running: boolean }) {
  const pending = call.output === null;
  const live = pending && running ? call.progress[call.progress.length - 1] : undefined;
  return (
    <div class="tool-wrap">
      <ToolCallDetails call={call} running={running} />
      {live !== undefined && (
        <p class="tool-progress" role="status">
          {live}
        </p>
      )}
      {call.progress.length > 1 && (
        <details class="sub-rounds" open={pending && running}>
          <summary>{t("sub_rounds", { n: call.progress.length })}</summary>
          <ol>
            {call.progress.map((line, i) => (
              <li key={i}>{line}</li>
            ))}
          </ol>
        </details>
      )}
    </div>
  );
}

function ToolCallDetails({ call, running }: { call: ToolCallView; running: boolean }) {
  const [all, setAll] = useState(false);
  const pending = call.output === null;
  const state = t(pending ? (running ? "tool_running" : "tool_no_output") : call.error ? "tool_failed" : "tool_done");
  const output = call.output ?? "";
  const folded = !all && output.length > FOLD_AT;
  return (
    <details class={`tool-call ${pending && running ? "running" : ""} ${call.error ? "failed" : ""}`}>
      <summary>
        <span class="tool-label">{call.label}</span>
        {call.label !== call.name && <code class="tool-name">{call.name}</code>}
        <span class="tool-state">
          {state}
          {call.seconds !== null && duration(call.seconds) !== "" && ` · ${duration(call.seconds)}`}
        </span>
      </summary>
      <div class="tool-io">
        <h4>{t("arguments")}</h4>
        <pre class="tool-input">{JSON.stringify(call.input, null, 2)}</pre>
        <h4>{t("output")}</h4>
        <pre class="tool-output">{pending ? (running ? t("running_now") : "—") : folded ? `${output.slice(0, FOLD_AT)}…` : output}</pre>
        {folded && (
          <button type="button" class="link" onClick={() => setAll(true)}>
            {t("show_all", { n: output.length.toLocaleString() })}
          </button>
        )}
      </div>
    </details>
  );
}

/** Only links that cannot run script: this origin's paths, http(s), and the page's own blob: previews. */
export function safeUrl(url: string): string | undefined {
  if (url.startsWith("/") && !url.startsWith("//")) return url;
  try {
    const parsed = new URL(url, window.location.href);
    return ["http:", "https:", "blob:"].includes(parsed.protocol) ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

export function Files({ files }: { files: FileView[] }) {
  return (
    <div class="files">
      {files.map((f) => ({ ...f, url: safeUrl(f.url) ?? "" })).filter((f) => f.url !== "").map((f) =>
        f.type === "image" ? (
          <a key={f.id} href={f.url} target="_blank" rel="noopener noreferrer" class="file-image">
            <img src={f.url} alt={f.name} loading="lazy" />
          </a>
        ) : (
          <a key={f.id} href={f.url} download={f.name} class="file-chip" rel="noopener noreferrer">
            <Download /> {f.name}
          </a>
        ),
      )}
    </div>
  );
}

function Citations({ citations }: { citations: Citation[] }) {
  return (
    <details class="citations">
      <summary>{t("sources", { n: citations.length })}</summary>
      <ol>
        {citations.map((c) => (
          <li key={c.position}>
            <div class="citation-head">
              <strong>{c.documentName || "document"}</strong>
              {c.datasetName && <span class="muted"> · {c.datasetName}</span>}
              {c.score !== null && <span class="muted"> · score {c.score.toFixed(2)}</span>}
            </div>
            <blockquote>{c.content}</blockquote>
          </li>
        ))}
      </ol>
    </details>
  );
}

/** A message's actions: versions, copy, regenerate, like/dislike (with a comment), read aloud, agent log. */
export function Toolbar({ m, actions }: { m: MessageView; actions: MessageActions }) {
  const [commenting, setCommenting] = useState<"like" | "dislike" | null>(null);
  const [copied, setCopied] = useState(false);
  const [comment, setComment] = useState("");
  const rate = (rating: "like" | "dislike") => {
    const next = m.feedback === rating ? null : rating;
    actions.onFeedback(m, next);
    setCommenting(next);
  };
  return (
    <div class="toolbar">
      {actions.versions && <VersionSwitcher v={actions.versions} />}
      <button
        type="button"
        class="icon"
        title={t("copy_help")}
        onClick={() => {
          actions.onCopy(m);
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        }}
      >
        {copied ? t("copied") : t("copy")}
      </button>
      {actions.onRegenerate && (
        <button type="button" class="icon" title={t("regenerate_help")} onClick={() => actions.onRegenerate?.(m)}>
          {t("regenerate")}
        </button>
      )}
      <button
        type="button"
        class={`icon like ${m.feedback === "like" ? "on" : ""}`}
        aria-pressed={m.feedback === "like"}
        title={t("like_help")}
        aria-label={t("like")}
        disabled={m.id === null}
        onClick={() => rate("like")}
      >
        <ThumbUp />
      </button>
      <button
        type="button"
        class={`icon dislike ${m.feedback === "dislike" ? "on" : ""}`}
        aria-pressed={m.feedback === "dislike"}
        title={t("dislike_help")}
        aria-label={t("dislike")}
        disabled={m.id === null}
        onClick={() => rate("dislike")}
      >
        <ThumbDown />
      </button>
      {actions.onReadAloud && (
        <button
          type="button"
          class={`icon read-aloud ${actions.reading ? "on" : ""}`}
          aria-pressed={actions.reading}
          aria-label={actions.reading ? t("stop_reading") : t("read_aloud")}
          title={actions.reading ? t("stop_reading") : t("read_aloud_help")}
          disabled={m.id === null}
          onClick={() => actions.onReadAloud?.(m)}
        >
          <Speaker />
        </button>
      )}
      {actions.onAgentLog !== null && (
        <button type="button" class="icon" title={t("agent_log_help")} disabled={m.id === null} onClick={() => actions.onAgentLog?.(m)}>
          {t("agent_log")}
        </button>
      )}
      {m.totalTokens !== null && m.totalTokens > 0 && <span class="muted usage">{count(m.totalTokens, "token")}</span>}
      {commenting !== null && (
        <form
          class="feedback-comment"
          onSubmit={(e) => {
            e.preventDefault();
            actions.onFeedback(m, commenting, comment.trim());
            setCommenting(null);
            setComment("");
          }}
        >
          <input
            type="text"
            placeholder={commenting === "like" ? t("what_was_good") : t("what_was_wrong")}
            value={comment}
            onInput={(e) => setComment((e.target as HTMLInputElement).value)}
            aria-label={t("feedback_comment")}
          />
          <button type="submit">{t("send")}</button>
        </form>
      )}
    </div>
  );
}
