// Files the user attaches to a message: uploaded at once (POST /v1/files/upload) with a preview, then
// sent as `files` entries of the chat request.
import type { ServiceClient, UploadedFile } from "../shared/api";

export interface Attachment {
  localId: string;
  name: string;
  type: string; // Dify's file type: image | document | audio | video | custom
  previewUrl: string | null; // a blob: URL for images
  state: "uploading" | "ready" | "failed";
  uploaded: UploadedFile | null;
  error: string | null;
}

const DOCUMENT_EXTENSIONS = ["pdf", "txt", "md", "markdown"];

export function fileType(file: { name: string; type: string }): string {
  if (file.type.startsWith("image/")) return "image";
  if (file.type.startsWith("audio/")) return "audio";
  if (file.type.startsWith("video/")) return "video";
  const ext = file.name.split(".").pop()?.toLowerCase() ?? "";
  if (["application/pdf", "text/plain", "text/markdown"].includes(file.type) || DOCUMENT_EXTENSIONS.includes(ext)) {
    return "document";
  }
  return "custom";
}

/** The `accept` attribute for the app's allowed file types. */
export function acceptFor(allowed: string[]): string {
  if (allowed.includes("custom")) return "";
  const parts: string[] = [];
  if (allowed.includes("image")) parts.push("image/*");
  if (allowed.includes("document")) parts.push(".pdf,.txt,.md,.markdown,application/pdf,text/plain,text/markdown");
  if (allowed.includes("audio")) parts.push("audio/*");
  if (allowed.includes("video")) parts.push("video/*");
  return parts.join(",");
}

let counter = 0;

export function startUpload(
  client: ServiceClient,
  file: File,
  onChange: (a: Attachment) => void,
): Attachment {
  counter += 1;
  const type = fileType(file);
  const attachment: Attachment = {
    localId: `file-${counter}`,
    name: file.name,
    type,
    previewUrl: type === "image" ? URL.createObjectURL(file) : null,
    state: "uploading",
    uploaded: null,
    error: null,
  };
  client.upload(file).then(
    (uploaded) => onChange({ ...attachment, state: "ready", uploaded }),
    (e: unknown) => onChange({ ...attachment, state: "failed", error: e instanceof Error ? e.message : String(e) }),
  );
  return attachment;
}

export function requestFile(a: Attachment): Record<string, string> {
  return { type: a.type, transfer_method: "local_file", upload_file_id: a.uploaded?.id ?? "" };
}
