// The chat's state and what changes it: the conversation shown, its messages, sending and streaming an
// answer, stopping it, and picking an answer up again after a reload or a dropped connection.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Conversation, ServiceClient } from "../shared/api";
import { ApiError } from "../shared/errors";
import { readDifyStream } from "../shared/sse";
import { clearPending, loadPending, rememberStopped, savePending, stoppedIds } from "./pending";
import { withVersions, type VersionMap } from "./versions";
import {
  applyEvent,
  isRunning,
  messageFromHistory,
  needsLoggedTimes,
  newMessage,
  withLoggedTimes,
  type FileView,
  type MessageView,
} from "./state";

export interface SendRequest {
  query: string;
  introduction: string; // the opening statement a new conversation starts with
  newConversation?: boolean; // set by send: the message starts a conversation
  inputs: Record<string, unknown>;
  files: Record<string, string>[];
  previews: FileView[];
  // A new version of the message shown at `replaces` (Regenerate, an edited question): it follows
  // `parentId` (null: the conversation's first message) and takes that message's place on screen.
  branch?: { replaces: number; parentId: string | null };
}

/** How far a stream got: the message's view and the last event id seen. */
interface Progress {
  m: MessageView;
  lastEventId: string | null;
}

const CURRENT_SLOT = (appId: string) => `loopwright.chat.current:${appId}`;
const HISTORY_POLL_MS = 2000;
const HISTORY_POLL_STABLE = 1; // polls without a change before a saved answer counts as final
const HISTORY_POLL_LIMIT = 150; // 5 minutes
const NAME_CHARS = 20; // the server's first name of a conversation (app/run/message_writes.py)
const NAME_CHECKS_MS = [1500, 5000]; // when to look for a name the model made for a new conversation

/** A new conversation as the list shows it from its first event on, until the list is loaded again
 * (so the sidebar does not jump when the first answer ends). */
