// An app's settings as a form: model (with a test connection), strategy, instruction with its
// {{variables}}, the input form, tools (built-ins, knowledge bases, other toolsets), limits, opening
// statement and suggested questions. Saving an existing app makes a new configuration version.
import { useState } from "preact/hooks";
import type { AdminClient, AppConfig, InputField, ModelCheck } from "./api";
import {
  PLAIN_MODES,
  configOf,
  missingFields,
  modeOf,
  newField,
  variablesOf,
  withAppTool,
  withMode,
  type Draft,
} from "./logic";
import { toolTitle } from "../shared/format";
import { t } from "./i18n";
import { ErrorLine, Section, message, useLoad } from "./ui";

const FIELD_TYPES = ["text-input", "paragraph", "select", "number", "checkbox", "file", "file-list"];

export function AppEditor({
  client,
  appId,
  initial,
  saveLabel,
  savedNote = null,
  onSave,
}: {
  client: AdminClient;
  appId?: string; // none for a new app
  initial: Draft;
  saveLabel: string;
  savedNote?: string | null; // what the last save made, shown until the draft changes again
  onSave: (name: string, description: string, config: Partial<AppConfig>) => Promise<void>;
}) {
  const [draft, setDraft] = useState<Draft>(initial);
  const plain = PLAIN_MODES.includes(modeOf(draft)); // a chat or completion app: no tools, no strategy
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(savedNote !== null);
  const set = (changes: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...changes }));
    setSaved(false);
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (!draft.name.trim()) {
      setError(t("name_missing"));
      return;
    }
    setSaving(true);
    try {
      await onSave(draft.name, draft.description, configOf(draft));
      setSaved(true);
    } catch (err) {
      setError(message(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <form class="editor" onSubmit={save} aria-label={t("settings_form")}>
      <Section title={t("section_app")}>
        <div class="grid2">
          <label>
            {t("col_name")}
            <input type="text" name="name" value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} />
          </label>
          <label>
            {t("kb_description")}
            <input type="text" name="description" value={draft.description} onInput={(e) => set({ description: e.currentTarget.value })} />
          </label>
        </div>
      </Section>
      {appId === undefined && <KindSection draft={draft} set={set} />}
      <ModelSection client={client} draft={draft} set={set} />
      <InstructionSection draft={draft} set={set} />
      {!plain && <ToolsSection client={client} appId={appId} draft={draft} set={set} />}
      <Section title={t("limits")}>
        <div class="grid3">
          <label>
            {t("max_rounds")}
            <input type="number" min={0} max={99} name="max_iterations" value={draft.maxIterations} onInput={(e) => set({ maxIterations: e.currentTarget.value })} />
          </label>
          <label>
            {t("max_active")}
            <input type="number" min={1} name="max_active_requests" value={draft.maxActiveRequests} onInput={(e) => set({ maxActiveRequests: e.currentTarget.value })} />
          </label>
          <label>
            {t("history_limit")}
            <input type="number" min={0} name="history_message_limit" value={draft.historyLimit} onInput={(e) => set({ historyLimit: e.currentTarget.value })} />
          </label>
        </div>
      </Section>
      <Section title={t("conversation_start")}>
        <label>
          {t("opening_statement")}
          <textarea rows={2} name="opening_statement" value={draft.openingStatement} onInput={(e) => set({ openingStatement: e.currentTarget.value })} />
        </label>
        <label>
          {t("suggested_questions")}
          <textarea rows={3} name="suggested_questions" value={draft.suggestedQuestions} onInput={(e) => set({ suggestedQuestions: e.currentTarget.value })} />
        </label>
      </Section>
      <div class="save-bar">
        <button type="submit" class="primary" disabled={saving}>
          {saving ? t("saving") : saveLabel}
        </button>
        <span class="ok-text" role="status">
          {saved ? (savedNote ?? t("saved")) : ""}
        </span>
        <ErrorLine error={error} />
      </div>
    </form>
  );
}

type Setter = (changes: Partial<Draft>) => void;

const KINDS = [
  ["agent-chat", "kind_agent"],
  ["chat", "kind_chat"],
  ["completion", "kind_completion"],
] as const;

