// Dify's stream events → the view of one message (pure functions, no DOM): rounds with their thought
// text and tool calls as they fill in, the answer, files, citations and how the message ended. The same
// view is built from a message of the history (GET /v1/messages), so a reload shows what streaming did.
import type { DifyEvent } from "../shared/sse";
import { plainError } from "../shared/errors";
import { markHandoffs } from "./handoff";

export interface ToolCallView {
  key: string; // the call's key in the round's tool_input / observation objects ("a", "a_1", …)
  name: string;
  label: string;
  input: unknown;
  output: string | null; // null while it runs
  progress: string[]; // the progress lines it reported while running, in order (a called app's rounds)
  error: boolean;
  firstSeen: number | null; // ms (the page's clock), when the stream first showed the call
  seconds: number | null; // how long it took, as the page saw it
}

export interface RoundView {
  id: string | null; // null while only its text has arrived (the thought row comes later)
  position: number;
  text: string;
  tools: ToolCallView[];
  fileIds: string[];
  answeredBy?: string; // a handoff's row (chat/handoff.ts): the app answering from here on
}

export interface FileView {
  id: string;
  type: string; // image | document | audio | video | custom
  url: string;
  name: string;
  mimeType: string;
  belongsTo: "user" | "assistant";
}

export interface Citation {
  position: number;
  datasetName: string;
  documentName: string;
  score: number | null;
  content: string;
}

// "paused": the agent asked the user a question (the ask_user tool) and waits for the answer
export type MessageStatus = "waiting" | "streaming" | "paused" | "done" | "stopped" | "error" | "interrupted";

/** A question the agent asked (Dify's human_input_required with loopwright's question form: the
 * input `answer`, the action `submit`), answered at POST /v1/form/human_input/{token}. */
export interface QuestionView {
  token: string;
  text: string;
  options: string[]; // none: any text
}

export interface MessageView {
  localId: string;
  id: string | null;
  conversationId: string | null;
  taskId: string | null;
  query: string;
  userFiles: FileView[];
  rounds: RoundView[];
  answer: string;
  replaced: boolean; // the answer was replaced whole (message_replace, e.g. by moderation)
  files: FileView[];
  citations: Citation[];
  status: MessageStatus;
  stopRequested: boolean;
  error: string | null;
  feedback: "like" | "dislike" | null;
  totalTokens: number | null;
  latency: number | null;
  createdAt: number | null;
  answeredBy: string | null; // the app that answered, after a handoff (the stored `answered_by`)
  // its text came as `agent_message` pieces: a `message` event after them is the whole answer again
  // (Dify's `agent` apps), not more text
  agentStreamed?: boolean;
  question?: QuestionView | null; // set while the run waits for the user's answer
}

let counter = 0;
// Local ids must not repeat across page loads: a view saved before a reload comes back beside new ones.
const PAGE_LOAD = Math.random().toString(36).slice(2, 10);

