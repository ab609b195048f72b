// The chat page's words in one catalogue: English, Chinese (simplified) and Japanese — the languages
// Dify's web app ships first — picked from the browser's languages (English when none of them fits).
// A text with {name} takes that value; a count has a _one and a _many form (the same in zh and ja).

export type Lang = "en" | "zh" | "ja";

const EN = {
  message: "Message",
  message_placeholder: "Message…",
  message_help: "Enter sends, Shift+Enter starts a new line, Esc stops the answer",
  send: "Send",
  stop: "Stop",
  stop_help: "Stop (Esc)",
  speak: "Speak",
  speak_help: "Speak instead of typing",
  stop_recording: "Stop recording",
  stop_recording_help: "Stop and write down what was said",
  mic_failed: "The microphone could not be used.",
  attach: "Attach a file",
  attach_files: "Attach files",
  drop_hint: "Drop the files to attach them",
  new_chat: "+ New chat",
  show_more: "Show more",
  conversations: "Conversations",
  new_conversation: "New conversation",
  conversation_name: "Conversation name",
  pin: "Pin {name}",
  unpin: "Unpin {name}",
  pin_help: "Pin to the top",
  unpin_help: "Unpin",
  rename: "Rename {name}",
  rename_help: "Rename",
  delete: "Delete {name}",
  delete_help: "Delete",
  delete_confirm: "Delete “{name}”?",
  working: "Working",
  worked: "Worked",
  round_one: "{n} round",
  round_many: "{n} rounds",
  tool_call_one: "{n} tool call",
  tool_call_many: "{n} tool calls",
  token_one: "{n} token",
  token_many: "{n} tokens",
  stopped: "Stopped.",
  interrupted: "The connection dropped while this answer was written; it is shown as saved so far.",
  assistant_working: "The assistant is working",
  copy: "Copy",
  copied: "Copied",
  copy_help: "Copy the answer",
  regenerate: "Regenerate",
  regenerate_help: "Ask again",
  like: "Like",
  like_help: "Good answer",
  dislike: "Dislike",
  dislike_help: "Bad answer",
  read_aloud: "Read aloud",
  read_aloud_help: "Read the answer aloud",
  stop_reading: "Stop reading",
  read_failed: "The answer could not be read aloud.",
  agent_log: "Agent log",
  agent_log_help: "Rounds, tool calls, times and tokens",
  feedback_comment: "Feedback comment",
  what_was_good: "What was good? (optional)",
  what_was_wrong: "What was wrong? (optional)",
  sources: "Sources · {n}",
  earlier: "Show earlier messages",
  loading: "Loading…",
  dismiss: "Dismiss",
  theme: "Theme",
};

export type Key = keyof typeof EN;

const ZH: Record<Key, string> = {
  message: "消息",
  message_placeholder: "输入消息…",
  message_help: "Enter 发送，Shift+Enter 换行，Esc 停止回答",
  send: "发送",
  stop: "停止",
  stop_help: "停止（Esc）",
  speak: "语音输入",
  speak_help: "用语音代替打字",
  stop_recording: "停止录音",
  stop_recording_help: "停止并转写所说的话",
  mic_failed: "无法使用麦克风。",
  attach: "添加文件",
  attach_files: "添加文件",
  drop_hint: "松开以添加文件",
  new_chat: "+ 新对话",
  show_more: "显示更多",
  conversations: "对话",
  new_conversation: "新对话",
  conversation_name: "对话名称",
  pin: "置顶 {name}",
  unpin: "取消置顶 {name}",
  pin_help: "置顶",
  unpin_help: "取消置顶",
  rename: "重命名 {name}",
  rename_help: "重命名",
  delete: "删除 {name}",
  delete_help: "删除",
  delete_confirm: "删除“{name}”？",
  working: "处理中",
  worked: "已完成",
  round_one: "{n} 轮",
  round_many: "{n} 轮",
  tool_call_one: "{n} 次工具调用",
  tool_call_many: "{n} 次工具调用",
  token_one: "{n} 个 token",
  token_many: "{n} 个 token",
  stopped: "已停止。",
  interrupted: "回答生成时连接中断；显示的是目前已保存的内容。",
  assistant_working: "助手正在处理",
  copy: "复制",
  copied: "已复制",
  copy_help: "复制回答",
  regenerate: "重新生成",
  regenerate_help: "再问一次",
  like: "赞",
  like_help: "好的回答",
  dislike: "踩",
  dislike_help: "不好的回答",
  read_aloud: "朗读",
  read_aloud_help: "朗读回答",
  stop_reading: "停止朗读",
  read_failed: "无法朗读这个回答。",
  agent_log: "Agent 日志",
  agent_log_help: "轮次、工具调用、耗时和 token",
  feedback_comment: "反馈意见",
  what_was_good: "哪里好？（可选）",
  what_was_wrong: "哪里不好？（可选）",
  sources: "引用 · {n}",
  earlier: "显示更早的消息",
  loading: "加载中…",
  dismiss: "关闭",
  theme: "主题",
};