/** A new app's kind (Dify's mode), fixed once the app is made. */
function KindSection({ draft, set }: { draft: Draft; set: Setter }) {
  const mode = modeOf(draft);
  return (
    <Section title={t("kind_title")}>
      <div class="stack" role="radiogroup" aria-label={t("kind_title")}>
        {KINDS.map(([value, label]) => (
          <label key={value} class="check">
            <input
              type="radio"
              name="mode"
              value={value}
              checked={mode === value}
              onChange={() => set(withMode(draft, value))}
            />{" "}
            {t(label)}
          </label>
        ))}
        <p class="muted">{t("kind_fixed")}</p>
      </div>
    </Section>
  );
}

function ModelSection({ client, draft, set }: { client: AdminClient; draft: Draft; set: Setter }) {
  const [check, setCheck] = useState<ModelCheck | null>(null);
  const [testing, setTesting] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const test = async () => {
    setTesting(true);
    setCheck(null);
    setError(null);
    try {
      setCheck(await client.testModel(draft.model.trim()));
    } catch (e) {
      setError(message(e));
    } finally {
      setTesting(false);
    }
  };
  return (
    <Section title={t("col_model")}>
      <div class="grid2">
        <label>
          {t("model_spec")}
          <span class="with-button">
            <input
              type="text"
              name="model"
              placeholder="local, openai:gpt-4o-mini, openai-compatible:NAME"
              value={draft.model}
              onInput={(e) => {
                set({ model: e.currentTarget.value });
                setCheck(null);
              }}
            />
            <button type="button" onClick={test} disabled={testing || !draft.model.trim()}>
              {testing ? t("testing") : t("test_connection")}
            </button>
          </span>
        </label>
        <label hidden={PLAIN_MODES.includes(modeOf(draft))}>
          {t("col_strategy")}
          <select name="strategy" value={draft.strategy} onChange={(e) => set({ strategy: e.currentTarget.value })}>
            <option value="auto">{t("strategy_auto")}</option>
            <option value="function-calling">{t("strategy_function_calling")}</option>
            <option value="react">ReAct</option>
          </select>
        </label>
      </div>
      {check && (
        <p class={check.ok ? "ok-text" : "error-text"} role="status" aria-label={t("connection_test")}>
          {check.ok
            ? t("connected", { reply: check.reply.trim(), seconds: (check.latency ?? 0).toFixed(2) })
            : t("not_working", { error: check.error ?? "" })}
        </p>
      )}
      <ErrorLine error={error} />
    </Section>
  );
}

