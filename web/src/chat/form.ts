// The app's input form (GET /v1/parameters `user_input_form`): Dify's `{type: {label, variable, …}}`
// entries as fields, and their values checked before the first message is sent.

export type FieldType = "text-input" | "paragraph" | "select" | "number" | "checkbox" | "file" | "file-list";

export interface FormField {
  type: FieldType;
  variable: string;
  label: string;
  required: boolean;
  options: string[];
  maxLength: number | null;
  default: unknown;
}

const TYPES: FieldType[] = ["text-input", "paragraph", "select", "number", "checkbox", "file", "file-list"];

export function formFields(form: unknown): FormField[] {
  if (!Array.isArray(form)) return [];
  const fields: FormField[] = [];
  for (const entry of form) {
    if (typeof entry !== "object" || entry === null) continue;
    const [type, spec] = Object.entries(entry as Record<string, unknown>)[0] ?? [];
    if (!TYPES.includes(type as FieldType) || typeof spec !== "object" || spec === null) continue;
    const s = spec as Record<string, unknown>;
    fields.push({
      type: type as FieldType,
      variable: String(s.variable ?? ""),
      label: String(s.label ?? s.variable ?? ""),
      required: s.required === true,
      options: Array.isArray(s.options) ? s.options.map(String) : [],
      maxLength: typeof s.max_length === "number" ? s.max_length : null,
      default: s.default,
    });
  }
  return fields.filter((f) => f.variable !== "");
}

export function initialValues(fields: FormField[]): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const f of fields) {
    if (f.type === "checkbox") values[f.variable] = f.default === true;
    else if (f.default !== undefined && f.default !== null && f.default !== "") values[f.variable] = f.default;
  }
  return values;
}

/** The first problem with `values`, in words, or null. */
export function formProblem(fields: FormField[], values: Record<string, unknown>): string | null {
  for (const f of fields) {
    const v = values[f.variable];
    const empty = v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
    if (f.required && empty && f.type !== "checkbox") return `Please fill in “${f.label}”.`;
    if (typeof v === "string" && f.maxLength !== null && v.length > f.maxLength) {
      return `“${f.label}” can be at most ${f.maxLength} characters.`;
    }
    if (f.type === "number" && !empty && Number.isNaN(Number(v))) return `“${f.label}” must be a number.`;
  }
  return null;
}
