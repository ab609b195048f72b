// The page of a completion app (Dify's text generator): the app's form and one answer to it, streamed
// from POST /v1/completion-messages. Each run is a new answer; there is no conversation to go back to.
import { useMemo, useRef, useState } from "preact/hooks";
import type { ServiceClient } from "../shared/api";
import { plainError } from "../shared/errors";
import { t } from "../shared/i18n";
import { readDifyStream } from "../shared/sse";
import { AppBadge, copy, type AppSettings } from "./ChatApp";
import { formFields, formProblem, initialValues } from "./form";
import { InputForm } from "./InputForm";
import { Markdown } from "./Markdown";
import { Toolbar, type MessageActions } from "./Message";
import { newMessage, type MessageView } from "./state";
import { ThemeToggle } from "./theme";

type Status = "idle" | "running" | "done" | "stopped" | "error";

const str = (v: unknown): string => (typeof v === "string" ? v : "");

export function CompletionApp({ client, settings }: { client: ServiceClient; settings: AppSettings }) {
  const fields = useMemo(() => formFields(settings.parameters.user_input_form), [settings]);
  const [inputs, setInputs] = useState<Record<string, unknown>>(() => initialValues(fields));
  const [answer, setAnswer] = useState("");
  const [status, setStatus] = useState<Status>("idle");
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [messageId, setMessageId] = useState<string | null>(null); // the answer's, for its feedback
  const [feedback, setFeedback] = useState<"like" | "dislike" | null>(null);
  const task = useRef<string | null>(null);
  const stopping = useRef(false);
  const running = status === "running";

  const generate = async () => {
    const problem = formProblem(fields, inputs);
    if (problem !== null) {
      setNotice(problem);
      return;
    }
    setNotice(null);
    setError(null);
    setAnswer("");
    setMessageId(null);
    setFeedback(null);
    setStatus("running");
    task.current = null;
    stopping.current = false;
    let text = "";
    const outcome = { failed: false }; // set in the stream's callback
    try {
      const response = await client.complete(inputs);
      if (response.body === null) throw new Error("The server sent no answer.");
      await readDifyStream(response.body, (e) => {
        task.current = str(e.task_id) || task.current;
        const id = str(e.message_id) || (e.event === "message_end" ? str(e.id) : "");
        if (id) setMessageId(id);
        if (e.event === "message" || e.event === "agent_message") {
          text += str(e.answer);
          setAnswer(text);
        } else if (e.event === "message_replace") {
          text = str(e.answer);
          setAnswer(text);
        } else if (e.event === "error") {
          outcome.failed = true;
          setError(plainError(str(e.code), str(e.message), typeof e.status === "number" ? e.status : 0));
        }
      });
      setStatus(outcome.failed ? "error" : stopping.current ? "stopped" : "done");
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
      setStatus("error");
    }
  };

  const stop = async () => {
    stopping.current = true;
    if (task.current !== null) await client.stopCompletion(task.current).catch(() => undefined);
  };

  return (
    <div class="completion-page">
      <header class="topbar">
        <AppBadge settings={settings} />
        <div class="app-title">
          <h1>{settings.name}</h1>
          {settings.description && <p class="app-description muted">{settings.description}</p>}
        </div>
        <ThemeToggle />
      </header>
      <main class="completion-view">
        <form
          class="completion-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!running) void generate();
          }}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !running) {
              e.preventDefault();
              void generate();
            }
          }}
        >
          {fields.length > 0 && (
            <InputForm
              fields={fields}
              values={inputs}
              onChange={setInputs}
              client={client}
              onError={setNotice}
              readOnly={running}
              legend={settings.name}
            />
          )}
          {notice && (
            <p class="notice" role="alert">
              {notice}
            </p>
          )}
          <div class="completion-actions">
            {running ? (
              <button type="button" class="stop" onClick={() => void stop()}>
                {t("stop")}
              </button>
            ) : (
              <button type="submit" class="generate" title={t("generate_help")}>
                {t("generate")}
              </button>
            )}
          </div>
        </form>
        <section class={`completion-result status-${status}`} aria-live="polite" aria-label={t("result")}>
          <h2>{t("result")}</h2>
          {answer !== "" && <Markdown text={answer} class="answer" />}
          {answer !== "" && !running && (
            <Toolbar m={answerView(messageId, answer, feedback)} actions={answerActions(client, answer, setFeedback, setError)} />
          )}
          {answer === "" && status === "idle" && <p class="muted">{t("no_result")}</p>}
          {running && answer === "" && <div class="typing" aria-label={t("assistant_working")}>…</div>}
          {status === "stopped" && <p class="muted">{t("stopped")}</p>}
          {error !== null && (
            <p class="error-text" role="alert">
              {error}
            </p>
          )}
        </section>
        {settings.footer && <p class="footer-line muted">{settings.footer}</p>}
      </main>
    </div>
  );
}

/** The answer as the chat page's message, for its toolbar (the same Copy and like/dislike buttons). */
function answerView(id: string | null, answer: string, feedback: "like" | "dislike" | null): MessageView {
  return { ...newMessage(""), id, answer, feedback, status: "done" };
}

function answerActions(
  client: ServiceClient,
  answer: string,
  setFeedback: (rating: "like" | "dislike" | null) => void,
  setError: (error: string | null) => void,
): MessageActions {
  return {
    onCopy: () => void copy(answer),
    onAnswer: () => undefined, // a completion app runs no tools: no question is ever asked
    onFeedback: (m, rating, content) => {
      if (m.id === null) return;
      client.feedback(m.id, rating, content ?? "").then(
        () => setFeedback(rating),
        (e: unknown) => setError(e instanceof Error ? e.message : String(e)),
      );
    },
    onRegenerate: null,
    onAgentLog: null,
    onOpenSteps: () => undefined,
    onReadAloud: null,
    reading: false,
    onEdit: null,
    versions: null,
  };
}
