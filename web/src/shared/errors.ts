// API errors in plain words. The server's own message is kept where it already speaks to the user
// (form checks, model errors); codes that only a developer would read get a sentence instead.

const PLAIN: Record<string, string> = {
  unauthorized: "This chat link's key is not valid (any more). Ask whoever shared it for a new link.",
  too_many_requests: "The assistant is busy right now. Please try again in a moment.",
  app_unavailable: "This assistant is not set up yet.",
  not_found: "That conversation or message no longer exists.",
  file_too_large: "The file is too large.",
  unsupported_file_type: "This kind of file cannot be sent here.",
  too_many_files: "Only one file can be uploaded at a time.",
  no_file_uploaded: "Please choose a file.",
  internal_server_error: "Something went wrong on the server. Please try again.",
  network: "Could not reach the server. Check the connection and try again.",
};

const WITH_MESSAGE: Record<string, string> = {
  provider_not_initialize: "The assistant's model is not available",
  completion_request_error: "The assistant's model could not answer",
  model_currently_not_support: "The assistant's model cannot do this",
};

/** A budget's refusal (429 budget_exceeded, docs/memory-and-budgets.md): a daily cap waits for the next
 * UTC day; a run's or conversation's cap stopped this answer. */
function budgetError(message: string): string {
  if (/daily/.test(message)) return "The assistant has used up today's budget. Please try again tomorrow.";
  if (/conversation_/.test(message)) return "This conversation has used up its budget. Please start a new chat.";
  return "This answer reached the assistant's spending limit and was stopped.";
}

export function plainError(code: string, message: string, status: number): string {
  if (code === "budget_exceeded") return budgetError(message);
  if (code in PLAIN) return PLAIN[code];
  if (code in WITH_MESSAGE) return message ? `${WITH_MESSAGE[code]}: ${message}` : `${WITH_MESSAGE[code]}.`;
  if (code === "invalid_param" || code === "bad_request") return message || "The request was not valid.";
  if (status >= 500) return message && status !== 500 ? message : PLAIN.internal_server_error;
  return message || "Something went wrong. Please try again.";
}

export class ApiError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    public readonly serverMessage: string,
  ) {
    super(plainError(code, serverMessage, status));
  }
}
