// How the chat page gets its app key: from a share link, `/chat/{app_id}#key=app-…`. The fragment never
// reaches the server (nor its logs, nor a Referer); the page moves the key into sessionStorage under this
// app's id, and takes it off the address bar. The key is used only for the app in the path: another
// app's page reads its own slot. Closing the tab forgets it. The end user (Dify's `user`) is a random id
// kept in localStorage per app, so the conversations of this browser come back after a reload.

export interface Credentials {
  appId: string;
  key: string;
  user: string;
}

const KEY_SLOT = (appId: string) => `loopwright.chat.key:${appId}`;
const USER_SLOT = (appId: string) => `loopwright.chat.user:${appId}`;

export function appIdOf(pathname: string): string | null {
  const match = /^\/chat\/([A-Za-z0-9_-]{1,64})\/?$/.exec(pathname);
  return match ? match[1] : null;
}

/** The page's credentials, or null when the link carried no key and none is stored for this app. */
export function readCredentials(
  location: Location,
  history: History,
  session: Storage,
  local: Storage,
): Credentials | null {
  const appId = appIdOf(location.pathname);
  if (appId === null) return null;
  const fromFragment = new URLSearchParams(location.hash.replace(/^#/, "")).get("key");
  const query = new URLSearchParams(location.search);
  const fromQuery = query.get("key");
  const given = fromFragment || fromQuery;
  if (given) {
    session.setItem(KEY_SLOT(appId), given);
    query.delete("key");
    const search = query.toString();
    history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}`);
  }
  const key = session.getItem(KEY_SLOT(appId));
  if (!key) return null;
  let user = local.getItem(USER_SLOT(appId));
  if (!user) {
    user = `web-${randomHex(16)}`;
    local.setItem(USER_SLOT(appId), user);
  }
  return { appId, key, user };
}

export function forgetKey(appId: string, session: Storage): void {
  session.removeItem(KEY_SLOT(appId));
}

function randomHex(bytes: number): string {
  const data = new Uint8Array(bytes);
  crypto.getRandomValues(data); // unlike randomUUID, also there on plain http
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}
