// One app: its settings (saved as a new version), keys (and its chat page), versions and logs.
import { useState } from "preact/hooks";
import type { AdminClient, AppConfig, NewKey } from "./api";
import { AppEditor } from "./Editor";
import { Logs } from "./Logs";
import { Spending } from "./Memory";
import { Wires } from "./Wires";
import { APP_TABS, chatLink, draftOf, href, type AppTab } from "./logic";
import { plural } from "../shared/format";
import { Action, ErrorLine, Section, download, useLoad } from "./ui";

const TAB_NAMES: Record<AppTab, string> = { settings: "Settings", keys: "Keys and chat", versions: "Versions", logs: "Logs", usage: "Usage and memory" };

export function AppPage({ client, appId, tab }: { client: AdminClient; appId: string; tab: AppTab }) {
  const app = useLoad(() => client.app(appId), [client, appId]);
  const [exportWarnings, setExportWarnings] = useState<string[] | null>(null);
  const [savedAs, setSavedAs] = useState<number | null>(null); // the version the last save made
  if (app.error) return <ErrorLine error={app.error} />;
  if (!app.data) return <p class="muted">Loading…</p>;
  const detail = app.data;
  return (
    <>
      <div class="page-head">
        <div>
          <h1>{detail.name}</h1>
          <p class="muted">
            {detail.description || "No description."} · version {detail.version} · {plural(detail.keys, "key")} · <code>{detail.id}</code>
          </p>
          {exportWarnings && exportWarnings.length > 0 && (
            <ul class="warnings" aria-label="Export warnings">
              {exportWarnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
        </div>
        <div class="row">
          <Action action={async () => download(`${detail.name}.yml`, (await client.exportApp(appId, "loopwright")).text)} title="The app as loopwright YAML (lossless)">
            Export YAML
          </Action>
          <Action
            action={async () => {
              const exported = await client.exportApp(appId, "dify");
              setExportWarnings(exported.warnings);
              download(`${detail.name}.dify.yml`, exported.text);
            }}
            title="The app as a Dify DSL file Dify can import"
          >
            Export for Dify
          </Action>
          <Action
            kind="danger"
            confirm={`Delete the app "${detail.name}" with its keys, conversations and logs?`}
            action={async () => {
              await client.deleteApp(appId);
              window.location.hash = href({ page: "apps" });
            }}
          >
            Delete
          </Action>
        </div>
      </div>
      <nav class="tabs" aria-label="App sections">
        {APP_TABS.map((t) => (
          <a key={t} href={href({ page: "app", id: appId, tab: t })} class={t === tab ? "active" : ""} aria-current={t === tab ? "page" : undefined}>
            {TAB_NAMES[t]}
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
          saveLabel="Save as a new version"
          savedNote={savedAs === detail.version ? `Saved as version ${detail.version}.` : null}
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
      title="API keys"
      aside={
        <Action
          kind="primary"
          action={async () => {
            setMade(await client.createKey(appId));
            keys.reload();
            onChanged();
          }}
        >
          New key
        </Action>
      }
    >
      {made && (
        <div class="new-key" aria-label="New key">
          <p>
            The new key, shown this once: <code class="secret">{made.token}</code>
          </p>
          <p class="row">
            <a class="button primary" href={chatLink(appId, made.token)} target="_blank" rel="noopener noreferrer">
              Open the chat page
            </a>
            <button type="button" onClick={() => navigator.clipboard?.writeText(made.token)}>
              Copy the key
            </button>
          </p>
          <p class="muted">
            The chat link carries the key in its fragment (<code>#key=…</code>), which browsers never send to the server.
          </p>
        </div>
      )}
      <ErrorLine error={keys.error} />
      {keys.data && keys.data.length === 0 && <p class="muted">No keys yet: make one to chat with the app or call its API.</p>}
      {keys.data && keys.data.length > 0 && (
        <table class="list" aria-label="Keys">
          <thead>
            <tr>
              <th>Key</th>
              <th>Created</th>
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
                    confirm="Revoke this key? Requests with it are refused at once."
                    action={async () => {
                      await client.revokeKey(k.id);
                      if (made?.id === k.id) setMade(null);
                      keys.reload();
                      onChanged();
                    }}
                  >
                    Revoke
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
    <Section title="Configuration versions">
      <p class="muted">Each save is a new version; conversations stay on the version they started with.</p>
      <ErrorLine error={versions.error} />
      <table class="list" aria-label="Versions">
        <thead>
          <tr>
            <th>Version</th>
            <th>Model</th>
            <th>Strategy</th>
            <th>Saved</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(versions.data ?? []).map((v) => (
            <tr key={v.id}>
              <td>
                {v.version}
                {v.version === current && <span class="chip">current</span>}
              </td>
              <td>
                <code>{v.model}</code>
              </td>
              <td>{v.strategy}</td>
              <td class="muted">{v.created_at.replace("T", " ")}</td>
              <td class="row">
                <Action action={async () => setShown(await client.version(appId, v.version))}>Show</Action>
                {v.version !== current && (
                  <Action
                    confirm={`Make version ${v.version}'s settings the newest version?`}
                    action={async () => {
                      const old = await client.version(appId, v.version);
                      await client.updateApp(appId, { config: old.config });
                      onRestored();
                    }}
                  >
                    Restore
                  </Action>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown && (
        <div>
          <h3>Version {shown.version}</h3>
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
    <Section title="Import an OpenAPI spec as tools">
      <p class="muted">
        The key is read from an environment variable of the server when the tools run, so the app's configuration holds
        no secret. Adding the spec saves a new version (unsaved changes above are dropped).
      </p>
      <div class="grid2">
        <label>
          Spec (http(s) URL, or a file path on the server)
          <input type="text" name="openapi-spec" value={spec} onInput={(e) => { setSpec(e.currentTarget.value); setOperations(null); }} />
        </label>
        <label>
          Auth
          <select name="openapi-auth" value={authType} onChange={(e) => setAuthType(e.currentTarget.value)}>
            <option value="none">none</option>
            <option value="api_key_header">API key in a header</option>
            <option value="api_key_query">API key in the query</option>
          </select>
        </label>
        {authType !== "none" && (
          <label>
            Environment variable with the key
            <input type="text" name="openapi-key-env" value={keyEnv} onInput={(e) => setKeyEnv(e.currentTarget.value)} />
          </label>
        )}
        {authType === "api_key_header" && (
          <label>
            Header and prefix
            <span class="with-button">
              <input type="text" name="openapi-header" value={header} onInput={(e) => setHeader(e.currentTarget.value)} />
              <select name="openapi-prefix" value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)}>
                <option value="bearer">Bearer</option>
                <option value="basic">Basic</option>
                <option value="custom">as given</option>
              </select>
            </span>
          </label>
        )}
        <label>
          Private hosts it may reach (comma-separated, e.g. 10.0.0.5)
          <input type="text" name="openapi-allow-hosts" value={allowHosts} onInput={(e) => setAllowHosts(e.currentTarget.value)} />
        </label>
      </div>
      <p class="row">
        <Action action={async () => { setAdded(null); setOperations((await client.importOpenAPI(appId, source(), true)).operations); }}>
          Check the spec
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
          Add to the app
        </Action>
        {added !== null && <span class="ok-text">Added as version {added}.</span>}
      </p>
      {operations && (
        <table class="list compact" aria-label="Operations">
          <thead>
            <tr><th>Tool</th><th>Operation</th><th>Summary</th></tr>
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
