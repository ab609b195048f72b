// The app list, and a new app: made from the editor's fields, or imported from a loopwright app YAML
// or a Dify DSL export (read first, so its warnings are seen before anything is stored).
import { useState } from "preact/hooks";
import type { AdminClient, ImportResult } from "./api";
import { AppEditor } from "./Editor";
import { DEFAULT_CONFIG, PLAIN_MODES, draftOf, href } from "./logic";
import { count, kindName, t } from "./i18n";
import { ErrorLine, Section, message, useLoad } from "./ui";

export function AppList({ client }: { client: AdminClient }) {
  const apps = useLoad(() => client.apps(), [client]);
  return (
    <>
      <div class="page-head">
        <h1>{t("apps")}</h1>
        <a class="button primary" href={href({ page: "new-app" })}>
          {t("new_app")}
        </a>
      </div>
      <ErrorLine error={apps.error} />
      {apps.data && apps.data.length === 0 && <p class="muted">{t("no_apps")}</p>}
      {apps.data && apps.data.length > 0 && (
        <table class="list" aria-label={t("apps")}>
          <thead>
            <tr>
              <th>{t("col_name")}</th>
              <th>{t("col_kind")}</th>
              <th>{t("col_model")}</th>
              <th>{t("col_strategy")}</th>
              <th>{t("col_tools")}</th>
              <th>{t("col_created")}</th>
            </tr>
          </thead>
          <tbody>
            {apps.data.map((a) => (
              <tr key={a.id}>
                <td>
                  <a href={href({ page: "app", id: a.id, tab: "settings" })}>{a.name}</a>
                </td>
                <td>{kindName(a.mode)}</td>
                <td>
                  <code>{a.model}</code>
                </td>
                <td>{PLAIN_MODES.includes(a.mode) ? "—" : a.strategy}</td>
                <td>{a.tools}</td>
                <td class="muted">{a.created_at.replace("T", " ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function NewApp({ client }: { client: AdminClient }) {
  const [mode, setMode] = useState<"form" | "import">("form");
  return (
    <>
      <div class="page-head">
        <h1>{t("new_app")}</h1>
        <div class="segmented" role="tablist">
          <button role="tab" aria-selected={mode === "form"} class={mode === "form" ? "on" : ""} onClick={() => setMode("form")}>
            {t("set_up")}
          </button>
          <button role="tab" aria-selected={mode === "import"} class={mode === "import" ? "on" : ""} onClick={() => setMode("import")}>
            {t("import_file")}
          </button>
        </div>
      </div>
      {mode === "form" ? (
        <AppEditor
          client={client}
          initial={draftOf("", "", DEFAULT_CONFIG)}
          saveLabel={t("create_app")}
          onSave={async (name, description, config) => {
            const made = await client.createApp(name, description, config);
            window.location.hash = href({ page: "app", id: made.id, tab: "keys" });
          }}
        />
      ) : (
        <ImportApp client={client} />
      )}
    </>
  );
}

function ImportApp({ client }: { client: AdminClient }) {
  const [text, setText] = useState("");
  const [fileName, setFileName] = useState("");
  const [name, setName] = useState("");
  const [preview, setPreview] = useState<ImportResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const read = async (dryRun: boolean) => {
    setBusy(true);
    setError(null);
    try {
      const result = await client.importApp(text, dryRun, name);
      if (dryRun) setPreview(result);
      else if (result.id) window.location.hash = href({ page: "app", id: result.id, tab: "settings" });
    } catch (e) {
      setError(message(e));
      setPreview(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Section title={t("import_title")}>
      <div class="stack">
        <label>
          {t("file")}
          <input
            type="file"
            name="dsl"
            accept=".yml,.yaml,text/yaml"
            onChange={async (e) => {
              const file = e.currentTarget.files?.[0];
              if (!file) return;
              setFileName(file.name);
              setText(await file.text());
              setPreview(null);
            }}
          />
        </label>
        <label>
          {t("or_paste")}
          <textarea rows={8} name="dsl-text" value={text} onInput={(e) => { setText(e.currentTarget.value); setPreview(null); }} />
        </label>
        <label>
          {t("import_name")}
          <input type="text" name="import-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="button" disabled={busy || !text.trim()} onClick={() => read(true)}>
            {fileName ? t("read_file", { name: fileName }) : t("read_it")}
          </button>
          <button type="button" class="primary" disabled={busy || preview === null} onClick={() => read(false)}>
            {t("import_as_new")}
          </button>
        </div>
        <ErrorLine error={error} />
        {preview && (
          <div class="import-preview" aria-label={t("import_preview")}>
            <p>
              <strong>{preview.name}</strong> · {kindName(preview.config.mode ?? "agent-chat")} · {t("model")}{" "}
              <code>{preview.config.model}</code>
              {!PLAIN_MODES.includes(preview.config.mode ?? "agent-chat") && (
                <>
                  {" "}
                  · {preview.config.strategy} · {count(preview.config.tools.length, "tool")}
                </>
              )}
            </p>
            {preview.warnings.length === 0 ? (
              <p class="ok-text">{t("imported_all")}</p>
            ) : (
              <>
                <p>{t("imported_some")}</p>
                <ul class="warnings">
                  {preview.warnings.map((w) => (
                    <li key={w}>{w}</li>
                  ))}
                </ul>
              </>
            )}
          </div>
        )}
      </div>
    </Section>
  );
}
