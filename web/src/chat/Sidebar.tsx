// The conversation list: new, open, rename, delete.
import { t } from "../shared/i18n";
import { useState } from "preact/hooks";
import type { Conversation } from "../shared/api";
import { Pencil, Pin, Trash } from "../shared/icons";
import { pinnedFirst } from "./pins";

export interface SidebarProps {
  conversations: Conversation[];
  currentId: string | null;
  onOpen: (id: string | null) => void;
  onRename: (id: string, name: string) => void;
  onDelete: (id: string) => void;
  onMore: (() => void) | null; // more conversations to list
  pins: string[]; // pinned conversations' ids, listed first
  onPin: (id: string, on: boolean) => void;
}

export function Sidebar({ conversations, currentId, onOpen, onRename, onDelete, onMore, pins, onPin }: SidebarProps) {
  const [editing, setEditing] = useState<string | null>(null);
  const [name, setName] = useState("");
  return (
    <nav class="sidebar" aria-label={t("conversations")}>
      <button type="button" class="new-chat" onClick={() => onOpen(null)}>
        {t("new_chat")}
      </button>
      <ul class="conversation-list">
        {pinnedFirst(conversations, pins).map((c) => (
          <li key={c.id} class={`${c.id === currentId ? "current" : ""} ${pins.includes(c.id) ? "pinned" : ""}`}>
            {editing === c.id ? (
              <form
                class="rename"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (name.trim()) onRename(c.id, name.trim());
                  setEditing(null);
                }}
              >
                <input
                  type="text"
                  value={name}
                  aria-label={t("conversation_name")}
                  onInput={(e) => setName((e.target as HTMLInputElement).value)}
                  onKeyDown={(e) => e.key === "Escape" && setEditing(null)}
                  ref={(el) => el?.focus()}
                />
              </form>
            ) : (
              <>
                <button type="button" class="conversation" title={c.name} onClick={() => onOpen(c.id)}>
                  {c.name || t("new_conversation")}
                </button>
                <span class="conversation-actions">
                  <button
                    type="button"
                    class={`icon pin ${pins.includes(c.id) ? "on" : ""}`}
                    title={pins.includes(c.id) ? t("unpin_help") : t("pin_help")}
                    aria-label={t(pins.includes(c.id) ? "unpin" : "pin", { name: c.name })}
                    aria-pressed={pins.includes(c.id)}
                    onClick={() => onPin(c.id, !pins.includes(c.id))}
                  >
                    <Pin />
                  </button>
                  <button
                    type="button"
                    class="icon"
                    title={t("rename_help")}
                    aria-label={t("rename", { name: c.name })}
                    onClick={() => {
                      setName(c.name);
                      setEditing(c.id);
                    }}
                  >
                    <Pencil />
                  </button>
                  <button
                    type="button"
                    class="icon"
                    title={t("delete_help")}
                    aria-label={t("delete", { name: c.name })}
                    onClick={() => {
                      if (window.confirm(t("delete_confirm", { name: c.name }))) onDelete(c.id);
                    }}
                  >
                    <Trash />
                  </button>
                </span>
              </>
            )}
          </li>
        ))}
      </ul>
      {onMore && (
        <button type="button" class="link more" onClick={onMore}>
          {t("show_more")}
        </button>
      )}
    </nav>
  );
}