function provisional(id: string, request: SendRequest): Conversation {
  const query = request.query.trim();
  const now = Math.floor(Date.now() / 1000);
  return {
    id,
    name: query.length <= NAME_CHARS ? query : `${query.slice(0, NAME_CHARS)}…`,
    inputs: request.inputs,
    introduction: request.introduction,
    created_at: now,
    updated_at: now,
  };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function useChat(client: ServiceClient, appId: string, suggestionsOn: boolean) {
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [currentId, setCurrentId] = useState<string | null>(null);
  const [messages, setMessages] = useState<MessageView[]>([]);
  const [suggested, setSuggested] = useState<string[]>([]);
  const [notice, setNotice] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [versions, setVersions] = useState<VersionMap>({}); // the shown messages' versions (versions.ts)
  const abortRef = useRef<AbortController | null>(null);
  const stopping = useRef(new Set<string>()); // local ids of messages the user stopped
  const currentRef = useRef<string | null>(null);
  currentRef.current = currentId;
  const sending = useRef<SendRequest | null>(null); // what the newest message was sent with

  // The conversation shown, kept for this tab: a reload opens it again.
  const shownBefore = useRef(sessionStorage.getItem(CURRENT_SLOT(appId))); // read before the effect below
  useEffect(() => {
    if (currentId === null) sessionStorage.removeItem(CURRENT_SLOT(appId));
    else sessionStorage.setItem(CURRENT_SLOT(appId), currentId);
  }, [appId, currentId]);

  const [moreConversations, setMoreConversations] = useState(false);
  const [earlierMessages, setEarlierMessages] = useState(false);

  const refreshConversations = useCallback(async () => {
    try {
      const page = await client.conversations();
      setConversations(page.data);
      setMoreConversations(page.has_more);
    } catch (e) {
      setNotice(errorText(e));
    }
  }, [client]);

  /** The next page of the conversation list (after the last one shown). */
  const loadMoreConversations = useCallback(async () => {
    const last = conversations[conversations.length - 1];
    if (last === undefined) return;
    try {
      const page = await client.conversations(last.id);
      setConversations((cs) => [...cs, ...page.data.filter((c) => !cs.some((x) => x.id === c.id))]);
      setMoreConversations(page.has_more);
    } catch (e) {
      setNotice(errorText(e));
    }
  }, [client, conversations]);

  /** The newest page of a conversation's thread (oldest first): the one ending at its newest message,
   * or through `messageId` (one of its versions); says whether older ones exist. */
  const loadHistory = useCallback(
    async (conversationId: string, messageId?: string): Promise<MessageView[]> => {
      const page = await client.messages(conversationId, undefined, messageId);
      setEarlierMessages(page.has_more);
      setVersions((v) => withVersions(v, page.data));
      const stopped = stoppedIds(localStorage, appId);
      return page.data.map((item) => messageFromHistory(item, stopped));
    },
    [appId, client],
  );

  /** The page of messages before the first one shown. */
  const loadEarlier = useCallback(async () => {
    const first = messages[0];
    if (currentId === null || first?.id == null) return;
    try {
      const page = await client.messages(currentId, first.id);
      setEarlierMessages(page.has_more);
      setVersions((v) => withVersions(v, page.data));
      const stopped = stoppedIds(localStorage, appId);
      setMessages((ms) => [...page.data.map((item) => messageFromHistory(item, stopped)), ...ms]);
    } catch (e) {
      setNotice(errorText(e));
    }
  }, [appId, client, currentId, messages]);

  /** Replace one message (by its local id) in the list. */
  const put = useCallback((m: MessageView) => {
    setMessages((ms) => ms.map((x) => (x.localId === m.localId ? m : x)));
  }, []);

  const fetchSuggestions = useCallback(
    async (m: MessageView) => {
      if (!suggestionsOn || m.id === null || m.status !== "done") return;
      try {
        setSuggested(await client.suggested(m.id));
      } catch {
        setSuggested([]); // suggestions are a nicety: no error shown
      }
    },
    [client, suggestionsOn],
  );

  /** The versions of the messages of the thread that ends at `messageId` (after a new version of a
   * message was made), read again from the history; the messages shown stay as they are. */
  const refreshVersions = useCallback(
    async (conversationId: string, messageId: string) => {
      try {
        const page = await client.messages(conversationId, undefined, messageId);
        setVersions((v) => withVersions(v, page.data));
      } catch {
        // the switcher shows up with the next load of the history
      }
    },
    [client],
  );

  /** The tool calls' times as the server measured them (the page's own clock sees them only as the
   * events arrive, and a message from the history has none). */
  const loadTimes = useCallback(
    async (m: MessageView) => {
      if (!needsLoggedTimes(m) || m.id === null) return;
      try {
        const log = await client.agentLog(m.id);
        setMessages((ms) => ms.map((x) => (x.localId === m.localId ? withLoggedTimes(x, log.iterations) : x)));
      } catch {
        // the times measured by the page (or none) stay
      }
    },
    [client],
  );

  /** Streams `body` (a response's event stream) into `progress.m`, keeping `progress` up to date as
   * events arrive — so that when the stream breaks, the caller knows how far it got. */
  const follow = useCallback(
    async (body: ReadableStream<Uint8Array>, progress: Progress): Promise<void> => {
      let saved = 0;
      let switched = false; // the user opened another conversation meanwhile
      await readDifyStream(body, (event, id) => {
        const before = progress.m;
        const m = applyEvent(stopping.current.has(before.localId) ? { ...before, stopRequested: true } : before, event, Date.now());
        progress.m = m;
        progress.lastEventId = id ?? progress.lastEventId;
        put(m);
        if (m.status === "stopped" && before.status !== "stopped" && m.id !== null) rememberStopped(localStorage, appId, m.id);
        if (m.conversationId !== null && currentRef.current === null && !switched) {
          // A new conversation got its id: it is the one shown (unless the user went elsewhere), and
          // listed at once.
          const id = m.conversationId;
          currentRef.current = id;
          setCurrentId(id);
          const request = sending.current;
          if (request !== null) setConversations((cs) => (cs.some((c) => c.id === id) ? cs : [provisional(id, request), ...cs]));
        }
        switched = switched || (currentRef.current !== null && currentRef.current !== m.conversationId);
        if (m.conversationId !== null && isRunning(m) && Date.now() - saved > 250) {
          saved = Date.now();
          savePending(sessionStorage, appId, {
            conversationId: m.conversationId,
            taskId: m.taskId,
            lastEventId: progress.lastEventId,
            view: m,
          });
        }
      });
    },
    [appId, put],
  );

  /** After a drop or a reload: re-attach to the run where the server offers it, else reload the
   * message from the history until it stops changing. */
  const recover = useCallback(
    async (from: MessageView, lastEventId: string | null) => {
      let m = from;
      if (m.taskId !== null) {
        try {
          const response = await client.reattach(m.taskId, lastEventId);
          if (response?.body) {
            const progress: Progress = { m: { ...m, status: "streaming" }, lastEventId };
            try {
              await follow(response.body, progress);
            } finally {
              m = progress.m; // as far as it got, also when this stream broke too
            }
            if (!isRunning(m)) {
              clearPending(sessionStorage, appId);
              void fetchSuggestions(m);
              void loadTimes(m);
              return;
            }
          }
        } catch {
          // fall back to the history
        }
      }
      if (m.conversationId === null) {
        put({ ...m, status: "interrupted" });
        clearPending(sessionStorage, appId);
        return;
      }
      // The server goes on with the run; its answer is saved when the run ends. Poll the history until
      // the message has an answer (or an error) that no longer changes.
      let stable = 0;
      let last = "";
      for (let polls = 0; polls < HISTORY_POLL_LIMIT; polls += 1) {
        try {
          const history = await loadHistory(m.conversationId);
          if (currentRef.current !== m.conversationId) break;
          const again = history.find((h) => h.id === m.id);
          const seen = JSON.stringify(again ? { ...again, localId: "" } : null); // local ids are new each load
          stable = seen === last ? stable + 1 : 0;
          last = seen;
          const finished = again !== undefined && (again.status === "error" || (again.answer !== "" && stable >= HISTORY_POLL_STABLE));
          const shown = again !== undefined && again.answer !== "" ? again : m; // what streamed so far, until saved
          setMessages([
            ...history.filter((h) => h.id !== m.id),
            finished ? shown : { ...shown, localId: m.localId, status: "interrupted" },
          ]);
          if (finished) break;
          setNotice(null);
        } catch (e) {
          setNotice(errorText(e));
          if (!(e instanceof ApiError && e.status === 0)) break; // offline: keep trying
        }
        await new Promise((r) => setTimeout(r, HISTORY_POLL_MS));
      }
      clearPending(sessionStorage, appId);
      setMessages((ms) => ms.map((x) => (x.status === "interrupted" ? { ...x, status: "done" } : x)));
    },
    [appId, client, fetchSuggestions, follow, loadHistory, loadTimes, put],
  );

  const send = useCallback(
    async (request: SendRequest) => {
      setSuggested([]);
      setNotice(null);
      request = { ...request, newConversation: currentRef.current === null };
      sending.current = request;
      const progress: Progress = { m: newMessage(request.query, request.previews), lastEventId: null };
      const branch = request.branch;
      setMessages((ms) => [...(branch ? ms.slice(0, branch.replaces) : ms), progress.m]);
      const abort = new AbortController();
      abortRef.current = abort;
      let m: MessageView;
      try {
        const body: Record<string, unknown> = {
          query: request.query,
          inputs: request.inputs,
          files: request.files,
          conversation_id: currentRef.current ?? "",
        };
        if (branch && currentRef.current !== null) body.parent_message_id = branch.parentId;
        const response = await client.send(body, abort.signal);
        if (!response.body) throw new ApiError(0, "network", "no body");
        await follow(response.body, progress);
        m = progress.m;
      } catch (e) {
        m = progress.m; // as far as the stream got
        if (e instanceof ApiError && e.status !== 0) {
          m = { ...m, status: "error", error: e.message };
          put(m);
          return;
        }
        if (abort.signal.aborted) {
          m = { ...m, status: "stopped" };
          put(m);
          return;
        }
        m = { ...m, status: "interrupted" };
      } finally {
        abortRef.current = null;
      }
      if (request.newConversation) {
        // The app's model may rename a new conversation after its first answer, in the background:
        // the list is read again a little later to show the name it made.
        for (const ms of NAME_CHECKS_MS) setTimeout(() => void refreshConversations(), ms);
      }
      if (m.status === "paused") {
        // the agent asked a question: the page shows it and waits for the answer (`answer`)
      } else if (isRunning(m) || m.status === "interrupted") {
        put({ ...m, status: "interrupted" });
        await recover(m, progress.lastEventId); // the stream ended without message_end: the connection dropped
      } else {
        clearPending(sessionStorage, appId);
        void fetchSuggestions(m);
        void loadTimes(m);
        if (branch && m.id !== null && m.conversationId !== null) void refreshVersions(m.conversationId, m.id);
      }
      void refreshConversations();
    },
    [appId, client, fetchSuggestions, follow, loadTimes, put, recover, refreshConversations, refreshVersions],
  );

  /** Answers the question a paused message asks (the ask_user tool) through its human-input form,
   * then follows the rest of the run; a refused answer (the form closed or expired) is a notice. */
  const answer = useCallback(
    async (from: MessageView, text: string) => {
      const question = from.question;
      if (!question || from.taskId === null) return;
      setNotice(null);
      try {
        await client.submitForm(question.token, { answer: text }, "submit");
      } catch (e) {
        setNotice(errorText(e)); // the question stays, to answer again
        return;
      }
      const progress: Progress = { m: { ...from, question: null, status: "streaming" }, lastEventId: null };
      put(progress.m);
      try {
        const response = await client.workflowEvents(from.taskId);
        if (response.body) await follow(response.body, progress);
      } catch {
        // as far as it got: the history has the rest (below)
      }
      const m = progress.m;
      if (m.status === "paused") return; // another question
      if (isRunning(m)) {
        put({ ...m, status: "interrupted" });
        await recover(m, progress.lastEventId);
        return;
      }
      clearPending(sessionStorage, appId);
      void fetchSuggestions(m);
      void loadTimes(m);
    },
    [appId, client, fetchSuggestions, follow, loadTimes, put, recover],
  );

  /** Show another version of a message: the thread through it, to the newest message of its branch. */
  const showVersion = useCallback(
    async (messageId: string) => {
      const conversationId = currentRef.current;
      if (conversationId === null) return;
      setSuggested([]);
      try {
        const thread = await loadHistory(conversationId, messageId);
        if (currentRef.current === conversationId) setMessages(thread);
      } catch (e) {
        setNotice(errorText(e));
      }
    },
    [loadHistory],
  );

  const stop = useCallback(async () => {
    const running = messages.find(isRunning);
    if (running === undefined) return;
    stopping.current.add(running.localId);
    put({ ...running, stopRequested: true });
    if (running.taskId === null) {
      abortRef.current?.abort(); // nothing started on the server yet that a stop could name
      return;
    }
    try {
      await client.stop(running.taskId); // the stream then ends with message_end
    } catch (e) {
      setNotice(errorText(e));
    }
  }, [client, messages, put]);

  const open = useCallback(
    async (conversationId: string | null) => {
      setSuggested([]);
      setNotice(null);
      setCurrentId(conversationId);
      currentRef.current = conversationId;
      if (conversationId === null) {
        setMessages([]);
        setEarlierMessages(false);
        return;
      }
      setLoading(true);
      try {
        setMessages(await loadHistory(conversationId));
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) {
          setCurrentId(null); // deleted meanwhile: start a new one instead
          currentRef.current = null;
        }
        setNotice(errorText(e));
      } finally {
        setLoading(false);
      }
    },
    [loadHistory],
  );

  const rename = useCallback(
    async (conversationId: string, name: string) => {
      try {
        await client.rename(conversationId, name);
        await refreshConversations();
      } catch (e) {
        setNotice(errorText(e));
      }
    },
    [client, refreshConversations],
  );

  const remove = useCallback(
    async (conversationId: string) => {
      try {
        await client.deleteConversation(conversationId);
        if (currentRef.current === conversationId) await open(null);
        await refreshConversations();
      } catch (e) {
        setNotice(errorText(e));
      }
    },
    [client, open, refreshConversations],
  );

  const setFeedback = useCallback(
    async (m: MessageView, rating: "like" | "dislike" | null, content = "") => {
      if (m.id === null) return;
      try {
        await client.feedback(m.id, rating, content);
        setMessages((ms) => ms.map((x) => (x.localId === m.localId ? { ...x, feedback: rating } : x)));
      } catch (e) {
        setNotice(errorText(e));
      }
    },
    [client],
  );

  // First load: the conversation list, and an answer that a reload interrupted.
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void refreshConversations();
    const pending = loadPending(sessionStorage, appId);
    if (pending === null) {
      if (shownBefore.current !== null) void open(shownBefore.current);
      return;
    }
    setCurrentId(pending.conversationId);
    currentRef.current = pending.conversationId;
    void (async () => {
      try {
        const history = await loadHistory(pending.conversationId);
        const before = history.filter((h) => h.id !== pending.view.id);
        setMessages([...before, { ...pending.view, status: "interrupted" }]);
        await recover({ ...pending.view, status: "interrupted" }, pending.lastEventId);
      } catch (e) {
        clearPending(sessionStorage, appId);
        setNotice(errorText(e));
      }
    })();
  }, [appId, loadHistory, open, recover, refreshConversations]);

  return {
    conversations,
    currentId,
    messages,
    suggested,
    notice,
    loading,
    running: messages.some(isRunning),
    setNotice,
    send,
    answer,
    stop,
    open,
    rename,
    remove,
    setFeedback,
    loadTimes,
    versions,
    showVersion,
    moreConversations,
    loadMoreConversations,
    earlierMessages,
    loadEarlier,
  };
}