export function newMessage(query: string, userFiles: FileView[] = []): MessageView {
  counter += 1;
  return {
    localId: `local-${PAGE_LOAD}-${counter}`,
    id: null,
    conversationId: null,
    taskId: null,
    query,
    userFiles,
    rounds: [],
    answer: "",
    replaced: false,
    files: [],
    citations: [],
    status: "waiting",
    stopRequested: false,
    error: null,
    feedback: null,
    totalTokens: null,
    latency: null,
    createdAt: null,
    answeredBy: null,
  };
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The message after one stream event, at `now` (ms). Never throws on odd events: unknown ones and
 * pings leave it as it was. */
export function applyEvent(m: MessageView, e: DifyEvent, now: number): MessageView {
  switch (e.event) {
    case "agent_message":
      return { ...withText(withIds(m, e), str(e.answer)), agentStreamed: true };
    case "message":
      if (m.agentStreamed) return { ...withIds(m, e), answer: str(e.answer) || m.answer };
      return withText(withIds(m, e), str(e.answer));
    case "agent_thought":
      return withThought(withIds(m, e), e, now);
    case "message_file":
      return withFile(withIds(m, e), e);
    case "message_end":
      return ended(withIds(m, e), e);
    case "message_replace":
      return { ...withIds(m, e), answer: str(e.answer), replaced: true };
    case "human_input_required": {
      const question = questionOf(e.data);
      return question === null ? m : { ...withIds(m, e), question, status: "paused" };
    }
    case "human_input_form_filled":
    case "human_input_form_timeout":
      return { ...withIds(m, e), question: null, status: "streaming" };
    case "error":
      return {
        ...withIds(m, e),
        status: "error",
        error: plainError(str(e.code), str(e.message), num(e.status) ?? 0),
      };
    default:
      return m; // ping, tts_message, …
  }
}

/** The question of a human-input form that asks one (its one input `answer`, its one action
 * `submit`); null for any other form (a tool approval's). */
export function questionOf(data: unknown): QuestionView | null {
  if (typeof data !== "object" || data === null) return null;
  const d = data as Record<string, unknown>;
  const inputs = Array.isArray(d.inputs) ? (d.inputs as Record<string, unknown>[]) : [];
  const actions = Array.isArray(d.actions) ? (d.actions as Record<string, unknown>[]) : [];
  if (inputs.length !== 1 || inputs[0]?.output_variable_name !== "answer") return null;
  if (actions.length !== 1 || actions[0]?.id !== "submit" || !str(d.form_token)) return null;
  const options = Array.isArray(inputs[0].options) ? inputs[0].options.filter((o): o is string => typeof o === "string") : [];
  const text = str(d.form_content).replace(/\{\{#\$output\.answer#\}\}/g, "").trim();
  return { token: str(d.form_token), text, options };
}

function withIds(m: MessageView, e: DifyEvent): MessageView {
  const id = str(e.message_id) || (e.event === "message_end" ? str(e.id) : "");
  return {
    ...m,
    id: id || m.id,
    conversationId: str(e.conversation_id) || m.conversationId,
    taskId: str(e.task_id) || m.taskId,
    status: m.status === "waiting" ? "streaming" : m.status,
    createdAt: m.createdAt ?? num(e.created_at),
  };
}

/** Streamed text goes to the latest round while that round has not called a tool; after a tool round
 * (a ReAct final answer, which gets no thought row of its own) it opens a new round. */
function withText(m: MessageView, text: string): MessageView {
  if (text === "") return m;
  const rounds = [...m.rounds];
  const last = rounds[rounds.length - 1];
  if (last !== undefined && last.tools.length === 0 && last.answeredBy === undefined) {
    rounds[rounds.length - 1] = { ...last, text: last.text + text };
  } else {
    const position = last === undefined ? 1 : last.position + 1;
    rounds.push({ id: null, position, text, tools: [], fileIds: [] });
  }
  return { ...m, rounds, answer: m.answer + text };
}

function withThought(m: MessageView, e: DifyEvent, now: number): MessageView {
  const id = str(e.id);
  const rounds = [...m.rounds];
  let index = rounds.findIndex((r) => r.id === id);
  if (index === -1) {
    const last = rounds[rounds.length - 1];
    if (last !== undefined && last.id === null && last.tools.length === 0 && last.answeredBy === undefined) {
      index = rounds.length - 1; // the round whose text streamed before its row arrived
    } else {
      rounds.push({ id, position: num(e.position) ?? rounds.length + 1, text: "", tools: [], fileIds: [] });
      index = rounds.length - 1;
    }
  }
  const before = rounds[index];
  const thought = str(e.thought);
  rounds[index] = {
    id,
    position: num(e.position) ?? before.position,
    text: thought !== "" ? thought : before.text,
    tools: toolCalls(e, before.tools, now),
    fileIds: Array.isArray(e.message_files) ? e.message_files.filter((f) => typeof f === "string") : before.fileIds,
    ...(str(e.answered_by) !== "" ? { answeredBy: str(e.answered_by) } : {}),
  };
  return { ...m, rounds, answeredBy: str(e.answered_by) || m.answeredBy };
}

/** The calls of a round from its `tool` ("a;b"), `tool_input` and `observation` (JSON objects keyed
 * per call, in call order), keeping when each was first seen to time it. */
export function toolCalls(
  e: Record<string, unknown>, // tool, tool_input, observation, tool_labels
  previous: ToolCallView[],
  now: number | null,
): ToolCallView[] {
  const names = str(e.tool).split(";").filter((n) => n !== "");
  if (names.length === 0) return previous;
  const inputs = jsonObject(e.tool_input);
  const outputs = jsonObject(e.observation);
  const inputKeys = Object.keys(inputs ?? {});
  const keys = inputKeys.length === names.length ? inputKeys : uniqueKeys(names);
  // ours, beside Dify's fields: the calls whose observation is still a progress line, not a result
  const live = new Set(Array.isArray(e.tool_progress) ? e.tool_progress.filter((k) => typeof k === "string") : []);
  const labels = (typeof e.tool_labels === "object" && e.tool_labels !== null ? e.tool_labels : {}) as Record<
    string,
    unknown
  >;
  return names.map((name, i) => {
    const key = keys[i];
    const old = previous[i];
    const raw = outputs?.[key];
    const text = raw === undefined || raw === "" ? null : typeof raw === "string" ? raw : JSON.stringify(raw);
    const progress = old?.progress ?? [];
    if (live.has(key) && text !== null) {
      return {
        key,
        name,
        label: labelOf(labels[name], old?.label ?? name),
        input: inputs?.[key] ?? null,
        output: null,
        progress: progress[progress.length - 1] === text ? progress : [...progress, text],
        error: false,
        firstSeen: old?.firstSeen ?? now,
        seconds: null,
      };
    }
    const output = text;
    const firstSeen = old?.firstSeen ?? now;
    const finishedNow = output !== null && (old === undefined || old.output === null);
    return {
      key,
      name,
      label: labelOf(labels[name], old?.label ?? name),
      input: inputs?.[key] ?? null,
      output,
      progress,
      error: output !== null && looksLikeError(output),
      firstSeen,
      seconds:
        old?.seconds ??
        (finishedNow && firstSeen !== null && now !== null ? Math.max(0, (now - firstSeen) / 1000) : null),
    };
  });
}

/** A call's label from the log (Dify's {en_US, zh_Hans} or a string), else its name. */
export function labelOf(label: unknown, name: string): string {
  if (typeof label === "string" && label) return label;
  if (typeof label === "object" && label !== null) {
    const en = (label as Record<string, unknown>).en_US;
    if (typeof en === "string" && en) return en;
  }
  return name;
}

/** The keys loopwright gives the calls of one round (store/codec.py unique_tool_keys). */
export function uniqueKeys(names: string[]): string[] {
  const taken = new Set(names);
  const used = new Set<string>();
  const seen = new Map<string, number>();
  return names.map((name) => {
    let key = name;
    if (used.has(name)) {
      let n = seen.get(name) ?? 0;
      do {
        n += 1;
        key = `${name}_${n}`;
      } while (used.has(key) || taken.has(key));
      seen.set(name, n);
    }
    used.add(key);
    return key;
  });
}

function jsonObject(v: unknown): Record<string, unknown> | null {
  if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  if (typeof v !== "string" || v === "") return null;
  try {
    const parsed: unknown = JSON.parse(v);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

// The observation texts the tool engine gives a failed call (tools/engine.py, Dify's wording).
const ERROR_PREFIXES = [
  "tool invoke error",
  "there is not a tool named",
  "tool parameters validation error",
  "tool execution failed",
  "tool timed out",
  "error:",
  "unknown error",
];

export function looksLikeError(output: string): boolean {
  const start = output.trimStart().slice(0, 40).toLowerCase();
  return ERROR_PREFIXES.some((p) => start.startsWith(p));
}

function withFile(m: MessageView, e: DifyEvent): MessageView {
  const file: FileView = {
    id: str(e.id),
    type: str(e.type) || "custom",
    url: str(e.url),
    name: fileNameOf(str(e.url)),
    mimeType: "",
    belongsTo: e.belongs_to === "user" ? "user" : "assistant",
  };
  if (m.files.some((f) => f.id === file.id)) return m;
  return { ...m, files: [...m.files, file] };
}

function ended(m: MessageView, e: DifyEvent): MessageView {
  const metadata = (typeof e.metadata === "object" && e.metadata !== null ? e.metadata : {}) as Record<
    string,
    unknown
  >;
  const usage = (typeof metadata.usage === "object" && metadata.usage !== null ? metadata.usage : {}) as Record<
    string,
    unknown
  >;
  return {
    ...m,
    status: m.stopRequested ? "stopped" : "done",
    citations: citations(metadata.retriever_resources),
    totalTokens: num(usage.total_tokens),
    latency: num(usage.latency) ?? (typeof usage.latency === "string" ? Number(usage.latency) : null),
  };
}

export function citations(v: unknown): Citation[] {
  if (!Array.isArray(v)) return [];
  return v
    .filter((r): r is Record<string, unknown> => typeof r === "object" && r !== null)
    .map((r, i) => ({
      position: num(r.position) ?? i + 1,
      datasetName: str(r.dataset_name),
      documentName: str(r.document_name),
      score: num(r.score),
      content: str(r.content),
    }));
}

const UUID_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.[A-Za-z0-9]{1,10})?$/;

/** A file's name from its URL; a stream's tool file has only its id there, so it is called "file". */
function fileNameOf(url: string): string {
  try {
    const path = new URL(url, "http://x").pathname;
    const name = decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
    const uuid = UUID_NAME.exec(name);
    if (uuid) return `file${uuid[1] ?? ""}`;
    return name || "file";
  } catch {
    return "file";
  }
}

// ---- what the page shows of a message ----

// A round that can be the answer: no tool calls, not a handoff's line.
const answerRound = (r: RoundView | undefined): boolean => r !== undefined && r.tools.length === 0 && r.answeredBy === undefined;

/** The answer to show: the last round's text when that round called no tool, else the whole answer. */
export function finalAnswer(m: MessageView): string {
  const last = m.rounds[m.rounds.length - 1];
  if (m.replaced || last === undefined) return m.answer;
  return answerRound(last) ? last.text : "";
}

/** The rounds shown as the agent's steps: all but a last round without tools (that one is the answer). */
export function steps(m: MessageView): RoundView[] {
  const last = m.rounds[m.rounds.length - 1];
  if (answerRound(last)) return m.rounds.slice(0, -1);
  return m.rounds;
}

export type PlanMark = "pending" | "done" | "failed" | "skipped";

export interface PlanItem {
  id: string;
  task: string;
  tool: string;
  mark: PlanMark;
}

export interface PlanView {
  intro: string; // the model's words before the checklist
  items: PlanItem[];
}

const PLAN_LINE = /^- \[([ x!-])\] ([^:\s]+): (.*?)(?: \(([^()]*)\))?$/;
const MARKS: Record<string, PlanMark> = { " ": "pending", x: "done", "!": "failed", "-": "skipped" };

/** A plan round's checklist (strategy "plan": the thought ends "Plan:" and a line per step, ticked
 * as steps end — agent/planning.py render_checklist), or null for any other thought. */
export function planOf(text: string): PlanView | null {
  const at = text.lastIndexOf("Plan:\n");
  if (at === -1) return null;
  const lines = text.slice(at + 6).split("\n").filter((l) => l.trim() !== "");
  const items: PlanItem[] = [];
  for (const line of lines) {
    const match = PLAN_LINE.exec(line.trim());
    if (match === null) return null;
    items.push({ id: match[2], task: match[3], tool: match[4] ?? "", mark: MARKS[match[1]] });
  }
  return items.length > 0 ? { intro: text.slice(0, at).trim(), items } : null;
}

export function isRunning(m: MessageView): boolean {
  return m.status === "waiting" || m.status === "streaming";
}

// ---- a message of the history (GET /v1/messages) ----

/** A message of the history; `stopped`: the ids of messages this browser stopped (the history
 * shows them as normal ones). */
export function messageFromHistory(item: Record<string, unknown>, stopped: ReadonlySet<string> = new Set()): MessageView {
  const m = newMessage(str(item.query));
  const thoughts = (Array.isArray(item.agent_thoughts) ? item.agent_thoughts : [])
    .filter((t): t is Record<string, unknown> => typeof t === "object" && t !== null)
    .sort((a, b) => (num(a.position) ?? 0) - (num(b.position) ?? 0));
  const rounds: RoundView[] = markHandoffs(
    thoughts.map((t, i) => ({
      id: str(t.id),
      position: num(t.position) ?? i + 1,
      text: str(t.thought),
      tools: toolCalls(t, [], null),
      fileIds: Array.isArray(t.files) ? t.files.filter((f): f is string => typeof f === "string") : [],
    })),
  );
  const answer = str(item.answer);
  const last = rounds[rounds.length - 1];
  if (answer !== "" && last !== undefined && answerRound(last) && last.text === "") {
    // A round cut off by a stop, saved without its text (by an older server): the answer is its text.
    rounds[rounds.length - 1] = { ...last, text: answer };
  } else if (answer !== "" && !answerRound(last)) {
    // A ReAct final answer (or a run without rounds) has no row of its own.
    rounds.push({ id: null, position: (last?.position ?? 0) + 1, text: answer, tools: [], fileIds: [] });
  }
  const files = (Array.isArray(item.message_files) ? item.message_files : [])
    .filter((f): f is Record<string, unknown> => typeof f === "object" && f !== null)
    .map(
      (f): FileView => ({
        id: str(f.id),
        type: str(f.type) || "custom",
        url: str(f.url),
        name: str(f.filename) || fileNameOf(str(f.url)),
        mimeType: str(f.mime_type),
        belongsTo: f.belongs_to === "user" ? "user" : "assistant",
      }),
    );
  const feedback = (item.feedback as { rating?: unknown } | null)?.rating;
  const failed = item.status === "error";
  return {
    ...m,
    id: str(item.id) || null,
    conversationId: str(item.conversation_id) || null,
    userFiles: files.filter((f) => f.belongsTo === "user"),
    files: files.filter((f) => f.belongsTo === "assistant"),
    rounds,
    answer,
    citations: citations(item.retriever_resources),
    status: failed ? "error" : stopped.has(str(item.id)) ? "stopped" : "done",
    error: failed ? plainError("", str(item.error), 0) : null,
    feedback: feedback === "like" || feedback === "dislike" ? feedback : null,
    createdAt: num(item.created_at),
    answeredBy: str(item.answered_by) || null,
  };
}

// ---- times and status from the agent log (GET /v1/messages/{id}/agent-log) ----

interface LoggedCall {
  status?: unknown;
  time_cost?: unknown;
}

/** The message with each tool call's time and failure as the server measured them: the log's
 * iterations are the message's thought rows in order, their calls in the same order as the round's. */
export function withLoggedTimes(m: MessageView, iterations: { tool_calls?: LoggedCall[] }[]): MessageView {
  let row = 0;
  const rounds = m.rounds.map((r) => {
    if (r.id === null) return r; // a ReAct final answer: no row, no iteration
    const calls = iterations[row]?.tool_calls ?? [];
    row += 1;
    return {
      ...r,
      tools: r.tools.map((t, i) => {
        const logged = calls[i];
        if (logged === undefined) return t;
        const seconds = num(logged.time_cost);
        if (seconds === null) return t;
        // firstSeen null: timed by the server, nothing left to look up
        return { ...t, seconds, firstSeen: null, error: t.error || logged.status === "error" };
      }),
    };
  });
  return { ...m, rounds };
}

export function needsLoggedTimes(m: MessageView): boolean {
  return m.id !== null && !isRunning(m) && m.rounds.some((r) => r.tools.some((t) => t.seconds === null || t.firstSeen !== null));
}
