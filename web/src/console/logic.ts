// The console's logic that needs no browser: where the admin token is kept, the page's route, an app
// configuration edited as a draft (lines of text for lists, numbers as text), the {{variables}} of an
// instruction and the input-form fields they still lack. Tested with Vitest (web/tests/console.test.ts).
import type { AppConfig, InputField, MessageLog } from "./api";
import { t } from "./i18n";

// --- the admin token: sessionStorage of this tab only (closing it forgets the token); the chat page
// never reads this slot, and the console opens chat pages with rel="noopener" so they get no copy.
export const TOKEN_SLOT = "loopwright.console.token";

export function readToken(session: Storage): string | null {
  return session.getItem(TOKEN_SLOT);
}

export function saveToken(session: Storage, token: string): void {
  session.setItem(TOKEN_SLOT, token.trim());
}

export function forgetToken(session: Storage): void {
  session.removeItem(TOKEN_SLOT);
}

// --- routes: the part after "#" (the server serves one page at /console)
export type Route =
  | { page: "apps" }
  | { page: "new-app" }
  | { page: "app"; id: string; tab: AppTab }
  | { page: "knowledge" }
  | { page: "dataset"; id: string };

export const APP_TABS = ["settings", "keys", "versions", "logs", "usage"] as const;
export type AppTab = (typeof APP_TABS)[number];

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "apps" && parts[1] === "new") return { page: "new-app" };
  if (parts[0] === "apps" && parts[1]) {
    const tab = (APP_TABS as readonly string[]).includes(parts[2] ?? "") ? (parts[2] as AppTab) : "settings";
    return { page: "app", id: parts[1], tab };
  }
  if (parts[0] === "knowledge" && parts[1]) return { page: "dataset", id: parts[1] };
  if (parts[0] === "knowledge") return { page: "knowledge" };
  return { page: "apps" };
}

export function href(route: Route): string {
  switch (route.page) {
    case "apps":
      return "#/apps";
    case "new-app":
      return "#/apps/new";
    case "app":
      return `#/apps/${encodeURIComponent(route.id)}/${route.tab}`;
    case "knowledge":
      return "#/knowledge";
    case "dataset":
      return `#/knowledge/${encodeURIComponent(route.id)}`;
  }
}

// --- {{variables}}
const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The distinct {{variables}} of an instruction, in order of first use. */
export function variablesOf(instruction: string): string[] {
  const seen: string[] = [];
  for (const match of instruction.matchAll(VARIABLE)) if (!seen.includes(match[1])) seen.push(match[1]);
  return seen;
}

/** The instruction's variables that no input-form field fills. */
export function missingFields(instruction: string, form: InputField[]): string[] {
  const known = new Set(form.map((f) => f.variable));
  return variablesOf(instruction).filter((v) => !known.has(v));
}

export function newField(variable = ""): InputField {
  return { variable, label: variable, type: "text-input", required: false, options: [] };
}

// --- the draft an editor works on
export interface Draft {
  name: string;
  description: string;
  model: string;
  strategy: string;
  instruction: string;
  form: InputField[];
  tools: string[]; // built-in tools by name
  toolValues: Record<string, Record<string, unknown>>; // their form values, kept as they were
  knowledge: string[]; // datasets (ids or names) for one knowledge toolset
  appTools: Record<string, unknown>[]; // other apps called as tools (their toolset entries, kept whole)
  otherToolsets: string; // the other toolsets (OpenAPI, MCP) as JSON text
  maxIterations: string;
  maxActiveRequests: string;
  historyLimit: string;
  openingStatement: string;
  suggestedQuestions: string; // one per line
  rest: Record<string, unknown>; // every other field of the configuration, kept as it was
}

export const DEFAULT_CONFIG: Partial<AppConfig> = { model: "local", strategy: "auto", instruction: "" };

const EDITED = new Set([
  "model",
  "strategy",
  "instruction",
  "user_input_form",
  "tools",
  "toolsets",
  "max_iterations",
  "max_active_requests",
  "history_message_limit",
  "opening_statement",
  "suggested_questions",
]);

export function draftOf(name: string, description: string, config: Partial<AppConfig>): Draft {
  const toolsets = (config.toolsets ?? []) as Record<string, unknown>[];
  const knowledge = toolsets.find((t) => t.type === "knowledge");
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) if (!EDITED.has(k)) rest[k] = v;
  const appTools = toolsets.filter((t) => t.type === "app");
  const others = toolsets.filter((t) => t !== knowledge && t.type !== "app");
  return {
    name,
    description,
    model: config.model ?? "local",
    strategy: config.strategy ?? "auto",
    instruction: config.instruction ?? "",
    form: (config.user_input_form ?? []).map((f) => ({ ...f, options: [...(f.options ?? [])] })),
    tools: (config.tools ?? []).map((t) => t.name),
    toolValues: Object.fromEntries((config.tools ?? []).map((t) => [t.name, t.form_values ?? {}])),
    knowledge: knowledge ? [...((knowledge.datasets as string[]) ?? [])] : [],
    appTools,
    otherToolsets: others.length ? JSON.stringify(others, null, 2) : "",
    maxIterations: String(config.max_iterations ?? 10),
    maxActiveRequests: config.max_active_requests == null ? "" : String(config.max_active_requests),
    historyLimit: config.history_message_limit == null ? "" : String(config.history_message_limit),
    openingStatement: config.opening_statement ?? "",
    suggestedQuestions: (config.suggested_questions ?? []).join("\n"),
    rest,
  };
}

