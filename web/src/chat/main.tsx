import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "../shared/theme.css";
import "./chat.css";
import { ServiceClient } from "../shared/api";
import { language } from "../shared/i18n";
import { ChatApp, type AppSettings } from "./ChatApp";
import { CompletionApp } from "./CompletionApp";
import { readCredentials, forgetKey } from "./credentials";
import { applyStoredTheme } from "./theme";

applyStoredTheme();
document.documentElement.lang = language() === "zh" ? "zh-Hans" : language(); // the catalogue's language

const WRONG_APP = "This chat link's key belongs to another app. Ask whoever shared it for the right link.";

function Boot() {
  const [credentials] = useState(() => readCredentials(window.location, window.history, sessionStorage, localStorage));
  const [client] = useState(() => (credentials ? new ServiceClient(credentials.key, credentials.user) : null));
  const [settings, setSettings] = useState<AppSettings | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (client === null) return;
    // The site is a nicety (an icon, a footer): a server without it still shows the chat.
    const site = client.site().catch(() => ({ icon: null, icon_background: null, custom_disclaimer: null }));
    Promise.all([client.info(), client.parameters(), site]).then(
      ([info, parameters, shown]) => {
        if (credentials && info.id !== undefined && info.id !== credentials.appId) {
          // A link whose key is another app's: refused, not served under this app's address.
          forgetKey(credentials.appId, sessionStorage);
          setError(WRONG_APP);
          return;
        }
        document.title = `${info.name} · loopwright`;
        setSettings({
          name: info.name,
          description: info.description,
          icon: shown.icon ?? "",
          iconBackground: shown.icon_background ?? "",
          footer: shown.custom_disclaimer ?? "",
          mode: info.mode ?? "agent-chat",
          parameters,
        });
      },
      (e: unknown) => {
        if (credentials && e instanceof Error && "status" in e && (e as { status: number }).status === 401) {
          forgetKey(credentials.appId, sessionStorage);
        }
        setError(e instanceof Error ? e.message : String(e));
      },
    );
  }, [client, credentials]);

  if (credentials === null || client === null) {
    return (
      <main class="centered">
        <h1>Chat</h1>
        <p>
          Open this page with a share link: <code>/chat/&lt;app id&gt;#key=&lt;app key&gt;</code>. Whoever runs the
          server makes one with <code>loopwright key create --app &lt;app id&gt;</code>.
        </p>
      </main>
    );
  }
  if (error !== null) {
    return (
      <main class="centered">
        <h1>Chat</h1>
        <p class="error-text" role="alert">
          {error}
        </p>
      </main>
    );
  }
  if (settings === null) return <main class="centered muted">Loading…</main>;
  if (settings.mode === "completion") return <CompletionApp client={client} settings={settings} />;
  return <ChatApp client={client} appId={credentials.appId} settings={settings} />;
}

render(<Boot />, document.getElementById("root")!);
