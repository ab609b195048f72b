// One app: its settings (saved as a new version), keys (and its chat page), versions and logs.
import { useState } from "preact/hooks";
import type { AdminClient, AppConfig, NewKey } from "./api";
import { AppEditor } from "./Editor";
import { Logs } from "./Logs";
import { Spending } from "./Memory";
import { Wires } from "./Wires";
import { APP_TABS, chatLink, draftOf, href, type AppTab } from "./logic";
import { count, t } from "./i18n";
import { Action, ErrorLine, Section, download, useLoad } from "./ui";

const TAB_NAMES = { settings: "tab_settings", keys: "tab_keys", versions: "tab_versions", logs: "tab_logs", usage: "tab_usage" } as const satisfies Record<AppTab, string>;

export function AppPage({ client, appId, tab }: { client: AdminClient; appId: string; tab: AppTab }) {
  const app = useLoad(() => client.app(appId), [client, appId]);
  const [exportWarnings, setExportWarnings] = useState<string[] | null>(null);
  const [savedAs, setSavedAs] = useState<number | null>(null); // the version the last save made
  if (app.error) return <ErrorLine error={app.error} />;
  if (!app.data) return <p class="muted">{t("loading")}</p>;
  const detail = app.data;
  return (
    <>
      <div class="page-head">
        <div>
          <h1>{detail.name}</h1>
          <p class="muted">
            {detail.description || t("no_description")} · {t("version_n", { n: detail.version })} · {count(detail.keys, "key")} · <code>{detail.id}</code>
          </p>
          {exportWarnings && exportWarnings.length > 0 && (
            <ul class="warnings" aria-label={t("export_warnings")}>
              {exportWarnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
        </div>
        <div class="row">
          <Action action={async () => download(`${detail.name}.yml`, (await client.exportApp(appId, "loopwright")).text)} title={t("export_yaml_help")}>
            {t("export_yaml")}
          </Action>
          <Action
            action={async () => {
              const exported = await client.exportApp(appId, "dify");
              setExportWarnings(exported.warnings);
              download(`${detail.name}.dify.yml`, exported.text);
            }}
            title={t("export_dify_help")}
          >
            {t("export_dify")}
          </Action>
          <Action
            kind="danger"
            confirm={t("delete_app_confirm", { name: detail.name })}
            action={async () => {
              await client.deleteApp(appId);
              window.location.hash = href({ page: "apps" });
            }}
          >
            {t("delete")}
          </Action>
        </div>
      </div>
      <nav class="tabs" aria-label={t("app_sections")}>
        {APP_TABS.map((name) => (
          <a key={name} href={href({ page: "app", id: appId, tab: name })} class={name === tab ? "active" : ""} aria-current={name === tab ? "page" : undefined}>
            {t(TAB_NAMES[name])}
          </a>
        ))}
      </nav>
      {tab === "settings" && (
        <>
        <AppEditor
          key={detail.version}
          client={client}
          appId={appId}
          initial={draftOf(detail.name, detail.description, detail.config)}
          saveLabel={t("save_version")}
          savedNote={savedAs === detail.version ? t("saved_as", { n: detail.version }) : null}
          onSave={async (name, description, config) => {
            const saved = await client.updateApp(appId, { name, description, config: config as AppConfig });
            setSavedAs(saved.version);
            app.reload();
          }}
        />
        <OpenAPIImport client={client} appId={appId} onAdded={app.reload} />
        </>
      )}
      {tab === "keys" && (
        <>
          <Keys client={client} appId={appId} onChanged={app.reload} />
          <Wires appId={appId} />
        </>
      )}
      {tab === "versions" && <Versions client={client} appId={appId} current={detail.version} onRestored={app.reload} />}
      {tab === "logs" && <Logs client={client} appId={appId} />}
      {tab === "usage" && <Spending client={client} appId={appId} config={detail.config} />}
    </>
  );
}

function Keys({ client, appId, onChanged }: { client: AdminClient; appId: string; onChanged: () => void }) {
  const keys = useLoad(() => client.keys(appId), [client, appId]);
  const [made, setMade] = useState<NewKey | null>(null);
  return (
    <Section
      title={t("api_keys")}
      aside={
        <Action
          kind="primary"
          action={async () => {
            setMade(await client.createKey(appId));
            keys.reload();
            onChanged();
          }}
        >
          {t("new_key")}
        </Action>
      }
    >
      {made && (
        <div class="new-key" aria-label={t("new_key_label")}>
          <p>
            {t("new_key_once")} <code class="secret">{made.token}</code>
          </p>
          <p class="row">
            <a class="button primary" href={chatLink(appId, made.token)} target="_blank" rel="noopener noreferrer">
              {t("open_chat")}
            </a>
            <button type="button" onClick={() => navigator.clipboard?.writeText(made.token)}>
              {t("copy_key")}
            </button>
          </p>
          <p class="muted">{t("key_fragment", { fragment: "#key=…" })}</p>
        </div>
      )}
      <ErrorLine error={keys.error} />
      {keys.data && keys.data.length === 0 && <p class="muted">{t("no_keys")}</p>}
      {keys.data && keys.data.length > 0 && (
        <table class="list" aria-label={t("keys")}>
          <thead>
            <tr>
              <th>{t("col_key")}</th>
              <th>{t("col_created")}</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.data.map((k) => (
              <tr key={k.id}>
                <td>
                  <code>{k.token}</code>
                </td>
                <td class="muted">{k.created_at.replace("T", " ")}</td>
                <td>
                  <Action
                    kind="danger small"
                    confirm={t("revoke_confirm")}
                    action={async () => {
                      await client.revokeKey(k.id);
                      if (made?.id === k.id) setMade(null);
                      keys.reload();
                      onChanged();
                    }}
                  >
                    {t("revoke")}
                  </Action>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function Versions({ client, appId, current, onRestored }: { client: AdminClient; appId: string; current: number; onRestored: () => void }) {
  const versions = useLoad(() => client.versions(appId), [client, appId, current]);
  const [shown, setShown] = useState<{ version: number; config: AppConfig } | null>(null);
  return (
    <Section title={t("versions_title")}>
      <p class="muted">{t("versions_note")}</p>
      <ErrorLine error={versions.error} />
      <table class="list" aria-label={t("versions")}>
        <thead>
          <tr>
            <th>{t("col_version")}</th>
            <th>{t("col_model")}</th>
            <th>{t("col_strategy")}</th>
            <th>{t("col_saved")}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(versions.data ?? []).map((v) => (
            <tr key={v.id}>
              <td>
                {v.version}
                {v.version === current && <span class="chip">{t("current")}</span>}
              </td>
              <td>
                <code>{v.model}</code>
              </td>
              <td>{v.strategy}</td>
              <td class="muted">{v.created_at.replace("T", " ")}</td>
              <td class="row">
                <Action action={async () => setShown(await client.version(appId, v.version))}>{t("show")}</Action>
                {v.version !== current && (
                  <Action
                    confirm={t("restore_confirm", { n: v.version })}
                    action={async () => {
                      const old = await client.version(appId, v.version);
                      await client.updateApp(appId, { config: old.config });
                      onRestored();
                    }}
                  >
                    {t("restore")}
                  </Action>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown && (
        <div>
          <h3>{t("version_title", { n: shown.version })}</h3>
          <pre class="code-block">{JSON.stringify(shown.config, null, 2)}</pre>
        </div>
      )}
    </Section>
  );
}

type Operation = { name: string; method: string; path: string; summary: string };

/** Load an OpenAPI spec (with its auth), list its operations, and add it to the app as a new version. */
function OpenAPIImport({ client, appId, onAdded }: { client: AdminClient; appId: string; onAdded: () => void }) {
  const [spec, setSpec] = useState("");
  const [authType, setAuthType] = useState("none");
  const [keyEnv, setKeyEnv] = useState("");
  const [header, setHeader] = useState("Authorization");
  const [prefix, setPrefix] = useState("bearer");
  const [allowHosts, setAllowHosts] = useState("");
  const [operations, setOperations] = useState<Operation[] | null>(null);
  const [added, setAdded] = useState<number | null>(null);
  const source = () => {
    const out: Record<string, unknown> = { spec: spec.trim(), auth_type: authType };
    if (authType !== "none") {
      out.api_key_env = keyEnv.trim();
      if (authType === "api_key_header") Object.assign(out, { api_key_header: header, api_key_header_prefix: prefix });
    }
    const hosts = allowHosts.split(",").map((h) => h.trim()).filter(Boolean);
    if (hosts.length) out.allow_hosts = hosts;
    return out;
  };
  return (
    <Section title={t("oa_title")}>
      <p class="muted">{t("oa_note")}</p>
      <div class="grid2">
        <label>
          {t("oa_spec")}
          <input type="text" name="openapi-spec" value={spec} onInput={(e) => { setSpec(e.currentTarget.value); setOperations(null); }} />
        </label>
        <label>
          {t("oa_auth")}
          <select name="openapi-auth" value={authType} onChange={(e) => setAuthType(e.currentTarget.value)}>
            <option value="none">{t("oa_none")}</option>
            <option value="api_key_header">{t("oa_key_header")}</option>
            <option value="api_key_query">{t("oa_key_query")}</option>
          </select>
        </label>
        {authType !== "none" && (
          <label>
            {t("oa_key_env")}
            <input type="text" name="openapi-key-env" value={keyEnv} onInput={(e) => setKeyEnv(e.currentTarget.value)} />
          </label>
        )}
        {authType === "api_key_header" && (
          <label>
            {t("oa_header")}
            <span class="with-button">
              <input type="text" name="openapi-header" value={header} onInput={(e) => setHeader(e.currentTarget.value)} />
              <select name="openapi-prefix" value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)}>
                <option value="bearer">Bearer</option>
                <option value="basic">Basic</option>
                <option value="custom">{t("oa_as_given")}</option>
              </select>
            </span>
          </label>
        )}
        <label>
          {t("oa_hosts")}
          <input type="text" name="openapi-allow-hosts" value={allowHosts} onInput={(e) => setAllowHosts(e.currentTarget.value)} />
        </label>
      </div>
      <p class="row">
        <Action action={async () => { setAdded(null); setOperations((await client.importOpenAPI(appId, source(), true)).operations); }}>
          {t("oa_check")}
        </Action>
        <Action
          kind="primary"
          action={async () => {
            const result = await client.importOpenAPI(appId, source(), false);
            setOperations(result.operations);
            setAdded(result.version);
            onAdded();
          }}
        >
          {t("oa_add")}
        </Action>
        {added !== null && <span class="ok-text">{t("oa_added", { n: added })}</span>}
      </p>
      {operations && (
        <table class="list compact" aria-label={t("oa_operations")}>
          <thead>
            <tr><th>{t("col_tool")}</th><th>{t("col_operation")}</th><th>{t("col_summary")}</th></tr>
          </thead>
          <tbody>
            {operations.map((o) => (
              <tr key={o.name}>
                <td><code>{o.name}</code></td>
                <td><code>{o.method} {o.path}</code></td>
                <td>{o.summary}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}
