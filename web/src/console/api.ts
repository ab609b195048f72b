// The admin API (/console/api) as the console uses it: every call with the admin token as a bearer
// token; errors become ConsoleError with a plain sentence. See docs/admin-api.md for the routes.
import { t, type Key } from "./i18n";

export interface AppSummary {
  id: string;
  name: string;
  mode: string; // agent-chat, chat or completion
  model: string;
  strategy: string;
  tools: number;
  created_at: string;
}

export interface InputField {
  variable: string;
  label: string;
  type: string;
  required: boolean;
  max_length?: number | null;
  options: string[];
  default?: unknown;
}

export interface AppConfig {
  mode?: string; // agent-chat (default), chat or completion
  model: string;
  model_params: Record<string, unknown>;
  strategy: string;
  instruction: string;
  user_input_form: InputField[];
  tools: { name: string; form_values: Record<string, unknown> }[];
  toolsets: Record<string, unknown>[];
  max_iterations: number;
  file_upload: Record<string, unknown>;
  opening_statement: string;
  suggested_questions: string[];
  history_message_limit: number | null;
  max_active_requests: number | null;
  [key: string]: unknown;
}

export interface AppDetail {
  id: string;
  name: string;
  description: string;
  created_at: string;
  version: number; // the newest
  versions: number;
  keys: number;
  config: AppConfig;
}

export interface ExportedApp {
  format: "loopwright" | "dify";
  text: string;
  warnings: string[];
}

export interface Version {
  version: number;
  id: string;
  model: string;
  strategy: string;
  created_at: string;
}

export interface KeySummary {
  id: string;
  app_id: string;
  token: string; // masked
  created_at: string;
}

export interface NewKey extends KeySummary {
  masked: string;
  token: string; // whole: shown this once
}

export interface BuiltinTool {
  name: string;
  label: string;
  description: string;
  form_parameters: { name: string; type: string; required: boolean; description: string; options: string[] }[];
}

export interface ModelCheck {
  model: string;
  ok: boolean;
  reply: string;
  error: string | null;
  latency: number | null;
}

export interface ImportResult {
  id: string | null;
  name: string;
  version: number | null;
  warnings: string[];
  config: AppConfig;
}

export interface Dataset {
  id: string;
  name: string;
  description: string | null;
  document_count: number;
  word_count: number;
  indexing_technique: string | null;
  embedding_model: string | null;
  retrieval_model_dict: { search_method: string; top_k: number };
}

export interface DocumentRow {
  id: string;
  name: string;
  indexing_status: "waiting" | "indexing" | "completed" | "error";
  error: string | null;
  segment_count: number;
  word_count: number;
  tokens: number;
  created_at: number;
}

export interface Hit {
  segment: { id: string; content: string; answer: string | null; position: number; document: { name: string } };
  score: number;
}

export interface ConversationLog {
  id: string;
  name: string;
  user: string;
  status: string;
  deleted: boolean;
  messages: number;
  inputs: Record<string, unknown>;
  created_at: number;
  updated_at: number;
  end_user_id: string;
}

export interface Spent {
  tokens: number;
  cost: string; // a decimal, as the budgets count it
  runs: number;
}

export interface BudgetUsage {
  day: string;
  app: Spent | null; // null: nothing counted that day (counters run while the app has a budget)
  end_users: (Spent & { end_user_id: string; user: string })[];
}

export interface Observation {
  id: string;
  text: string;
  conversation_id: string;
  message_id: string;
  created_at: string;
}

export interface EndUserMemory {
  end_user_id: string;
  working_memory: string;
  observations: Observation[]; // newest first
}

export interface ToolCallLog {
  tool_name: string;
  tool_label: string;
  tool_input: unknown;
  tool_output: unknown;
  status: string;
  error: string | null;
  time_cost: number;
}

export interface AgentLog {
  meta: { status: string; elapsed_time: number; total_tokens: number; agent_mode: string; iterations: number };
  iterations: { thought: string; tokens: number; tool_calls: ToolCallLog[] }[];
}

