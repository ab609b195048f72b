// The app's input form, filled in before the first message of a conversation.
import type { ServiceClient } from "../shared/api";
import type { FormField } from "./form";
import { fileType } from "./uploads";

export interface InputFormProps {
  fields: FormField[];
  values: Record<string, unknown>;
  onChange: (values: Record<string, unknown>) => void;
  client: ServiceClient;
  onError: (message: string) => void;
  readOnly: boolean;
  legend?: string; // default: a chat's ("Before you start", or its inputs once it has started)
}

export function InputForm({ fields, values, onChange, client, onError, readOnly, legend }: InputFormProps) {
  const set = (variable: string, value: unknown) => onChange({ ...values, [variable]: value });
  const upload = async (f: FormField, files: FileList | null) => {
    if (!files || files.length === 0) return;
    try {
      const entries = [];
      for (const file of Array.from(files)) {
        const uploaded = await client.upload(file);
        entries.push({ type: fileType(file), transfer_method: "local_file", upload_file_id: uploaded.id, name: file.name });
      }
      set(f.variable, f.type === "file" ? entries[0] : entries);
    } catch (e) {
      onError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <fieldset class="input-form" disabled={readOnly}>
      <legend>{legend ?? (readOnly ? "This conversation's inputs" : "Before you start")}</legend>
      {fields.map((f) => {
        const id = `input-${f.variable}`;
        const value = values[f.variable];
        const label = (
          <label for={id}>
            {f.label}
            {f.required && <span class="required"> *</span>}
          </label>
        );
        switch (f.type) {
          case "paragraph":
            return (
              <div class="field" key={f.variable}>
                {label}
                <textarea id={id} rows={3} maxLength={f.maxLength ?? undefined} value={String(value ?? "")} onInput={(e) => set(f.variable, (e.target as HTMLTextAreaElement).value)} />
              </div>
            );
          case "select":
            return (
              <div class="field" key={f.variable}>
                {label}
                <select id={id} value={String(value ?? "")} onChange={(e) => set(f.variable, (e.target as HTMLSelectElement).value)}>
                  <option value="">—</option>
                  {f.options.map((o) => (
                    <option key={o} value={o}>
                      {o}
                    </option>
                  ))}
                </select>
              </div>
            );
          case "number":
            return (
              <div class="field" key={f.variable}>
                {label}
                <input id={id} type="number" value={value === undefined ? "" : String(value)} onInput={(e) => set(f.variable, (e.target as HTMLInputElement).value)} />
              </div>
            );
          case "checkbox":
            return (
              <div class="field checkbox" key={f.variable}>
                <input id={id} type="checkbox" checked={value === true} onChange={(e) => set(f.variable, (e.target as HTMLInputElement).checked)} />
                {label}
              </div>
            );
          case "file":
          case "file-list":
            return (
              <div class="field" key={f.variable}>
                {label}
                <input id={id} type="file" multiple={f.type === "file-list"} onChange={(e) => void upload(f, (e.target as HTMLInputElement).files)} />
              </div>
            );
          default:
            return (
              <div class="field" key={f.variable}>
                {label}
                <input id={id} type="text" maxLength={f.maxLength ?? undefined} value={String(value ?? "")} onInput={(e) => set(f.variable, (e.target as HTMLInputElement).value)} />
              </div>
            );
        }
      })}
    </fieldset>
  );
}