const JA: Record<Key, string> = {
  message: "メッセージ",
  message_placeholder: "メッセージを入力…",
  message_help: "Enter で送信、Shift+Enter で改行、Esc で回答を停止",
  send: "送信",
  stop: "停止",
  stop_help: "停止（Esc）",
  speak: "音声入力",
  speak_help: "入力の代わりに話す",
  stop_recording: "録音を停止",
  stop_recording_help: "停止して話した内容を書き起こす",
  mic_failed: "マイクを使用できませんでした。",
  attach: "ファイルを添付",
  attach_files: "ファイルを添付",
  drop_hint: "ドロップして添付",
  new_chat: "+ 新しいチャット",
  show_more: "さらに表示",
  conversations: "会話",
  new_conversation: "新しい会話",
  conversation_name: "会話の名前",
  pin: "{name} をピン留め",
  unpin: "{name} のピン留めを解除",
  pin_help: "上にピン留め",
  unpin_help: "ピン留めを解除",
  rename: "{name} の名前を変更",
  rename_help: "名前を変更",
  delete: "{name} を削除",
  delete_help: "削除",
  delete_confirm: "「{name}」を削除しますか？",
  working: "処理中",
  worked: "完了",
  round_one: "{n} ラウンド",
  round_many: "{n} ラウンド",
  tool_call_one: "ツール呼び出し {n} 回",
  tool_call_many: "ツール呼び出し {n} 回",
  token_one: "{n} トークン",
  token_many: "{n} トークン",
  stopped: "停止しました。",
  interrupted: "回答の作成中に接続が切れました。ここまで保存された内容を表示しています。",
  assistant_working: "アシスタントが処理中です",
  copy: "コピー",
  copied: "コピーしました",
  copy_help: "回答をコピー",
  regenerate: "再生成",
  regenerate_help: "もう一度聞く",
  like: "いいね",
  like_help: "良い回答",
  dislike: "よくない",
  dislike_help: "悪い回答",
  read_aloud: "読み上げ",
  read_aloud_help: "回答を読み上げる",
  stop_reading: "読み上げを停止",
  read_failed: "回答を読み上げられませんでした。",
  agent_log: "エージェントログ",
  agent_log_help: "ラウンド、ツール呼び出し、時間、トークン",
  feedback_comment: "フィードバックのコメント",
  what_was_good: "良かった点は？（任意）",
  what_was_wrong: "悪かった点は？（任意）",
  sources: "出典 · {n}",
  earlier: "以前のメッセージを表示",
  loading: "読み込み中…",
  dismiss: "閉じる",
  theme: "テーマ",
};

export const CATALOGUE: Record<Lang, Record<Key, string>> = { en: EN, zh: ZH, ja: JA };

/** The first of the browser's languages the catalogue has (zh-*, ja-*, en-*), else English. */
export function pickLanguage(languages: readonly string[]): Lang {
  for (const tag of languages) {
    const base = tag.toLowerCase().split("-")[0];
    if (base === "zh" || base === "ja" || base === "en") return base;
  }
  return "en";
}

let lang: Lang = typeof navigator === "undefined" ? "en" : pickLanguage(navigator.languages ?? [navigator.language]);

export function language(): Lang {
  return lang;
}

export function setLanguage(next: Lang): void {
  lang = next;
}

/** The text of `key` in the page's language, with its {placeholders} filled in. */
export function t(key: Key, vars: Record<string, string | number> = {}): string {
  return CATALOGUE[lang][key].replace(/\{(\w+)\}/g, (all, name: string) => (name in vars ? String(vars[name]) : all));
}

/** A count: the _one form for 1, else the _many form. */
export function count(n: number, base: "round" | "tool_call" | "token"): string {
  return t(n === 1 ? `${base}_one` : `${base}_many`, { n: n.toLocaleString() });
}