export interface MessageLog {
  id: string;
  query: string;
  answer: string;
  status: string;
  error: string | null;
  message_tokens: number;
  answer_tokens: number;
  total_price: string;
  currency: string;
  latency: number;
  created_at: number;
  feedback: { rating: string; content: string | null }[];
  agent_log: AgentLog;
  /** Its place among its versions: the message it follows and every version's id, oldest first. */
  versions: { parent_id: string | null; ids: string[] };
}

export interface UsageDay {
  day: string;
  messages: number;
  conversations: number;
  end_users: number;
  message_tokens: number;
  answer_tokens: number;
  total_price: string;
  errors: number;
  latency: number;
}

export interface Usage {
  days: UsageDay[];
  messages: number;
  message_tokens: number;
  answer_tokens: number;
  total_price: string;
  errors: number;
}

export interface ModelCallView {
  model: string;
  messages: { role: string; content: unknown; tool_calls?: { name: string; arguments: string }[]; name?: string }[];
  tools: { name: string; description: string }[];
  stop: string[];
  react_tools: string[] | null;
}

// codes whose plain sentence is the console's own (in the page's language, console/i18n.ts)
const PLAIN: Record<string, Key> = {
  unauthorized: "err_unauthorized",
  network: "err_network",
  internal_server_error: "err_internal_server_error",
  file_too_large: "err_file_too_large",
  unsupported_file_type: "err_unsupported_file_type",
  dataset_name_duplicate: "err_dataset_name_duplicate",
};

export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    serverMessage: string,
  ) {
    super(code in PLAIN ? t(PLAIN[code]) : serverMessage || t("err_failed", { status }));
  }
}

async function errorOf(response: Response): Promise<ConsoleError> {
  try {
    const body = (await response.json()) as { code?: string; message?: string };
    return new ConsoleError(response.status, body.code ?? "error", body.message ?? "");
  } catch {
    return new ConsoleError(response.status, response.status === 404 ? "not_found" : "error", response.statusText);
  }
}

