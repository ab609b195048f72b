// Numbers and ids in words, the same on every page: durations, counts, strategy names.

/** A duration for people: "< 1 ms", "240 ms", "1.4 s", "2 min 05 s"; "" when it is unknown. */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "";
  if (seconds < 0.001) return "< 1 ms";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, "0")} s`;
}

/** "1 message", "2 messages" (`many` for words whose plural is not word + s). */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? word : many}`;
}

// Dify's agent-log ids of the strategies (and ours) → their names.
const STRATEGIES: Record<string, string> = {
  function_call: "Function calling",
  "function-calling": "Function calling",
  react: "ReAct",
  "chain-of-thought": "ReAct",
  cot: "ReAct",
  plan: "Plan and execute",
  "plan-and-execute": "Plan and execute",
};

export function strategyName(id: unknown): string {
  if (typeof id !== "string" || id === "") return "—";
  return STRATEGIES[id] ?? id.replace(/[_-]+/g, " ").replace(/^./, (c) => c.toUpperCase());
}

/** A tool's name as a title when it has no label of its own: "current_time" → "Current time". */
export function toolTitle(name: string, label?: string | null): string {
  if (label && label !== name) return label;
  const words = name.replace(/[_-]+/g, " ").trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : name;
}

/** When a message was sent, in the browser's language: the time today, else the date and time. */
export function when(unixSeconds: number, now: Date = new Date()): string {
  const at = new Date(unixSeconds * 1000);
  const sameDay = at.toDateString() === now.toDateString();
  const options: Intl.DateTimeFormatOptions = sameDay
    ? { hour: "2-digit", minute: "2-digit" }
    : { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", year: at.getFullYear() === now.getFullYear() ? undefined : "numeric" };
  return at.toLocaleString(undefined, options);
}