/** The configuration a draft stands for; throws an Error naming the field when it cannot be one. */
/** The draft's kind of app (Dify's mode): agent-chat, or chat / completion (a model and an
 * instruction, no tools). It is set when the app is made and kept with the configuration after. */
export function modeOf(draft: Draft): string {
  const mode = draft.rest.mode;
  return typeof mode === "string" ? mode : "agent-chat";
}

export const PLAIN_MODES = ["chat", "completion"];

/** A draft made a kind of app: a new text generator gets Dify's `query` paragraph when it has no form
 * yet, and its instruction ends with `{{query}}` (what Dify's clients send as `inputs.query`). */
export function withMode(draft: Draft, mode: string): Draft {
  const next = { ...draft, rest: { ...draft.rest, mode } };
  if (mode !== "completion" || draft.form.length > 0) return next;
  const query: InputField = { variable: "query", label: "Query", type: "paragraph", required: true, options: [] };
  const instruction = draft.instruction.includes("{{query}}")
    ? draft.instruction
    : draft.instruction.trim()
      ? `${draft.instruction.trimEnd()}\n\n{{query}}`
      : "{{query}}";
  return { ...next, form: [query], instruction };
}

export function configOf(draft: Draft): Partial<AppConfig> {
  if (PLAIN_MODES.includes(modeOf(draft))) {
    // a chat or completion app runs no tools: what the agent sections held is not sent
    return { ...agentConfigOf({ ...draft, tools: [], knowledge: [], appTools: [], otherToolsets: "" }) };
  }
  return agentConfigOf(draft);
}

function agentConfigOf(draft: Draft): Partial<AppConfig> {
  let others: Record<string, unknown>[] = [];
  if (draft.otherToolsets.trim()) {
    try {
      others = JSON.parse(draft.otherToolsets) as Record<string, unknown>[];
    } catch {
      throw new Error(t("toolsets_not_json"));
    }
    if (!Array.isArray(others)) throw new Error(t("toolsets_not_list"));
  }
  const withApps = [...others, ...draft.appTools];
  const toolsets = draft.knowledge.length ? [...withApps, { type: "knowledge", datasets: draft.knowledge }] : withApps;
  return {
    ...draft.rest,
    model: draft.model.trim(),
    strategy: draft.strategy,
    instruction: draft.instruction,
    user_input_form: draft.form.map((f) => ({
      ...f,
      label: f.label || f.variable,
      options: f.type === "select" ? f.options.filter((o) => o.trim()) : [],
    })),
    tools: draft.tools.map((name) => ({ name, form_values: draft.toolValues[name] ?? {} })),
    toolsets,
    max_iterations: wholeNumber(draft.maxIterations, t("max_rounds")) ?? 10,
    max_active_requests: wholeNumber(draft.maxActiveRequests, t("max_active_short")),
    history_message_limit: wholeNumber(draft.historyLimit, t("history_short")),
    opening_statement: draft.openingStatement,
    suggested_questions: draft.suggestedQuestions
      .split("\n")
      .map((q) => q.trim())
      .filter(Boolean),
  };
}

function wholeNumber(text: string, what: string): number | null {
  if (!text.trim()) return null;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(t("whole_number", { what, text }));
  return n;
}

/** The chat page of an app, opened with a key (the fragment never reaches the server). */
export function chatLink(appId: string, key: string): string {
  return `/chat/${encodeURIComponent(appId)}#key=${encodeURIComponent(key)}`;
}

export function when(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toLocaleString();
}

export function asText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** The draft's app tools with the app ``appId`` added (``on``) or removed. */
export function withAppTool(tools: Record<string, unknown>[], appId: string, on: boolean): Record<string, unknown>[] {
  if (on && tools.some((t) => t.app_id === appId)) return tools;
  const rest = tools.filter((t) => t.app_id !== appId);
  return on ? [...rest, { type: "app", app_id: appId }] : rest;
}

/** Where a logged message stands among its versions: the nth of `total`, and how it came to be (a
 * later version with the first one's question was regenerated; with another question, edited). None
 * for a message with one version. */
export interface VersionMark {
  n: number;
  total: number;
  kind: "first" | "regenerated" | "edited";
}

export function versionMark(message: MessageLog, byId: ReadonlyMap<string, MessageLog>): VersionMark | null {
  const ids = message.versions?.ids ?? [];
  const at = ids.indexOf(message.id);
  if (ids.length < 2 || at < 0) return null;
  if (at === 0) return { n: 1, total: ids.length, kind: "first" };
  const first = byId.get(ids[0]);
  const edited = first !== undefined && first.query !== message.query;
  return { n: at + 1, total: ids.length, kind: edited ? "edited" : "regenerated" };
}