function InstructionSection({ draft, set }: { draft: Draft; set: Setter }) {
  const variables = variablesOf(draft.instruction);
  const missing = missingFields(draft.instruction, draft.form);
  const setField = (i: number, changes: Partial<InputField>) =>
    set({ form: draft.form.map((f, j) => (j === i ? { ...f, ...changes } : f)) });
  return (
    <Section title={t("instruction_title")}>
      <label>
        <span>
          {t("instruction")} (<code>{"{{variable}}"}</code> {t("instruction_help")})
        </span>
        <textarea rows={6} name="instruction" value={draft.instruction} onInput={(e) => set({ instruction: e.currentTarget.value })} />
      </label>
      {variables.length > 0 && (
        <p class="muted">
          {t("variables")} {variables.map((v) => <code key={v} class="chip">{v}</code>)}
        </p>
      )}
      {missing.map((v) => (
        <p key={v} class="warn-text">
          <code>{`{{${v}}}`}</code> {t("no_field")}{" "}
          <button type="button" class="link" onClick={() => set({ form: [...draft.form, newField(v)] })}>
            {t("add_field_for_it")}
          </button>
        </p>
      ))}
      <table class="list form-fields" aria-label={t("input_form")}>
        <thead>
          <tr>
            <th>{t("col_variable")}</th>
            <th>{t("col_label")}</th>
            <th>{t("col_type")}</th>
            <th>{t("col_options")}</th>
            <th>{t("col_required")}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {draft.form.map((f, i) => (
            <tr key={i}>
              <td>
                <input type="text" aria-label={t("col_variable")} value={f.variable} onInput={(e) => setField(i, { variable: e.currentTarget.value })} />
              </td>
              <td>
                <input type="text" aria-label={t("col_label")} value={f.label} onInput={(e) => setField(i, { label: e.currentTarget.value })} />
              </td>
              <td>
                <select aria-label={t("col_type")} value={f.type} onChange={(e) => setField(i, { type: e.currentTarget.value })}>
                  {FIELD_TYPES.map((type) => (
                    <option key={type} value={type}>
                      {type}
                    </option>
                  ))}
                </select>
              </td>
              <td>
                <input
                  type="text"
                  aria-label={t("options")}
                  disabled={f.type !== "select"}
                  placeholder="a, b, c"
                  value={f.options.join(", ")}
                  onInput={(e) => setField(i, { options: e.currentTarget.value.split(",").map((o) => o.trim()) })}
                />
              </td>
              <td>
                <input type="checkbox" aria-label={t("col_required")} checked={f.required} onChange={(e) => setField(i, { required: e.currentTarget.checked })} />
              </td>
              <td>
                <button type="button" class="icon" title={t("remove_field")} aria-label={t("remove_field")} onClick={() => set({ form: draft.form.filter((_, j) => j !== i) })}>
                  ✕
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" onClick={() => set({ form: [...draft.form, newField()] })}>
        {t("add_field")}
      </button>
    </Section>
  );
}

function ToolsSection({ client, appId, draft, set }: { client: AdminClient; appId?: string; draft: Draft; set: Setter }) {
  const tools = useLoad(() => client.tools(), [client]);
  const datasets = useLoad(() => client.datasets(), [client]);
  const apps = useLoad(() => client.apps(), [client]);
  const otherApps = (apps.data ?? []).filter((a) => a.id !== appId);
  const toggle = (list: string[], item: string, on: boolean) => (on ? [...list, item] : list.filter((x) => x !== item));
  return (
    <Section title={t("col_tools")}>
      <ErrorLine error={tools.error ?? datasets.error} />
      <fieldset>
        <legend>{t("builtin_tools")}</legend>
        <div class="checks">
          {(tools.data ?? []).map((tool) => (
            <label key={tool.name} class="check" title={tool.description}>
              <input type="checkbox" name={`tool-${tool.name}`} checked={draft.tools.includes(tool.name)} onChange={(e) => set({ tools: toggle(draft.tools, tool.name, e.currentTarget.checked) })} />
              <span class="tool-title">{toolTitle(tool.name, tool.label)}</span>
              <code class="tool-name">{tool.name}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>{t("kb_tools")}</legend>
        {datasets.data && datasets.data.length === 0 && <p class="muted">{t("no_kbs")}</p>}
        <div class="checks">
          {(datasets.data ?? []).map((d) => (
            <label key={d.id} class="check">
              <input
                type="checkbox"
                name={`dataset-${d.name}`}
                checked={draft.knowledge.includes(d.id) || draft.knowledge.includes(d.name)}
                onChange={(e) => set({ knowledge: toggle(draft.knowledge.filter((x) => x !== d.name), d.id, e.currentTarget.checked) })}
              />
              {d.name}
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>{t("app_tools")}</legend>
        {apps.data && otherApps.length === 0 && <p class="muted">{t("no_other_apps")}</p>}
        <div class="checks">
          {otherApps.map((a) => (
            <label key={a.id} class="check">
              <input
                type="checkbox"
                name={`app-${a.name}`}
                checked={draft.appTools.some((t) => t.app_id === a.id)}
                onChange={(e) => set({ appTools: withAppTool(draft.appTools, a.id, e.currentTarget.checked) })}
              />
              {a.name}
            </label>
          ))}
        </div>
      </fieldset>
      <label>
        {t("other_toolsets")}
        <textarea
          rows={4}
          name="toolsets"
          class="mono"
          placeholder='[{"type": "openapi", "spec": "https://api.example.com/openapi.json", "auth_type": "api_key_header", "api_key_env": "EXAMPLE_KEY"}, {"type": "mcp", "transport": "streamable-http", "url": "http://127.0.0.1:8000/mcp"}]'
          value={draft.otherToolsets}
          onInput={(e) => set({ otherToolsets: e.currentTarget.value })}
        />
      </label>
    </Section>
  );
}
