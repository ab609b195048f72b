// Read aloud and the microphone, through the server's speech routes (POST /v1/text-to-audio and
// /v1/audio-to-text, the app's audio model): one answer read at a time, one recording at a time.
import type { ServiceClient } from "../shared/api";

/** Plays answers: `play` fetches a message's speech and plays it (stopping what played before). */
export class Reader {
  private audio: HTMLAudioElement | null = null;
  private url: string | null = null;

  constructor(private readonly onEnd: () => void) {}

  async play(client: ServiceClient, messageId: string): Promise<void> {
    this.stop();
    const blob = await client.textToAudio(messageId);
    this.url = URL.createObjectURL(blob);
    const audio = new Audio(this.url);
    audio.onended = () => this.stop();
    this.audio = audio;
    await audio.play();
  }

  stop(): void {
    const had = this.audio !== null;
    this.audio?.pause();
    this.audio = null;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
    if (had) this.onEnd();
  }
}

/** Records from the microphone until `finish`, which gives the recording's text. */
export class Recorder {
  private recorder: MediaRecorder | null = null;
  private chunks: Blob[] = [];

  static supported(): boolean {
    return typeof MediaRecorder !== "undefined" && !!navigator.mediaDevices?.getUserMedia;
  }

  async start(): Promise<void> {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    this.chunks = [];
    const recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (e) => e.data.size > 0 && this.chunks.push(e.data);
    recorder.start();
    this.recorder = recorder;
  }

  async finish(client: ServiceClient): Promise<string> {
    const recorder = this.recorder;
    if (recorder === null) return "";
    this.recorder = null;
    const stopped = new Promise<void>((resolve) => (recorder.onstop = () => resolve()));
    recorder.stop();
    await stopped;
    recorder.stream.getTracks().forEach((t) => t.stop()); // the browser's "recording" light goes off
    const type = (recorder.mimeType || "audio/webm").split(";")[0];
    const blob = new Blob(this.chunks, { type });
    return client.audioToText(blob, `speech.${type.split("/")[1] || "webm"}`);
  }

  cancel(): void {
    this.recorder?.stream.getTracks().forEach((t) => t.stop());
    this.recorder = null;
  }
}
