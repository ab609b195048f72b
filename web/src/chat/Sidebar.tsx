// The conversation list: new, open, rename, delete.
import { useState } from "preact/hooks";
import type { Conversation } from "../shared/api";
import { Pencil, Trash } from "../shared/icons";

export interface SidebarProps {
  conversations: Conversation[];
  currentId: string | null;
  onOpen: (id: string | null) => void;
  onRename: (id: string, name: string) => void;
  onDelete: (id: string) => void;
  onMore: (() => void) | null; // more conversations to list
}

export function Sidebar({ conversations, currentId, onOpen, onRename, onDelete, onMore }: SidebarProps) {
  const [editing, setEditing] = useState<string | null>(null);
  const [name, setName] = useState("");
  return (
    <nav class="sidebar" aria-label="Conversations">
      <button type="button" class="new-chat" onClick={() => onOpen(null)}>
        + New chat
      </button>
      <ul class="conversation-list">
        {conversations.map((c) => (
          <li key={c.id} class={c.id === currentId ? "current" : ""}>
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
                  aria-label="Conversation name"
                  onInput={(e) => setName((e.target as HTMLInputElement).value)}
                  onKeyDown={(e) => e.key === "Escape" && setEditing(null)}
                  ref={(el) => el?.focus()}
                />
              </form>
            ) : (
              <>
                <button type="button" class="conversation" title={c.name} onClick={() => onOpen(c.id)}>
                  {c.name || "New conversation"}
                </button>
                <span class="conversation-actions">
                  <button
                    type="button"
                    class="icon"
                    title="Rename"
                    aria-label={`Rename ${c.name}`}
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
                    title="Delete"
                    aria-label={`Delete ${c.name}`}
                    onClick={() => {
                      if (window.confirm(`Delete “${c.name}”?`)) onDelete(c.id);
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
          Show more
        </button>
      )}
    </nav>
  );
}
