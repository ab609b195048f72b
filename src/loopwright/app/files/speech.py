"""Speech to text and text to speech for an app, as Dify's ``AudioService`` does them, through an
OpenAI-compatible audio API (:mod:`loopwright.model.audio`).

Dify's checks, in Dify's order and with its messages: the feature must be on ("Speech to text is not
enabled" / "TTS is not enabled"), an audio file must come, its type must be ``audio/<ext>`` for one of
Dify's extensions, and it must be at most 30 MB. Text to speech reads a message's answer (one of the
end user's messages; Dify answers ``null`` for an unknown one) or the given text, in the request's
voice, else the app's, else the model's first.
"""

from __future__ import annotations

from collections.abc import Callable

from loopwright.app.config import AppConfig
from loopwright.app.errors import ProviderNotInitializedError
from loopwright.app.lookup import AppLookup
from loopwright.config import OPENAI_API_BASE, ConfigError, Settings, parse_model_spec
from loopwright.errors import UserInputError
from loopwright.model.audio import AudioEndpoint, SpeechStream
from loopwright.store import repositories as repo
from loopwright.store.db import Database

__all__ = [
    "ALLOWED_EXTENSIONS",
    "FILE_SIZE_LIMIT",
    "AudioTooLargeError",
    "NoAudioUploadedError",
    "NoSpeechModelError",
    "NoVoiceModelError",
    "Speech",
    "UnsupportedAudioTypeError",
    "message_answer",
]

FILE_SIZE_MB = 30  # Dify's services/audio_service.py FILE_SIZE
FILE_SIZE_LIMIT = FILE_SIZE_MB * 1024 * 1024
ALLOWED_EXTENSIONS = ("mp3", "mp4", "mpeg", "mpga", "m4a", "wav", "webm", "amr")
ALLOWED_MIME_TYPES = frozenset(f"audio/{ext}" for ext in ALLOWED_EXTENSIONS)
DEFAULT_VOICE = "alloy"  # the first of OpenAI's voices (Dify takes the model's first voice)


class NoAudioUploadedError(UserInputError):
    code = "no_audio_uploaded"

    def __init__(self) -> None:
        super().__init__("Please upload your audio.")


class AudioTooLargeError(UserInputError):
    code = "audio_too_large"
    status = 413

    def __init__(self) -> None:
        super().__init__(f"Audio size larger than {FILE_SIZE_MB} mb")


class UnsupportedAudioTypeError(UserInputError):
    code = "unsupported_audio_type"
    status = 415

    def __init__(self) -> None:
        super().__init__("Audio type not allowed.")


class NoSpeechModelError(UserInputError):
    """The app's speech-to-text model is not on an audio API (Dify: no speech2text model)."""

    code = "provider_not_support_speech_to_text"

    def __init__(self) -> None:
        super().__init__("Provider not support speech to text.")


class NoVoiceModelError(UserInputError):
    """The app's text-to-speech model is not on an audio API (Dify: no tts model)."""

    code = "provider_not_support_text_to_speech"

    def __init__(self) -> None:
        super().__init__("Provider not support text to speech.")


class Speech:
    """The audio endpoints of a runtime's apps, one per model spec (each keeps a connection pool);
    ``settings`` gives the servers and keys of ``openai:`` / ``openai-compatible:`` specs."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._endpoints: dict[str, AudioEndpoint] = {}

    def endpoint(self, spec: str) -> AudioEndpoint | None:
        """The audio endpoint a spec names; ``None`` for a spec that is no audio API (``local``,
        ``scripted:``); :class:`ProviderNotInitializedError` for a bad spec or a missing setting."""
        hit = self._endpoints.get(spec)
        if hit is not None:
            return hit
        settings = self._settings()
        try:
            parsed = parse_model_spec(spec)
        except ConfigError as exc:
            raise ProviderNotInitializedError(str(exc)) from None
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        if parsed.kind == "openai":
            if not key:
                raise ProviderNotInitializedError(f"model {parsed} needs an API key: set OPENAI_API_KEY")
            base = OPENAI_API_BASE
        elif parsed.kind == "openai-compatible":
            if not settings.openai_base_url:
                raise ProviderNotInitializedError(f"model {parsed} needs a server: set OPENAI_BASE_URL")
            base = settings.openai_base_url
        else:
            return None
        endpoint = AudioEndpoint(parsed.arg, base_url=base, api_key=key)
        self._endpoints[spec] = endpoint
        return endpoint

    async def transcribe(
        self, config: AppConfig, audio: bytes | None, *, filename: str, mime_type: str, user: str
    ) -> str:
        """The text spoken in an uploaded audio file, after Dify's checks."""
        if not config.speech_to_text.enabled:
            raise UserInputError("Speech to text is not enabled")
        if audio is None:
            raise NoAudioUploadedError()
        if mime_type not in ALLOWED_MIME_TYPES:
            raise UnsupportedAudioTypeError()
        if len(audio) > FILE_SIZE_LIMIT:
            raise AudioTooLargeError()
        endpoint = self.endpoint(config.speech_to_text.model)
        if endpoint is None:
            raise NoSpeechModelError()
        return await endpoint.transcribe(audio, filename=filename or "audio", mime_type=mime_type, user=user)

    def check_voice(self, config: AppConfig) -> AudioEndpoint:
        """The app's text-to-speech endpoint, or Dify's error when the feature is off."""
        if not config.text_to_speech.enabled:
            raise UserInputError("TTS is not enabled")
        endpoint = self.endpoint(config.text_to_speech.model)
        if endpoint is None:
            raise NoVoiceModelError()
        return endpoint

    async def speak(self, config: AppConfig, text: str, *, voice: str | None) -> SpeechStream:
        """Start speaking ``text`` (MP3) in ``voice``, else the app's, else the default."""
        endpoint = self.check_voice(config)
        chosen = voice or config.text_to_speech.voice or DEFAULT_VOICE
        return await endpoint.speak(text.strip(), voice=chosen)

    async def aclose(self) -> None:
        endpoints, self._endpoints = self._endpoints, {}
        for endpoint in endpoints.values():
            await endpoint.aclose()


async def message_answer(
    db: Database, lookup: AppLookup, app_id: str, user: str, message_id: str
) -> str | None:
    """The answer of one of the end user's messages, to be read out; ``None`` (Dify answers ``null``)
    when there is no such message or its answer is empty."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.sessionmaker() as session:
        message = await repo.find_user_message(session, app_id, end_user_id, message_id)
    if message is None or not message.answer:
        return None
    return message.answer