export class AdminClient {
  constructor(
    private readonly token: string,
    private readonly base = "/console/api",
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async fetch(method: string, path: string, json?: unknown): Promise<Response> {
    const init: RequestInit = { method, headers: this.headers(), cache: "no-store" };
    if (json !== undefined) {
      init.headers = this.headers({ "Content-Type": "application/json" });
      init.body = JSON.stringify(json);
    }
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, init);
    } catch (e) {
      throw new ConsoleError(0, "network", String(e));
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  async json<T>(method: string, path: string, json?: unknown): Promise<T> {
    const response = await this.fetch(method, path, json);
    return (response.status === 204 ? null : await response.json()) as T;
  }

  // --- apps
  apps = () => this.json<{ data: AppSummary[] }>("GET", "/apps").then((r) => r.data);
  app = (id: string) => this.json<AppDetail>("GET", `/apps/${id}`);
  createApp = (name: string, description: string, config: Partial<AppConfig>) =>
    this.json<{ id: string }>("POST", "/apps", { name, description, config });
  importApp = (text: string, dryRun: boolean, name?: string) =>
    this.json<ImportResult>("POST", "/apps/import", { text, dry_run: dryRun, name: name || undefined });
  updateApp = (id: string, body: { name?: string; description?: string; config?: AppConfig }) =>
    this.json<{ id: string; version: number }>("PUT", `/apps/${id}`, body);
  deleteApp = (id: string) => this.json<null>("DELETE", `/apps/${id}`);
  exportApp = (id: string, format: "loopwright" | "dify") => this.json<ExportedApp>("GET", `/apps/${id}/export?format=${format}`);
  versions = (id: string) => this.json<{ data: Version[] }>("GET", `/apps/${id}/versions`).then((r) => r.data);
  version = (id: string, n: number) => this.json<{ version: number; config: AppConfig }>("GET", `/apps/${id}/versions/${n}`);

  // --- keys
  keys = (id: string) => this.json<{ data: KeySummary[] }>("GET", `/apps/${id}/keys`).then((r) => r.data);
  createKey = (id: string) => this.json<NewKey>("POST", `/apps/${id}/keys`);
  revokeKey = (keyId: string) => this.json<null>("DELETE", `/keys/${keyId}`);

  // --- tools and models
  tools = () => this.json<{ data: BuiltinTool[] }>("GET", "/tools").then((r) => r.data);
  testModel = (model: string) => this.json<ModelCheck>("POST", "/models/test", { model });
  importOpenAPI = (id: string, source: Record<string, unknown>, check: boolean) =>
    this.json<{ operations: { name: string; method: string; path: string; summary: string }[]; version: number | null }>(
      "POST",
      `/apps/${id}/toolsets/openapi`,
      { source, check },
    );

  // --- knowledge
  datasets = () => this.json<{ data: Dataset[] }>("GET", "/datasets").then((r) => r.data);
  dataset = (id: string) => this.json<Dataset>("GET", `/datasets/${id}`);
  createDataset = (body: { name: string; description?: string; embedding?: string }) =>
    this.json<Dataset>("POST", "/datasets", body);
  createDatasetKey = () => this.json<{ token: string }>("POST", "/dataset-keys").then((r) => r.token);
  deleteDataset = (id: string) => this.json<null>("DELETE", `/datasets/${id}`);
  documents = (id: string) => this.json<{ data: DocumentRow[] }>("GET", `/datasets/${id}/documents`).then((r) => r.data);
  deleteDocument = (id: string, doc: string) => this.json<null>("DELETE", `/datasets/${id}/documents/${doc}`);
  query = (id: string, query: string, topK: number) =>
    this.json<{ records: Hit[] }>("POST", `/datasets/${id}/query`, { query, top_k: topK }).then((r) => r.records);

  /** Upload a file as a document; ``progress`` gets the fraction sent (0–1) as the browser sends it. */
  upload(id: string, file: File, progress: (fraction: number) => void): Promise<{ document: DocumentRow }> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${this.base}/datasets/${id}/documents`);
      xhr.setRequestHeader("Authorization", `Bearer ${this.token}`);
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) progress(e.loaded / e.total);
      };
      xhr.onload = () => {
        let body: { code?: string; message?: string } = {};
        try {
          body = JSON.parse(xhr.responseText) as typeof body;
        } catch {
          /* not JSON */
        }
        if (xhr.status >= 200 && xhr.status < 300) resolve(body as { document: DocumentRow });
        else reject(new ConsoleError(xhr.status, body.code ?? "error", body.message ?? xhr.statusText));
      };
      xhr.onerror = () => reject(new ConsoleError(0, "network", "upload failed"));
      const form = new FormData();
      form.append("file", file);
      xhr.send(form);
    });
  }

  // --- logs
  conversations = (id: string, page: number) =>
    this.json<{ data: ConversationLog[]; total: number; has_more: boolean }>("GET", `/apps/${id}/conversations?page=${page}&limit=20`);
  conversation = (id: string, conversationId: string) =>
    this.json<{ conversation: ConversationLog; messages: MessageLog[] }>("GET", `/apps/${id}/conversations/${conversationId}`);
  usage = (id: string, days = 30) => this.json<Usage>("GET", `/apps/${id}/usage?days=${days}`);
  budgetUsage = (id: string, day: string) => this.json<BudgetUsage>("GET", `/apps/${id}/budget-usage?day=${encodeURIComponent(day)}`);
  evalCase = (id: string, conversationId: string) =>
    this.json<{ case: Record<string, unknown>; yaml: string }>("POST", `/apps/${id}/eval-cases`, { conversation_id: conversationId });

  // --- an end user's memory (memory.long_term)
  memory = (id: string, endUser: string) => this.json<EndUserMemory>("GET", `/apps/${id}/end-users/${endUser}/memory`);
  setWorkingMemory = (id: string, endUser: string, text: string) =>
    this.json<EndUserMemory>("PUT", `/apps/${id}/end-users/${endUser}/memory`, { working_memory: text });
  forgetMemory = (id: string, endUser: string) => this.json<null>("DELETE", `/apps/${id}/end-users/${endUser}/memory`);
  forgetObservation = (id: string, endUser: string, observation: string) =>
    this.json<null>("DELETE", `/apps/${id}/end-users/${endUser}/memory/observations/${observation}`);

  prompts = (messageId: string) => this.json<{ calls: ModelCallView[] }>("GET", `/messages/${messageId}/prompts`).then((r) => r.calls);
}
