// The console's shell: the admin token gate, the header's navigation and the page of the route.
import { useEffect, useMemo, useState } from "preact/hooks";
import { AdminClient, ConsoleError } from "./api";
import { AppPage } from "./AppPage";
import { AppList, NewApp } from "./Apps";
import { DatasetPage, KnowledgeList } from "./Knowledge";
import { t } from "./i18n";
import { forgetToken, parseRoute, readToken, saveToken, type Route } from "./logic";

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}

export function ConsoleApp() {
  const [token, setToken] = useState<string | null>(() => readToken(sessionStorage));
  const [checked, setChecked] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const client = useMemo(() => (token ? new AdminClient(token) : null), [token]);
  const route = useRoute();

  useEffect(() => {
    if (client === null) return;
    setChecked(false);
    client.apps().then(
      () => setChecked(true),
      (e: unknown) => {
        if (e instanceof ConsoleError && e.status === 401) {
          forgetToken(sessionStorage);
          setToken(null);
        }
        setError(e instanceof Error ? e.message : String(e));
      },
    );
  }, [client]);

  const signOut = () => {
    forgetToken(sessionStorage);
    setToken(null);
    setChecked(false);
  };

  if (client === null || !checked) {
    return <TokenGate error={error} busy={client !== null && error === null} onToken={(value) => { setError(null); saveToken(sessionStorage, value); setToken(value.trim()); }} />;
  }
  return (
    <div class="console">
      <header class="topbar">
        <a class="brand" href="#/apps">{t("console")}</a>
        <nav>
          <a href="#/apps" class={route.page === "apps" || route.page === "app" || route.page === "new-app" ? "active" : ""}>{t("nav_apps")}</a>
          <a href="#/knowledge" class={route.page === "knowledge" || route.page === "dataset" ? "active" : ""}>{t("nav_knowledge")}</a>
        </nav>
        <button class="icon" onClick={signOut} title={t("sign_out_help")}>{t("sign_out")}</button>
      </header>
      <main class="page">
        <Page client={client} route={route} />
      </main>
    </div>
  );
}

function Page({ client, route }: { client: AdminClient; route: Route }) {
  switch (route.page) {
    case "apps":
      return <AppList client={client} />;
    case "new-app":
      return <NewApp client={client} />;
    case "app":
      return <AppPage key={route.id} client={client} appId={route.id} tab={route.tab} />;
    case "knowledge":
      return <KnowledgeList client={client} />;
    case "dataset":
      return <DatasetPage key={route.id} client={client} datasetId={route.id} />;
  }
}

function TokenGate({ error, busy, onToken }: { error: string | null; busy: boolean; onToken: (token: string) => void }) {
  const [value, setValue] = useState("");
  return (
    <main class="centered">
      <h1>{t("console")}</h1>
      <p class="muted">{t("gate_intro", { env: "LOOPWRIGHT_ADMIN_TOKEN" })}</p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onToken(value);
        }}
      >
        <label>
          {t("admin_token")}
          <input type="password" name="token" autoComplete="off" autoFocus value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={busy || !value.trim()}>
          {busy ? t("checking") : t("open_console")}
        </button>
      </form>
      {error && (
        <p class="error-text" role="alert">
          {error}
        </p>
      )}
    </main>
  );
}
