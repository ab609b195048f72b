// API errors in plain words, in the page's language (shared/i18n.ts). The server's own message is kept
// where it already speaks to the user (form checks, model errors); codes that only a developer would
// read get a sentence instead.
import { t, type Key } from "./i18n";

const PLAIN: Record<string, Key> = {
  unauthorized: "err_unauthorized",
  too_many_requests: "err_too_many_requests",
  app_unavailable: "err_app_unavailable",
  not_found: "err_not_found",
  file_too_large: "err_file_too_large",
  unsupported_file_type: "err_unsupported_file_type",
  too_many_files: "err_too_many_files",
  no_file_uploaded: "err_no_file_uploaded",
  internal_server_error: "err_internal_server_error",
  network: "err_network",
};

const WITH_MESSAGE: Record<string, Key> = {
  provider_not_initialize: "err_provider_not_initialize",
  completion_request_error: "err_completion_request_error",
  model_currently_not_support: "err_model_currently_not_support",
};

/** A budget's refusal (429 budget_exceeded, docs/memory-and-budgets.md): a daily cap waits for the next
 * UTC day; a run's or conversation's cap stopped this answer. */
function budgetError(message: string): string {
  if (/daily/.test(message)) return t("err_budget_daily");
  if (/conversation_/.test(message)) return t("err_budget_conversation");
  return t("err_budget_run");
}

export function plainError(code: string, message: string, status: number): string {
  if (code === "budget_exceeded") return budgetError(message);
  if (code in PLAIN) return t(PLAIN[code]);
  if (code in WITH_MESSAGE) return message ? `${t(WITH_MESSAGE[code])}: ${message}` : `${t(WITH_MESSAGE[code])}.`;
  if (code === "invalid_param" || code === "bad_request") return message || t("err_invalid");
  if (status >= 500) return message && status !== 500 ? message : t("err_internal_server_error");
  return message || t("err_other");
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
